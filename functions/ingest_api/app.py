"""Partner ingest API (API Gateway HTTP API): receive-message, inbound webhooks and message status."""

from __future__ import annotations

import hub.cold_start  # noqa: F401 - first: pauses the collector for the cold start

# isort: split
from typing import Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import Field

from hub.api.http import (
    api_key,
    bearer_token,
    body_bytes,
    body_limit,
    correlation_given,
    correlation_id,
    error_response,
    install_error_handlers,
    json_response,
    parse_body,
    require_content_type,
)
from hub.api.openapi import answers, documented, serve
from hub.api.views import CallbackAnswer, MessageStatus, ReceiveAnswer, ReceiveHeaders
from hub.domain.delivery_status import StatusCallback
from hub.domain.idempotency import sanitize_idempotency_key
from hub.domain.media_type import JSON_ONLY
from hub.domain.message import InboundMessage
from hub.domain.model import HubModel
from hub.errors import (
    DeliveryInFlight,
    HubError,
    IdempotencyKeyReused,
    InvalidIdempotencyKey,
    KeyServiceUnavailable,
    MalformedBody,
    MalformedXml,
    MessagePending,
    NotFound,
    PayloadTooLarge,
    QueueUnavailable,
    RateLimited,
    SecretUndecryptable,
    ServiceUnavailable,
    SignatureExpired,
    SignatureInvalid,
    StorageUnavailable,
    Unauthorized,
    UnknownEventType,
    UnknownMessageType,
    UnprocessableEvent,
    UnsupportedMediaType,
    ValidationFailed,
)
from hub.ingest.receive import ReceiveOutcome
from hub.ingest.throttle import TenantRateLimited
from hub.logs import configure as configure_logging
from hub.logs import new_logger
from hub.observability import gc_after_first_invocation, traced
from hub.wiring.ingest import ingestor, init, settings, status_callbacks, webhook_receiver

# Cold start: this function's settings, validated now (a missing or malformed variable fails
# the init, named, not the first request).
init()
logger = new_logger()
configure_logging(logger)
metrics = Metrics()
app = APIGatewayHttpResolver()
app.use([body_limit(lambda: settings().max_body_bytes)])
install_error_handlers(app)

#: Partners authenticate with their API key, either way.
API_KEY: list[dict[str, list[str]]] = [{"apiKeyBearer": []}, {"apiKeyHeader": []}]
#: Every route: the body limit runs before the route.
EVERY_ROUTE = (PayloadTooLarge,)
#: Creating a message: the answer when it was stored, 200 for a duplicate.
STORE = (
    StorageUnavailable,
    MessagePending,
    IdempotencyKeyReused,
    UnknownMessageType,
    ServiceUnavailable,
    MessagePending,
    QueueUnavailable,
)
#: Every route of an authenticated tenant: over its rate, 429 with Retry-After, nothing done.
THROTTLED = (RateLimited,)


@app.exception_handler(TenantRateLimited)
def _rate_limited(error: TenantRateLimited) -> Response:
    # The tenant is a property of the metric, not a dimension (one series per tenant would cost
    # a custom metric each).
    metrics.add_metric(name="RateLimited", unit=MetricUnit.Count, value=1)
    metrics.add_metadata(key="tenant_id", value=error.tenant_id)
    logger.info(
        "rate limited", extra={"tenant_id": error.tenant_id, "retry_after": error.retry_after_seconds}
    )
    return error_response(error)


@app.post(
    "/api/edi-hub/receive-message",
    **answers(
        "Receive a message (idempotent)",
        ok={202: ReceiveAnswer, 200: ReceiveAnswer},
        errors=(
            *EVERY_ROUTE,
            *STORE,
            *THROTTLED,
            Unauthorized,
            UnsupportedMediaType,
            MalformedBody,
            ValidationFailed,
            InvalidIdempotencyKey,
            NotFound,
        ),
        tags=["messages"],
        description=(
            "Stores the message once and queues it for the pipeline: 202 when it is new, 200 with "
            "`deduplicated: true` and the first message when it repeats one (same `Idempotency-Key`, "
            "or the integration's duplicate-key fields). Resending after any 5xx, a timeout or a 429 (after "
            "its Retry-After) is safe."
        ),
        security=API_KEY,
    ),
)
@documented(body=InboundMessage, headers=ReceiveHeaders)
def receive_message() -> Response:
    event = app.current_event
    raw_key = api_key(event)
    try:
        require_content_type(event, JSON_ONLY)
        inbound = parse_body(event, InboundMessage)
        idempotency_key = sanitize_idempotency_key(event.headers.get("idempotency-key"))
    except HubError:
        ingestor().authenticate(raw_key)  # an unauthenticated caller learns nothing about fields
        raise
    outcome = ingestor().receive(
        raw_key=raw_key,
        inbound=inbound,
        idempotency_key=idempotency_key,
        correlation_id=correlation_id(event, event.request_context.request_id),
        correlation_given=correlation_given(event),
    )
    return _answer(outcome)


def _answer(outcome: ReceiveOutcome) -> Response:
    if outcome.deduplicated_by is None:
        metrics.add_metric(name="MessagesReceived", unit=MetricUnit.Count, value=1)
    else:
        metrics.add_metric(name="DuplicatesDropped", unit=MetricUnit.Count, value=1)
    return json_response(202 if outcome.created else 200, outcome.body())


