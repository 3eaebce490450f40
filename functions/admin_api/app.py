"""Admin API (Lambda Function URL): operator actions on messages and queues, connections'
client certificates, tenants and their API keys."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from hub.admin.access import Principal, Role
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
from hub.config import settings
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
from hub.wiring import api_key_admin, certificate_service, integration_admin, operations, tenant_admin

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


def authenticated(app: LambdaFunctionUrlResolver, next_middleware: NextMiddleware) -> Response:
    app.append_context(principal=admin_principal(app.current_event, settings().admin_token_sha256))
    return next_middleware(app)


app.use([authenticated])


def _principal() -> Principal:
    principal = app.context["principal"]
    assert isinstance(principal, Principal)
    return principal


def _actor() -> str:
    """Who acts, as audit events and logs name it: the token's id."""
    return _principal().token_id


@app.post("/api/edi-hub/reprocess-message")
def reprocess_message() -> Response:
    request = parse_body(app.current_event, ReprocessRequest)
    record = operations().reprocess(request.message_id, _actor())
    return json_response(202, record.public_view())


@app.post("/api/admin/messages/<message_id>/cancel-retry")
def cancel_retry(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    record = operations().cancel_retry(checked.message_id, _actor())
    return json_response(200, record.public_view())


@app.get("/api/admin/messages/<message_id>")
def message_view(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    return json_response(200, operations().message_view(checked.message_id))


@app.get("/api/admin/integrations/<integration_id>")
def integration_view(integration_id: str) -> Response:
    checked = validated(IntegrationPath, {"integration_id": integration_id}, "path")
    return json_response(200, operations().integration_view(checked.integration_id))


@app.get("/api/admin/queue")
def queue() -> Response:
    query = parse_query(app.current_event, QueueQuery)
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
    return json_response(200, {"lane": lane, "moved": operations().redrive(lane, _actor())})


@app.post("/api/admin/connections/<connection_id>/certificate")
def upload_certificate(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    request = parse_body(app.current_event, CertificateUpload)
    view = certificate_service().upload(
        request.tenant_id,
        path.connection_id,
        decode_pkcs12_base64(request.pkcs12_base64),
        request.password.get_secret_value().encode("utf-8"),
        _actor(),
    )
    return json_response(201, view)


@app.get("/api/admin/connections/<connection_id>/certificate")
def describe_certificate(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    query = parse_query(app.current_event, TenantQuery)
    return json_response(200, certificate_service().describe(query.tenant_id, path.connection_id))


@app.post("/api/admin/tenants")
def create_tenant() -> Response:
    request = parse_body(app.current_event, NewTenant)
    created = tenant_admin().create(request.tenant_id, request.name, request.default_mode, _actor())
    return json_response(201, created)


@app.get("/api/admin/tenants")
def list_tenants() -> Response:
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(200, tenant_admin().list_tenants(query.limit, query.cursor))


@app.get("/api/admin/tenants/<tenant_id>")
def get_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    return json_response(200, tenant_admin().get(path.tenant_id))


@app.patch("/api/admin/tenants/<tenant_id>")
def update_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    request = parse_body(app.current_event, TenantChange)
    return json_response(
        200, tenant_admin().update(path.tenant_id, request.name, request.default_mode, _actor())
    )


@app.post("/api/admin/tenants/<tenant_id>/disable")
def disable_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    return json_response(200, tenant_admin().disable(path.tenant_id, _actor()))


@app.post("/api/admin/tenants/<tenant_id>/enable")
def enable_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    return json_response(200, tenant_admin().enable(path.tenant_id, _actor()))


@app.post("/api/admin/tenants/<tenant_id>/api-keys")
def create_api_key(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    request = parse_body(app.current_event, NewApiKey) if app.current_event.body else NewApiKey()
    created = api_key_admin().create(path.tenant_id, request.label, request.integration_ids, _actor())
    return json_response(201, created)


@app.get("/api/admin/tenants/<tenant_id>/api-keys")
def list_api_keys(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(200, api_key_admin().list_keys(path.tenant_id, query.limit, query.cursor))


@app.post("/api/admin/tenants/<tenant_id>/api-keys/<key_id>/revoke")
def revoke_api_key(tenant_id: str, key_id: str) -> Response:
    path = validated(KeyPath, {"tenant_id": tenant_id, "key_id": key_id}, "path")
    return json_response(200, api_key_admin().revoke(path.tenant_id, path.key_id, _actor()))


@app.post("/api/admin/tenants/<tenant_id>/api-keys/<key_id>/rotate")
def rotate_api_key(tenant_id: str, key_id: str) -> Response:
    path = validated(KeyPath, {"tenant_id": tenant_id, "key_id": key_id}, "path")
    request = parse_body(app.current_event, Rotation) if app.current_event.body else Rotation()
    grace = timedelta(hours=request.grace_hours)
    return json_response(201, api_key_admin().rotate(path.tenant_id, path.key_id, grace, _actor()))


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
