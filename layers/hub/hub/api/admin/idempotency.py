"""The admin API's one Idempotency-Key middleware (issue 28, point 1): every POST, PUT, PATCH and
DELETE route takes the header, declared nowhere else, so no route can forget it.

It runs after the access middleware (hub.api.admin.guard): the caller is authenticated, within
its rate and allowed on the route, and the key is that token's. A request without the header runs
as always. With one (1-255 printable ASCII, else 400 `validation_error`), the request's
fingerprint (method, path, query, body bytes) claims the key (hub.admin.idempotency):

- the first request runs; a 2xx or 4xx answer is kept (sealed) for 24 hours, a 5xx or an
  unexpected failure frees the key;
- the same request again answers the kept status, headers and body with `Idempotent-Replayed:
  true`, and runs nothing;
- another request with the key: 422 `idempotency_key_reused`; while the first still runs: 409
  `idempotency_key_in_use` (with Retry-After).

`document(app)` adds the header and these answers to each mutating route's OpenAPI operation.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver, Route
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from pydantic import Field

from hub.admin.access import Principal
from hub.admin.idempotency import Answer
from hub.api.admin.guard import registered_routes
from hub.api.http import body_bytes, error_response
from hub.api.openapi import also_answers
from hub.domain.admin_idempotency import (
    HEADER,
    MUTATING,
    REPLAYED_HEADER,
    idempotency_key,
    request_fingerprint,
)
from hub.domain.model import HubModel
from hub.errors import (
    ConfigurationError,
    HubError,
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
    KeyServiceUnavailable,
    SecretUndecryptable,
    StorageUnavailable,
    ValidationFailed,
)
from hub.wiring import admin as wiring

#: The answer headers a repeat gives again (besides its own Idempotent-Replayed); others (e.g.
#: a 429's Retry-After) describe the moment, not the answer.
_KEPT_HEADERS = ("Content-Type", "ETag", "Location")


class IdempotencyKeyHeader(HubModel):
    """The request header every mutating admin route takes."""

    idempotency_key: str | None = Field(
        default=None,
        description=(
            "Your id for this action (1-255 printable ASCII), the calling token's for 24 hours: "
            "the same request again answers the first answer (with `Idempotent-Replayed: true`) "
            "and does nothing; another request with it is 422, a repeat while the first runs 409."
        ),
    )


#: What the header adds to each mutating route's answers.
ANSWERS = (
    ValidationFailed,
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
    KeyServiceUnavailable,
    StorageUnavailable,
    SecretUndecryptable,
)


def idempotency_guard(app: ApiGatewayResolver, next_middleware: NextMiddleware) -> Response:
    event = app.current_event
    raw = event.headers.get(HEADER.lower())
    caller: Principal | None = app.context.get("principal")  # set by the access middleware
    if raw is None or caller is None or not _mutating_route(app):
        return next_middleware(app)  # no key, or a public route: no token to own one
    key = idempotency_key(raw)
    fingerprint = request_fingerprint(
        event.http_method,
        event.path,
        parse_qsl(getattr(event, "raw_query_string", "") or "", keep_blank_values=True),
        body_bytes(event),
    )
    idempotency = wiring.admin_idempotency()
    begun = idempotency.begin(caller.token_id, key, fingerprint)
    if isinstance(begun, Answer):
        return Response(
            status_code=begun.status,
            body=begun.body,
            headers={**begun.headers, REPLAYED_HEADER: "true"},
        )
    try:
        response = next_middleware(app)
    except HubError as error:
        if error.http_status >= 500 or isinstance(error, ConfigurationError):
            idempotency.abandon(begun)
            raise
        # A refusal is an answer like any other: kept, so a repeat is refused the same way.
        response = error_response(error)
    except BaseException:
        idempotency.abandon(begun)
        raise
    idempotency.finish(begun, _answer(app, response))
    return response


def document(app: ApiGatewayResolver) -> None:
    """Adds the header and what it can answer to every mutating route's OpenAPI operation."""
    for route in registered_routes(app):
        if route.method.upper() in MUTATING:
            also_answers(
                route,
                ANSWERS,
                request_headers=IdempotencyKeyHeader,
                success_headers={REPLAYED_HEADER: "`true` on a repeat's answer (the first answer again)"},
            )


def _mutating_route(app: ApiGatewayResolver) -> bool:
    route: Route | None = app.context.get("_route")
    return (
        route is not None
        and route.method.upper() in MUTATING
        and any(route is registered for registered in registered_routes(app))
    )


def _answer(app: ApiGatewayResolver, response: Response) -> Answer:
    body = response.body
    if body is None:
        text = ""
    elif isinstance(body, str):
        text = body
    else:
        text = app._serializer(body)  # what Powertools itself will send (a dict a route returned)
    return Answer(status=response.status_code, body=text, headers=_kept_headers(response.headers))


def _kept_headers(headers: Mapping[str, str | list[str]]) -> dict[str, str]:
    wanted = {name.lower(): name for name in _KEPT_HEADERS}
    return {
        wanted[name.lower()]: value if isinstance(value, str) else ", ".join(value)
        for name, value in headers.items()
        if name.lower() in wanted
    }
