"""An in-memory `hub.ports.ApiKeyStore` and `KeyUseStore`, with the DynamoDB adapter's
contract: keys by tenant newest first, a revoke that is idempotent, a rotation that only takes
an active key with no end."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from hub.domain.tenancy import ApiKey
from hub.errors import Conflict
from hub.ports import ApiKeyPage
from tests.fakes.pages import page


class FakeApiKeys:
    def __init__(self, tenants: Collection[str] = (), integrations: Mapping[str, str] | None = None) -> None:
        self.tenants = set(tenants)
        #: integration id -> tenant id
        self.integrations = dict(integrations or {})
        self.keys: dict[str, ApiKey] = {}

    def tenant_exists(self, tenant_id: str) -> bool:
        return tenant_id in self.tenants

    def tenant_integrations(self, tenant_id: str, integration_ids: Collection[str]) -> set[str]:
        return {i for i in integration_ids if self.integrations.get(i) == tenant_id}

    def create(self, key: ApiKey) -> None:
        # The adapter's condition: nothing is stored over a key of the same hash.
        if any(stored.key_hash == key.key_hash for stored in self.keys.values()):
            raise Conflict("api key exists", details={"key_id": key.key_id})
        assert key.key_id not in self.keys
        self.keys[key.key_id] = key

    def find(self, tenant_id: str, key_id: str) -> ApiKey | None:
        key = self.keys.get(key_id)
        return key if key is not None and key.tenant_id == tenant_id else None

    def list_keys(self, tenant_id: str, limit: int, cursor: str | None) -> ApiKeyPage:
        mine = {k.key_id: k for k in self.keys.values() if k.tenant_id == tenant_id}
        ids, next_cursor = page(mine, limit, cursor, f"api_keys:{tenant_id}", newest_first=True)
        return ApiKeyPage(keys=[mine[i] for i in ids], next_cursor=next_cursor)

    def revoke(self, key: ApiKey, now: datetime) -> ApiKey:
        stored = self.keys[key.key_id]
        if stored.active:
            stored = self.keys[key.key_id] = stored.model_copy(update={"active": False, "revoked_at": now})
        return stored

    def rotate(self, old: ApiKey, new: ApiKey, grace_until: datetime) -> ApiKey:
        stored = self.keys[old.key_id]
        if not stored.active or stored.expires_at is not None:
            raise Conflict("the key changed while it was rotated")
        self.create(new)
        ended = self.keys[old.key_id] = stored.model_copy(
            update={"expires_at": grace_until, "rotated_to": new.key_id}
        )
        return ended


class FakeKeyUse:
    """Records each write; `failing` makes every write raise."""

    def __init__(self, failing: bool = False) -> None:
        self.writes: list[tuple[str, str]] = []
        self.failing = failing

    def record_use(self, key_hash: str, day: str) -> None:
        self.writes.append((key_hash, day))
        if self.failing:
            raise ConnectionError("storage down")
