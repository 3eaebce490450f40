"""Configuration a warm instance keeps in memory: API keys, integrations and tenants, for a
short time.

Ingest and the worker read them on every message; DynamoDB reads cost money and latency, and
the configuration changes rarely. A cached entry lives `ttl_seconds`: a revoked key stops
working, a disabled tenant is refused, and a changed integration takes effect, within that
time (documented in docs/api-guide.md).
Misses are cached too (an unknown key hash, integration or tenant id), so probing costs one read per
instance and TTL. Bounded: past `max_entries` the oldest entries are dropped.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from typing import Generic, TypeVar

from hub.domain.tenancy import ApiKey, Integration, Tenant
from hub.ports import ConfigRepository

V = TypeVar("V")


class TtlCache(Generic[V]):
    def __init__(
        self, ttl_seconds: float, max_entries: int = 2048, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl = ttl_seconds
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()

    def get(self, key: str, load: Callable[[], V]) -> V:
        now = self._clock()
        found = self._entries.get(key)
        if found is not None and found[0] > now:
            return found[1]
        value = load()
        if self._ttl > 0:
            self._entries[key] = (now + self._ttl, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        return value

    def forget(self, key: str) -> None:
        self._entries.pop(key, None)


class CachedConfig:
    """A ConfigRepository that remembers reads for a while; writes go through and forget."""

    def __init__(
        self, inner: ConfigRepository, ttl_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._inner = inner
        self._keys: TtlCache[ApiKey | None] = TtlCache(ttl_seconds, clock=clock)
        self._integrations: TtlCache[Integration | None] = TtlCache(ttl_seconds, clock=clock)
        self._tenants: TtlCache[Tenant | None] = TtlCache(ttl_seconds, clock=clock)

    def get_api_key(self, key_hash: str) -> ApiKey | None:
        return self._keys.get(key_hash, lambda: self._inner.get_api_key(key_hash))

    def get_integration(self, tenant_id: str, integration_id: str) -> Integration | None:
        return self._integrations.get(
            _scoped(tenant_id, integration_id), lambda: self._inner.get_integration(tenant_id, integration_id)
        )

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        return self._tenants.get(tenant_id, lambda: self._inner.get_tenant(tenant_id))

    def put_tenant(self, tenant: Tenant) -> None:
        self._inner.put_tenant(tenant)
        self._tenants.forget(tenant.tenant_id)

    def put_integration(self, integration: Integration) -> None:
        self._inner.put_integration(integration)
        self._integrations.forget(_scoped(integration.tenant_id, integration.integration_id))

    def forget_integration(self, tenant_id: str, integration_id: str) -> None:
        """Drops what this cache holds of an integration (written through another cache)."""
        self._integrations.forget(_scoped(tenant_id, integration_id))

    def put_api_key(self, api_key: ApiKey) -> None:
        self._inner.put_api_key(api_key)
        self._keys.forget(api_key.key_hash)

    def flag_connection_gone(self, integration: Integration, now: datetime, dest_status: str | None) -> None:
        self._inner.flag_connection_gone(integration, now, dest_status)
        self._integrations.forget(_scoped(integration.tenant_id, integration.integration_id))


def _scoped(tenant_id: str, integration_id: str) -> str:
    """The cache key of an integration: its id is unique within its tenant only."""
    return f"{tenant_id}#{integration_id}"
