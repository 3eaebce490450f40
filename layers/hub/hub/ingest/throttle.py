"""The partner API's per-tenant rate limit (issue 14): one token bucket per tenant, in memory
per warm instance, checked once the caller is authenticated (so the tenant is known) and before
anything is stored.

The tenant's own `rate_limit` (set by a platform admin) wins over the stack's default
(HUB_TENANT_RATE_PER_SECOND, HUB_TENANT_BURST). Both are per instance: the most a tenant gets is
that times the instances serving it, at most the function's reserved concurrency.
"""

from __future__ import annotations

from typing import Any

from hub.domain.rate_limit import Rate, TokenBuckets, retry_after_seconds
from hub.domain.tenancy import Tenant
from hub.errors import RateLimited


class TenantRateLimited(RateLimited):
    """A tenant over its rate; `tenant_id` says whose (for the metric, never the answer: an
    inbound webhook's sender need not learn the tenant's id)."""

    def __init__(self, tenant_id: str, rate: Rate, wait: float) -> None:
        limit: dict[str, Any] = {"per_second": rate.per_second, "burst": rate.burst, "scope": "instance"}
        super().__init__(
            "this tenant is over its request rate; resend after Retry-After seconds",
            retry_after_seconds=retry_after_seconds(wait),
            details={"limit": limit},
        )
        self.tenant_id = tenant_id


class TenantThrottle:
    """Admits a tenant's request or raises TenantRateLimited (nothing spent then)."""

    def __init__(self, default: Rate, buckets: TokenBuckets | None = None) -> None:
        self._default = default
        self._buckets = buckets or TokenBuckets()

    def rate_of(self, tenant: Tenant | None) -> Rate:
        """The tenant's own limit, else the default (also for a tenant without an item)."""
        return tenant.rate_limit if tenant is not None and tenant.rate_limit is not None else self._default

    def admit(self, tenant_id: str, tenant: Tenant | None) -> None:
        rate = self.rate_of(tenant)
        wait = self._buckets.take(tenant_id, rate)
        if wait > 0:
            raise TenantRateLimited(tenant_id, rate, wait)
