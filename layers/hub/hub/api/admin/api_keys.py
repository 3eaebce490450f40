"""Partners' API keys of a tenant."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ConfigDict, Field

from hub.admin.access import Role, requires, tenant
from hub.admin.api_keys import ApiKeyNotActive, UnknownIntegrations
from hub.api.admin.common import ADMIN, BODY, Id, KeyListQuery, TenantQuery
from hub.api.admin.guard import principal as _principal
from hub.api.http import json_response, parse_body, parse_query, validated
from hub.api.openapi import OBJECT, answers, documented
from hub.domain.model import HubModel
from hub.domain.tenancy import DEFAULT_ROTATION_GRACE, MAX_ROTATION_GRACE_HOURS
from hub.errors import ValidationFailed
from hub.wiring.admin import api_key_admin

router = Router()


class KeyPath(HubModel):
    tenant_id: Id
    key_id: Annotated[str, Field(pattern=r"^key_[0-9a-z]{26}$")]


class NewApiKey(HubModel):
    model_config = ConfigDict(extra="forbid")
    label: str | None = Field(default=None, min_length=1, max_length=100)
    #: Absent or null: every integration of the tenant.
    integration_ids: list[Id] | None = Field(default=None, min_length=1, max_length=50)


class Rotation(HubModel):
    model_config = ConfigDict(extra="forbid")
    grace_hours: int = Field(
        default=int(DEFAULT_ROTATION_GRACE.total_seconds() // 3600), ge=0, le=MAX_ROTATION_GRACE_HOURS
    )


@router.post(
    "/api/admin/tenants/<tenant_id>/api-keys",
    **answers(
        "Create a partner API key (shown once)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, UnknownIntegrations),
        tags=["api-keys"],
    ),
)
@documented(body=NewApiKey, body_required=False, path=TenantQuery)
@requires(tenant(Role.ADMIN))
def create_api_key(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    request = parse_body(router.current_event, NewApiKey) if router.current_event.body else NewApiKey()
    created = api_key_admin().create(path.tenant_id, request.label, request.integration_ids, _principal())
    return json_response(201, created)


@router.get(
    "/api/admin/tenants/<tenant_id>/api-keys",
    **answers(
        "A tenant's API keys, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["api-keys"],
    ),
)
@documented(query=KeyListQuery, path=TenantQuery)
@requires(tenant(Role.VIEWER))
def list_api_keys(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    query = parse_query(router.current_event, KeyListQuery)
    return json_response(200, api_key_admin().list_keys(path.tenant_id, query.limit, query.cursor))


@router.post(
    "/api/admin/tenants/<tenant_id>/api-keys/<key_id>/revoke",
    **answers(
        "Revoke an API key",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["api-keys"],
    ),
)
@documented(path=KeyPath)
@requires(tenant(Role.ADMIN))
def revoke_api_key(tenant_id: str, key_id: str) -> Response:
    path = validated(KeyPath, {"tenant_id": tenant_id, "key_id": key_id}, "path")
    return json_response(200, api_key_admin().revoke(path.tenant_id, path.key_id, _principal()))


@router.post(
    "/api/admin/tenants/<tenant_id>/api-keys/<key_id>/rotate",
    **answers(
        "Rotate an API key (the old one works for the grace period)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, ApiKeyNotActive),
        tags=["api-keys"],
    ),
)
@documented(body=Rotation, body_required=False, path=KeyPath)
@requires(tenant(Role.ADMIN))
def rotate_api_key(tenant_id: str, key_id: str) -> Response:
    path = validated(KeyPath, {"tenant_id": tenant_id, "key_id": key_id}, "path")
    request = parse_body(router.current_event, Rotation) if router.current_event.body else Rotation()
    grace = timedelta(hours=request.grace_hours)
    return json_response(201, api_key_admin().rotate(path.tenant_id, path.key_id, grace, _principal()))
