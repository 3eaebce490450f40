"""Integrations: configuration, mapping previews, cards."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ConfigDict, Field

from hub.admin.access import Role, requires, tenant
from hub.admin.integrations import IntegrationBody, IntegrationExists, IntegrationInUse, UnknownConnection
from hub.api.admin.common import ADMIN, BODY, ETAG, VERSIONED, Id, KeyListQuery, TenantQuery
from hub.api.admin.guard import principal as _principal
from hub.api.http import body_bytes, etag, if_match, json_response, parse_body, parse_query, validated
from hub.api.openapi import OBJECT, answers, documented
from hub.api.views import IfMatch
from hub.domain.model import HubModel
from hub.domain.strict_json import parse_json
from hub.domain.tenancy import MessageTypeConfig
from hub.errors import SecretRequired, UnknownMessageType, ValidationFailed
from hub.mapping import MappingTooLarge
from hub.wiring.admin import integration_admin, integration_cards

router = Router()


MessageTypeName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")]


class TenantIntegrationPath(HubModel):
    tenant_id: Id
    integration_id: Id


class PreviewPath(TenantIntegrationPath):
    message_type: MessageTypeName


class PreviewRequest(HubModel):
    model_config = ConfigDict(extra="forbid")
    #: A sample payload: a JSON object, or text (XML when it starts with "<").
    payload: dict[str, Any] | str
    #: An unsaved message type to preview with instead of the saved one (a form before saving).
    config: MessageTypeConfig | None = None


def _integration_path(tenant_id: str, integration_id: str) -> TenantIntegrationPath:
    given = {"tenant_id": tenant_id, "integration_id": integration_id}
    return validated(TenantIntegrationPath, given, "path")


def _json_object() -> dict[str, Any]:
    data = parse_json(body_bytes(router.current_event))
    if not isinstance(data, dict):
        raise ValidationFailed("request body must be a JSON object")
    return data


@router.post(
    "/api/admin/tenants/<tenant_id>/integrations",
    **answers(
        "Create an integration",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, IntegrationExists, UnknownConnection),
        tags=["integrations"],
        headers={201: ETAG},
    ),
)
@documented(body=IntegrationBody, path=TenantQuery)
@requires(tenant(Role.ADMIN, what="integration"))
def create_integration(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    view = integration_admin().create(_principal(), path.tenant_id, _json_object())
    return json_response(201, view, etag(view["version"]))


@router.get(
    "/api/admin/tenants/<tenant_id>/integrations",
    **answers(
        "A tenant's integrations, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["integrations"],
    ),
)
@documented(query=KeyListQuery, path=TenantQuery)
@requires(tenant(Role.VIEWER, what="integration"))
def list_integrations(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    query = parse_query(router.current_event, KeyListQuery)
    return json_response(
        200, integration_admin().list_integrations(path.tenant_id, query.limit, query.cursor)
    )


@router.get(
    "/api/admin/tenants/<tenant_id>/integrations/<integration_id>",
    **answers(
        "An integration (secrets masked)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["integrations"],
        headers={200: ETAG},
    ),
)
@documented(path=TenantIntegrationPath)
@requires(tenant(Role.VIEWER, what="integration"))
def get_integration(tenant_id: str, integration_id: str) -> Response:
    path = _integration_path(tenant_id, integration_id)
    view = integration_admin().get(path.tenant_id, path.integration_id)
    return json_response(200, view, etag(view["version"]))


@router.put(
    "/api/admin/tenants/<tenant_id>/integrations/<integration_id>",
    **answers(
        "Replace an integration (If-Match: its ETag)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY, *VERSIONED, UnknownConnection, SecretRequired),
        tags=["integrations"],
        headers={200: ETAG},
    ),
)
@documented(body=IntegrationBody, path=TenantIntegrationPath, headers=IfMatch)
@requires(tenant(Role.ADMIN, what="integration"))
def replace_integration(tenant_id: str, integration_id: str) -> Response:
    path = _integration_path(tenant_id, integration_id)
    view = integration_admin().replace(
        _principal(), path.tenant_id, path.integration_id, _json_object(), if_match(router.current_event)
    )
    return json_response(200, view, etag(view["version"]))


@router.delete(
    "/api/admin/tenants/<tenant_id>/integrations/<integration_id>",
    **answers(
        "Delete an integration with no message in flight or waiting",
        ok={204: None},
        errors=(*ADMIN, *VERSIONED, IntegrationInUse),
        tags=["integrations"],
    ),
)
@documented(path=TenantIntegrationPath, headers=IfMatch)
@requires(tenant(Role.ADMIN, what="integration"))
def delete_integration(tenant_id: str, integration_id: str) -> Response:
    path = _integration_path(tenant_id, integration_id)
    integration_admin().delete(
        _principal(), path.tenant_id, path.integration_id, if_match(router.current_event)
    )
    return Response(status_code=204, body="")


@router.post(
    "/api/admin/tenants/<tenant_id>/integrations/<integration_id>/message-types/<message_type>/preview",
    **answers(
        "Run a message type's mapping on a sample payload (no side effects)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY, UnknownMessageType, MappingTooLarge),
        tags=["integrations"],
    ),
)
@documented(body=PreviewRequest, path=PreviewPath)
@requires(tenant(Role.VIEWER, what="integration"))
def preview_message_type(tenant_id: str, integration_id: str, message_type: str) -> Response:
    path = validated(
        PreviewPath,
        {"tenant_id": tenant_id, "integration_id": integration_id, "message_type": message_type},
        "path",
    )
    request = parse_body(router.current_event, PreviewRequest)
    answer = integration_admin().preview(
        path.tenant_id, path.integration_id, path.message_type, request.payload, request.config
    )
    return json_response(200, answer)


@router.get(
    "/api/admin/tenants/<tenant_id>/integration-cards",
    **answers(
        "A tenant's integrations as cards with badges, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["integrations"],
        description=(
            "Viewer role. One card per integration (the integrations listing's order and "
            "cursor): what it is, `badges` (`{kind, text, level}`: read_only, certificate, "
            "paused, circuit_open, connection_gone) and the facts behind them (`certificate`, "
            "`connection_state`). The page's connections, certificates and states are read in "
            "batches, never one request per card."
        ),
    ),
)
@documented(query=KeyListQuery, path=TenantQuery)
@requires(tenant(Role.VIEWER))
def integration_cards_route(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    query = parse_query(router.current_event, KeyListQuery)
    return json_response(200, integration_cards().cards(path.tenant_id, query.limit, query.cursor))


class UnsavedPreviewRequest(HubModel):
    model_config = ConfigDict(extra="forbid")
    #: A sample payload: a JSON object, or text (XML when it starts with "<").
    payload: dict[str, Any] | str
    #: The message type as the form holds it (mapping, business keys), not saved anywhere.
    config: MessageTypeConfig


@router.post(
    "/api/admin/tenants/<tenant_id>/mapping-preview",
    **answers(
        "Run an unsaved message type's mapping on a sample payload (the create form; no side effects)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY, MappingTooLarge),
        tags=["integrations"],
        description=(
            "Viewer role. For an integration not saved yet; a saved one previews at "
            "`.../integrations/{integration_id}/message-types/{message_type}/preview`."
        ),
    ),
)
@documented(body=UnsavedPreviewRequest, path=TenantQuery)
@requires(tenant(Role.VIEWER))
def preview_unsaved_mapping(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    request = parse_body(router.current_event, UnsavedPreviewRequest)
    return json_response(
        200, integration_admin().preview_unsaved(path.tenant_id, request.config, request.payload)
    )
