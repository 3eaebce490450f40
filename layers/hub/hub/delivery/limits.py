"""Per-connection delivery limits (issue 30): the pure rules of one permit per delivery.

A limited connection has one state item (hub.adapters.dynamo.connection_limits):

- ``tat`` - the rate's *theoretical arrival time* (GCRA, the token bucket as one number, epoch
  ms): a request at ``now`` may go while ``tat - tolerance <= now``, where ``tolerance`` is
  ``(burst - 1)`` intervals; it moves ``tat`` one interval (``1000 / rate`` ms) past
  ``max(tat, now)``. So at most ``burst`` requests go at once and ``rate`` a second after;
- slots ``0 .. max_concurrency - 1`` - each the lease end (epoch ms) and holder of a delivery in
  flight. The holder names the message and the run's take of it (``<message_id>/<owner>``, the
  message item's ``lease_owner`` while the step runs).

A permit is one conditional UpdateItem that takes a slot and moves ``tat`` together: one write
per delivery, whatever the limits; a connection without limits pays nothing. A slot is free
when its lease ended (a worker killed mid-delivery), or when its holder's run is known to be
over: the run's finishing write gives the message's lease back, so the slot needs no write of
its own. A worker knows this of its own last delivery (it runs one step at a time), and learns
it of others' by reading their message items when no slot is free otherwise; the permit's
condition names the holder it replaces, so two workers never take one slot. Only while held
messages wait for the connection does a finished delivery give its slot back with a write (and
hand it to the drain at once). The rate's update form does not depend on the exact ``tat``
another worker left: while requests flow, ``tat = tat + interval`` conditioned on ``tat`` being
within the tolerance; after a quiet spell ``tat = now + interval`` conditioned on ``tat`` being
past. A delivery over a limit is refused with the wait until a permit may be free; the worker
holds the message (`held_reason` `rate_limited` / `concurrency_limited`) without an attempt.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from hub.delivery.breaker import HeldReason
from hub.domain.delivery_limits import DeliveryLimits

#: A permit's slot is kept this much past the attempt's longest duration (connect + read
#: timeout): the writes around the attempt.
SLOT_LEASE_MARGIN_MS = 30_000
#: A full connection's slots are looked at again this soon (a holder's run may end any time).
SLOT_LOOK_AGAIN_MS = 1_000


@dataclass(frozen=True)
class Slot:
    until_ms: int
    holder: str


def holder_of(message_id: str, owner: str) -> str:
    """A slot's holder: the message and the run's take of it (its lease owner)."""
    return f"{message_id}/{owner}"


def holder_parts(holder: str) -> tuple[str, str] | None:
    """(message id, lease owner) of a slot's holder; None for one that names no take."""
    message_id, _, owner = holder.rpartition("/")
    return (message_id, owner) if message_id and owner else None


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
    #: The slot's holder this permit replaces, known to be over (None: the slot was free).
    replaces: str | None = None


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
    ended: Mapping[int, str] | None = None,
) -> Permit | Refusal:
    """The permit a delivery by `holder` may take now from `state`, or why it waits.
    `attempt_ms`: the attempt's longest duration (the slot's lease is that plus a margin).
    `released`: the delivery was released from the connection's held set; any other waits while
    a drain is releasing held messages, so it cannot overtake them.
    `ended`: slots whose holder (the value) is known to be over, first choice first."""
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
    replaces: str | None = None
    if limits.max_concurrency is not None:
        chosen = _slot(limits.max_concurrency, state, now_ms, holder, ended or {})
        if chosen is None:
            soonest = min(s.until_ms for i, s in state.slots.items() if i < limits.max_concurrency)
            return Refusal(HeldReason.CONCURRENCY_LIMITED, max(1, soonest - now_ms))
        slot, replaces = chosen
    return Permit(
        now_ms=now_ms,
        slot=slot,
        lease_until_ms=now_ms + attempt_ms + SLOT_LEASE_MARGIN_MS,
        rate=form,
        interval_ms=interval,
        tolerance_ms=tolerance,
        released=released,
        replaces=replaces,
    )


def _slot(
    size: int, state: LimitState, now_ms: int, holder: str, ended: Mapping[int, str]
) -> tuple[int, str | None] | None:
    """The slot to take and the holder it replaces: the one `holder` has already (its write was
    answered late), then one whose holder is over (a worker's own last one first: no other worker
    reaches for it), then a free one from a place that depends on `holder` (workers that saw the
    same free slots spread over them instead of racing for the first)."""
    slots = state.slots
    for index, slot in slots.items():
        if index < size and slot.holder == holder and slot.until_ms >= now_ms:
            return index, None
    for index, over in ended.items():
        taken = slots.get(index)
        if index < size and taken is not None and taken.holder == over and taken.until_ms >= now_ms:
            return index, over
    start = zlib.crc32(holder.encode()) % size
    for step in range(size):
        index = (start + step) % size
        if index not in slots or slots[index].until_ms < now_ms:
            return index, None
    return None


def without_ended(state: LimitState, ended: Mapping[int, str]) -> LimitState:
    """`state` with the slots whose holders are over counted free (what the drain measures)."""
    return replace(state, slots={i: s for i, s in state.slots.items() if ended.get(i) != s.holder})


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
            # A slot frees when its lease ends, or sooner without a write when its holder's
            # run is over: look again within a second.
            wait = max(1, min(min(busy) - now_ms, SLOT_LOOK_AGAIN_MS))
    if limits.rate_per_second is not None:
        interval = interval_ms(limits)
        tolerance = (limits.effective_burst - 1) * interval
        tat = state.tat_ms if state.tat_ms is not None and state.tat_ms >= now_ms else now_ms
        tokens = (now_ms + tolerance - tat) // interval + 1 if tat <= now_ms + tolerance else 0
        if tokens <= 0:
            wait = max(wait, tat - tolerance - now_ms)
        room = min(room, tokens)
    return max(0, room), wait
