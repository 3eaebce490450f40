"""Integration Hub shared package (the Lambda layer).

Layout follows the message's path through the hub:

- ``hub.domain``   pure model: statuses and transitions, idempotency rules, tenancy.
- ``hub.ingest``   use cases behind the partner API (receive, status).
- ``hub.ports``    the interfaces use cases depend on.
- ``hub.adapters`` the only code that talks to AWS (DynamoDB, SQS).
- ``hub.api``      HTTP glue shared by handlers: one error shape, request parsing.
"""

import logging

# Modules log to children of "hub"; each handler copies its Powertools Logger configuration
# onto this logger (structured JSON, correlation id, Lambda context).
logging.getLogger("hub").addHandler(logging.NullHandler())
