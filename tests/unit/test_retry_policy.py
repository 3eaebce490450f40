"""The retry classifier and policy against the seed's scenarios B-E (seed 000)."""

from datetime import UTC, datetime, timedelta

import pytest

from hub.domain.failure import ErrorClass
from hub.domain.retry import RetryOutcome, RetryPolicy, backoff_seconds, decide, is_retryable

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
ON = RetryPolicy(retry_auto_enabled=True)


@pytest.mark.parametrize(
    ("error_class", "retryable"),
    [
        (ErrorClass.HTTP_5XX, True),
        (ErrorClass.HTTP_429, True),
        (ErrorClass.HTTP_401, True),
        (ErrorClass.HTTP_4XX, False),
        (ErrorClass.NETWORK, True),
        (ErrorClass.TLS, False),
        (ErrorClass.SYNTAX, False),
    ],
)
def test_classification_table(error_class, retryable):
    assert is_retryable(error_class) is retryable


@pytest.mark.parametrize(
    ("code", "retryable"), [("Receiver", True), ("Server", True), ("Sender", False), ("Client", False)]
)
def test_soap_faults_by_code(code, retryable):
    assert is_retryable(ErrorClass.SOAP_FAULT, fault_code=code) is retryable


def test_an_uncertain_timeout_is_retried_only_where_the_destination_drops_repeats():
    assert not is_retryable(ErrorClass.TIMEOUT)
    assert is_retryable(ErrorClass.TIMEOUT, idempotent_retries=True)
    assert not is_retryable(ErrorClass.NETWORK, uncertain=True)


def test_scenario_b_first_retry_is_scheduled_with_backoff():
    decision = decide(ON, retryable=True, retry_count=0, received_at=NOW, now=NOW, rand=lambda: 1.0)
    assert decision.outcome is RetryOutcome.SCHEDULE
    assert decision.retry_count == 1
    assert decision.next_retry_at == NOW + timedelta(seconds=30)


def test_scenario_c_exhausted_goes_to_dead_letter_or_stays_error():
    assert (
        decide(ON, retryable=True, retry_count=5, received_at=NOW, now=NOW).outcome
        is RetryOutcome.EXHAUSTED_DEAD_LETTER
    )
    no_dlq = ON.model_copy(update={"retry_dead_letter": False})
    assert (
        decide(no_dlq, retryable=True, retry_count=5, received_at=NOW, now=NOW).outcome
        is RetryOutcome.EXHAUSTED_ERROR
    )


def test_scenario_d_auto_retry_off_by_default():
    assert (
        decide(RetryPolicy(), retryable=True, retry_count=0, received_at=NOW, now=NOW).outcome
        is RetryOutcome.AUTO_RETRY_OFF
    )


def test_scenario_e_4xx_is_never_retried_whatever_the_policy():
    assert (
        decide(ON, retryable=False, retry_count=0, received_at=NOW, now=NOW).outcome
        is RetryOutcome.NOT_RETRYABLE
    )


def test_retry_after_is_never_undercut():
    decision = decide(
        ON, retryable=True, retry_count=0, received_at=NOW, now=NOW, retry_after_seconds=120, rand=lambda: 0.1
    )
    assert decision.next_retry_at == NOW + timedelta(seconds=120)


def test_no_retry_after_the_maximum_age():
    old = NOW - timedelta(hours=23, minutes=59, seconds=50)
    decision = decide(ON, retryable=True, retry_count=1, received_at=old, now=NOW, rand=lambda: 1.0)
    assert decision.outcome is RetryOutcome.EXHAUSTED_DEAD_LETTER


def test_backoff_is_capped_and_fully_jittered():
    assert backoff_seconds(ON, 10, lambda: 1.0) == 3600
    assert backoff_seconds(ON, 3, lambda: 0.5) == 120
    assert backoff_seconds(ON, 3, lambda: 0.0) == 0


def test_a_ladder_replaces_backoff_and_repeats_its_last_step():
    ladder = RetryPolicy(retry_auto_enabled=True, ladder_seconds=(5, 10, 15, 60))
    assert [backoff_seconds(ladder, n, lambda: 0.3) for n in range(6)] == [5, 10, 15, 60, 60, 60]
