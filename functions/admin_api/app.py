"""Admin API (Lambda Function URL): operator actions on messages and queues, connections'
client certificates, tenants and their API keys, admin tokens and the audit log.

Every route checks the caller's admin token (role and scope, hub.admin.access) before acting;
where the resource's tenant is known only from the stored item (a message, an integration, a
token), the use case reads it and checks then."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from hub.admin.access import Principal, Role
from hub.admin.connections import ConnectionSpec
from hub.admin.operations import QueueTab
from hub.api.http import (
    admin_principal,
    body_bytes,
    etag,
    if_match,
    install_error_handlers,
    json_response,
    parse_body,
    parse_query,
    validated,
)
from hub.certificates.model import decode_pkcs12_base64
from hub.domain.strict_json import parse_json
from hub.domain.tenancy import (
    DEFAULT_ROTATION_GRACE,
    MAX_ROTATION_GRACE_HOURS,
    IntegrationMode,
    MessageTypeConfig,
)
from hub.errors import ValidationFailed
from hub.logs import configure as configure_logging
from hub.observability import gc_after_first_invocation, traced
from hub.wiring import (
    admin_authenticator,
    api_key_admin,
    audit_log,
    certificate_service,
    connection_admin,
    integration_admin,
    operations,
    tenant_admin,
    token_admin,
)

logger = Logger()
configure_logging(logger)
metrics = Metrics()
app = LambdaFunctionUrlResolver()
install_error_handlers(app)

MessageId = Annotated[str, Field(pattern=r"^msg_[0-9a-z]{26}$")]
#: Tenant and connection ids: no '#' (they are parts of table keys).
Id = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")]


class ReprocessRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message_id: MessageId


class IntegrationPath(BaseModel):
    integration_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


class QueueQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tenant_id: Id
    tab: QueueTab
    limit: int = Field(default=50, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=2048)


class CertificateUpload(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tenant_id: Id
    #: A PKCS#12 (.pfx/.p12) file, base64; A1 files are a few KB.
    pkcs12_base64: str = Field(min_length=4, max_length=200_000, repr=False)
    password: SecretStr = Field(max_length=1024)


class TenantQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tenant_id: Id


class ConnectionPath(BaseModel):
    connection_id: Id


class KeyPath(BaseModel):
    tenant_id: Id
    key_id: Annotated[str, Field(pattern=r"^key_[0-9a-z]{26}$")]


class NewApiKey(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str | None = Field(default=None, min_length=1, max_length=100)
    #: Absent or null: every integration of the tenant.
    integration_ids: list[Id] | None = Field(default=None, min_length=1, max_length=50)


class Rotation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    grace_hours: int = Field(
        default=int(DEFAULT_ROTATION_GRACE.total_seconds() // 3600), ge=0, le=MAX_ROTATION_GRACE_HOURS
    )


TenantName = Annotated[str, Field(min_length=1, max_length=200)]


class NewTenant(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: Absent: generated (`tnt_` + 26 characters).
    tenant_id: Id | None = None
    name: TenantName
    default_mode: IntegrationMode = IntegrationMode.OBSERVABILITY


class TenantChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: TenantName | None = None
    default_mode: IntegrationMode | None = None

    @model_validator(mode="after")
    def _something(self) -> TenantChange:
        if self.name is None and self.default_mode is None:
            raise ValueError("give name, default_mode or both")
        return self


class KeyListQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limit: int = Field(default=50, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=2048)


class NewAdminToken(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = Field(min_length=1, max_length=100)
    role: Role
    #: Null: a platform token.
    tenant_id: Id | None


class TokenListQuery(KeyListQuery):
    #: Absent: the platform's tokens.
    tenant_id: Id | None = None


class TokenPath(BaseModel):
    token_id: Annotated[str, Field(pattern=r"^tok_[0-9a-z]{26}$")]


def authenticated(app: LambdaFunctionUrlResolver, next_middleware: NextMiddleware) -> Response:
    app.append_context(principal=admin_principal(app.current_event, admin_authenticator().principal))
    return next_middleware(app)


app.use([authenticated])


def _principal() -> Principal:
    principal = app.context["principal"]
    assert isinstance(principal, Principal)
    return principal


@app.post("/api/edi-hub/reprocess-message")
def reprocess_message() -> Response:
    request = parse_body(app.current_event, ReprocessRequest)
    record = operations().reprocess(request.message_id, _principal())
    return json_response(202, record.public_view())


@app.post("/api/admin/messages/<message_id>/cancel-retry")
def cancel_retry(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    record = operations().cancel_retry(checked.message_id, _principal())
    return json_response(200, record.public_view())


@app.get("/api/admin/messages/<message_id>")
def message_view(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    return json_response(200, operations().message_view(checked.message_id, _principal()))


@app.get("/api/admin/integrations/<integration_id>")
def integration_view(integration_id: str) -> Response:
    checked = validated(IntegrationPath, {"integration_id": integration_id}, "path")
    return json_response(200, operations().integration_view(checked.integration_id, _principal()))


@app.get("/api/admin/queue")
def queue() -> Response:
    query = parse_query(app.current_event, QueueQuery)
    _principal().require(Role.VIEWER, query.tenant_id, what="tenant")
    page = operations().queue(query.tenant_id, query.tab, query.limit, query.cursor)
    return json_response(
        200,
        {
            "tenant_id": query.tenant_id,
            "tab": query.tab.value,
            "items": page.rows,
            "next_cursor": page.next_cursor,
        },
    )


@app.post("/api/admin/dlq/<lane>/redrive")
def redrive(lane: str) -> Response:
    _principal().require_platform(Role.OPERATOR)
    return json_response(200, {"lane": lane, "moved": operations().redrive(lane, _principal())})


@app.post("/api/admin/connections/<connection_id>/certificate")
def upload_certificate(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    request = parse_body(app.current_event, CertificateUpload)
    _principal().require(Role.ADMIN, request.tenant_id, what="connection")
    view = certificate_service().upload(
        request.tenant_id,
        path.connection_id,
        decode_pkcs12_base64(request.pkcs12_base64),
        request.password.get_secret_value().encode("utf-8"),
        _principal(),
    )
    return json_response(201, view)


@app.get("/api/admin/connections/<connection_id>/certificate")
def describe_certificate(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    query = parse_query(app.current_event, TenantQuery)
    _principal().require(Role.VIEWER, query.tenant_id, what="connection")
    return json_response(200, certificate_service().describe(query.tenant_id, path.connection_id))


@app.post("/api/admin/tenants")
def create_tenant() -> Response:
    _principal().require_platform(Role.ADMIN)
    request = parse_body(app.current_event, NewTenant)
    created = tenant_admin().create(request.tenant_id, request.name, request.default_mode, _principal())
    return json_response(201, created)


@app.get("/api/admin/tenants")
def list_tenants() -> Response:
    _principal().require_platform(Role.VIEWER)
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(200, tenant_admin().list_tenants(query.limit, query.cursor))


@app.get("/api/admin/tenants/<tenant_id>")
def get_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="tenant")
    return json_response(200, tenant_admin().get(path.tenant_id))


@app.patch("/api/admin/tenants/<tenant_id>")
def update_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="tenant")
    request = parse_body(app.current_event, TenantChange)
    return json_response(
        200, tenant_admin().update(path.tenant_id, request.name, request.default_mode, _principal())
    )


@app.post("/api/admin/tenants/<tenant_id>/disable")
def disable_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require_platform(Role.ADMIN)
    return json_response(200, tenant_admin().disable(path.tenant_id, _principal()))


@app.post("/api/admin/tenants/<tenant_id>/enable")
def enable_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require_platform(Role.ADMIN)
    return json_response(200, tenant_admin().enable(path.tenant_id, _principal()))


@app.post("/api/admin/tenants/<tenant_id>/api-keys")
def create_api_key(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="tenant")
    request = parse_body(app.current_event, NewApiKey) if app.current_event.body else NewApiKey()
    created = api_key_admin().create(path.tenant_id, request.label, request.integration_ids, _principal())
    return json_response(201, created)


@app.get("/api/admin/tenants/<tenant_id>/api-keys")
def list_api_keys(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="tenant")
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(200, api_key_admin().list_keys(path.tenant_id, query.limit, query.cursor))


@app.post("/api/admin/tenants/<tenant_id>/api-keys/<key_id>/revoke")
def revoke_api_key(tenant_id: str, key_id: str) -> Response:
    path = validated(KeyPath, {"tenant_id": tenant_id, "key_id": key_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="tenant")
    return json_response(200, api_key_admin().revoke(path.tenant_id, path.key_id, _principal()))


@app.post("/api/admin/tenants/<tenant_id>/api-keys/<key_id>/rotate")
def rotate_api_key(tenant_id: str, key_id: str) -> Response:
    path = validated(KeyPath, {"tenant_id": tenant_id, "key_id": key_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="tenant")
    request = parse_body(app.current_event, Rotation) if app.current_event.body else Rotation()
    grace = timedelta(hours=request.grace_hours)
    return json_response(201, api_key_admin().rotate(path.tenant_id, path.key_id, grace, _principal()))


# --- admin tokens and the audit log (issue 11, authz) ---------------------------------------


@app.post("/api/admin/tokens")
def create_admin_token() -> Response:
    request = parse_body(app.current_event, NewAdminToken)
    created = token_admin().create(_principal(), request.tenant_id, request.label, request.role)
    return json_response(201, created)


@app.get("/api/admin/tokens")
def list_admin_tokens() -> Response:
    query = parse_query(app.current_event, TokenListQuery)
    return json_response(
        200, token_admin().list_tokens(_principal(), query.tenant_id, query.limit, query.cursor)
    )


@app.post("/api/admin/tokens/<token_id>/revoke")
def revoke_admin_token(token_id: str) -> Response:
    path = validated(TokenPath, {"token_id": token_id}, "path")
    return json_response(200, token_admin().revoke(_principal(), path.token_id))


@app.get("/api/admin/tenants/<tenant_id>/audit")
def tenant_audit(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="tenant")
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(200, audit_log().tenant_log(path.tenant_id, query.limit, query.cursor))


@app.get("/api/admin/audit")
def platform_audit() -> Response:
    _principal().require_platform(Role.VIEWER)
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(200, audit_log().platform_log(query.limit, query.cursor))


# --- issue 11: connections ------------------------------------------------------------------


class TenantConnectionPath(BaseModel):
    tenant_id: Id
    connection_id: Id


def _connection_path(tenant_id: str, connection_id: str) -> TenantConnectionPath:
    return validated(TenantConnectionPath, {"tenant_id": tenant_id, "connection_id": connection_id}, "path")


@app.post("/api/admin/tenants/<tenant_id>/connections")
def create_connection(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="tenant")
    request = parse_body(app.current_event, ConnectionSpec)
    view = connection_admin().create(_principal(), path.tenant_id, request)
    return json_response(201, view, etag(view["version"]))


@app.get("/api/admin/tenants/<tenant_id>/connections")
def list_connections(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="tenant")
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(200, connection_admin().list_connections(path.tenant_id, query.limit, query.cursor))


@app.get("/api/admin/tenants/<tenant_id>/connections/<connection_id>")
def get_connection(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    _principal().require(Role.VIEWER, path.tenant_id, what="connection")
    view = connection_admin().get(path.tenant_id, path.connection_id)
    return json_response(200, view, etag(view["version"]))


@app.put("/api/admin/tenants/<tenant_id>/connections/<connection_id>")
def update_connection(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="connection")
    request = parse_body(app.current_event, ConnectionSpec)
    view = connection_admin().update(
        _principal(), path.tenant_id, path.connection_id, request, if_match(app.current_event)
    )
    return json_response(200, view, etag(view["version"]))


@app.delete("/api/admin/tenants/<tenant_id>/connections/<connection_id>")
def delete_connection(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="connection")
    connection_admin().delete(_principal(), path.tenant_id, path.connection_id, if_match(app.current_event))
    return Response(status_code=204, body="")


@app.post("/api/admin/tenants/<tenant_id>/connections/<connection_id>/test")
def test_connection(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    _principal().require(Role.OPERATOR, path.tenant_id, what="connection")
    return json_response(200, connection_admin().test(path.tenant_id, path.connection_id))


# --- Issue 11: integrations (integrations helper) ---------------------------------------------
MessageTypeName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")]


class TenantIntegrationPath(BaseModel):
    tenant_id: Id
    integration_id: Id


class PreviewPath(TenantIntegrationPath):
    message_type: MessageTypeName


class PreviewRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: A sample payload: a JSON object, or text (XML when it starts with "<").
    payload: dict[str, Any] | str
    #: An unsaved message type to preview with instead of the saved one (a form before saving).
    config: MessageTypeConfig | None = None


def _integration_path(tenant_id: str, integration_id: str) -> TenantIntegrationPath:
    given = {"tenant_id": tenant_id, "integration_id": integration_id}
    return validated(TenantIntegrationPath, given, "path")


def _json_object() -> dict[str, Any]:
    data = parse_json(body_bytes(app.current_event))
    if not isinstance(data, dict):
        raise ValidationFailed("request body must be a JSON object")
    return data


@app.post("/api/admin/tenants/<tenant_id>/integrations")
def create_integration(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="integration")
    view = integration_admin().create(_principal(), path.tenant_id, _json_object())
    return json_response(201, view, etag(view["version"]))


@app.get("/api/admin/tenants/<tenant_id>/integrations")
def list_integrations(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="integration")
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(
        200, integration_admin().list_integrations(path.tenant_id, query.limit, query.cursor)
    )


@app.get("/api/admin/tenants/<tenant_id>/integrations/<integration_id>")
def get_integration(tenant_id: str, integration_id: str) -> Response:
    path = _integration_path(tenant_id, integration_id)
    _principal().require(Role.VIEWER, path.tenant_id, what="integration")
    view = integration_admin().get(path.tenant_id, path.integration_id)
    return json_response(200, view, etag(view["version"]))


@app.put("/api/admin/tenants/<tenant_id>/integrations/<integration_id>")
def replace_integration(tenant_id: str, integration_id: str) -> Response:
    path = _integration_path(tenant_id, integration_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="integration")
    view = integration_admin().replace(
        _principal(), path.tenant_id, path.integration_id, _json_object(), if_match(app.current_event)
    )
    return json_response(200, view, etag(view["version"]))


@app.delete("/api/admin/tenants/<tenant_id>/integrations/<integration_id>")
def delete_integration(tenant_id: str, integration_id: str) -> Response:
    path = _integration_path(tenant_id, integration_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="integration")
    integration_admin().delete(_principal(), path.tenant_id, path.integration_id, if_match(app.current_event))
    return Response(status_code=204, body="")


@app.post("/api/admin/tenants/<tenant_id>/integrations/<integration_id>/message-types/<message_type>/preview")
def preview_message_type(tenant_id: str, integration_id: str, message_type: str) -> Response:
    path = validated(
        PreviewPath,
        {"tenant_id": tenant_id, "integration_id": integration_id, "message_type": message_type},
        "path",
    )
    _principal().require(Role.VIEWER, path.tenant_id, what="integration")
    request = parse_body(app.current_event, PreviewRequest)
    answer = integration_admin().preview(
        path.tenant_id, path.integration_id, path.message_type, request.payload, request.config
    )
    return json_response(200, answer)


@gc_after_first_invocation
@logger.inject_lambda_context
@metrics.log_metrics
@traced
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
