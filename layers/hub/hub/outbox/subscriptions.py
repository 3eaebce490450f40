"""Outbound webhook subscriptions (issue 12): which of a tenant's events go to which URL, signed
with which secrets. Pure: the admin use cases, the subscription sink and the sender decide with
these rules; storage is hub.adapters.dynamo.subscriptions.

- `url`: http(s) with a host. The admin API then checks it against the egress policy
  (hub.delivery.egress: https to a public address, plain http only to a private range the
  deployment allows, such as loopback on the local stack); redirects are never followed.
- `event_types`: exact types (`message.sent`), a family wildcard (`message.*`, `connection.*`) or
  `*` (everything). A pattern that can never match (an unknown type or family) is refused.
- `integration_ids`: when set, only events of those integrations; an event naming no
  integration (`connection.*`, `subscription.disabled`) then does not match.
- `secrets`: Standard Webhooks `whsec_` secrets (base64 of 24 to 64 random bytes). Each
  attempt is signed with every current one (space-separated `v1,` signatures), so a rotation
  adds the new secret and keeps the old one until its `expires_at`: receivers that know either
  one verify throughout.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field, field_validator

from hub.domain.model import HubModel
from hub.outbox.events import EventType, OutboxEvent

SECRET_PREFIX = "whsec_"  # noqa: S105 - a prefix, not a secret
#: A generated secret's random bytes (Svix and the Standard Webhooks examples use 24).
SECRET_BYTES = 24
_SECRET_MIN_BYTES, _SECRET_MAX_BYTES = 24, 64
#: Most secrets one subscription signs with at once (rotations in flight).
MAX_SECRETS = 5
SUBSCRIPTION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"

#: The families a wildcard may name (`message.*` ...).
FAMILIES = frozenset(t.value.split(".", 1)[0] for t in EventType)


def new_secret() -> str:
    """A fresh `whsec_` secret (the hub generates one when none is given)."""
    return SECRET_PREFIX + base64.b64encode(os.urandom(SECRET_BYTES)).decode()


def secret_key(secret: str) -> bytes:
    """The HMAC key of a `whsec_` secret (its base64 part, decoded). ValueError if malformed."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a secret starts with whsec_")
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a secret is whsec_ followed by base64") from None
    if not _SECRET_MIN_BYTES <= len(key) <= _SECRET_MAX_BYTES:
        raise ValueError(f"a secret holds {_SECRET_MIN_BYTES} to {_SECRET_MAX_BYTES} bytes")
    return key


def check_url(url: str) -> str:
    """`url` when it has the shape of a receiver's URL: http(s) with a host. Which addresses
    may be reached is the egress policy's to say (hub.delivery.egress)."""
    try:
        parts = urlsplit(url)
        shaped = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        shaped = False
    if shaped:
        return url
    raise ValueError("url must be an http(s) URL with a host")


def check_pattern(pattern: str) -> str:
    """An event type pattern a subscription may hold: a known type, `<family>.*` or `*`."""
    if pattern == "*":
        return pattern
    if pattern.endswith(".*") and pattern[:-2] in FAMILIES:
        return pattern
    try:
        EventType(pattern)
    except ValueError:
        raise ValueError(
            f"unknown event type {pattern!r}: a type (message.sent), a family (message.*) or *"
        ) from None
    return pattern


def type_matches(patterns: Iterable[str], event_type: str) -> bool:
    for pattern in patterns:
        if pattern in ("*", event_type):
            return True
        if pattern.endswith(".*") and event_type.startswith(pattern[:-1]):
            return True
    return False


