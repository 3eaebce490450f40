"""Per-connection delivery limits (issue 30): the declared limits and the permit rules
(hub.domain.delivery_limits, hub.delivery.limits), on times the tests choose."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hub.delivery.breaker import HeldReason
from hub.delivery.limits import (
    SLOT_LEASE_MARGIN_MS,
    LimitState,
    Permit,
    RateForm,
    Refusal,
    Slot,
    capacity,
    holder_of,
    holder_parts,
    plan,
    without_ended,
)
from hub.domain.delivery_limits import SEFAZ_PRESET, DeliveryLimits
from hub.domain.tenancy import Destination

ATTEMPT_MS = 40_000


def apply(state: LimitState, permit: Permit, holder: str) -> LimitState:
    """The item after the permit's write (what hub.adapters.dynamo.connection_limits sets)."""
    tat = state.tat_ms
    if permit.rate is RateForm.START:
        tat = permit.now_ms + permit.interval_ms
    elif permit.rate is RateForm.ADVANCE:
        assert tat is not None
        tat += permit.interval_ms
    slots = dict(state.slots)
    if permit.slot is not None:
        slots[permit.slot] = Slot(permit.lease_until_ms, holder)
    return LimitState(tat, slots)


class TestDeclared:
    def test_none_set_is_unlimited(self) -> None:
        assert not DeliveryLimits().limited
        assert Destination(url="https://erp.example/in").limits is None

    def test_a_burst_needs_a_rate_and_defaults_to_the_rate_rounded_up(self) -> None:
        with pytest.raises(ValidationError, match="burst applies to rate_per_second"):
            DeliveryLimits(burst=3)
        assert DeliveryLimits(rate_per_second=2.5).effective_burst == 3
        assert DeliveryLimits(rate_per_second=0.2).effective_burst == 1
        assert DeliveryLimits(rate_per_second=5, burst=1).effective_burst == 1

    @pytest.mark.parametrize(
        "fields",
        [
            {"max_concurrency": 0},
            {"max_concurrency": 1001},
            {"rate_per_second": 0},
            {"rate_per_second": 0.001},
            {"rate_per_second": 1001},
            {"rate_per_second": 1, "burst": 0},
            {"rate_per_second": 1, "unknown": 1},
        ],
    )
    def test_out_of_bounds_is_refused(self, fields: dict) -> None:
        with pytest.raises(ValidationError):
            DeliveryLimits(**fields)

    def test_the_sefaz_preset_is_one_at_a_time_and_one_a_second(self) -> None:
        assert (SEFAZ_PRESET.max_concurrency, SEFAZ_PRESET.rate_per_second, SEFAZ_PRESET.effective_burst) == (
            1,
            1.0,
            1,
        )


class TestRate:
    def test_a_burst_goes_at_once_then_one_per_interval(self) -> None:
        limits = DeliveryLimits(rate_per_second=5, burst=2)  # 200 ms apart, 2 at once
        state = LimitState()
        first = plan(limits, state, 10_000, "m1", ATTEMPT_MS)
        assert isinstance(first, Permit)
        assert first.rate is RateForm.START
        state = apply(state, first, "m1")
        second = plan(limits, state, 10_000, "m2", ATTEMPT_MS)
        assert isinstance(second, Permit)
        assert second.rate is RateForm.ADVANCE
        state = apply(state, second, "m2")

        third = plan(limits, state, 10_000, "m3", ATTEMPT_MS)
        assert third == Refusal(HeldReason.RATE_LIMITED, 200)
        assert isinstance(plan(limits, state, 10_199, "m3", ATTEMPT_MS), Refusal)
        assert isinstance(plan(limits, state, 10_200, "m3", ATTEMPT_MS), Permit)

    def test_a_quiet_spell_starts_again_from_now(self) -> None:
        limits = DeliveryLimits(rate_per_second=1)
        state = LimitState(tat_ms=5_000)
        permit = plan(limits, state, 60_000, "m1", ATTEMPT_MS)
        assert isinstance(permit, Permit)
        assert permit.rate is RateForm.START
        assert apply(state, permit, "m1").tat_ms == 61_000

    def test_a_fractional_rate_is_never_faster_than_declared(self) -> None:
        limits = DeliveryLimits(rate_per_second=3)  # 333.33 ms -> 334 ms
        permit = plan(limits, LimitState(), 0, "m1", ATTEMPT_MS)
        assert isinstance(permit, Permit)
        assert permit.interval_ms == 334

    @pytest.mark.parametrize(("rate", "burst"), [(5, 1), (5, 5), (2.5, 3), (50, 10)])
    def test_no_window_gets_more_than_the_burst_plus_the_rate(self, rate: float, burst: int) -> None:
        """Every ms for 10 s a delivery asks; in any window of w ms at most burst + rate * w / 1000
        get a permit."""
        limits = DeliveryLimits(rate_per_second=rate, burst=burst)
        state, granted = LimitState(), []
        for now in range(0, 10_000):
            decision = plan(limits, state, now, f"m{now}", ATTEMPT_MS)
            if isinstance(decision, Permit):
                state = apply(state, decision, f"m{now}")
                granted.append(now)
        for index, start in enumerate(granted):
            for width in (1, 100, 1_000, 5_000):
                inside = sum(1 for t in granted[index:] if t < start + width)
                assert inside <= burst + rate * width / 1000
        assert len(granted) >= rate * 10 - 1  # and it does not idle below the rate


