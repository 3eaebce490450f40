"""Builds an API's OpenAPI 3.1 document from its resolver with Powertools' generator, once per
process. Loaded only by the OpenAPI route (hub.api.openapi.serve): the generator and its models
cost about a tenth of a second to import, which no other request should pay."""

from __future__ import annotations

import inspect
import json
import re
import threading
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from pydantic import ConfigDict
from pydantic.fields import FieldInfo

from hub.api.openapi import ERROR_SCHEMA_REF, documented_parts
from hub.domain.model import HubModel

_lock = threading.Lock()
_documents: dict[int, str] = {}


class ErrorDetail(HubModel):
    model_config = ConfigDict(title="ErrorDetail")

    #: Machine-readable: decide on it, never on the message.
    code: str
    #: For people; never echoes request values.
    message: str
    #: Structured context when the code has some (fields that failed, allowed methods, limits).
    details: Any = None


class Error(HubModel):
    """The one error shape of every hub API."""

    error: ErrorDetail


def document(app: ApiGatewayResolver, info: Mapping[str, Any]) -> str:
    """`app`'s OpenAPI document (JSON text), generated at the first call and cached for the process.
    `info`: keyword arguments of Powertools' `get_openapi_schema` (title, version, description,
    security_schemes, security, servers...)."""
    key = id(app)
    with _lock:
        if key not in _documents:
            _documents[key] = json.dumps(generate(app, info), separators=(",", ":"), sort_keys=True)
        return _documents[key]


def generate(app: ApiGatewayResolver, info: Mapping[str, Any]) -> dict[str, Any]:
    """`app`'s OpenAPI document as a dict, freshly generated."""
    for route in [*app._static_routes, *app._dynamic_routes]:
        _declare_parameters(route.func, route.openapi_path)
    schema = app.get_openapi_schema(**info)
    generated: dict[str, Any] = json.loads(schema.model_dump_json(by_alias=True, exclude_none=True))
    components = generated.setdefault("components", {}).setdefault("schemas", {})
    for item in generated["paths"].values():
        for operation in item.values():
            for response in operation["responses"].values():
                if not response.get("content"):  # a body-less answer (204)
                    response.pop("content", None)
            _optional_body_is_absent_not_null(operation)
    error_schema = Error.model_json_schema(ref_template="#/components/schemas/{model}")
    components.update(error_schema.pop("$defs", {}))
    components["Error"] = error_schema
    # Powertools always adds FastAPI-style validation error schemas; with validation off no
    # route answers them: they go unless a route refers to them.
    powertools_only = ("HTTPValidationError", "ResponseValidationError", "ValidationError")
    kept = {name: schema for name, schema in components.items() if name not in powertools_only}
    text = json.dumps({**generated, "components": {"schemas": kept}})
    for unused in powertools_only:
        if f"#/components/schemas/{unused}" not in text:
            components.pop(unused, None)
    assert ERROR_SCHEMA_REF.rpartition("/")[2] in components
    return generated


def _optional_body_is_absent_not_null(operation: dict[str, Any]) -> None:
    """An optional body is one a client may leave out, not one it may send as JSON `null`
    (which `parse_body` refuses, as it refuses any body that is not an object): Powertools writes
    `Model | None` as `anyOf: [Model, null]`, so the schema keeps only the model, and
    `required: false` says the body may be absent."""
    body = operation.get("requestBody")
    if not body or body.get("required"):
        return
    for media in body.get("content", {}).values():
        choices = media.get("schema", {}).get("anyOf", [])
        models = [choice for choice in choices if choice != {"type": "null"}]
        if len(models) == 1 and len(choices) == 2:
            media["schema"] = models[0]
    body["required"] = False


def _declare_parameters(handler: Callable[..., Any], openapi_path: str) -> None:
    """Gives `handler` the signature the document shows: its path parameters (typed by the
    path model when it has one), the query and header models' fields and the body model. Powertools reads
    signatures only to build documents (validation is off), and calls handlers with path
    parameters only, so this changes no request's path."""
    parts = documented_parts(handler)
    parameters: list[inspect.Parameter] = []
    path_fields = parts.path.model_fields if parts.path else {}
    for name in re.findall(r"{(\w+)}", openapi_path):
        field = path_fields.get(name)
        annotation: Any = _annotated(field, Path()) if field else str
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation))
    models = ((parts.query, Query), (parts.headers, Header), *((m, Header) for m in parts.middleware_headers))
    for model, marker in models:
        for name, field in (model.model_fields if model else {}).items():
            default = inspect.Parameter.empty if field.is_required() else field.get_default()
            parameters.append(
                inspect.Parameter(
                    name,
                    inspect.Parameter.KEYWORD_ONLY,
                    annotation=_annotated(field, marker()),
                    default=default,
                )
            )
    if parts.body:
        body_type: Any = parts.body if parts.body_required else parts.body | None
        parameters.append(
            inspect.Parameter(
                "body",
                inspect.Parameter.KEYWORD_ONLY,
                annotation=Annotated[body_type, Body(media_type="application/json")],
                default=inspect.Parameter.empty if parts.body_required else None,
            )
        )
    handler.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]


def _annotated(field: FieldInfo, marker: FieldInfo) -> Any:
    """`field`'s type with its constraints (pattern, bounds) and `marker` (where it comes from)."""
    if field.description:
        marker.description = field.description
    return Annotated[(field.annotation, *field.metadata, marker)]