@app.post(
    "/api/webhook/<tenant_id>/<integration_id>",
    **answers(
        "Receive a signed webhook",
        ok={202: ReceiveAnswer, 200: ReceiveAnswer},
        errors=(
            *EVERY_ROUTE,
            *STORE,
            *THROTTLED,
            NotFound,
            SignatureInvalid,
            SignatureExpired,
            Unauthorized,
            InvalidIdempotencyKey,
            UnsupportedMediaType,
            MalformedBody,
            MalformedXml,
            UnprocessableEvent,
            UnknownEventType,
            KeyServiceUnavailable,
            SecretUndecryptable,
        ),
        tags=["webhooks"],
        description=(
            "A partner system's webhook, authenticated by its signature instead of an API key, at "
            "the tenant's integration (integration ids are unique within a tenant only): the "
            "integration's inbound webhook says the scheme (Standard Webhooks `webhook-id`, "
            "`webhook-timestamp`, `webhook-signature` with HMAC-SHA256 over `id.timestamp.body`; or a "
            "provider's own HMAC header; or a shared token) and holds the secret. A redelivery "
            "(same `webhook-id` or event id) answers the first message. The body is the provider's, "
            "JSON or XML as the integration's adapter says."
        ),
    ),
)
def inbound_webhook(tenant_id: str, integration_id: str) -> Response:
    event = app.current_event
    try:
        outcome = webhook_receiver().receive(
            tenant_id=tenant_id,
            integration_id=integration_id,
            headers={name.lower(): value for name, value in event.headers.items()},
            body=body_bytes(event),
            correlation_id=correlation_id(event, event.request_context.request_id),
            correlation_given=correlation_given(event),
        )
    except SignatureInvalid:
        metrics.add_metric(name="SignatureFailures", unit=MetricUnit.Count, value=1)
        raise
    return _answer(outcome)


@app.get(
    "/api/edi-hub/messages/<message_id>",
    **answers(
        "A message's status",
        ok={200: MessageStatus},
        errors=(*EVERY_ROUTE, *THROTTLED, StorageUnavailable, Unauthorized, NotFound),
        tags=["messages"],
        description="Only the key's tenant sees its messages; another tenant's is 404 like a missing one.",
        security=API_KEY,
    ),
)
def get_message(message_id: str) -> Response:
    record = ingestor().status(api_key(app.current_event), message_id)
    return json_response(200, record.public_view())


# --- Issue 12: delivery-status callbacks (pattern 5) ------------------------------------------

#: Destinations authenticate status callbacks with their connection's callback token.
CALLBACK_TOKEN: list[dict[str, list[str]]] = [{"callbackToken": []}]


class CallbackPath(HubModel):
    message_id: str = Field(description="The message the hub delivered to you (its `msg_...` id).")


@app.post(
    "/api/edi-hub/status-callback/<message_id>",
    **answers(
        "Report what became of a delivered message (destinations)",
        ok={202: CallbackAnswer, 200: CallbackAnswer},
        errors=(
            *EVERY_ROUTE,
            *THROTTLED,
            StorageUnavailable,
            DeliveryInFlight,
            Unauthorized,
            UnsupportedMediaType,
            MalformedBody,
            ValidationFailed,
        ),
        tags=["delivery-status"],
        description=(
            "A destination confirms later: `accepted` < `delivered` < `read`, or the terminal "
            "failures `rejected` / `expired` (from pending or accepted only). Every callback is "
            "recorded as received; the message's `delivery_status` only moves forward: 202 when "
            "this callback moved it, 200 when it moved nothing (the same status again, a lower "
            "one, or anything after a failure); 503 `delivery_in_flight` while the hub is delivering "
            "the message at that moment (recorded; resend after Retry-After). Authenticated with "
            "the callback token of the "
            "connection the message was delivered through; any other token, or a message that "
            "is not that connection's, is 401 (whether the message exists is not told)."
        ),
        security=CALLBACK_TOKEN,
    ),
)
@documented(body=StatusCallback, path=CallbackPath)
def status_callback(message_id: str) -> Response:
    event = app.current_event
    caller = status_callbacks().authenticate(bearer_token(event), message_id)
    require_content_type(event, JSON_ONLY)
    callback = parse_body(event, StatusCallback)
    outcome = status_callbacks().receive(caller, callback)
    metrics.add_metric(name="StatusCallbacks", unit=MetricUnit.Count, value=1)
    return json_response(202 if outcome.advanced else 200, outcome.body())


#: What the partner document says about itself (hub.api.openapi_document.document).
OPENAPI = {
    "title": "Integration Hub partner API",
    "version": "1",
    "description": (
        "Partners send messages with an API key (`Authorization: Bearer <key>` or `x-api-key`) and "
        "read their status; partner systems send signed webhooks. Every error has one shape, "
        '`{"error": {"code", "message", "details"?}}`: decide on `code`. Each operation lists the '
        "codes it answers per status. Requests no route takes answer `404 route_not_found`, or "
        "`405 method_not_allowed` with `Allow` when the path exists with other methods. A tenant "
        "over its request rate gets `429 rate_limited` with `Retry-After` (whole seconds): nothing "
        "was stored, resend after it."
    ),
    "security_schemes": {
        "apiKeyBearer": {"type": "http", "scheme": "bearer", "description": "The partner's API key."},
        "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "x-api-key"},
        "callbackToken": {
            "type": "http",
            "scheme": "bearer",
            "description": "A connection's status-callback token (hub_cb_...), minted by an admin.",
        },
    },
}


@app.get(
    "/api/openapi.json",
    **answers(
        "This document (OpenAPI 3.1)",
        ok={200: "object"},
        errors=EVERY_ROUTE,
        tags=["documentation"],
        description="No key needed.",
    ),
)
def openapi_document() -> Response:
    return serve(app, OPENAPI)


@gc_after_first_invocation
@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
@traced
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