class TestConcurrency:
    def test_slots_are_taken_until_none_is_free(self) -> None:
        limits = DeliveryLimits(max_concurrency=2)
        state = LimitState()
        for holder in ("m1", "m2"):
            permit = plan(limits, state, 1_000, holder, ATTEMPT_MS)
            assert isinstance(permit, Permit)
            assert permit.rate is None
            assert permit.lease_until_ms == 1_000 + ATTEMPT_MS + SLOT_LEASE_MARGIN_MS
            state = apply(state, permit, holder)
        assert state.in_flight(1_000) == 2

        refused = plan(limits, state, 2_000, "m3", ATTEMPT_MS)
        assert refused == Refusal(
            HeldReason.CONCURRENCY_LIMITED, 1_000 + ATTEMPT_MS + SLOT_LEASE_MARGIN_MS - 2_000
        )

    def test_a_slot_whose_lease_ended_is_free_and_a_holder_keeps_its_own(self) -> None:
        limits = DeliveryLimits(max_concurrency=2)
        state = LimitState(slots={0: Slot(5_000, "dead"), 1: Slot(90_000, "m2")})
        again = plan(limits, state, 6_000, "m2", ATTEMPT_MS)
        assert isinstance(again, Permit)
        assert again.slot == 1
        taken_over = plan(limits, state, 6_000, "m3", ATTEMPT_MS)
        assert isinstance(taken_over, Permit)
        assert taken_over.slot == 0

    def test_a_lowered_limit_ignores_slots_above_it(self) -> None:
        limits = DeliveryLimits(max_concurrency=1)
        state = LimitState(slots={0: Slot(90_000, "m1"), 3: Slot(90_000, "m4")})
        assert plan(limits, state, 1_000, "m5", ATTEMPT_MS) == Refusal(HeldReason.CONCURRENCY_LIMITED, 89_000)

    def test_rate_and_concurrency_together_refuse_by_the_rate_first(self) -> None:
        limits = DeliveryLimits(max_concurrency=1, rate_per_second=1)
        state = LimitState(tat_ms=2_000, slots={0: Slot(90_000, "m1")})
        assert plan(limits, state, 1_000, "m2", ATTEMPT_MS) == Refusal(HeldReason.RATE_LIMITED, 1_000)
        assert plan(limits, state, 2_000, "m2", ATTEMPT_MS) == Refusal(HeldReason.CONCURRENCY_LIMITED, 88_000)


