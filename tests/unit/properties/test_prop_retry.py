"""Properties of the retry policy (hub.domain.retry): the delay stays within its jitter range and
its cap, a Retry-After is a floor, and the max age and max retries end in giving up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from hub.delivery.http import parse_retry_after
from hub.domain.retry import RetryOutcome, RetryPolicy, backoff_seconds, decide

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
EXHAUSTED = {RetryOutcome.EXHAUSTED_DEAD_LETTER, RetryOutcome.EXHAUSTED_ERROR}

# Policies as an operator writes them: factor up to 10 (larger ones: the cap test below).
policies = st.builds(
    RetryPolicy,
    retry_auto_enabled=st.just(True),
    retry_max=st.integers(0, 100),
    backoff_base_seconds=st.floats(0.01, 10_000),
    backoff_factor=st.floats(1, 10),
    backoff_cap_seconds=st.floats(0.01, 7 * 86_400),
    retry_max_age_seconds=st.floats(1, 30 * 86_400),
    retry_dead_letter=st.booleans(),
)
ladders = st.lists(st.floats(0.01, 1e6), min_size=1, max_size=8, unique=True).map(
    lambda xs: tuple(sorted(xs))
)
unit = st.floats(0, 1, exclude_max=True)


@settings(derandomize=True, deadline=None, max_examples=200)
@given(policy=policies, retry_number=st.integers(0, 99), r=unit)
def test_backoff_is_full_jitter_below_the_cap(policy: RetryPolicy, retry_number: int, r: float) -> None:
    ceiling = min(
        policy.backoff_cap_seconds, policy.backoff_base_seconds * policy.backoff_factor**retry_number
    )
    delay = backoff_seconds(policy, retry_number, lambda: r)
    assert 0 <= delay <= policy.backoff_cap_seconds
    assert delay == pytest.approx(r * ceiling)  # the jitter spans [0, ceiling) and nothing else
    # The range never shrinks from one retry to the next.
    assert backoff_seconds(policy, retry_number + 1, lambda: r) >= delay


@settings(derandomize=True, deadline=None, max_examples=100)
@given(ladder=ladders, retry_number=st.integers(0, 100), r=unit)
def test_a_ladder_gives_its_entries_in_order_then_repeats_the_last(
    ladder: tuple[float, ...], retry_number: int, r: float
) -> None:
    policy = RetryPolicy(retry_auto_enabled=True, ladder_seconds=ladder)
    delay = backoff_seconds(policy, retry_number, lambda: r)
    assert delay == ladder[min(retry_number, len(ladder) - 1)]  # no jitter on a ladder
    assert ladder[0] <= delay <= ladder[-1]
    assert backoff_seconds(policy, retry_number + 1, lambda: r) >= delay


@settings(derandomize=True, deadline=None, max_examples=200)
@given(
    policy=policies,
    retry_count=st.integers(0, 120),
    age=st.floats(0, 40 * 86_400),
    retry_after=st.none() | st.floats(0, 1e9),
    r=unit,
)
def test_decide_schedules_within_max_age_and_max_retries_else_gives_up(
    policy: RetryPolicy, retry_count: int, age: float, retry_after: float | None, r: float
) -> None:
    received_at = NOW - timedelta(seconds=age)
    decision = decide(
        policy,
        retryable=True,
        retry_count=retry_count,
        received_at=received_at,
        now=NOW,
        retry_after_seconds=retry_after,
        rand=lambda: r,
    )
    deadline = received_at + timedelta(seconds=policy.retry_max_age_seconds)
    if retry_count >= policy.retry_max:
        assert decision.outcome in EXHAUSTED
    if decision.outcome is RetryOutcome.SCHEDULE:
        assert decision.next_retry_at is not None
        assert retry_count < policy.retry_max
        assert decision.retry_count == retry_count + 1
        assert NOW <= decision.next_retry_at <= deadline
        wait = (decision.next_retry_at - NOW).total_seconds()
        if retry_after is not None:
            assert wait >= retry_after - 1e-3  # Retry-After is a floor (timedelta keeps microseconds)
        assert wait <= max(policy.backoff_cap_seconds, retry_after or 0) + 1e-3
    else:
        assert decision.outcome in EXHAUSTED
        assert decision.next_retry_at is None
        assert decision.retry_count == retry_count
        # Given up only when out of retries or when the next attempt would fall past the max age.
        floor = retry_after or 0.0
        assert (
            retry_count >= policy.retry_max
            or NOW + timedelta(seconds=floor) > deadline
            or (NOW + timedelta(seconds=backoff_seconds(policy, retry_count, lambda: r)) > deadline)
        )
    expected = (
        RetryOutcome.EXHAUSTED_DEAD_LETTER if policy.retry_dead_letter else RetryOutcome.EXHAUSTED_ERROR
    )
    if decision.outcome in EXHAUSTED:
        assert decision.outcome is expected


@settings(derandomize=True, deadline=None, max_examples=50)
@given(policy=policies, retry_count=st.integers(0, 120), enabled=st.booleans())
def test_not_retryable_or_auto_retry_off_never_schedules(
    policy: RetryPolicy, retry_count: int, enabled: bool
) -> None:
    refused = decide(policy, retryable=False, retry_count=retry_count, received_at=NOW, now=NOW)
    assert refused.outcome is RetryOutcome.NOT_RETRYABLE
    off = policy.model_copy(update={"retry_auto_enabled": False})
    assert decide(off, retryable=True, retry_count=retry_count, received_at=NOW, now=NOW).outcome is (
        RetryOutcome.AUTO_RETRY_OFF
    )


@settings(derandomize=True, deadline=None, max_examples=50, phases=(Phase.explicit, Phase.generate))
@given(policy=policies, retry_after=st.floats(1e9, 1e15))
@example(policy=RetryPolicy(retry_auto_enabled=True), retry_after=1e14)
def test_a_retry_after_past_the_max_age_gives_up(policy: RetryPolicy, retry_after: float) -> None:
    """Found by this property: a Retry-After beyond what a datetime holds raised OverflowError."""
    decision = decide(
        policy.model_copy(update={"retry_max": 100}),
        retryable=True,
        retry_count=0,
        received_at=NOW,
        now=NOW,
        retry_after_seconds=retry_after,
    )
    assert decision.outcome in EXHAUSTED


@settings(derandomize=True, deadline=None, max_examples=50, phases=(Phase.explicit, Phase.generate))
@given(factor=st.floats(1, 1e9), retry_number=st.integers(0, 99))
@example(factor=1e6, retry_number=60)
def test_any_valid_policy_backs_off_at_most_the_cap(factor: float, retry_number: int) -> None:
    """Found by this property: factor**n overflowed before the cap applied."""
    policy = RetryPolicy(retry_auto_enabled=True, retry_max=100, backoff_factor=factor)
    assert 0 <= backoff_seconds(policy, retry_number, lambda: 0.5) <= policy.backoff_cap_seconds


@settings(derandomize=True, deadline=None, max_examples=200)
@given(value=st.text(max_size=40))
def test_any_retry_after_header_reads_as_seconds_or_nothing(value: str) -> None:
    """A destination's Retry-After is untrusted text: seconds >= 0 or None, never an exception
    (str.isdigit() takes "²", which float() refuses)."""
    seconds = parse_retry_after(value, now=NOW)
    assert seconds is None or seconds >= 0


def test_superscript_digits_are_no_retry_after() -> None:
    assert parse_retry_after("²", now=NOW) is None
    assert parse_retry_after(" 120 ", now=NOW) == 120.0
