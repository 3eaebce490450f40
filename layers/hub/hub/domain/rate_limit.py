"""Rate limits kept in memory, per warm instance (issue 14): a token bucket per key (partner
ingest, per tenant) and a sliding window of failures per key (admin sign-in, per source IP).

Both are plain Python on an injected monotonic clock (seconds), so tests move time instead of
sleeping. Neither is exact across instances: each Lambda instance has its own buckets, so the
effective limit is the per-instance limit times the instances serving the caller (bounded by
the function's reserved concurrency). docs/decisions/partner-rate-limits.md says why.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ConfigDict, Field

from hub.domain.model import HubModel

#: How many keys an instance remembers; the least recently seen is forgotten first. A forgotten
#: tenant starts again with a full bucket, a forgotten IP with no failures.
MAX_KEYS = 10_000


class Rate(HubModel):
    """A token bucket's shape: `burst` requests at once, refilled at `per_second`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: At least one request per 1,000 s: a positive float below 1e-130 is no number DynamoDB
    #: can store, and anything slower is a tenant disabled by other means.
    per_second: float = Field(ge=0.001, le=100_000)
    burst: int = Field(ge=1, le=1_000_000)


def retry_after_seconds(wait: float) -> int:
    """A wait as the `Retry-After` header says it: whole seconds, rounded up, at least 1."""
    return max(1, math.ceil(wait))


@dataclass
class _Bucket:
    tokens: float
    at: float


class TokenBuckets:
    """One token bucket per key. `take` spends a token when there is one; a refused request
    spends nothing, so a caller retrying after the wait it was told gets through."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_keys: int = MAX_KEYS) -> None:
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def take(self, key: str, rate: Rate) -> float:
        """0 when a token was spent; else the seconds until `key` has a token again."""
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(tokens=float(rate.burst), at=now)
            self._forget_oldest()
        else:
            # A lowered burst applies at once; time going backwards refills nothing.
            elapsed = max(0.0, now - bucket.at)
            bucket.tokens = min(float(rate.burst), bucket.tokens + elapsed * rate.per_second)
            bucket.at = now
            self._buckets.move_to_end(key)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / rate.per_second

    def _forget_oldest(self) -> None:
        while len(self._buckets) > self._max_keys:
            self._buckets.popitem(last=False)


class FailureWindow:
    """Failures per key over a sliding window: a key with `limit` failures in the last
    `window_seconds` is blocked until the oldest of them leaves the window."""

    def __init__(
        self,
        limit: int,
        window_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
    ) -> None:
        if limit < 1 or window_seconds <= 0:
            raise ValueError("a failure window needs limit >= 1 and window_seconds > 0")
        self._limit = limit
        self._window = window_seconds
        self._clock = clock
        self._max_keys = max_keys
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def blocked_for(self, key: str) -> float:
        """0 when `key` may try; else the seconds until it may."""
        now = self._clock()
        failures = self._recent(key, now)
        if failures is None or len(failures) < self._limit:
            return 0.0
        return failures[0] + self._window - now

    def failed(self, key: str) -> int:
        """Notes a failure of `key` now; how many it has in the window, this one included."""
        now = self._clock()
        failures = self._recent(key, now)
        if failures is None:
            failures = self._failures[key] = deque(maxlen=self._limit)
            while len(self._failures) > self._max_keys:
                self._failures.popitem(last=False)
        else:
            self._failures.move_to_end(key)
        failures.append(now)
        return len(failures)

    def _recent(self, key: str, now: float) -> deque[float] | None:
        failures = self._failures.get(key)
        if failures is None:
            return None
        while failures and failures[0] <= now - self._window:
            failures.popleft()
        if not failures:
            del self._failures[key]
            return None
        return failures