class SigningSecret(HubModel):
    """One of a subscription's secrets. `value` is the `whsec_` secret when the reader opened
    it (the sender; a create or rotation that just made it), None otherwise; `seal` is its
    stored, sealed form (opaque here: hub.adapters.dynamo.subscriptions)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    secret_id: str
    created_at: datetime
    #: Set by a rotation: the secret stops signing at this time (None: until rotated).
    expires_at: datetime | None = None
    value: str | None = Field(default=None, repr=False)
    seal: dict[str, Any] | None = Field(default=None, repr=False)

    def current(self, now: datetime) -> bool:
        return self.expires_at is None or self.expires_at > now


class Subscription(HubModel):
    """A tenant's outbound webhook subscription."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subscription_id: str
    tenant_id: str
    url: str
    event_types: tuple[str, ...]
    integration_ids: tuple[str, ...] | None = None
    description: str | None = None
    enabled: bool = True
    #: Why it is disabled (an operator's reason, or the receiver's 410 Gone).
    disabled_reason: str | None = None
    secrets: tuple[SigningSecret, ...] = ()
    version: int = 1
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def settings(self) -> dict[str, Any]:
        """What an operator configures (no secrets, no dates): stored and shown as they are."""
        return {
            "subscription_id": self.subscription_id,
            "tenant_id": self.tenant_id,
            "url": self.url,
            "event_types": list(self.event_types),
            "integration_ids": list(self.integration_ids) if self.integration_ids is not None else None,
            "description": self.description,
            "enabled": self.enabled,
            "disabled_reason": self.disabled_reason,
        }

    def wants(self, event: OutboxEvent) -> bool:
        """Whether `event` goes to this subscription (enabled, type and integration filter)."""
        if not self.enabled or event.tenant_id != self.tenant_id:
            return False
        if not type_matches(self.event_types, event.type.value):
            return False
        return self.integration_ids is None or event.integration_id in self.integration_ids

    def signing_values(self, now: datetime) -> list[str]:
        """The opened secrets that sign at `now`, newest first."""
        current = [s for s in self.secrets if s.current(now) and s.value]
        return [s.value for s in sorted(current, key=lambda s: s.created_at, reverse=True) if s.value]

    def pruned(self, now: datetime) -> tuple[SigningSecret, ...]:
        """The secrets still current at `now` (expired ones are dropped at the next save)."""
        return tuple(s for s in self.secrets if s.current(now))


class SubscriptionSpec(HubModel):
    """A subscription as the admin API takes it (create and PUT). Secrets change by rotation
    (`/rotate-secret`), except when a PUT moves the receiver to another origin: the signing
    secret is bound to it, so that PUT carries a new one (`secret`, or `rotate_secret`)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    #: Create only (absent: generated, `sub_` + 26 characters); on PUT, absent or the path's.
    subscription_id: str | None = Field(default=None, pattern=SUBSCRIPTION_ID_PATTERN)
    url: str = Field(min_length=1, max_length=2048)
    event_types: list[str] = Field(min_length=1, max_length=50)
    #: Absent or null: every integration of the tenant.
    integration_ids: list[str] | None = Field(default=None, min_length=1, max_length=50)
    description: str | None = Field(default=None, min_length=1, max_length=500)
    enabled: bool = True
    #: Create: the first secret (absent: the hub generates one, shown once). PUT: only with a
    #: `url` that moves to another scheme, host or port, as the one secret that then signs.
    secret: str | None = Field(default=None, repr=False)
    #: PUT only, with a `url` that moves: the hub generates the new secret (shown once).
    rotate_secret: bool = False

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        return check_url(url)

    @field_validator("event_types")
    @classmethod
    def _patterns(cls, patterns: list[str]) -> list[str]:
        return sorted({check_pattern(p) for p in patterns})

    @field_validator("integration_ids")
    @classmethod
    def _integrations(cls, ids: list[str] | None) -> list[str] | None:
        import re  # noqa: PLC0415

        if ids is None:
            return None
        for integration_id in ids:
            if not re.match(SUBSCRIPTION_ID_PATTERN, integration_id):
                raise ValueError(f"not an integration id: {integration_id!r}")
        return sorted(set(ids))

    @field_validator("secret")
    @classmethod
    def _secret(cls, secret: str | None) -> str | None:
        if secret is not None:
            secret_key(secret)
        return secret


def matching(subscriptions: Sequence[Subscription], event: OutboxEvent) -> list[Subscription]:
    return [s for s in subscriptions if s.wants(event)]
