"""Partner API keys, managed by operators (issue 11): create (the key is shown once), list,
revoke, rotate with a grace period.

A key is stored only as its SHA-256 with its metadata, on the item ingest already reads
(`APIKEY#<sha256>`), so ingest needs nothing new to honour a revocation or the end of a grace
period: it sees them when its configuration cache (HUB_CONFIG_CACHE_SECONDS) reloads the item.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hub.admin.audit import Audit
from hub.domain.clock import utcnow
from hub.domain.ids import new_id
from hub.domain.tenancy import (
    ApiKey,
    ApiKeyState,
    generate_api_key,
    hash_api_key,
    shown_prefix,
)
from hub.errors import Conflict, HubError, NotFound
from hub.ports import ApiKeyStore

if TYPE_CHECKING:
    from hub.admin.access import Principal

logger = logging.getLogger(__name__)


class UnknownIntegrations(HubError):
    """A key limited to integrations that do not exist or belong to another tenant (the two are
    not told apart); `details.unknown` names them."""

    code = "unknown_integration"
    http_status = 422


class ApiKeyExists(Conflict):
    """A registered key (ApiKeyAdmin.register) is already stored; nothing was changed."""

    code = "api_key_exists"


#: A registered key is at least as long as the local stack's demo key: never a guessable one.
MIN_REGISTERED_KEY_LENGTH = 32


class ApiKeyNotActive(Conflict):
    """Only an active key can be rotated: a revoked one stays revoked, a rotating one already
    has its successor."""

    code = "api_key_not_active"


def key_view(key: ApiKey, now: datetime) -> dict[str, Any]:
    """A key as the admin API shows it: never the key, nor its hash."""
    return {
        "key_id": key.key_id,
        "label": key.label,
        "prefix": key.prefix,
        "created_at": _iso(key.created_at),
        "last_used_day": key.last_used_day,
        "integration_ids": sorted(key.integration_ids) if key.integration_ids is not None else None,
        "state": key.state(now).value,
        "expires_at": _iso(key.expires_at),
        "revoked_at": _iso(key.revoked_at),
        "rotated_from": key.rotated_from,
        "rotated_to": key.rotated_to,
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


class ApiKeyAdmin:
    """The API-key use cases of the admin API. Every answer about another tenant's key is the
    same NotFound as for a missing one."""

    def __init__(
        self, store: ApiKeyStore, clock: Callable[[], datetime] = utcnow, audit: Audit | None = None
    ) -> None:
        self._store = store
        self._clock = clock
        self._audit = audit or Audit(None)

    def create(
        self, tenant_id: str, label: str | None, integration_ids: Collection[str] | None, actor: Principal
    ) -> dict[str, Any]:
        """A new key: its view plus `key`, the secret, which is never retrievable again."""
        self._require_tenant(tenant_id)
        if integration_ids is not None:
            self._require_integrations(tenant_id, integration_ids)
        raw, key = self._new_key(tenant_id, label, integration_ids)
        self._store.create(key)
        now = self._clock()
        view = key_view(key, now)
        self._audit.record(actor, tenant_id, "api_key.created", {"key_id": key.key_id}, now, after=view)
        logger.info(
            "api key created", extra={"tenant_id": tenant_id, "key_id": key.key_id, "actor": actor.token_id}
        )
        return {**view, "key": raw}

    def register(
        self, tenant_id: str, raw_key: str, key_id: str, label: str | None, actor: Principal
    ) -> dict[str, Any]:
        """Stores a key whose value and id the caller chose, for every integration of the
        tenant. Only the local stack's demo seed calls it (no route does): the README prints
        the demo key and its id, so they cannot be generated. Otherwise exactly `create` (the
        hash and prefix stored, the audit entry); ApiKeyExists when the key is already stored."""
        if len(raw_key) < MIN_REGISTERED_KEY_LENGTH:
            raise ValueError(f"a registered key needs at least {MIN_REGISTERED_KEY_LENGTH} characters")
        self._require_tenant(tenant_id)
        now = self._clock()
        key = ApiKey(
            key_id=key_id,
            tenant_id=tenant_id,
            key_hash=hash_api_key(raw_key),
            label=label,
            prefix=shown_prefix(raw_key),
            created_at=now,
        )
        try:
            self._store.create(key)
        except Conflict as taken:
            raise ApiKeyExists("this key is already stored", details={"key_id": key_id}) from taken
        view = key_view(key, now)
        self._audit.record(actor, tenant_id, "api_key.created", {"key_id": key_id}, now, after=view)
        logger.info(
            "api key registered", extra={"tenant_id": tenant_id, "key_id": key_id, "actor": actor.token_id}
        )
        return view

    def list_keys(self, tenant_id: str, limit: int, cursor: str | None) -> dict[str, Any]:
        self._require_tenant(tenant_id)
        page = self._store.list_keys(tenant_id, limit, cursor)
        now = self._clock()
        return {
            "tenant_id": tenant_id,
            "items": [key_view(key, now) for key in page.keys],
            "next_cursor": page.next_cursor,
        }

    def revoke(self, tenant_id: str, key_id: str, actor: Principal) -> dict[str, Any]:
        """Idempotent: revoking a revoked key answers it as it is. Ingest refuses the key once
        its configuration cache reloads it."""
        key = self._key(tenant_id, key_id)
        now = self._clock()
        revoked = self._store.revoke(key, now)
        view = key_view(revoked, now)
        if key.active:  # a repeat changes nothing and logs nothing
            self._audit.record(
                actor,
                tenant_id,
                "api_key.revoked",
                {"key_id": key_id},
                now,
                before=key_view(key, now),
                after=view,
            )
        logger.info(
            "api key revoked", extra={"tenant_id": tenant_id, "key_id": key_id, "actor": actor.token_id}
        )
        return view

    def rotate(self, tenant_id: str, key_id: str, grace: timedelta, actor: Principal) -> dict[str, Any]:
        """A new key with the old one's label and integrations; the old one keeps working until
        now + `grace`. Only an active key rotates (ApiKeyNotActive otherwise, also when a
        concurrent rotation or revocation got there first)."""
        old = self._key(tenant_id, key_id)
        now = self._clock()
        if old.state(now) is not ApiKeyState.ACTIVE:
            raise self._not_active(old, now)
        raw, new = self._new_key(tenant_id, old.label, old.integration_ids, rotated_from=old.key_id)
        try:
            ended = self._store.rotate(old, new, now + grace)
        except Conflict as changed:  # a concurrent rotation or revocation
            raise self._not_active(self._key(tenant_id, key_id), now) from changed
        new_view, previous = key_view(new, now), key_view(ended, now)
        self._audit.record(
            actor,
            tenant_id,
            "api_key.rotated",
            {"key_id": key_id, "new_key_id": new.key_id},
            now,
            before=key_view(old, now),
            after={"previous": previous, "new": new_view},
        )
        logger.info(
            "api key rotated",
            extra={
                "tenant_id": tenant_id,
                "key_id": key_id,
                "new_key_id": new.key_id,
                "actor": actor.token_id,
            },
        )
        return {**new_view, "key": raw, "previous": previous}

    def _new_key(
        self,
        tenant_id: str,
        label: str | None,
        integration_ids: Collection[str] | None,
        rotated_from: str | None = None,
    ) -> tuple[str, ApiKey]:
        raw = generate_api_key()
        key = ApiKey(
            key_id=new_id("key"),
            tenant_id=tenant_id,
            key_hash=hash_api_key(raw),
            integration_ids=frozenset(integration_ids) if integration_ids is not None else None,
            label=label,
            prefix=shown_prefix(raw),
            created_at=self._clock(),
            rotated_from=rotated_from,
        )
        return raw, key

    def _require_tenant(self, tenant_id: str) -> None:
        if not self._store.tenant_exists(tenant_id):
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})

    def _require_integrations(self, tenant_id: str, integration_ids: Collection[str]) -> None:
        known = self._store.tenant_integrations(tenant_id, integration_ids)
        unknown = sorted(set(integration_ids) - known)
        if unknown:
            raise UnknownIntegrations(
                "the key is limited to integrations this tenant does not have",
                details={"field": "integration_ids", "unknown": unknown},
            )

    def _key(self, tenant_id: str, key_id: str) -> ApiKey:
        key = self._store.find(tenant_id, key_id)
        if key is None:
            raise NotFound("api key not found", details={"key_id": key_id})
        return key

    @staticmethod
    def _not_active(key: ApiKey, now: datetime) -> ApiKeyNotActive:
        return ApiKeyNotActive(
            "only an active key can be rotated",
            details={"key_id": key.key_id, "state": key.state(now).value, "rotated_to": key.rotated_to},
        )
