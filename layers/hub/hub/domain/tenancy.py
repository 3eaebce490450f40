"""Tenants, integrations and API keys: who may send what, and how each message type is
treated. The tenant of a message always comes from here, never from its payload."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from hub.domain.delivery_limits import DeliveryLimits
from hub.domain.mapping_spec import MappingSpec, check_expression
from hub.domain.model import HubModel
from hub.domain.rate_limit import Rate
from hub.domain.retention import MAX_RETENTION_DAYS, MIN_RETENTION_DAYS, Retention
from hub.domain.retry import RetryPolicy
from hub.domain.webhook_config import InboundWebhook


class DuplicateHandling(StrEnum):
    """What to do with a message whose business keys match an earlier one. Distinct from ingest
    idempotency."""

    ACCEPT = "accept"
    REJECT = "reject"
    OVERWRITE = "overwrite"


class UnknownMessageTypes(StrEnum):
    """What receive-message (and an inbound webhook) does with a message type the integration
    does not list in `message_types`."""

    #: 422 `unknown_message_type`, naming the defined types. The default: a typo or a partner's
    #: new type is refused at the door instead of being delivered under default rules.
    REJECT = "reject"
    #: Accepted with the default rules (no business keys, duplicates accepted, no mapping).
    ACCEPT = "accept"


class IntegrationMode(StrEnum):
    #: Run everything but the delivery (seed 000, scenario H). The product default.
    OBSERVABILITY = "observability"
    ORCHESTRATION = "orchestration"


class MessageTypeConfig(HubModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    #: JMESPath expressions into the payload that identify the business entity (e.g. "po_number").
    duplicate_key_fields: tuple[str, ...] = ()
    duplicate_handling: DuplicateHandling = DuplicateHandling.ACCEPT
    #: How the payload becomes the destination's format; None sends it as received.
    mapping: MappingSpec | None = None
    #: Payload field names masked in logs and admin views (e.g. "cpf", "cnpj", "email", "phone");
    #: the stored payload stays intact for delivery (hub.domain.redaction).
    sensitive_fields: tuple[str, ...] = ()

    @field_validator("duplicate_key_fields")
    @classmethod
    def _key_paths_compile(cls, fields: tuple[str, ...]) -> tuple[str, ...]:
        # Checked when saved: at run time an expression that does not parse would silently
        # yield no business key (hub.domain.idempotency.duplicate_key_values).
        return tuple(check_expression(field) for field in fields)


class DestinationProtocol(StrEnum):
    HTTP = "http"
    SOAP = "soap"


class Platform(StrEnum):
    GENERIC = "generic"
    #: Brazil's NF-e web services: SOAP 1.2 with mTLS (an ICP-Brasil A1 certificate).
    SEFAZ = "sefaz"


class AuthKind(StrEnum):
    NONE = "none"
    BEARER = "bearer"
    BASIC = "basic"
    API_KEY = "api_key"
    OAUTH2_CLIENT_CREDENTIALS = "oauth2_client_credentials"


class HttpAuth(HubModel):
    """How to authenticate to a REST destination. Secrets are never logged or shown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: AuthKind = AuthKind.NONE
    token: str | None = Field(default=None, repr=False)
    username: str | None = None
    password: str | None = Field(default=None, repr=False)
    header_name: str = "X-Api-Key"
    api_key: str | None = Field(default=None, repr=False)
    token_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = Field(default=None, repr=False)
    scope: str | None = None


#: `soap.wsdl` prefix for a WSDL shipped inside the nfelib package (the NF-e 4.00 services).
NFELIB_PREFIX = "nfelib:"


