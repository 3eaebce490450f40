"""Tenants (create, disable and enable are the platform's)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ConfigDict, Field, model_validator

from hub.admin.access import Role, platform, requires, tenant
from hub.admin.tenants import Keep, RetentionChange, TenantExists
from hub.api.admin.common import ADMIN, BODY, Id, KeyListQuery, TenantQuery
from hub.api.admin.guard import principal as _principal
from hub.api.http import json_response, parse_body, parse_query, validated
from hub.api.openapi import OBJECT, answers, documented
from hub.domain.model import HubModel
from hub.domain.rate_limit import Rate
from hub.domain.retention import MAX_RETENTION_DAYS, MIN_RETENTION_DAYS
from hub.domain.tenancy import IntegrationMode
from hub.errors import ValidationFailed
from hub.wiring.admin import tenant_admin

router = Router()


TenantName = Annotated[str, Field(min_length=1, max_length=200)]
#: A retention in days (issue 29); null: the platform's default.
RetentionDays = Annotated[int, Field(ge=MIN_RETENTION_DAYS, le=MAX_RETENTION_DAYS)]
_RETENTION_FIELDS = ("payload_retention_days", "message_retention_days")


class NewTenant(HubModel):
    model_config = ConfigDict(extra="forbid")
    #: Absent: generated (`tnt_` + 26 characters).
    tenant_id: Id | None = None
    name: TenantName
    default_mode: IntegrationMode = IntegrationMode.OBSERVABILITY
    #: The partner API's limit for the tenant, per instance; absent or null: the stack's default.
    rate_limit: Rate | None = None
    #: Days a payload is kept (then purged: the message keeps its metadata), and days a message
    #: is kept (then deleted with its satellites); absent or null: the platform's default. The
    #: payload's may not exceed the message's.
    payload_retention_days: RetentionDays | None = None
    message_retention_days: RetentionDays | None = None


class TenantChange(HubModel):
    model_config = ConfigDict(extra="forbid")
    name: TenantName | None = None
    default_mode: IntegrationMode | None = None
    #: The partner API's limit, per instance (platform admins only); null: the stack's default.
    rate_limit: Rate | None = None
    #: Retention in days (platform admins only); null: the platform's default. Applies to
    #: messages received from then on.
    payload_retention_days: RetentionDays | None = None
    message_retention_days: RetentionDays | None = None

    @model_validator(mode="after")
    def _something(self) -> TenantChange:
        if (
            self.name is None
            and self.default_mode is None
            and not self.changes_rate_limit
            and not self.changes_retention
        ):
            raise ValueError(
                "give name, default_mode, rate_limit, payload_retention_days, message_retention_days"
                " or several"
            )
        return self

    @property
    def changes_rate_limit(self) -> bool:
        return "rate_limit" in self.model_fields_set

    @property
    def changes_retention(self) -> bool:
        return any(name in self.model_fields_set for name in _RETENTION_FIELDS)

    def retention(self) -> RetentionChange:
        given = self.model_fields_set
        return RetentionChange(
            payload_days=self.payload_retention_days if "payload_retention_days" in given else Keep.KEEP,
            message_days=self.message_retention_days if "message_retention_days" in given else Keep.KEEP,
        )


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
        request.tenant_id,
        request.name,
        request.default_mode,
        _principal(),
        request.rate_limit,
        payload_retention_days=request.payload_retention_days,
        message_retention_days=request.message_retention_days,
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
        "Change a tenant's name, default mode, rate limit or retention (the last two: platform admins only)",
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
    if request.changes_rate_limit or request.changes_retention:
        # A tenant's admin may not raise its own limit, nor change how long the platform keeps
        # its data (a term of its contract, and storage the platform pays for).
        _principal().require_platform(Role.ADMIN)
    rate_limit = request.rate_limit if request.changes_rate_limit else Keep.KEEP
    retention = request.retention() if request.changes_retention else None
    return json_response(
        200,
        tenant_admin().update(
            path.tenant_id,
            request.name,
            request.default_mode,
            _principal(),
            rate_limit=rate_limit,
            retention=retention,
        ),
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
