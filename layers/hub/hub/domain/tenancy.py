"""Tenants, integrations and API keys: who may send what, and how each message type is
treated. The tenant of a message always comes from here, never from its payload."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class DuplicateHandling(StrEnum):
    """What to do with a message whose business keys match an earlier one (seed 000,
    "Tratamento de Duplicatas"). Distinct from ingest idempotency."""

    ACCEPT = "accept"
    REJECT = "reject"
    OVERWRITE = "overwrite"


class IntegrationMode(StrEnum):
    #: Run everything but the delivery (seed 000, scenario H). The product default.
    OBSERVABILITY = "observability"
    ORCHESTRATION = "orchestration"


class MessageTypeConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    #: JMESPath expressions into the payload that identify the business entity (e.g. "po_number").
    duplicate_key_fields: tuple[str, ...] = ()
    duplicate_handling: DuplicateHandling = DuplicateHandling.ACCEPT


class Destination(BaseModel):
    """Where delivered messages go. Connector details grow with the delivery issue."""

    model_config = ConfigDict(frozen=True, extra="allow")

    protocol: str = "http"
    url: str
    method: str = "POST"


class Tenant(BaseModel):
    model_config = ConfigDict(frozen=True)

    tenant_id: str
    name: str


class Integration(BaseModel):
    model_config = ConfigDict(frozen=True)

    integration_id: str
    tenant_id: str
    name: str
    mode: IntegrationMode = IntegrationMode.OBSERVABILITY
    destination: Destination | None = None
    message_types: dict[str, MessageTypeConfig] = Field(default_factory=dict)

    def message_type_config(self, message_type: str) -> MessageTypeConfig:
        """The rules for `message_type`; an undeclared type gets the defaults (accept)."""
        return self.message_types.get(message_type, MessageTypeConfig())


class ApiKey(BaseModel):
    """A partner credential. Only its SHA-256 is stored: keys are 256-bit random values, so a
    fast hash is enough (no password stretching needed) and lookups stay one GetItem."""

    model_config = ConfigDict(frozen=True)

    key_id: str
    tenant_id: str
    key_hash: str
    #: None = every integration of the tenant; otherwise only these.
    integration_ids: frozenset[str] | None = None
    active: bool = True

    def may_use(self, integration: Integration) -> bool:
        """True when this key may post to `integration` (same tenant, allowed integration)."""
        if not self.active or integration.tenant_id != self.tenant_id:
            return False
        return self.integration_ids is None or integration.integration_id in self.integration_ids


API_KEY_PREFIX = "hub_"


def hash_api_key(raw_key: str) -> str:
    """Hex SHA-256 of a presented key: the lookup key of its stored record."""
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


def generate_api_key(key_id: str) -> str:
    """A new secret key, shown once to its owner. The key id is embedded so operators can tell
    keys apart in logs without ever seeing the secret part."""
    return f"{API_KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"


def same_secret(a: str, b: str) -> bool:
    """Constant-time comparison of two secrets."""
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))
