"""Request parsing and the single error shape of every hub API:
``{"error": {"code": "...", "message": "...", "details": ...}}``.

Powertools' resolver routes; these helpers turn events into domain input and domain errors
into responses. Error bodies never echo request values (they may carry payload data).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent
from pydantic import BaseModel, ValidationError

from hub.api.routing import unmatched
from hub.domain import media_type
from hub.domain.strict_json import parse_json
from hub.errors import (
    ConfigurationError,
    HubError,
    MalformedBody,
    PayloadTooLarge,
    Unauthorized,
    ValidationFailed,
)

if TYPE_CHECKING:  # the partner API never loads the admin side
    from hub.admin.access import Principal

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

_CORRELATION_RE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(body, separators=(",", ":")),
        headers=headers or {},
    )


def error_response(error: HubError) -> Response:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.details is not None:
        body["details"] = error.details
    return json_response(error.http_status, {"error": body}, error.headers())


def install_error_handlers(app: ApiGatewayResolver) -> None:
    """Every failure leaves in the one error shape; unexpected ones as a bare 500 (with the
    stack trace in the log, never in the response)."""

    @app.exception_handler(HubError)
    def _hub_error(error: HubError) -> Response:
        if isinstance(error, ConfigurationError):  # ours to fix; no internals to the caller
            logger.error("misconfigured", extra={"detail": error.message})
            return error_response(HubError("internal error; it is safe to resend the request"))
        if error.http_status >= 500:
            logger.warning("request failed", extra={"code": error.code, "details": error.details})
        return error_response(error)

    @app.exception_handler(Exception)
    def _unexpected(error: Exception) -> Response:
        logger.exception("unexpected error")
        return error_response(HubError("internal error; it is safe to resend the request"))

    @app.not_found
    def _no_route(_: Exception) -> Response:
        return error_response(unmatched(app))


def body_limit(max_bytes: Callable[[], int]) -> Callable[[ApiGatewayResolver, NextMiddleware], Response]:
    """Middleware: 413 for a body over the limit, before anything parses it."""

    def middleware(app: ApiGatewayResolver, next_middleware: NextMiddleware) -> Response:
        body = app.current_event.body or ""
        # A base64 body decodes to 3/4 of its length; compare the decoded size.
        if app.current_event.is_base64_encoded:
            size = len(body) * 3 // 4 - body[-2:].count("=")
        else:
            size = len(body.encode("utf-8", "surrogatepass"))  # as body_bytes counts it
        limit = max_bytes()
        if size > limit:
            return error_response(
                PayloadTooLarge(f"request body is over {limit} bytes", details={"limit_bytes": limit})
            )
        return next_middleware(app)

    return middleware


def body_bytes(event: BaseProxyEvent) -> bytes:
    """The body exactly as the client sent it: base64-decoded when the gateway encoded it (a
    non-text content type), else the UTF-8 text the gateway passed on. Signatures are computed
    over these bytes, so nothing may parse or re-serialize them first."""
    body = event.body or ""
    if event.is_base64_encoded:
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise MalformedBody("request body is not valid base64") from exc
    # "surrogatepass": a lone surrogate in the event's text becomes bytes no UTF-8 decoder
    # accepts, so the JSON parser refuses it (400) instead of this encode failing (500).
    return body.encode("utf-8", "surrogatepass")


def parse_body(event: BaseProxyEvent, model: type[M]) -> M:
    """The JSON body validated as `model`: MalformedBody for anything `parse_json` refuses
    (not UTF-8, not JSON, NaN or Infinity, too deep), ValidationFailed naming each offending
    field otherwise."""
    data = parse_json(body_bytes(event))
    if not isinstance(data, dict):
        raise ValidationFailed("request body must be a JSON object")
    return validated(model, data, "request body")


def etag(version: int) -> dict[str, str]:
    """The ETag header of a versioned configuration resource (integration, connection)."""
    return {"ETag": f'"{version}"'}


def if_match(event: BaseProxyEvent) -> int | None:
    """The version an `If-Match: "<version>"` header names (None when absent or `*`); a value
    that is no version of ours is a 400 naming the header."""
    raw = (event.headers.get("if-match") or "").strip()
    if not raw or raw == "*":
        return None
    tag = raw.removeprefix("W/").strip('"')
    if not tag.isdigit() or len(tag) > 12:
        raise ValidationFailed(
            'If-Match must be the ETag of the resource, e.g. "3"',
            details=[{"field": "If-Match", "problem": "etag", "message": "not an ETag of this API"}],
        )
    return int(tag)


def parse_query(event: BaseProxyEvent, model: type[M]) -> M:
    """The query string validated as `model` (ValidationFailed naming each offending field)."""
    return validated(model, dict(event.query_string_parameters or {}), "query string")


def validated(model: type[M], data: dict[str, Any], what: str = "request") -> M:
    """`data` as `model`; ValidationFailed naming each offending field, never echoing values."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        details = [
            {"field": ".".join(str(p) for p in err["loc"]), "problem": err["type"], "message": err["msg"]}
            for err in exc.errors(include_input=False, include_url=False)
        ]
        raise ValidationFailed(f"{what} failed validation", details=details) from exc


def api_key(event: BaseProxyEvent) -> str | None:
    """The presented API key: `Authorization: Bearer <key>` or `x-api-key: <key>`."""
    auth = event.headers.get("authorization") or ""
    scheme, _, token = auth.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return event.headers.get("x-api-key") or None


def bearer_token(event: BaseProxyEvent) -> str | None:
    """The token of `Authorization: Bearer <token>` (no other way of sending it)."""
    scheme, _, token = (event.headers.get("authorization") or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def require_content_type(event: BaseProxyEvent, accepted: tuple[str, ...]) -> None:
    """UnsupportedMediaType (415) unless the request's Content-Type is one of `accepted` (with
    no charset, or UTF-8). Checked before the body is read."""
    media_type.require(event.headers.get("content-type"), accepted)


def admin_principal(event: BaseProxyEvent, authenticate: Callable[[str], Principal]) -> Principal:
    """The operator behind an admin request, from `Authorization: Bearer <admin token>`:
    `authenticate` (hub.admin.tokens.Authenticator.principal) knows the bootstrap token and the
    stored tokens, and raises Unauthorized for anything else (a token sent any other way too)."""
    scheme, _, token = (event.headers.get("authorization") or "").partition(" ")
    presented = token.strip() if scheme.lower() == "bearer" else ""
    if not presented:
        raise Unauthorized("a valid admin token is required (Authorization: Bearer <token>)")
    return authenticate(presented)


def correlation_id(event: BaseProxyEvent, fallback: str) -> str:
    """The caller's x-correlation-id when well formed, else the gateway's request id."""
    return event.headers.get("x-correlation-id", "") if correlation_given(event) else fallback


def correlation_given(event: BaseProxyEvent) -> bool:
    """Whether `correlation_id` is the caller's own (a well-formed x-correlation-id)."""
    return _CORRELATION_RE.fullmatch(event.headers.get("x-correlation-id") or "") is not None
