"""The admin API's per-token rate limit (issue 27): one token bucket per admin token, in memory
per warm instance, like the partner API's per-tenant limit (hub.ingest.throttle). Checked once
the token is authenticated and before the route runs, so a refused request did nothing; one
token's exhaustion leaves every other token's bucket as it was.
"""

from __future__ import annotations

from hub.domain.rate_limit import Rate, TokenBuckets, retry_after_seconds
from hub.errors import RateLimited


class AdminTokenRateLimited(RateLimited):
    """An admin token over its request rate; nothing was done, resend after Retry-After."""

    def __init__(self, rate: Rate, wait: float) -> None:
        super().__init__(
            "this admin token is over its request rate; resend after Retry-After seconds",
            retry_after_seconds=retry_after_seconds(wait),
            details={"limit": {"per_second": rate.per_second, "burst": rate.burst, "scope": "instance"}},
        )


class AdminTokenThrottle:
    """Admits an admin token's request or raises AdminTokenRateLimited (nothing spent then)."""

    def __init__(self, rate: Rate, buckets: TokenBuckets | None = None) -> None:
        self._rate = rate
        self._buckets = buckets or TokenBuckets()

    def admit(self, token_id: str) -> None:
        wait = self._buckets.take(token_id, self._rate)
        if wait > 0:
            raise AdminTokenRateLimited(self._rate, wait)
