"""Connections: configuration, client certificate, status-callback token, the connection test,
pause and circuit-breaker state."""

from __future__ import annotations

from datetime import timedelta

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ConfigDict, Field, SecretStr

from hub.admin.access import Role, TenantFrom, requires, tenant
from hub.admin.connections import CertificateRequired, ConnectionExists, ConnectionInUse, ConnectionSpec
from hub.api.admin.common import (
    ADMIN,
    BODY,
    CERTIFICATE,
    ETAG,
    VERSIONED,
    ConnectionPath,
    Id,
    KeyListQuery,
    TenantQuery,
)
from hub.api.admin.guard import principal as _principal
from hub.api.http import etag, if_match, json_response, parse_body, parse_query, validated
from hub.api.openapi import OBJECT, answers, documented
from hub.api.views import IfMatch
from hub.certificates.model import decode_pkcs12_base64
from hub.delivery.egress import DestinationNotAllowed
from hub.domain.delivery_status import DEFAULT_CALLBACK_GRACE, MAX_CALLBACK_GRACE_HOURS
from hub.domain.model import HubModel
from hub.errors import Conflict, QueueUnavailable, SecretRequired, ValidationFailed
from hub.wiring.admin import callback_token_admin, certificate_service, connection_admin, connection_control

router = Router()


class CertificateUpload(HubModel):
    model_config = ConfigDict(extra="forbid")
    tenant_id: Id
    #: A PKCS#12 (.pfx/.p12) file, base64; A1 files are a few KB.
    pkcs12_base64: str = Field(min_length=4, max_length=200_000, repr=False)
    password: SecretStr = Field(max_length=1024)


class TenantConnectionPath(HubModel):
    tenant_id: Id
    connection_id: Id


def _connection_path(tenant_id: str, connection_id: str) -> TenantConnectionPath:
    return validated(TenantConnectionPath, {"tenant_id": tenant_id, "connection_id": connection_id}, "path")