class TestEndedHolders:
    """A slot whose holder's run is over is free without a write (the holder is named)."""

    def test_a_holder_names_the_message_and_the_take(self) -> None:
        holder = holder_of("msg_01J/x", "own_7")
        assert holder_parts(holder) == ("msg_01J/x", "own_7")
        assert holder_parts("m1") is None  # names no take: never judged over

    def test_an_ended_holder_is_replaced_and_the_permit_names_it(self) -> None:
        limits = DeliveryLimits(max_concurrency=1)
        state = LimitState(slots={0: Slot(90_000, "m1/o1")})
        assert isinstance(plan(limits, state, 1_000, "m2/o2", ATTEMPT_MS), Refusal)

        permit = plan(limits, state, 1_000, "m2/o2", ATTEMPT_MS, ended={0: "m1/o1"})

        assert isinstance(permit, Permit)
        assert (permit.slot, permit.replaces) == (0, "m1/o1")

    def test_an_ended_holder_that_no_longer_holds_the_slot_frees_nothing(self) -> None:
        limits = DeliveryLimits(max_concurrency=1)
        state = LimitState(slots={0: Slot(90_000, "m3/o3")})  # another took it since
        refused = plan(limits, state, 1_000, "m2/o2", ATTEMPT_MS, ended={0: "m1/o1"})
        assert isinstance(refused, Refusal)

    def test_a_workers_own_ended_slot_comes_before_a_free_one(self) -> None:
        limits = DeliveryLimits(max_concurrency=4)
        state = LimitState(slots={2: Slot(90_000, "m1/o1")})
        permit = plan(limits, state, 1_000, "m2/o2", ATTEMPT_MS, ended={2: "m1/o1"})
        assert isinstance(permit, Permit)
        assert (permit.slot, permit.replaces) == (2, "m1/o1")

    def test_free_slots_are_spread_over_holders(self) -> None:
        limits = DeliveryLimits(max_concurrency=8)
        chosen = set()
        for n in range(20):
            permit = plan(limits, LimitState(), 1_000, f"m{n}/o", ATTEMPT_MS)
            assert isinstance(permit, Permit)
            assert permit.replaces is None
            chosen.add(permit.slot)
        assert len(chosen) > 1  # not every worker reaches for slot 0

    def test_the_drain_counts_ended_holders_free(self) -> None:
        limits = DeliveryLimits(max_concurrency=2)
        state = LimitState(slots={0: Slot(90_000, "m1/o1"), 1: Slot(90_000, "m2/o2")})
        assert capacity(limits, state, 1_000)[0] == 0
        settled = without_ended(state, {0: "m1/o1", 1: "gone/o9"})
        assert capacity(limits, settled, 1_000)[0] == 1
        assert settled.slots == {1: Slot(90_000, "m2/o2")}


class TestDrain:
    def test_while_held_messages_drain_a_new_delivery_waits_behind_them(self) -> None:
        limits = DeliveryLimits(rate_per_second=5)
        state = LimitState(drain_until_ms=20_000)

        assert plan(limits, state, 10_000, "new", ATTEMPT_MS) == Refusal(HeldReason.RATE_LIMITED, 200)
        released = plan(limits, state, 10_000, "old", ATTEMPT_MS, released=True)
        assert isinstance(released, Permit)
        assert released.released
        assert isinstance(plan(limits, state, 20_001, "new", ATTEMPT_MS), Permit)  # the lease ended

    def test_a_concurrency_limit_alone_names_its_reason(self) -> None:
        limits = DeliveryLimits(max_concurrency=2)
        state = LimitState(drain_until_ms=20_000)
        refused = plan(limits, state, 10_000, "new", ATTEMPT_MS)
        assert isinstance(refused, Refusal)
        assert refused.reason is HeldReason.CONCURRENCY_LIMITED


class TestCapacity:
    def test_the_burst_when_idle_then_what_the_rate_gave_back(self) -> None:
        limits = DeliveryLimits(rate_per_second=5, burst=3)  # 200 ms
        assert capacity(limits, LimitState(), 10_000) == (3, 1)
        assert capacity(limits, LimitState(tat_ms=10_400), 10_000) == (1, 1)  # tolerance 400
        assert capacity(limits, LimitState(tat_ms=10_600), 10_000) == (0, 200)
        assert capacity(limits, LimitState(tat_ms=5_000), 10_000) == (3, 1)

    def test_free_slots_and_the_soonest_lease_end(self) -> None:
        limits = DeliveryLimits(max_concurrency=3)
        busy = {0: Slot(12_000, "m1"), 1: Slot(15_000, "m2"), 2: Slot(9_000, "gone")}
        assert capacity(limits, LimitState(slots=busy), 10_000) == (1, 1)
        full = {**busy, 2: Slot(11_000, "m3")}
        assert capacity(limits, LimitState(slots=full), 10_000) == (0, 1_000)

    def test_both_limits_take_the_smaller(self) -> None:
        limits = DeliveryLimits(max_concurrency=5, rate_per_second=1, burst=2)
        assert capacity(limits, LimitState(), 0) == (2, 1)

    @pytest.mark.parametrize(("rate", "burst", "tat"), [(5, 3, 10_000), (2.5, 1, 9_000), (10, 10, 10_900)])
    def test_capacity_is_exactly_what_plan_grants(self, rate: float, burst: int, tat: int) -> None:
        limits = DeliveryLimits(rate_per_second=rate, burst=burst)
        state, granted = LimitState(tat_ms=tat), 0
        room, _ = capacity(limits, state, 10_000)
        while isinstance(permit := plan(limits, state, 10_000, f"m{granted}", ATTEMPT_MS), Permit):
            state, granted = apply(state, permit, f"m{granted}"), granted + 1
        assert granted == room
