"""What each route tells its API's OpenAPI document: request body, query and path models, the
answers it gives and the error codes it can answer with.

Cheap on purpose: the handlers import it at cold start, and it only records. Powertools' schema
generator, which is heavy, runs in `hub.api.openapi_document` when a client asks for the document.

The runtime path does not change: with `enable_validation` off, Powertools calls a handler with its
path parameters only, so the parameters the document declares (through the handler's
`__signature__`, set when the document is built) are never passed; the handlers go on parsing with
our strict JSON parser and answering in the one error shape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver, Route
from pydantic import BaseModel

from hub.errors import HubError

F = TypeVar("F", bound=Callable[..., Any])

#: Where the error shape's schema lives in every document.
ERROR_SCHEMA_REF = "#/components/schemas/Error"
#: A view the API builds as a dict (admin views): documented as a JSON object.
OBJECT = "object"
#: Answered by every route: the unexpected failure (`internal_error`, safe to resend).
ALWAYS: tuple[type[HubError], ...] = (HubError,)

_ATTRIBUTE = "__hub_openapi__"


@dataclass(frozen=True)
class Documented:
    """The request parts a handler parses itself, for the document only."""

    body: type[BaseModel] | None = None
    body_required: bool = True
    query: type[BaseModel] | None = None
    path: type[BaseModel] | None = None
    #: Request headers the handler reads (field `idempotency_key` is header `idempotency-key`).
    headers: type[BaseModel] | None = None
    #: Request headers a middleware reads on this route (`also_answers`).
    middleware_headers: tuple[type[BaseModel], ...] = ()


def documented(
    *,
    body: type[BaseModel] | None = None,
    body_required: bool = True,
    query: type[BaseModel] | None = None,
    path: type[BaseModel] | None = None,
    headers: type[BaseModel] | None = None,
) -> Callable[[F], F]:
    """Records the models a handler parses its body, query string, path parameters and headers
    with. Changes nothing about how the handler is called (see the module's docstring)."""

    def mark(handler: F) -> F:
        setattr(handler, _ATTRIBUTE, Documented(body, body_required, query, path, headers))
        return handler

    return mark


def documented_parts(handler: Callable[..., Any]) -> Documented:
    found = getattr(handler, _ATTRIBUTE, None)
    return found if isinstance(found, Documented) else Documented()


Success = type[BaseModel] | str | None


def answers(
    summary: str,
    *,
    ok: Mapping[int, Success],
    errors: Iterable[type[HubError]],
    tags: list[str],
    description: str | None = None,
    security: list[dict[str, list[str]]] | None = None,
    headers: Mapping[int, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for a route decorator: its summary, tags, security and every answer it
    gives, success ones (`ok`: status → a response model, OBJECT for a dict view, None for no
    body) and error ones (each error class's status, with the one error shape and the codes the
    route can answer at that status as the schema's `code` enum; every route also answers ALWAYS).
    `headers`: status → response header → its description."""
    responses: dict[int, dict[str, Any]] = {}
    for status, body in ok.items():
        responses[status] = _success(status, body)
    by_status: dict[int, dict[str, str]] = {}
    for error in (*errors, *ALWAYS):
        by_status.setdefault(error.http_status, {})[error.code] = _first_line(error)
    for status in sorted(by_status):
        responses[status] = _error_response(status, by_status[status])
    for status, named in (headers or {}).items():
        responses[status].setdefault("headers", {}).update(_header_schemas(named))
    kwargs: dict[str, Any] = {"summary": summary, "tags": tags, "responses": responses}
    if description:
        kwargs["description"] = description
    if security is not None:
        kwargs["security"] = security
    return kwargs


def also_answers(
    route: Route,
    errors: Iterable[type[HubError]],
    *,
    request_headers: type[BaseModel] | None = None,
    success_headers: Mapping[str, str] | None = None,
) -> None:
    """Adds to `route`'s document what a middleware does on it, declared once for every route
    it applies to: the `errors` it can answer (merged into the route's error answers of their
    statuses), `success_headers` (name → description) on its 2xx answers, and the
    `request_headers` it reads. Idempotent (a route amended twice is amended once)."""
    responses: dict[int, Any] = route.responses if route.responses is not None else {}
    route.responses = responses
    by_status: dict[int, dict[str, str]] = {}
    for error in errors:
        by_status.setdefault(error.http_status, {})[error.code] = _first_line(error)
    for status, added in by_status.items():
        present = responses.get(status)
        lines = {**added, **(_error_lines(present) if present else {})}
        merged = _error_response(status, lines)
        if present and present.get("headers"):
            merged.setdefault("headers", {}).update(present["headers"])
        responses[status] = merged
    for status, response in responses.items():
        if 200 <= status < 300 and success_headers:
            response.setdefault("headers", {}).update(_header_schemas(success_headers))
    parts = documented_parts(route.func)
    if request_headers is not None and request_headers not in parts.middleware_headers:
        setattr(
            route.func,
            _ATTRIBUTE,
            replace(parts, middleware_headers=(*parts.middleware_headers, request_headers)),
        )


def error_codes(response: Mapping[str, Any]) -> list[str]:
    """The error codes a documented error response lists (its schema's `code` enum)."""
    schema = response["content"]["application/json"]["schema"]
    return list(schema["allOf"][1]["properties"]["error"]["properties"]["code"]["enum"])


def _success(status: int, body: Success) -> dict[str, Any]:
    description = {200: "OK", 201: "Created", 202: "Accepted", 204: "No content"}.get(status, "Success")
    if body is None:  # "content": {} keeps Powertools from adding an empty JSON body
        return {"description": description, "content": {}}
    if isinstance(body, str):
        return {"description": description, "content": {"application/json": {"schema": {"type": body}}}}
    first_line = (body.__doc__ or "").strip().splitlines()[:1]
    ours = first_line and body.__module__.startswith("hub")
    text = f"{description}: {first_line[0]}" if ours else description
    return {"description": text, "content": {"application/json": {"model": body}}}


_ERROR_HEADERS = {
    401: {"WWW-Authenticate": "Bearer"},
    405: {"Allow": "The methods the path takes"},
    429: {"Retry-After": "Whole seconds to wait before resending (nothing was done: safe to resend)"},
    503: {"Retry-After": "Seconds to wait before resending (the request is safe to resend)"},
}


def _header_schemas(named: Mapping[str, str]) -> dict[str, Any]:
    """Documented response headers from {name: description}."""
    return {name: {"description": text, "schema": {"type": "string"}} for name, text in named.items()}


_ERROR_LINES_TITLE = "Error codes:"


def _error_lines(response: Mapping[str, Any]) -> dict[str, str]:
    """{code: its description} of an error answer `_error_response` wrote."""
    lines = str(response.get("description", "")).split("\n")[1:]
    found = {}
    for line in lines:
        code, _, text = line.removeprefix("- `").partition("`: ")
        found[code] = text
    return found


def _error_response(status: int, errors: Mapping[str, str]) -> dict[str, Any]:
    """The error answer at `status` listing `errors` ({code: description})."""
    lines = [f"- `{code}`: {text}" for code, text in sorted(errors.items())]
    response: dict[str, Any] = {
        "description": f"{_ERROR_LINES_TITLE}\n" + "\n".join(lines),
        "content": {
            "application/json": {
                "schema": {
                    "allOf": [
                        {"$ref": ERROR_SCHEMA_REF},
                        {
                            "type": "object",
                            "properties": {
                                "error": {
                                    "type": "object",
                                    "properties": {"code": {"enum": sorted(errors)}},
                                }
                            },
                        },
                    ]
                }
            }
        },
    }
    if status in _ERROR_HEADERS:
        response["headers"] = {
            name: {"description": text, "schema": {"type": "string"}}
            for name, text in _ERROR_HEADERS[status].items()
        }
    return response


def _first_line(error: type[HubError]) -> str:
    if error is HubError:
        return "an unexpected failure; it is safe to resend the request"
    doc = error.__doc__ or ""
    if not doc or doc == (error.__mro__[1].__doc__ or ""):
        return error.__name__
    return " ".join(doc.strip().split("\n\n")[0].split())


def serve(app: ApiGatewayResolver, info: Mapping[str, Any]) -> Response:
    """The app's OpenAPI document as a JSON response, built at the first request and kept for the
    process (`info`: see hub.api.openapi_document.document)."""
    # Imported here: the generator loads Powertools' OpenAPI models, which no other request needs.
    from hub.api.openapi_document import document  # noqa: PLC0415

    return Response(
        status_code=200,
        content_type="application/json",
        body=document(app, info),
        headers={"Cache-Control": "public, max-age=300"},
    )
