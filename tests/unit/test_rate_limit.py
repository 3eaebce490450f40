"""Rate limits in memory (issue 14): token buckets per tenant, failure windows per address, on a
clock the tests move."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hub.admin.token_guard import FailedTokenGuard
from hub.domain.rate_limit import FailureWindow, Rate, TokenBuckets, retry_after_seconds
from hub.domain.tenancy import Tenant
from hub.errors import RateLimited, TooManyFailedTokens
from hub.ingest.throttle import TenantRateLimited, TenantThrottle


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def taken(buckets: TokenBuckets, key: str, rate: Rate, times: int) -> list[float]:
    return [buckets.take(key, rate) for _ in range(times)]


class TestTokenBuckets:
    def test_a_burst_passes_then_the_next_request_waits_for_one_token(self) -> None:
        clock = Clock()
        buckets = TokenBuckets(clock)
        rate = Rate(per_second=2, burst=5)

        assert taken(buckets, "t1", rate, 5) == [0.0] * 5
        assert buckets.take("t1", rate) == pytest.approx(0.5)  # one token at 2/s

    def test_tokens_refill_at_the_rate_and_never_beyond_the_burst(self) -> None:
        clock = Clock()
        buckets = TokenBuckets(clock)
        rate = Rate(per_second=2, burst=3)
        taken(buckets, "t1", rate, 3)

        clock.advance(1.0)  # two tokens back
        assert taken(buckets, "t1", rate, 3) == [0.0, 0.0, pytest.approx(0.5)]

        clock.advance(3600)  # a long quiet spell fills the bucket to its burst, no more
        assert taken(buckets, "t1", rate, 4) == [0.0, 0.0, 0.0, pytest.approx(0.5)]

    def test_a_refused_request_spends_nothing_so_waiting_as_told_passes(self) -> None:
        clock = Clock()
        buckets = TokenBuckets(clock)
        rate = Rate(per_second=0.25, burst=1)
        buckets.take("t1", rate)

        wait = buckets.take("t1", rate)
        assert wait == pytest.approx(4.0)
        assert buckets.take("t1", rate) == pytest.approx(4.0)  # asking again costs nothing
        clock.advance(wait)
        assert buckets.take("t1", rate) == 0.0

    def test_tenants_have_their_own_buckets(self) -> None:
        buckets = TokenBuckets(Clock())
        rate = Rate(per_second=1, burst=2)
        taken(buckets, "t1", rate, 2)

        assert buckets.take("t1", rate) > 0
        assert taken(buckets, "t2", rate, 2) == [0.0, 0.0]

    def test_a_lowered_burst_applies_at_once(self) -> None:
        buckets = TokenBuckets(Clock())
        taken(buckets, "t1", Rate(per_second=1, burst=100), 1)  # 99 left

        assert taken(buckets, "t1", Rate(per_second=1, burst=2), 3) == [0.0, 0.0, pytest.approx(1.0)]

    def test_the_least_recently_seen_key_is_forgotten_beyond_the_bound(self) -> None:
        buckets = TokenBuckets(Clock(), max_keys=2)
        rate = Rate(per_second=1, burst=1)
        buckets.take("a", rate)
        buckets.take("b", rate)
        buckets.take("a", rate)  # a is refused, and now the most recently seen

        buckets.take("c", rate)  # b is forgotten

        assert buckets.take("a", rate) > 0
        assert buckets.take("b", rate) == 0.0  # a full bucket again


@pytest.mark.parametrize(("wait", "header"), [(0.001, 1), (0.5, 1), (1.0, 1), (1.01, 2), (59.2, 60)])
def test_retry_after_is_whole_seconds_rounded_up_and_at_least_one(wait: float, header: int) -> None:
    assert retry_after_seconds(wait) == header


@pytest.mark.parametrize(
    "shape", [{"per_second": 0, "burst": 1}, {"per_second": 1, "burst": 0}, {"per_second": 1}]
)
def test_a_rate_needs_a_positive_rate_and_burst(shape: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        Rate.model_validate(shape)


class TestTenantThrottle:
    def test_over_the_default_is_429_with_retry_after_from_the_bucket(self) -> None:
        clock = Clock()
        throttle = TenantThrottle(Rate(per_second=0.5, burst=2), TokenBuckets(clock))
        throttle.admit("t1", None)
        throttle.admit("t1", None)

        with pytest.raises(TenantRateLimited) as refused:
            throttle.admit("t1", None)

        error = refused.value
        assert isinstance(error, RateLimited)
        assert (error.http_status, error.code) == (429, "rate_limited")
        assert error.headers() == {"Retry-After": "2"}
        assert error.details == {
            "retry_after_seconds": 2,
            "limit": {"per_second": 0.5, "burst": 2, "scope": "instance"},
        }
        assert error.tenant_id == "t1"
        assert "t1" not in error.message  # a webhook's sender does not learn the tenant's id

    def test_a_tenants_own_limit_wins_over_the_default(self) -> None:
        throttle = TenantThrottle(Rate(per_second=1, burst=1), TokenBuckets(Clock()))
        generous = Tenant(tenant_id="t1", name="T1", rate_limit=Rate(per_second=1, burst=3))

        for _ in range(3):
            throttle.admit("t1", generous)
        with pytest.raises(TenantRateLimited):
            throttle.admit("t1", generous)
        assert throttle.rate_of(Tenant(tenant_id="t2", name="T2")) == Rate(per_second=1, burst=1)


class TestFailedTokens:
    def guard(self, clock: Clock) -> FailedTokenGuard:
        return FailedTokenGuard(FailureWindow(limit=10, window_seconds=60, clock=clock))

    def test_the_eleventh_try_after_ten_failures_in_the_window_is_refused(self) -> None:
        clock = Clock()
        guard = self.guard(clock)
        for n in range(10):
            guard.check("198.51.100.7")
            assert guard.failed("198.51.100.7") == n + 1
            clock.advance(1)

        with pytest.raises(TooManyFailedTokens) as refused:
            guard.check("198.51.100.7")

        # The first failure (at 0 s) leaves the window at 60 s; it is now 10 s.
        assert refused.value.headers() == {"Retry-After": "50"}
        assert (refused.value.http_status, refused.value.code) == (429, "too_many_failed_tokens")
        guard.check("198.51.100.8")  # another address is not affected

    def test_the_block_lifts_as_failures_leave_the_window(self) -> None:
        clock = Clock()
        guard = self.guard(clock)
        for _ in range(10):
            guard.failed("198.51.100.7")

        clock.advance(59.5)
        with pytest.raises(TooManyFailedTokens) as refused:
            guard.check("198.51.100.7")
        assert refused.value.retry_after_seconds == 1
        clock.advance(0.5)
        guard.check("198.51.100.7")

    def test_failures_spread_wider_than_the_window_never_block(self) -> None:
        clock = Clock()
        guard = self.guard(clock)
        for _ in range(100):
            guard.check("198.51.100.7")
            guard.failed("198.51.100.7")
            clock.advance(6.01)  # at most 10 in any 60 s