class CallbackTokenMint(HubModel):
    model_config = ConfigDict(extra="forbid")
    #: How long the previous token keeps working (0: it stops at once).
    grace_hours: int = Field(
        default=int(DEFAULT_CALLBACK_GRACE.total_seconds() // 3600), ge=0, le=MAX_CALLBACK_GRACE_HOURS
    )


@router.post(
    "/api/admin/connections/<connection_id>/certificate",
    **answers(
        "Upload a connection's client certificate (PKCS#12)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, *CERTIFICATE),
        tags=["connections"],
    ),
)
@documented(body=CertificateUpload, path=ConnectionPath)
@requires(tenant(Role.ADMIN, tenant_from=TenantFrom.BODY, what="connection"))
def upload_certificate(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    request = parse_body(router.current_event, CertificateUpload)
    view = certificate_service().upload(
        request.tenant_id,
        path.connection_id,
        decode_pkcs12_base64(request.pkcs12_base64),
        request.password.get_secret_value().encode("utf-8"),
        _principal(),
    )
    return json_response(201, view)


@router.get(
    "/api/admin/connections/<connection_id>/certificate",
    **answers(
        "A connection's client certificate (metadata only)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
    ),
)
@documented(query=TenantQuery, path=ConnectionPath)
@requires(tenant(Role.VIEWER, tenant_from=TenantFrom.QUERY, what="connection"))
def describe_certificate(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    query = parse_query(router.current_event, TenantQuery)
    return json_response(200, certificate_service().describe(query.tenant_id, path.connection_id))


@router.post(
    "/api/admin/tenants/<tenant_id>/connections",
    **answers(
        "Create a connection",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, ConnectionExists, CertificateRequired, DestinationNotAllowed),
        tags=["connections"],
        headers={201: ETAG},
    ),
)
@documented(body=ConnectionSpec, path=TenantQuery)
@requires(tenant(Role.ADMIN))
def create_connection(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    request = parse_body(router.current_event, ConnectionSpec)
    view = connection_admin().create(_principal(), path.tenant_id, request)
    return json_response(201, view, etag(view["version"]))


@router.get(
    "/api/admin/tenants/<tenant_id>/connections",
    **answers(
        "A tenant's connections, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
    ),
)
@documented(query=KeyListQuery, path=TenantQuery)
@requires(tenant(Role.VIEWER))
def list_connections(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    query = parse_query(router.current_event, KeyListQuery)
    return json_response(200, connection_admin().list_connections(path.tenant_id, query.limit, query.cursor))


@router.get(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>",
    **answers(
        "A connection (secrets masked)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
        headers={200: ETAG},
    ),
)
@documented(path=TenantConnectionPath)
@requires(tenant(Role.VIEWER, what="connection"))
def get_connection(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    view = connection_admin().get(path.tenant_id, path.connection_id)
    return json_response(200, view, etag(view["version"]))


@router.put(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>",
    **answers(
        "Replace a connection (If-Match: its ETag)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY, *VERSIONED, CertificateRequired, DestinationNotAllowed, SecretRequired),
        tags=["connections"],
        headers={200: ETAG},
    ),
)
@documented(body=ConnectionSpec, path=TenantConnectionPath, headers=IfMatch)
@requires(tenant(Role.ADMIN, what="connection"))
def update_connection(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    request = parse_body(router.current_event, ConnectionSpec)
    view = connection_admin().update(
        _principal(), path.tenant_id, path.connection_id, request, if_match(router.current_event)
    )
    return json_response(200, view, etag(view["version"]))


@router.delete(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>",
    **answers(
        "Delete a connection no integration uses",
        ok={204: None},
        errors=(*ADMIN, *VERSIONED, ConnectionInUse),
        tags=["connections"],
    ),
)
@documented(path=TenantConnectionPath, headers=IfMatch)
@requires(tenant(Role.ADMIN, what="connection"))
def delete_connection(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    connection_admin().delete(
        _principal(), path.tenant_id, path.connection_id, if_match(router.current_event)
    )
    return Response(status_code=204, body="")


@router.post(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>/test",
    **answers(
        "Make one harmless call to a connection and report the error class it would get",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
    ),
)
@documented(path=TenantConnectionPath)
@requires(tenant(Role.OPERATOR, what="connection"))
def test_connection(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    return json_response(200, connection_admin().test(_principal(), path.tenant_id, path.connection_id))


@router.get(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>/callback-token",
    **answers(
        "A connection's status-callback token (metadata only)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
    ),
)
@documented(path=TenantConnectionPath)
@requires(tenant(Role.VIEWER, what="connection"))
def describe_callback_token(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    return json_response(200, callback_token_admin().describe(path.tenant_id, path.connection_id))


@router.post(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>/callback-token",
    **answers(
        "Mint a status-callback token for a connection (shown once; rotates an existing one)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, Conflict),
        tags=["connections"],
    ),
)
@documented(body=CallbackTokenMint, body_required=False, path=TenantConnectionPath)
@requires(tenant(Role.ADMIN, what="connection"))
def mint_callback_token(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    event = router.current_event
    request = parse_body(event, CallbackTokenMint) if event.body else CallbackTokenMint()
    minted = callback_token_admin().mint(
        _principal(), path.tenant_id, path.connection_id, timedelta(hours=request.grace_hours)
    )
    return json_response(201, minted)


@router.delete(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>/callback-token",
    **answers(
        "Revoke a connection's status-callback token (its callbacks answer 401)",
        ok={204: None},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
    ),
)
@documented(path=TenantConnectionPath)
@requires(tenant(Role.ADMIN, what="connection"))
def revoke_callback_token(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    callback_token_admin().revoke(_principal(), path.tenant_id, path.connection_id)
    return Response(status_code=204, body="")


@router.post(
    "/api/admin/connections/<connection_id>/pause",
    **answers(
        "Pause a connection: deliveries wait on it (retry_pending, held_reason paused)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
        description="Operator role. Pausing a paused connection changes nothing.",
    ),
)
@documented(query=TenantQuery, path=ConnectionPath)
@requires(tenant(Role.OPERATOR, tenant_from=TenantFrom.QUERY, what="connection"))
def pause_connection(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    query = parse_query(router.current_event, TenantQuery)
    return json_response(200, connection_control().pause(_principal(), query.tenant_id, path.connection_id))


@router.post(
    "/api/admin/connections/<connection_id>/resume",
    **answers(
        "Resume a connection: its held messages are released at the bounded rate",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed, QueueUnavailable),
        tags=["connections"],
        description="Operator role. Resuming a running connection changes nothing.",
    ),
)
@documented(query=TenantQuery, path=ConnectionPath)
@requires(tenant(Role.OPERATOR, tenant_from=TenantFrom.QUERY, what="connection"))
def resume_connection(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    query = parse_query(router.current_event, TenantQuery)
    return json_response(200, connection_control().resume(_principal(), query.tenant_id, path.connection_id))


@router.get(
    "/api/admin/connections/<connection_id>/state",
    **answers(
        "A connection's pause and circuit-breaker state",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
    ),
)
@documented(query=TenantQuery, path=ConnectionPath)
@requires(tenant(Role.VIEWER, tenant_from=TenantFrom.QUERY, what="connection"))
def connection_state(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    query = parse_query(router.current_event, TenantQuery)
    return json_response(200, connection_control().state(_principal(), query.tenant_id, path.connection_id))
