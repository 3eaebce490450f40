"""The audit logs (a tenant's, the platform's)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from hub.admin.access import Role, platform, requires, tenant
from hub.api.admin.common import ADMIN, KeyListQuery, TenantQuery
from hub.api.http import json_response, parse_query, validated
from hub.api.openapi import OBJECT, answers, documented
from hub.errors import ValidationFailed
from hub.wiring.admin import audit_log

router = Router()


@router.get(
    "/api/admin/tenants/<tenant_id>/audit",
    **answers(
        "A tenant's audit log, newest first, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["audit"],
    ),
)
@documented(query=KeyListQuery, path=TenantQuery)
@requires(tenant(Role.VIEWER))
def tenant_audit(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    query = parse_query(router.current_event, KeyListQuery)
    return json_response(200, audit_log().tenant_log(path.tenant_id, query.limit, query.cursor))


@router.get(
    "/api/admin/audit",
    **answers(
        "The platform's audit log, newest first, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["audit"],
    ),
)
@documented(query=KeyListQuery)
@requires(platform(Role.VIEWER))
def platform_audit() -> Response:
    query = parse_query(router.current_event, KeyListQuery)
    return json_response(200, audit_log().platform_log(query.limit, query.cursor))
