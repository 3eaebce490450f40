"""Admin API (Lambda Function URL): operator actions on messages and queues, connections'
client certificates, tenants and their API keys, admin tokens and the audit log.

Every route checks the caller's admin token (role and scope, hub.admin.access) before acting;
where the resource's tenant is known only from the stored item (a message, an integration, a
token), the use case reads it and checks then."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from hub.admin.access import Principal, Role, whoami
from hub.admin.api_keys import ApiKeyNotActive, UnknownIntegrations
from hub.admin.connections import CertificateRequired, ConnectionExists, ConnectionInUse, ConnectionSpec
from hub.admin.health import HealthAnswer
from hub.admin.integrations import IntegrationBody, IntegrationExists, IntegrationInUse, UnknownConnection
from hub.admin.operations import DeliveryInProgress, ExecutionInFlight, NotCancellable, QueueTab
from hub.admin.subscriptions import SubscriptionDisabled, SubscriptionExists, TooManySecrets
from hub.admin.tenants import Keep, TenantExists
from hub.api.http import (
    admin_principal,
    bearer_token,
    body_bytes,
    etag,
    if_match,
    install_error_handlers,
    json_response,
    parse_body,
    parse_query,
    validated,
)
from hub.api.openapi import OBJECT, answers, documented, serve
from hub.api.static_site import StaticSite
from hub.api.views import IfMatch
from hub.certificates.model import (
    CertificateExpired,
    CertificateKeyMismatch,
    CertificatePasswordInvalid,
    CertificateRejected,
    decode_pkcs12_base64,
)
from hub.delivery.egress import DestinationNotAllowed
from hub.domain.clock import Rfc3339Time
from hub.domain.delivery_status import DEFAULT_CALLBACK_GRACE, MAX_CALLBACK_GRACE_HOURS
from hub.domain.message import MessageRecord
from hub.domain.rate_limit import Rate
from hub.domain.strict_json import parse_json
from hub.domain.tenancy import (
    DEFAULT_ROTATION_GRACE,
    MAX_ROTATION_GRACE_HOURS,
    IntegrationMode,
    MessageTypeConfig,
)
from hub.errors import (
    Conflict,
    CursorMismatch,
    Forbidden,
    InvalidTransition,
    MalformedBody,
    NotFound,
    PreconditionFailed,
    QueueUnavailable,
    StorageUnavailable,
    TooManyFailedTokens,
    Unauthorized,
    UnknownMessageType,
    ValidationFailed,
)
from hub.logs import configure as configure_logging
from hub.mapping import MappingTooLarge
from hub.observability import gc_after_first_invocation, traced
from hub.outbox.subscriptions import SubscriptionSpec, secret_key
from hub.ports import QueueFilter
from hub.wiring import (
    admin_authenticator,
    api_key_admin,
    audit_log,
    callback_token_admin,
    certificate_service,
    connection_admin,
    connection_control,
    failed_token_guard,
    health,
    integration_admin,
    integration_cards,
    operations,
    subscription_admin,
    tenant_admin,
    token_admin,
)

logger = Logger()
configure_logging(logger)
metrics = Metrics()
app = LambdaFunctionUrlResolver()
install_error_handlers(app)
#: The operator's web page: this function's own `page/` folder (index.html and static/).
PAGE = StaticSite(Path(__file__).parent / "page")

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
    #: `all`: every message, newest received first; the others: one status, newest change first.
    tab: QueueTab
    limit: int = Field(default=50, ge=1, le=100)
    #: From a previous page of the same tab and filters (another combination's: 422).
    cursor: str | None = Field(default=None, max_length=2048)
    #: Only this integration's messages (a page may then come back short, with a cursor).
    integration_id: Id | None = None
    #: Inclusive lower bound of the last change (`all`: of the receipt); ISO 8601 with offset.
    since: Rfc3339Time | None = None
    #: Exclusive upper bound, like `since`.
    until: Rfc3339Time | None = None

    @model_validator(mode="after")
    def _ordered(self) -> QueueQuery:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("since must be before until")
        return self

    def filters(self) -> QueueFilter:
        return QueueFilter(integration_id=self.integration_id, since=self.since, until=self.until)


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
    #: The partner API's limit for the tenant, per instance; absent or null: the stack's default.
    rate_limit: Rate | None = None


class TenantChange(BaseModel):
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
    """The caller's principal in the context. An address with too many refused tokens lately
    is answered 429 before its token is looked at (hub.admin.token_guard)."""
    event = app.current_event
    source = event.request_context.http.source_ip or "unknown"
    guard = failed_token_guard()
    guard.check(source)
    try:
        principal = admin_principal(event, admin_authenticator().principal)
    except Unauthorized:
        if bearer_token(event) is not None:  # a token was guessed; a missing one guesses nothing
            failures = guard.failed(source)
            logger.warning("admin token refused", extra={"source_ip": source, "failures": failures})
        raise
    app.append_context(principal=principal)
    return next_middleware(app)


app.use([authenticated])


def _principal() -> Principal:
    principal = app.context["principal"]
    assert isinstance(principal, Principal)
    return principal


#: What any admin route can answer: no or a bad token (401), too many bad tokens from the
#: caller's address lately (429), a role too low or a platform action with a tenant's token
#: (403), another tenant's resource or a missing one (404).
ADMIN = (Unauthorized, TooManyFailedTokens, Forbidden, NotFound, StorageUnavailable)
#: A route that parses a JSON body (our strict parser, then the model).
BODY = (MalformedBody, ValidationFailed)
#: A route with a message or integration id in its path.
MESSAGE = (ValidationFailed,)
#: Optimistic writes: `If-Match` with the version the caller read (412 when it is stale).
VERSIONED = (ValidationFailed, PreconditionFailed, Conflict)
#: A PKCS#12 the upload refuses.
CERTIFICATE = (CertificateRejected, CertificatePasswordInvalid, CertificateKeyMismatch, CertificateExpired)
ETAG = {"ETag": 'The version, for If-Match on the next change: "3"'}


@app.post(
    "/api/edi-hub/reprocess-message",
    **answers(
        "Reprocess a message (a new execution)",
        ok={202: OBJECT},
        errors=(*ADMIN, *BODY, *MESSAGE, ExecutionInFlight, InvalidTransition, QueueUnavailable),
        tags=["messages"],
    ),
)
@documented(body=ReprocessRequest)
def reprocess_message() -> Response:
    request = parse_body(app.current_event, ReprocessRequest)
    record = operations().reprocess(request.message_id, _principal())
    return json_response(202, _moved(record))


@app.post(
    "/api/admin/messages/<message_id>/cancel-retry",
    **answers(
        "Cancel a message's pending retry",
        ok={200: OBJECT},
        errors=(*ADMIN, *MESSAGE, NotCancellable, DeliveryInProgress, InvalidTransition),
        tags=["messages"],
    ),
)
@documented(path=ReprocessRequest)
def cancel_retry(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    record = operations().cancel_retry(checked.message_id, _principal())
    return json_response(200, _moved(record))


def _moved(record: MessageRecord) -> dict[str, Any]:
    """A moved message: its public view and, as `queue_row`, its row exactly as the queue tabs
    show it (the page replaces the row in place)."""
    return {**record.public_view(), "queue_row": operations().queue_row(record)}


@app.get(
    "/api/admin/messages/<message_id>",
    **answers(
        "A message, as operators see it",
        ok={200: OBJECT},
        errors=(*ADMIN, *MESSAGE),
        tags=["messages"],
    ),
)
@documented(path=ReprocessRequest)
def message_view(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    return json_response(200, operations().message_view(checked.message_id, _principal()))


@app.get(
    "/api/admin/integrations/<integration_id>",
    **answers(
        "An integration's operational view (of the `tenant_id` query's tenant)",
        ok={200: OBJECT},
        errors=(*ADMIN, *MESSAGE),
        tags=["messages"],
    ),
)
@documented(query=TenantQuery, path=IntegrationPath)
def integration_view(integration_id: str) -> Response:
    checked = validated(IntegrationPath, {"integration_id": integration_id}, "path")
    query = parse_query(app.current_event, TenantQuery)
    return json_response(
        200, operations().integration_view(query.tenant_id, checked.integration_id, _principal())
    )


@app.get(
    "/api/admin/queue",
    **answers(
        "A tenant's queue tab (error, waiting, dead_letter, all), filtered, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed, CursorMismatch),
        tags=["messages"],
    ),
)
@documented(query=QueueQuery)
def queue() -> Response:
    query = parse_query(app.current_event, QueueQuery)
    _principal().require(Role.VIEWER, query.tenant_id, what="tenant")
    page = operations().queue(query.tenant_id, query.tab, query.limit, query.cursor, query.filters())
    return json_response(
        200,
        {
            "tenant_id": query.tenant_id,
            "tab": query.tab.value,
            "items": page.rows,
            "next_cursor": page.next_cursor,
        },
    )


@app.post(
    "/api/admin/dlq/<lane>/redrive",
    **answers(
        "Move a dead-letter lane's step messages back to the pipeline (platform)",
        ok={200: OBJECT},
        errors=(*ADMIN, QueueUnavailable),
        tags=["messages"],
    ),
)
def redrive(lane: str) -> Response:
    _principal().require_platform(Role.OPERATOR)
    return json_response(200, {"lane": lane, "moved": operations().redrive(lane, _principal())})


@app.post(
    "/api/admin/connections/<connection_id>/certificate",
    **answers(
        "Upload a connection's client certificate (PKCS#12)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, *CERTIFICATE),
        tags=["connections"],
    ),
)
@documented(body=CertificateUpload, path=ConnectionPath)
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


@app.get(
    "/api/admin/connections/<connection_id>/certificate",
    **answers(
        "A connection's client certificate (metadata only)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
    ),
)
@documented(query=TenantQuery, path=ConnectionPath)
def describe_certificate(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    query = parse_query(app.current_event, TenantQuery)
    _principal().require(Role.VIEWER, query.tenant_id, what="connection")
    return json_response(200, certificate_service().describe(query.tenant_id, path.connection_id))


@app.post(
    "/api/admin/tenants",
    **answers(
        "Create a tenant (platform)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, TenantExists),
        tags=["tenants"],
    ),
)
@documented(body=NewTenant)
def create_tenant() -> Response:
    _principal().require_platform(Role.ADMIN)
    request = parse_body(app.current_event, NewTenant)
    created = tenant_admin().create(
        request.tenant_id, request.name, request.default_mode, _principal(), request.rate_limit
    )
    return json_response(201, created)


@app.get(
    "/api/admin/tenants",
    **answers(
        "List tenants (platform), cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["tenants"],
    ),
)
@documented(query=KeyListQuery)
def list_tenants() -> Response:
    _principal().require_platform(Role.VIEWER)
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(200, tenant_admin().list_tenants(query.limit, query.cursor))


@app.get(
    "/api/admin/tenants/<tenant_id>",
    **answers(
        "A tenant",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["tenants"],
    ),
)
@documented(path=TenantQuery)
def get_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="tenant")
    return json_response(200, tenant_admin().get(path.tenant_id))


@app.patch(
    "/api/admin/tenants/<tenant_id>",
    **answers(
        "Change a tenant's name, default mode or rate limit (the limit: platform admins only)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY),
        tags=["tenants"],
    ),
)
@documented(body=TenantChange, path=TenantQuery)
def update_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="tenant")
    request = parse_body(app.current_event, TenantChange)
    if request.changes_rate_limit:  # a tenant's admin may not raise its own limit
        _principal().require_platform(Role.ADMIN)
    rate_limit = request.rate_limit if request.changes_rate_limit else Keep.KEEP
    return json_response(
        200,
        tenant_admin().update(path.tenant_id, request.name, request.default_mode, _principal(), rate_limit),
    )


@app.post(
    "/api/admin/tenants/<tenant_id>/disable",
    **answers(
        "Disable a tenant: its keys answer 401, its messages are kept (platform)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["tenants"],
    ),
)
@documented(path=TenantQuery)
def disable_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require_platform(Role.ADMIN)
    return json_response(200, tenant_admin().disable(path.tenant_id, _principal()))


@app.post(
    "/api/admin/tenants/<tenant_id>/enable",
    **answers(
        "Enable a disabled tenant (platform)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["tenants"],
    ),
)
@documented(path=TenantQuery)
def enable_tenant(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require_platform(Role.ADMIN)
    return json_response(200, tenant_admin().enable(path.tenant_id, _principal()))


@app.post(
    "/api/admin/tenants/<tenant_id>/api-keys",
    **answers(
        "Create a partner API key (shown once)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, UnknownIntegrations),
        tags=["api-keys"],
    ),
)
@documented(body=NewApiKey, body_required=False, path=TenantQuery)
def create_api_key(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="tenant")
    request = parse_body(app.current_event, NewApiKey) if app.current_event.body else NewApiKey()
    created = api_key_admin().create(path.tenant_id, request.label, request.integration_ids, _principal())
    return json_response(201, created)


@app.get(
    "/api/admin/tenants/<tenant_id>/api-keys",
    **answers(
        "A tenant's API keys, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["api-keys"],
    ),
)
@documented(query=KeyListQuery, path=TenantQuery)
def list_api_keys(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="tenant")
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(200, api_key_admin().list_keys(path.tenant_id, query.limit, query.cursor))


@app.post(
    "/api/admin/tenants/<tenant_id>/api-keys/<key_id>/revoke",
    **answers(
        "Revoke an API key",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["api-keys"],
    ),
)
@documented(path=KeyPath)
def revoke_api_key(tenant_id: str, key_id: str) -> Response:
    path = validated(KeyPath, {"tenant_id": tenant_id, "key_id": key_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="tenant")
    return json_response(200, api_key_admin().revoke(path.tenant_id, path.key_id, _principal()))


@app.post(
    "/api/admin/tenants/<tenant_id>/api-keys/<key_id>/rotate",
    **answers(
        "Rotate an API key (the old one works for the grace period)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, ApiKeyNotActive),
        tags=["api-keys"],
    ),
)
@documented(body=Rotation, body_required=False, path=KeyPath)
def rotate_api_key(tenant_id: str, key_id: str) -> Response:
    path = validated(KeyPath, {"tenant_id": tenant_id, "key_id": key_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="tenant")
    request = parse_body(app.current_event, Rotation) if app.current_event.body else Rotation()
    grace = timedelta(hours=request.grace_hours)
    return json_response(201, api_key_admin().rotate(path.tenant_id, path.key_id, grace, _principal()))


# --- admin tokens and the audit log (issue 11, authz) ---------------------------------------


@app.post(
    "/api/admin/tokens",
    **answers(
        "Create an admin token (shown once)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY),
        tags=["admin-tokens"],
    ),
)
@documented(body=NewAdminToken)
def create_admin_token() -> Response:
    request = parse_body(app.current_event, NewAdminToken)
    created = token_admin().create(_principal(), request.tenant_id, request.label, request.role)
    return json_response(201, created)


@app.get(
    "/api/admin/tokens",
    **answers(
        "Admin tokens of a tenant or of the platform, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["admin-tokens"],
    ),
)
@documented(query=TokenListQuery)
def list_admin_tokens() -> Response:
    query = parse_query(app.current_event, TokenListQuery)
    return json_response(
        200, token_admin().list_tokens(_principal(), query.tenant_id, query.limit, query.cursor)
    )


@app.post(
    "/api/admin/tokens/<token_id>/revoke",
    **answers(
        "Revoke an admin token",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["admin-tokens"],
    ),
)
@documented(path=TokenPath)
def revoke_admin_token(token_id: str) -> Response:
    path = validated(TokenPath, {"token_id": token_id}, "path")
    return json_response(200, token_admin().revoke(_principal(), path.token_id))


@app.get(
    "/api/admin/tenants/<tenant_id>/audit",
    **answers(
        "A tenant's audit log, newest first, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["audit"],
    ),
)
@documented(query=KeyListQuery, path=TenantQuery)
def tenant_audit(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="tenant")
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(200, audit_log().tenant_log(path.tenant_id, query.limit, query.cursor))


@app.get(
    "/api/admin/audit",
    **answers(
        "The platform's audit log, newest first, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["audit"],
    ),
)
@documented(query=KeyListQuery)
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


@app.post(
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
def create_connection(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="tenant")
    request = parse_body(app.current_event, ConnectionSpec)
    view = connection_admin().create(_principal(), path.tenant_id, request)
    return json_response(201, view, etag(view["version"]))


@app.get(
    "/api/admin/tenants/<tenant_id>/connections",
    **answers(
        "A tenant's connections, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
    ),
)
@documented(query=KeyListQuery, path=TenantQuery)
def list_connections(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="tenant")
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(200, connection_admin().list_connections(path.tenant_id, query.limit, query.cursor))


@app.get(
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
def get_connection(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    _principal().require(Role.VIEWER, path.tenant_id, what="connection")
    view = connection_admin().get(path.tenant_id, path.connection_id)
    return json_response(200, view, etag(view["version"]))


@app.put(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>",
    **answers(
        "Replace a connection (If-Match: its ETag)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY, *VERSIONED, CertificateRequired, DestinationNotAllowed),
        tags=["connections"],
        headers={200: ETAG},
    ),
)
@documented(body=ConnectionSpec, path=TenantConnectionPath, headers=IfMatch)
def update_connection(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="connection")
    request = parse_body(app.current_event, ConnectionSpec)
    view = connection_admin().update(
        _principal(), path.tenant_id, path.connection_id, request, if_match(app.current_event)
    )
    return json_response(200, view, etag(view["version"]))


@app.delete(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>",
    **answers(
        "Delete a connection no integration uses",
        ok={204: None},
        errors=(*ADMIN, *VERSIONED, ConnectionInUse),
        tags=["connections"],
    ),
)
@documented(path=TenantConnectionPath, headers=IfMatch)
def delete_connection(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="connection")
    connection_admin().delete(_principal(), path.tenant_id, path.connection_id, if_match(app.current_event))
    return Response(status_code=204, body="")


@app.post(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>/test",
    **answers(
        "Make one harmless call to a connection and report the error class it would get",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
    ),
)
@documented(path=TenantConnectionPath)
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


@app.post(
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
def create_integration(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="integration")
    view = integration_admin().create(_principal(), path.tenant_id, _json_object())
    return json_response(201, view, etag(view["version"]))


@app.get(
    "/api/admin/tenants/<tenant_id>/integrations",
    **answers(
        "A tenant's integrations, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["integrations"],
    ),
)
@documented(query=KeyListQuery, path=TenantQuery)
def list_integrations(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="integration")
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(
        200, integration_admin().list_integrations(path.tenant_id, query.limit, query.cursor)
    )


@app.get(
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
def get_integration(tenant_id: str, integration_id: str) -> Response:
    path = _integration_path(tenant_id, integration_id)
    _principal().require(Role.VIEWER, path.tenant_id, what="integration")
    view = integration_admin().get(path.tenant_id, path.integration_id)
    return json_response(200, view, etag(view["version"]))


@app.put(
    "/api/admin/tenants/<tenant_id>/integrations/<integration_id>",
    **answers(
        "Replace an integration (If-Match: its ETag)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY, *VERSIONED, UnknownConnection),
        tags=["integrations"],
        headers={200: ETAG},
    ),
)
@documented(body=IntegrationBody, path=TenantIntegrationPath, headers=IfMatch)
def replace_integration(tenant_id: str, integration_id: str) -> Response:
    path = _integration_path(tenant_id, integration_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="integration")
    view = integration_admin().replace(
        _principal(), path.tenant_id, path.integration_id, _json_object(), if_match(app.current_event)
    )
    return json_response(200, view, etag(view["version"]))


@app.delete(
    "/api/admin/tenants/<tenant_id>/integrations/<integration_id>",
    **answers(
        "Delete an integration with no message in flight or waiting",
        ok={204: None},
        errors=(*ADMIN, *VERSIONED, IntegrationInUse),
        tags=["integrations"],
    ),
)
@documented(path=TenantIntegrationPath, headers=IfMatch)
def delete_integration(tenant_id: str, integration_id: str) -> Response:
    path = _integration_path(tenant_id, integration_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="integration")
    integration_admin().delete(_principal(), path.tenant_id, path.integration_id, if_match(app.current_event))
    return Response(status_code=204, body="")


@app.post(
    "/api/admin/tenants/<tenant_id>/integrations/<integration_id>/message-types/<message_type>/preview",
    **answers(
        "Run a message type's mapping on a sample payload (no side effects)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY, UnknownMessageType, MappingTooLarge),
        tags=["integrations"],
    ),
)
@documented(body=PreviewRequest, path=PreviewPath)
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


# --- Issue 12: outbound webhook subscriptions (webhooks helper) -------------------------------


class TenantSubscriptionPath(BaseModel):
    tenant_id: Id
    subscription_id: Id


class SecretRotation(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)
    #: The new `whsec_` secret (absent: generated, shown once).
    secret: str | None = Field(default=None, repr=False)
    #: How long the current secrets keep signing beside the new one (0: they stop at once).
    grace_hours: int = Field(
        default=int(DEFAULT_ROTATION_GRACE.total_seconds() // 3600), ge=0, le=MAX_ROTATION_GRACE_HOURS
    )

    @model_validator(mode="after")
    def _whsec(self) -> SecretRotation:
        if self.secret is not None:
            secret_key(self.secret)
        return self


class DisableRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str | None = Field(default=None, min_length=1, max_length=300)


class ReplayRequest(BaseModel):
    """Exactly one of `event_id` (one failed delivery) or `since` (every one failed at or after)."""

    model_config = ConfigDict(extra="forbid")
    event_id: str | None = Field(default=None, min_length=1, max_length=300)
    since: Rfc3339Time | None = None

    @model_validator(mode="after")
    def _one(self) -> ReplayRequest:
        if (self.event_id is None) == (self.since is None):
            raise ValueError("give exactly one of event_id and since")
        return self


def _subscription_path(tenant_id: str, subscription_id: str) -> TenantSubscriptionPath:
    given = {"tenant_id": tenant_id, "subscription_id": subscription_id}
    return validated(TenantSubscriptionPath, given, "path")


@app.post(
    "/api/admin/tenants/<tenant_id>/subscriptions",
    **answers(
        "Create an outbound webhook subscription (its secret is shown once)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, SubscriptionExists, DestinationNotAllowed),
        tags=["subscriptions"],
        headers={201: ETAG},
    ),
)
@documented(body=SubscriptionSpec, path=TenantQuery)
def create_subscription(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.ADMIN, path.tenant_id, what="subscription")
    request = parse_body(app.current_event, SubscriptionSpec)
    view = subscription_admin().create(_principal(), path.tenant_id, request)
    return json_response(201, view, etag(view["version"]))


@app.get(
    "/api/admin/tenants/<tenant_id>/subscriptions",
    **answers(
        "A tenant's webhook subscriptions, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["subscriptions"],
    ),
)
@documented(query=KeyListQuery, path=TenantQuery)
def list_subscriptions(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="subscription")
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(
        200, subscription_admin().list_subscriptions(path.tenant_id, query.limit, query.cursor)
    )


@app.get(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>",
    **answers(
        "A webhook subscription (secrets masked)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["subscriptions"],
        headers={200: ETAG},
    ),
)
@documented(path=TenantSubscriptionPath)
def get_subscription(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    _principal().require(Role.VIEWER, path.tenant_id, what="subscription")
    view = subscription_admin().get(path.tenant_id, path.subscription_id)
    return json_response(200, view, etag(view["version"]))


@app.put(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>",
    **answers(
        "Replace a webhook subscription (If-Match: its ETag; secrets change by rotation)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY, *VERSIONED, DestinationNotAllowed),
        tags=["subscriptions"],
        headers={200: ETAG},
    ),
)
@documented(body=SubscriptionSpec, path=TenantSubscriptionPath, headers=IfMatch)
def replace_subscription(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="subscription")
    request = parse_body(app.current_event, SubscriptionSpec)
    view = subscription_admin().update(
        _principal(), path.tenant_id, path.subscription_id, request, if_match(app.current_event)
    )
    return json_response(200, view, etag(view["version"]))


@app.delete(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>",
    **answers(
        "Delete a webhook subscription",
        ok={204: None},
        errors=(*ADMIN, *VERSIONED),
        tags=["subscriptions"],
    ),
)
@documented(path=TenantSubscriptionPath, headers=IfMatch)
def delete_subscription(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="subscription")
    subscription_admin().delete(
        _principal(), path.tenant_id, path.subscription_id, if_match(app.current_event)
    )
    return Response(status_code=204, body="")


@app.post(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/rotate-secret",
    **answers(
        "Add a signing secret (shown once); the current ones keep signing for the grace period",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, PreconditionFailed, TooManySecrets),
        tags=["subscriptions"],
        headers={201: ETAG},
    ),
)
@documented(body=SecretRotation, body_required=False, path=TenantSubscriptionPath)
def rotate_subscription_secret(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="subscription")
    request = parse_body(app.current_event, SecretRotation) if app.current_event.body else SecretRotation()
    view = subscription_admin().rotate_secret(
        _principal(),
        path.tenant_id,
        path.subscription_id,
        request.secret,
        timedelta(hours=request.grace_hours),
    )
    return json_response(201, view, etag(view["version"]))


@app.post(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/retire-secrets",
    **answers(
        "Stop signing with every secret but the newest (ends a rotation early)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed, PreconditionFailed),
        tags=["subscriptions"],
        headers={200: ETAG},
    ),
)
@documented(path=TenantSubscriptionPath)
def retire_subscription_secrets(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="subscription")
    view = subscription_admin().retire_secrets(_principal(), path.tenant_id, path.subscription_id)
    return json_response(200, view, etag(view["version"]))


@app.post(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/enable",
    **answers(
        "Enable a webhook subscription",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed, PreconditionFailed),
        tags=["subscriptions"],
        headers={200: ETAG},
    ),
)
@documented(path=TenantSubscriptionPath)
def enable_subscription(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    _principal().require(Role.OPERATOR, path.tenant_id, what="subscription")
    view = subscription_admin().set_enabled(_principal(), path.tenant_id, path.subscription_id, True, None)
    return json_response(200, view, etag(view["version"]))


@app.post(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/disable",
    **answers(
        "Disable a webhook subscription (emits subscription.disabled)",
        ok={200: OBJECT},
        errors=(*ADMIN, *BODY, PreconditionFailed),
        tags=["subscriptions"],
        headers={200: ETAG},
    ),
)
@documented(body=DisableRequest, body_required=False, path=TenantSubscriptionPath)
def disable_subscription(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    _principal().require(Role.OPERATOR, path.tenant_id, what="subscription")
    request = parse_body(app.current_event, DisableRequest) if app.current_event.body else DisableRequest()
    view = subscription_admin().set_enabled(
        _principal(), path.tenant_id, path.subscription_id, False, request.reason
    )
    return json_response(200, view, etag(view["version"]))


@app.get(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/failed-deliveries",
    **answers(
        "A subscription's failed webhook deliveries, newest first, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["subscriptions"],
    ),
)
@documented(query=KeyListQuery, path=TenantSubscriptionPath)
def list_failed_deliveries(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    _principal().require(Role.VIEWER, path.tenant_id, what="subscription")
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(
        200,
        subscription_admin().failed_deliveries(
            path.tenant_id, path.subscription_id, query.limit, query.cursor
        ),
    )


@app.post(
    "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/failed-deliveries/replay",
    **answers(
        "Send failed webhook deliveries again (one event, or all since a time; same webhook-id)",
        ok={202: OBJECT},
        errors=(*ADMIN, *BODY, SubscriptionDisabled, QueueUnavailable),
        tags=["subscriptions"],
    ),
)
@documented(body=ReplayRequest, path=TenantSubscriptionPath)
def replay_failed_deliveries(tenant_id: str, subscription_id: str) -> Response:
    path = _subscription_path(tenant_id, subscription_id)
    _principal().require(Role.OPERATOR, path.tenant_id, what="subscription")
    request = parse_body(app.current_event, ReplayRequest)
    answer = subscription_admin().replay(
        _principal(), path.tenant_id, path.subscription_id, event_id=request.event_id, since=request.since
    )
    return json_response(202, answer)


# --- Issue 12: delivery-status callbacks (pattern 5) ------------------------------------------


class CallbackTokenMint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: How long the previous token keeps working (0: it stops at once).
    grace_hours: int = Field(
        default=int(DEFAULT_CALLBACK_GRACE.total_seconds() // 3600), ge=0, le=MAX_CALLBACK_GRACE_HOURS
    )


@app.get(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>/callback-token",
    **answers(
        "A connection's status-callback token (metadata only)",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
    ),
)
@documented(path=TenantConnectionPath)
def describe_callback_token(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    _principal().require(Role.VIEWER, path.tenant_id, what="connection")
    return json_response(200, callback_token_admin().describe(path.tenant_id, path.connection_id))


@app.post(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>/callback-token",
    **answers(
        "Mint a status-callback token for a connection (shown once; rotates an existing one)",
        ok={201: OBJECT},
        errors=(*ADMIN, *BODY, Conflict),
        tags=["connections"],
    ),
)
@documented(body=CallbackTokenMint, body_required=False, path=TenantConnectionPath)
def mint_callback_token(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="connection")
    event = app.current_event
    request = parse_body(event, CallbackTokenMint) if event.body else CallbackTokenMint()
    minted = callback_token_admin().mint(
        _principal(), path.tenant_id, path.connection_id, timedelta(hours=request.grace_hours)
    )
    return json_response(201, minted)


@app.delete(
    "/api/admin/tenants/<tenant_id>/connections/<connection_id>/callback-token",
    **answers(
        "Revoke a connection's status-callback token (its callbacks answer 401)",
        ok={204: None},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
    ),
)
@documented(path=TenantConnectionPath)
def revoke_callback_token(tenant_id: str, connection_id: str) -> Response:
    path = _connection_path(tenant_id, connection_id)
    _principal().require(Role.ADMIN, path.tenant_id, what="connection")
    callback_token_admin().revoke(_principal(), path.tenant_id, path.connection_id)
    return Response(status_code=204, body="")


@app.get(
    "/api/admin/messages/<message_id>/callbacks",
    **answers(
        "A message's status callbacks as received, newest first, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, *MESSAGE),
        tags=["messages"],
    ),
)
@documented(path=ReprocessRequest, query=KeyListQuery)
def message_callbacks(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    query = parse_query(app.current_event, KeyListQuery)
    page = operations().message_callbacks(checked.message_id, _principal(), query.limit, query.cursor)
    return json_response(200, page)


# --- Issue 11: OpenAPI ------------------------------------------------------------------------

#: What the admin document says about itself (hub.api.openapi_document.document).
OPENAPI = {
    "title": "Integration Hub admin API",
    "version": "1",
    "description": (
        "Operators configure tenants, integrations, connections, API keys and admin tokens, and act "
        "on messages. Every route, this document's too, takes an admin token "
        "(`Authorization: Bearer <token>`) scoped to one tenant or to the platform, with a role: "
        "viewer reads, operator also reprocesses, cancels, redrives and tests, admin also "
        "configures. Another tenant's resource answers 404 like a missing one; a role too low "
        "answers 403 `forbidden`. Every error has one shape, "
        '`{"error": {"code", "message", "details"?}}`; each operation lists the codes it answers '
        "per status. Requests no route takes answer `404 route_not_found`, or "
        "`405 method_not_allowed` with `Allow`. After 10 refused tokens from one address within "
        "60 s, that address gets `429 too_many_failed_tokens` with `Retry-After` until the window "
        "passes, whatever token it sends."
    ),
    "security_schemes": {
        "adminToken": {"type": "http", "scheme": "bearer", "description": "An admin token (hub_admin_...)."}
    },
    "security": [{"adminToken": []}],
}


@app.get(
    "/api/admin/openapi.json",
    **answers(
        "This document (OpenAPI 3.1)",
        ok={200: OBJECT},
        errors=(Unauthorized, TooManyFailedTokens, StorageUnavailable),
        tags=["documentation"],
        description="Any admin token, of any role and scope.",
    ),
)
def openapi_document() -> Response:
    return serve(app, OPENAPI)


# --- Issue 12: pause and circuit breaker (breaker helper) -------------------------------------


@app.post(
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
def pause_connection(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    query = parse_query(app.current_event, TenantQuery)
    return json_response(200, connection_control().pause(_principal(), query.tenant_id, path.connection_id))


@app.post(
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
def resume_connection(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    query = parse_query(app.current_event, TenantQuery)
    return json_response(200, connection_control().resume(_principal(), query.tenant_id, path.connection_id))


@app.get(
    "/api/admin/connections/<connection_id>/state",
    **answers(
        "A connection's pause and circuit-breaker state",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed),
        tags=["connections"],
    ),
)
@documented(query=TenantQuery, path=ConnectionPath)
def connection_state(connection_id: str) -> Response:
    path = validated(ConnectionPath, {"connection_id": connection_id}, "path")
    query = parse_query(app.current_event, TenantQuery)
    return json_response(200, connection_control().state(_principal(), query.tenant_id, path.connection_id))


# --- Issue 13: integration cards and whoami (cards helper) ------------------------------------


@app.get(
    "/api/admin/me",
    **answers(
        "Who the presented admin token is, and what its role may do",
        ok={200: OBJECT},
        errors=(Unauthorized, TooManyFailedTokens, StorageUnavailable),
        tags=["admin-tokens"],
        description=(
            "Any admin token, the bootstrap token too. `can` names every action of the "
            "operator's page with whether this token may take it (hub.admin.access.PERMISSIONS): "
            "the page offers nothing the API would refuse with 403."
        ),
    ),
)
def whoami_route() -> Response:
    return json_response(200, whoami(_principal()))


@app.get(
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
def integration_cards_route(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="tenant")
    query = parse_query(app.current_event, KeyListQuery)
    return json_response(200, integration_cards().cards(path.tenant_id, query.limit, query.cursor))


class UnsavedPreviewRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: A sample payload: a JSON object, or text (XML when it starts with "<").
    payload: dict[str, Any] | str
    #: The message type as the form holds it (mapping, business keys), not saved anywhere.
    config: MessageTypeConfig


@app.post(
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
def preview_unsaved_mapping(tenant_id: str) -> Response:
    path = validated(TenantQuery, {"tenant_id": tenant_id}, "path")
    _principal().require(Role.VIEWER, path.tenant_id, what="tenant")
    request = parse_body(app.current_event, UnsavedPreviewRequest)
    return json_response(
        200, integration_admin().preview_unsaved(path.tenant_id, request.config, request.payload)
    )


# --- Issue 13: health API (backend of the page's Health view) --------------------------------


class HealthQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: The tenant whose integrations to show; required with a tenant's token.
    tenant_id: Id | None = None


@app.get(
    "/api/admin/health",
    **answers(
        "Lanes, outbox, per-integration failures and the hub's counters (the Health view)",
        ok={200: HealthAnswer},
        errors=(*ADMIN, ValidationFailed),
        tags=["health"],
        description=(
            "Viewer role. A platform token sees every lane (work queue depths, DLQ depth, age of "
            "the oldest step message), the outbox, the hub's counters and 24 hourly counts; with "
            "`tenant_id`, also that tenant's integrations over the last hour. A tenant's token must "
            "give its own `tenant_id` and sees only its integrations (lanes, outbox, counters and "
            "hourly are null). A section whose source did not answer is null and named in "
            "`unavailable`."
        ),
    ),
)
@documented(query=HealthQuery)
def health_view() -> Response:
    query = parse_query(app.current_event, HealthQuery)
    answer = health().view(_principal(), query.tenant_id)
    return json_response(200, answer.model_dump(mode="json"))


@gc_after_first_invocation
@logger.inject_lambda_context
@metrics.log_metrics
@traced
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    path = event.get("rawPath") or ""
    if StaticSite.serves(path):
        # The operator's page (issue 13): static files, no token (every API call carries one).
        method = event.get("requestContext", {}).get("http", {}).get("method", "GET")
        return PAGE.respond(method, path, event.get("headers") or {})
    return app.resolve(event, context)
