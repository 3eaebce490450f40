"""Tenants (create, disable and enable are the platform's)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ConfigDict, Field, model_validator

from hub.admin.access import Role, platform, requires, tenant
from hub.admin.tenants import Keep, TenantExists
from hub.api.admin.common import ADMIN, BODY, Id, KeyListQuery, TenantQuery
from hub.api.admin.guard import principal as _principal
from hub.api.http import json_response, parse_body, parse_query, validated
from hub.api.openapi import OBJECT, answers, documented
from hub.domain.model import HubModel
from hub.domain.rate_limit import Rate
from hub.domain.tenancy import IntegrationMode
from hub.errors import ValidationFailed
from hub.wiring import tenant_admin

router = Router()


TenantName = Annotated[str, Field(min_length=1, max_length=200)]


class NewTenant(HubModel):
    model_config = ConfigDict(extra="forbid")
    #: Absent: generated (`tnt_` + 26 characters).
    tenant_id: Id | None = None
    name: TenantName
    default_mode: IntegrationMode = IntegrationMode.OBSERVABILITY
    #: The partner API's limit for the tenant, per instance; absent or null: the stack's default.
    rate_limit: Rate | None = None


class TenantChange(HubModel):
    model_config = ConfigDict(extra="forbid")
    name: TenantName | None = None
    default_mode: IntegrationMode | None = None
    #: The partner API's limit, per instance (platform admins only); null: the stack's default.
    rate_limit: Rate | None = None

    @model_validator(mode="after")
    def _something(self) -> TenantChange:
        if self.name is None and self.default_mode is None and not self.changes_rate_limit:
            raise ValueError("give name, default_mode, rate_limit or several")
        return self

    @property
    def changes_rate_limit(self) -> bool:
        return "rate_limit" in self.model_fields_set


@router.post(
    "/api/admin/tenants",
    **answers(
        "Create a tenant (platform)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, TenantExists),
        tags=["tenants"],
    ),
)
@documented(body=NewTenant)
@requires(platform(Role.ADMIN))
def create_tenant() -> Response:
    request = parse_body(router.current_event, NewTenant)
    created = tenant_admin().create(
        request.tenant_id, request.name, request.default_mode, _principal(), request.rate_limit
    )
    return json_response(201, created)


@router.get(
    "/api/admin/tenants",
    **answers(
        "List tenants (platform), cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["tenants"],
    ),
)
@documented(query=KeyListQuery)
@requires(platform(Role.VIEWER))
def list_tenants() -> Response:
    query = parse_query(router.current_event, KeyListQuery)
    return json_response(200, tenant_admin().list_tenants(query.limit, query.cursor))


@router.get(
    "/api/admin/tenants/<tenant_id>",
    **answers(
        "A tenant",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["tenants"],
    ),
)
@documented(path=TenantQuery)
@requires(tenant(Role.VIEWER))
def get_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    return json_response(200, tenant_admin().get(path.tenant_id))


@router.patch(
    "/api/admin/tenants/<tenant_id>",
    **answers(
        "Change a tenant's name, default mode or rate limit (the limit: platform admins only)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY),
        tags=["tenants"],
    ),
)
@documented(body=TenantChange, path=TenantQuery)
@requires(tenant(Role.ADMIN))
def update_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    request = parse_body(router.current_event, TenantChange)
    if request.changes_rate_limit:  # a tenant's admin may not raise its own limit
        _principal().require_platform(Role.ADMIN)
    rate_limit = request.rate_limit if request.changes_rate_limit else Keep.KEEP
    return json_response(
        200,
        tenant_admin().update(path.tenant_id, request.name, request.default_mode, _principal(), rate_limit),
    )


@router.post(
    "/api/admin/tenants/<tenant_id>/disable",
    **answers(
        "Disable a tenant: its keys answer 401, its messages are kept (platform)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["tenants"],
    ),
)
@documented(path=TenantQuery)
@requires(platform(Role.ADMIN))
def disable_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    return json_response(200, tenant_admin().disable(path.tenant_id, _principal()))


@router.post(
    "/api/admin/tenants/<tenant_id>/enable",
    **answers(
        "Enable a disabled tenant (platform)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["tenants"],
    ),
)
@documented(path=TenantQuery)
@requires(platform(Role.ADMIN))
def enable_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    return json_response(200, tenant_admin().enable(path.tenant_id, _principal()))
