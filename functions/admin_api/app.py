"""Admin API (Lambda Function URL): operator actions on messages and queues, connections'
client certificates, tenants and their API keys, admin tokens and the audit log.

This file is the page: the resolver, its error handlers and middleware, and one router per
resource (hub.api.admin). Every route declares its permission where it is declared
(`@requires(...)`, hub.admin.access) and one middleware enforces it before the route runs
(hub.api.admin.guard); tests/unit/test_admin_routes.py fails for a route that declares none.
The operator's page (`/admin...`) is no route: lambda_handler serves it first, public."""

from __future__ import annotations

import hub.cold_start  # noqa: F401 - first: pauses the collector for the cold start

# isort: split
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response
from aws_lambda_powertools.utilities.typing import LambdaContext

from hub.admin.access import any_token, requires
from hub.api.admin import ROUTERS, idempotency
from hub.api.admin.guard import access_guard
from hub.api.http import body_limit, install_error_handlers
from hub.api.openapi import OBJECT, answers, serve
from hub.api.static_site import StaticSite
from hub.errors import PayloadTooLarge, RateLimited, StorageUnavailable, TooManyFailedTokens, Unauthorized
from hub.logs import configure as configure_logging
from hub.logs import new_logger
from hub.observability import gc_after_first_invocation, traced
from hub.wiring.admin import init, settings

# Cold start: this function's settings, validated now (a missing or malformed variable fails
# the init, named, not the first request).
init()
logger = new_logger()
configure_logging(logger)
metrics = Metrics()
app = LambdaFunctionUrlResolver()
install_error_handlers(app)
# The body limit first: a body over it is refused before any token is looked at. The
# Idempotency-Key last: the key is the authenticated token's, and a request its route refuses
# access to claims nothing.
app.use([body_limit(lambda: settings().admin_max_body_bytes), access_guard, idempotency.idempotency_guard])
for router in ROUTERS:
    app.include_router(router)
idempotency.document(app)
#: The operator's web page: this function's own `page/` folder (index.html and static/).
PAGE = StaticSite(Path(__file__).parent / "page")

#: What the admin document says about itself (hub.api.openapi_document.document).
OPENAPI = {
    "title": "Integration Hub admin API",
    "version": "1",
    "description": (
        "Operators configure tenants, integrations, connections, API keys and admin tokens, and act "
        "on messages. Every route, this document's too, takes an admin token "
        "(`Authorization: Bearer <token>`) scoped to one tenant or to the platform, with a role: "
        "viewer reads, operator also reprocesses, cancels, redrives and tests, admin also "
        "configures. Another tenant's resource answers 404 like a missing one; a role too low "
        "answers 403 `forbidden`. Every error has one shape, "
        '`{"error": {"code", "message", "details"?}}`; each operation lists the codes it answers '
        "per status. Requests no route takes answer `404 route_not_found`, or "
        "`405 method_not_allowed` with `Allow`. After 10 refused tokens from one address within "
        "60 s, that address gets `429 too_many_failed_tokens` with `Retry-After` until the window "
        "passes, whatever token it sends. Each admin token has a rate limit (per instance): over "
        "it, `429 rate_limited` with `Retry-After`, nothing done. A body over the admin API's "
        "limit (1 MiB by default) is `413 payload_too_large`, before anything reads it. Every POST, "
        "PUT, PATCH and DELETE takes an `Idempotency-Key` header (1-255 printable ASCII, the "
        "calling token's for 24 hours): the same request again answers the first 2xx or 4xx "
        "answer with `Idempotent-Replayed: true` and does nothing; the key with another request "
        "is `422 idempotency_key_reused`, while the first still runs `409 idempotency_key_in_use`; "
        "a 5xx frees the key."
    ),
    "security_schemes": {
        "adminToken": {"type": "http", "scheme": "bearer", "description": "An admin token (hub_admin_...)."}
    },
    "security": [{"adminToken": []}],
}


@app.get(
    "/api/admin/openapi.json",
    **answers(
        "This document (OpenAPI 3.1)",
        ok={200: OBJECT},
        errors=(Unauthorized, TooManyFailedTokens, RateLimited, PayloadTooLarge, StorageUnavailable),
        tags=["documentation"],
        description="Any admin token, of any role and scope.",
    ),
)
@requires(any_token())
def openapi_document() -> Response:
    return serve(app, OPENAPI)


@gc_after_first_invocation
@logger.inject_lambda_context
@metrics.log_metrics
@traced
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    path = event.get("rawPath") or ""
    if StaticSite.serves(path):
        # The operator's page (issue 13): static files, no token (every API call carries one).
        method = event.get("requestContext", {}).get("http", {}).get("method", "GET")
        return PAGE.respond(method, path, event.get("headers") or {})
    return app.resolve(event, context)
