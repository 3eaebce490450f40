"""The pure rules of pause and circuit breaker (hub.delivery.breaker, issue 12)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hub.delivery.breaker import (
    Circuit,
    ConnectionState,
    Gate,
    HeldReason,
    admit,
    counts_against,
    next_cooldown,
    release_plan,
    should_open,
)
from hub.domain.failure import ErrorClass

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def state(**fields) -> ConnectionState:
    return ConnectionState(connection_id="erp", **fields)


class TestOpening:
    @pytest.mark.parametrize(
        ("failures", "attempts", "opens"),
        [
            (9, 9, False),  # fewer than 10 attempts: never, however bad
            (10, 10, True),
            (7, 10, True),  # exactly 70 %
            (6, 10, False),
            (70, 100, True),
            (69, 100, False),
        ],
    )
    def test_at_least_10_attempts_and_70_percent_failing(self, failures, attempts, opens):
        assert should_open(failures, attempts) is opens

    @pytest.mark.parametrize(
        ("error_class", "fault", "counted"),
        [
            (ErrorClass.HTTP_5XX, None, True),
            (ErrorClass.HTTP_429, None, True),
            (ErrorClass.NETWORK, None, True),
            (ErrorClass.TIMEOUT, None, True),
            (ErrorClass.SOAP_FAULT, "Receiver", True),
            (ErrorClass.SOAP_FAULT, "Sender", False),
            (ErrorClass.HTTP_4XX, None, False),  # the message's problem, not the destination's
            (ErrorClass.HTTP_401, None, False),
            (ErrorClass.TLS, None, False),
        ],
    )
    def test_only_failures_that_say_the_destination_is_unwell_count(self, error_class, fault, counted):
        assert counts_against(error_class, fault) is counted

    def test_the_cool_down_doubles_up_to_its_cap(self):
        assert [next_cooldown(c) for c in (60, 120, 480, 900)] == [120, 240, 900, 900]


class TestGate:
    def test_closed_delivers_paused_holds_whatever_the_breaker(self):
        assert admit(state(), NOW, "m1") is Gate.DELIVER
        assert admit(state(paused=True), NOW, "m1") is Gate.HOLD
        assert state(paused=True, circuit=Circuit.OPEN).holding is HeldReason.PAUSED
        assert state(circuit=Circuit.OPEN).holding is HeldReason.CIRCUIT_OPEN

    def test_open_holds_until_the_probe_is_due_then_lets_one_through(self):
        due = NOW - timedelta(seconds=1)
        assert admit(state(circuit=Circuit.OPEN, probe_at=NOW + timedelta(seconds=5)), NOW, "m1") is Gate.HOLD
        assert admit(state(circuit=Circuit.OPEN, probe_at=due), NOW, "m1") is Gate.PROBE
        probing = state(
            circuit=Circuit.OPEN, probe_at=due, probe_message="m1", probe_until=NOW + timedelta(minutes=6)
        )
        assert admit(probing, NOW, "m2") is Gate.HOLD  # one probe at a time
        assert admit(probing, NOW, "m1") is Gate.PROBE  # its own redelivery goes on probing
        stale = state(circuit=Circuit.OPEN, probe_at=due, probe_message="m1", probe_until=due)
        assert admit(stale, NOW, "m2") is Gate.PROBE  # a probe that never finished is taken over


class TestRelease:
    def test_spreads_a_page_over_whole_seconds_at_the_rate(self):
        plan = release_plan(25, 10)
        assert plan.delays == (0,) * 10 + (1,) * 10 + (2,) * 5
        assert plan.next_page_delay == 3

    def test_an_empty_page_waits_for_nothing(self):
        assert release_plan(0, 10).delays == ()
        assert release_plan(0, 10).next_page_delay == 0
