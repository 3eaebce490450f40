"""Per-connection delivery limits (issue 30): the pure rules of one permit per delivery.

A limited connection has one state item (hub.adapters.dynamo.connection_limits):

- ``tat`` - the rate's *theoretical arrival time* (GCRA, the token bucket as one number, epoch
  ms): a request at ``now`` may go while ``tat - tolerance <= now``, where ``tolerance`` is
  ``(burst - 1)`` intervals; it moves ``tat`` one interval (``1000 / rate`` ms) past
  ``max(tat, now)``. So at most ``burst`` requests go at once and ``rate`` a second after;
- slots ``0 .. max_concurrency - 1`` - each the lease end (epoch ms) and holder (the message) of
  a delivery in flight. A slot whose lease ended is free: a worker killed mid-delivery gives its
  slot back when the lease (the attempt's longest duration) ends.

A permit is one conditional UpdateItem that takes a free slot and moves ``tat`` together, so a
connection with only a rate pays one write per delivery; with a concurrency limit the slot is
given back after the attempt (a second write). A connection without limits pays nothing. The
update's form does not depend on the exact ``tat`` another worker left: while requests flow,
``tat = tat + interval`` conditioned on ``tat`` being within the tolerance; after a quiet spell
``tat = now + interval`` conditioned on ``tat`` being past. A delivery over a limit is refused
with the wait until a permit may be free; the worker holds the message (`held_reason`
`rate_limited` / `concurrency_limited`) without an attempt.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from hub.delivery.breaker import HeldReason
from hub.domain.delivery_limits import DeliveryLimits

#: A permit's slot is kept this much past the attempt's longest duration (connect + read
#: timeout): the writes around the attempt.
SLOT_LEASE_MARGIN_MS = 30_000


@dataclass(frozen=True)
class Slot:
    until_ms: int
    holder: str


@dataclass(frozen=True)
class LimitState:
    """A limited connection's item as last read (absent: nothing sent yet)."""

    tat_ms: int | None = None
    slots: Mapping[int, Slot] = field(default_factory=dict)
    #: While messages wait for this connection's capacity, the drain that releases them holds
    #: this lease (epoch ms); a new delivery then waits behind them (arrival order).
    drain_until_ms: int | None = None
    #: The drain holding that lease, and the id of the one job of it that may run next
    #: (hub.delivery.drain).
    drain_run: str | None = None
    drain_next: str | None = None

    def draining(self, now_ms: int) -> bool:
        return self.drain_until_ms is not None and self.drain_until_ms >= now_ms

    def in_flight(self, now_ms: int) -> int:
        return sum(1 for slot in self.slots.values() if slot.until_ms >= now_ms)


class RateForm(StrEnum):
    #: `tat` is absent or past: it becomes now + one interval.
    START = "start"
    #: `tat` is within the tolerance: it moves one interval.
    ADVANCE = "advance"


@dataclass(frozen=True)
class Permit:
    """What the one conditional write of a permit sets and checks."""

    now_ms: int
    #: The slot taken (None: no concurrency limit) and until when.
    slot: int | None
    lease_until_ms: int
    #: How `tat` moves (None: no rate limit).
    rate: RateForm | None
    interval_ms: int
    tolerance_ms: int
    #: Released from the held set: the write does not check for a drain under way.
    released: bool = False


@dataclass(frozen=True)
class Refusal:
    reason: HeldReason
    #: At least this long before a permit may be had (ms).
    wait_ms: int


def interval_ms(limits: DeliveryLimits) -> int:
    """The rate's spacing, rounded up to the ms (never faster than declared)."""
    if limits.rate_per_second is None:
        return 0
    return math.ceil(1000 / limits.rate_per_second)


def limited_reason(limits: DeliveryLimits) -> HeldReason:
    """Why a message waits behind others held for `limits`: the rate when one is declared."""
    return HeldReason.RATE_LIMITED if limits.rate_per_second is not None else HeldReason.CONCURRENCY_LIMITED


def plan(
    limits: DeliveryLimits,
    state: LimitState,
    now_ms: int,
    holder: str,
    attempt_ms: int,
    *,
    released: bool = False,
) -> Permit | Refusal:
    """The permit a delivery by `holder` may take now from `state`, or why it waits.
    `attempt_ms`: the attempt's longest duration (the slot's lease is that plus a margin).
    `released`: the delivery was released from the connection's held set; any other waits while
    a drain is releasing held messages, so it cannot overtake them."""
    form: RateForm | None = None
    interval = interval_ms(limits)
    tolerance = (limits.effective_burst - 1) * interval
    if not released and state.draining(now_ms):
        return Refusal(limited_reason(limits), max(1, interval))
    if limits.rate_per_second is not None:
        tat = state.tat_ms
        if tat is None or tat < now_ms:
            form = RateForm.START
        elif tat <= now_ms + tolerance:
            form = RateForm.ADVANCE
        else:
            return Refusal(HeldReason.RATE_LIMITED, tat - tolerance - now_ms)
    slot: int | None = None
    if limits.max_concurrency is not None:
        free = [
            index
            for index in range(limits.max_concurrency)
            if index not in state.slots
            or state.slots[index].until_ms < now_ms
            or state.slots[index].holder == holder
        ]
        if not free:
            soonest = min(s.until_ms for i, s in state.slots.items() if i < limits.max_concurrency)
            return Refusal(HeldReason.CONCURRENCY_LIMITED, max(1, soonest - now_ms))
        own = [index for index in free if index in state.slots and state.slots[index].holder == holder]
        slot = own[0] if own else free[0]
    return Permit(
        now_ms=now_ms,
        slot=slot,
        lease_until_ms=now_ms + attempt_ms + SLOT_LEASE_MARGIN_MS,
        rate=form,
        interval_ms=interval,
        tolerance_ms=tolerance,
        released=released,
    )


def capacity(limits: DeliveryLimits, state: LimitState, now_ms: int) -> tuple[int, int]:
    """How many deliveries could get a permit now (for a drain: that many held messages are
    released), and the ms until one more could (at least 1)."""
    room = limits.max_concurrency if limits.max_concurrency is not None else limits.effective_burst
    wait = 1
    if limits.max_concurrency is not None:
        busy = [
            s.until_ms for i, s in state.slots.items() if i < limits.max_concurrency and s.until_ms >= now_ms
        ]
        room = limits.max_concurrency - len(busy)
        if room <= 0:
            wait = max(1, min(busy) - now_ms)
    if limits.rate_per_second is not None:
        interval = interval_ms(limits)
        tolerance = (limits.effective_burst - 1) * interval
        tat = state.tat_ms if state.tat_ms is not None and state.tat_ms >= now_ms else now_ms
        tokens = (now_ms + tolerance - tat) // interval + 1 if tat <= now_ms + tolerance else 0
        if tokens <= 0:
            wait = max(wait, tat - tolerance - now_ms)
        room = min(room, tokens)
    return max(0, room), wait