class SoapSettings(HubModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    #: A WSDL shipped by nfelib (`nfelib:<path>`) or an http(s) URL (no other local file).
    wsdl: str
    #: Qualified binding name, e.g. "{http://...}NFeStatusServico4Soap12"; None = the WSDL's first.
    binding: str | None = None
    operation: str
    soap_version: Literal["1.1", "1.2"] = "1.1"


#: The bound of a trusted CA bundle kept in a destination (hub.delivery.tls.MAX_CA_BUNDLE_BYTES).
TRUSTED_CA_PEM_MAX_CHARS = 64 * 1024


class Destination(HubModel):
    """A connection to the customer's system: where and how delivered messages go."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    connection_id: str | None = None
    protocol: DestinationProtocol = DestinationProtocol.HTTP
    platform: Platform = Platform.GENERIC
    url: str
    method: str = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    auth: HttpAuth = Field(default_factory=HttpAuth)
    connect_timeout_seconds: float = Field(default=10.0, gt=0)
    read_timeout_seconds: float = Field(default=30.0, gt=0)
    soap: SoapSettings | None = None
    #: Reference the CertificateStore resolves to a PKCS#12 client certificate (mTLS).
    client_certificate_id: str | None = None
    #: The destination drops a repeated Idempotency-Key, so an uncertain outcome may be retried.
    idempotent_retries: bool = False
    #: PEM CA certificates that alone are trusted for this connection's server certificate (they
    #: replace the system trust store: e.g. the ICP-Brasil roots for a production SEFAZ). None:
    #: the system trust store. Checked when saved through the admin API (hub.delivery.tls).
    trusted_ca_pem: str | None = Field(default=None, max_length=TRUSTED_CA_PEM_MAX_CHARS)
    #: What the destination can take (issue 30): deliveries in flight and requests per second,
    #: per connection. None: unlimited. Only a connection's destination (one with a
    #: `connection_id`) is limited: the limits' state is the connection's.
    limits: DeliveryLimits | None = None

    @model_validator(mode="after")
    def _platform_rules(self) -> Destination:
        if self.platform is Platform.SEFAZ:
            if self.protocol is not DestinationProtocol.SOAP or self.soap is None:
                raise ValueError("platform sefaz uses protocol soap with soap settings")
            if self.soap.soap_version != "1.2":
                raise ValueError("platform sefaz uses SOAP 1.2")
            if not self.client_certificate_id:
                raise ValueError("platform sefaz requires mTLS: attach a client certificate (A1 .pfx/.p12)")
        if self.protocol is DestinationProtocol.SOAP and self.soap is None:
            raise ValueError("protocol soap needs soap settings (wsdl, operation)")
        return self


class Connection(HubModel):
    """A tenant's destination as its own item (issue 11): integrations name it by
    `connection_id`, and the configuration repository resolves it into their `destination`.
    `version` counts saved changes (optimistic updates: If-Match)."""

    model_config = ConfigDict(frozen=True, hide_input_in_errors=True)

    connection_id: str
    tenant_id: str
    name: str | None = None
    version: int = Field(default=1, ge=1)
    #: Its `connection_id` is this connection's; `client_certificate_id` too, when it uses the
    #: certificate uploaded under the connection.
    destination: Destination
    created_at: datetime | None = None
    updated_at: datetime | None = None
    #: The stored item's sealed credentials (hub.sealed_config), by field: what a stand-in in
    #: `destination` keeps when the connection is saved again. Opaque here; never dumped.
    sealed: dict[str, Any] = Field(default_factory=dict, exclude=True, repr=False)


class TenantState(StrEnum):
    ACTIVE = "active"
    #: Its API keys and inbound webhooks answer 401; its messages are kept and still readable.
    DISABLED = "disabled"


class Tenant(HubModel):
    """A customer of the hub. Tenants written before the admin API (by hand, or by older code)
    have only `tenant_id` and `name`: they are active, with the default mode."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    name: str
    #: The mode a new integration of this tenant starts in (seed 000: observability by default).
    default_mode: IntegrationMode = IntegrationMode.OBSERVABILITY
    active: bool = True
    created_at: datetime | None = None
    updated_at: datetime | None = None
    disabled_at: datetime | None = None
    #: The partner API's limit for this tenant, per instance (issue 14); None: the stack's
    #: default (HUB_TENANT_RATE_PER_SECOND, HUB_TENANT_BURST). Set by a platform admin only.
    rate_limit: Rate | None = None
    #: Retention (issue 29), in days; None: the platform's default (template PayloadRetentionDays,
    #: MessageRetentionDays; hub.domain.retention). Set by a platform admin only.
    payload_retention_days: int | None = Field(default=None, ge=MIN_RETENTION_DAYS, le=MAX_RETENTION_DAYS)
    message_retention_days: int | None = Field(default=None, ge=MIN_RETENTION_DAYS, le=MAX_RETENTION_DAYS)

    @property
    def state(self) -> TenantState:
        return TenantState.ACTIVE if self.active else TenantState.DISABLED

    def retention(self, defaults: Retention) -> Retention:
        """How long this tenant's payloads and messages are kept: its own, else `defaults`."""
        return Retention.effective(defaults, self.payload_retention_days, self.message_retention_days)


def tenant_accepts_traffic(tenant: Tenant | None) -> bool:
    """Whether ingest takes messages for a tenant: only an explicitly disabled one is refused.
    A key or integration whose tenant item is missing (written by hand without one) keeps
    working as it did before tenants could be disabled."""
    return tenant is None or tenant.active


class Integration(HubModel):
    # Validation errors never repeat the input: it holds secrets (webhook and destination).
    model_config = ConfigDict(frozen=True, hide_input_in_errors=True)

    integration_id: str
    tenant_id: str
    name: str
    mode: IntegrationMode = IntegrationMode.OBSERVABILITY
    destination: Destination | None = None
    #: The tenant's connection this integration delivers to (issue 11). The configuration
    #: repository resolves it into `destination` when it reads the integration; an integration
    #: written before connections were their own items embeds `destination` instead.
    connection_id: str | None = None
    message_types: dict[str, MessageTypeConfig] = Field(default_factory=dict)
    #: A type not in `message_types`: refused (422) or accepted with the defaults.
    unknown_message_types: UnknownMessageTypes = UnknownMessageTypes.REJECT
    retry_policy: RetryPolicy = Field(default_factory=RetryPolicy)
    #: Set by the hub when the destination answered 410 Gone; saving the integration clears it.
    connection_gone_at: datetime | None = None
    #: `POST /api/webhook/{tenant_id}/{integration_id}`: how deliveries are verified and adapted;
    #: None = closed.
    inbound_webhook: InboundWebhook | None = None

    def message_type_config(self, message_type: str) -> MessageTypeConfig:
        """The rules for `message_type`; an undeclared type (only stored when the integration
        accepts unknown types, or before it stopped) gets the defaults."""
        return self.message_types.get(message_type, MessageTypeConfig())

    def takes_message_type(self, message_type: str) -> bool:
        """Whether a new message of `message_type` may be received: a defined type, or any when
        `unknown_message_types` is accept."""
        return message_type in self.message_types or self.unknown_message_types is UnknownMessageTypes.ACCEPT


class ApiKeyState(StrEnum):
    """Where a key is in its life, as the admin API lists it."""

    ACTIVE = "active"
    #: Replaced by a rotation; still accepted until `expires_at` (the grace period).
    ROTATING = "rotating"
    #: Revoked, or rotated and past its grace period: ingest answers 401.
    REVOKED = "revoked"


class ApiKey(HubModel):
    """A partner credential. Only its SHA-256 is stored: keys are 256-bit random values, so a
    fast hash is enough (no password stretching needed) and lookups stay one GetItem.

    The metadata (label, prefix, dates) is set for keys created through the admin API; keys
    written by hand before it have none of it."""

    model_config = ConfigDict(frozen=True)

    key_id: str
    tenant_id: str
    key_hash: str
    #: None = every integration of the tenant; otherwise only these.
    integration_ids: frozenset[str] | None = None
    active: bool = True
    label: str | None = None
    #: The key's first characters (`hub_` and 8 more), shown so operators can tell keys apart.
    prefix: str | None = None
    created_at: datetime | None = None
    #: UTC day (YYYY-MM-DD) ingest last accepted the key; recorded at most daily (hub.ingest.key_usage).
    last_used_day: str | None = None
    #: The end of a rotated key's grace period; None = no end.
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    #: The key that replaced this one in a rotation, and the one this one replaced.
    rotated_to: str | None = None
    rotated_from: str | None = None

    def usable_at(self, now: datetime) -> bool:
        """True while ingest accepts the key: not revoked, and before the end of its grace."""
        return self.active and (self.expires_at is None or now < self.expires_at)

    def state(self, now: datetime) -> ApiKeyState:
        if not self.usable_at(now):
            return ApiKeyState.REVOKED
        return ApiKeyState.ACTIVE if self.expires_at is None else ApiKeyState.ROTATING

    def may_use(self, integration: Integration) -> bool:
        """True when this key may post to `integration` (same tenant, allowed integration).
        Whether the key is still usable at all is `usable_at`."""
        if not self.active or integration.tenant_id != self.tenant_id:
            return False
        return self.integration_ids is None or integration.integration_id in self.integration_ids


API_KEY_PREFIX = "hub_"
#: How many characters of a key are shown (`hub_` + 8 of its random part: 48 of its 256 bits).
SHOWN_PREFIX_LENGTH = len(API_KEY_PREFIX) + 8
#: Rotation grace period: the default, and the bounds an operator may choose within.
DEFAULT_ROTATION_GRACE = timedelta(hours=24)
MAX_ROTATION_GRACE_HOURS = 720


def hash_api_key(raw_key: str) -> str:
    """Hex SHA-256 of a presented key: the lookup key of its stored record."""
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


def generate_api_key() -> str:
    """A new secret key, shown once to its owner: `hub_` and 256 random bits (43 URL-safe
    characters). Operators tell keys apart by its prefix (`shown_prefix`) and key id."""
    return f"{API_KEY_PREFIX}{secrets.token_urlsafe(32)}"


def shown_prefix(raw_key: str) -> str:
    """The part of a key that may be shown and stored in clear."""
    return raw_key[:SHOWN_PREFIX_LENGTH]


def same_secret(a: str, b: str) -> bool:
    """Constant-time comparison of two secrets."""
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))
