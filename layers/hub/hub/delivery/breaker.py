"""Destinations that pause and break (issue 12): the pure rules of a connection's state.

A connection is **paused** by an operator, or its **circuit breaker** opens when its destination
keeps failing. Either way a delivery that reaches it is *held*: the message waits in
`retry_pending` with `held_reason` (`paused` / `circuit_open`), no attempt made, no retry
counted, no schedule of its own - it waits on the connection's held set. Resume (or the breaker
closing) releases the held set at a bounded rate (`release_plan`).

| state            | a delivery                                                             |
|------------------|------------------------------------------------------------------------|
| paused           | held (`paused`)                                                        |
| circuit closed   | goes through; retryable failures are counted in a window               |
| circuit open     | held (`circuit_open`) until `probe_at`; then ONE delivery is the probe |
| probe succeeded  | circuit closed, held messages released                                 |
| probe failed     | open again, cool-down doubled (capped)                                 |

The breaker opens when, within `window`, at least `min_attempts` deliveries were counted and at
least `failure_ratio` of them failed in a way that says the destination is unwell (5xx, 429,
network, timeout, SOAP Receiver faults: `counts_against`). Successes are counted by each worker
instance in memory and written with its next failure, so a healthy destination costs no write.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from hub.domain.failure import ErrorClass


class HeldReason(StrEnum):
    PAUSED = "paused"
    CIRCUIT_OPEN = "circuit_open"
    #: Over the connection's declared limits (issue 30, hub.delivery.limits).
    RATE_LIMITED = "rate_limited"
    CONCURRENCY_LIMITED = "concurrency_limited"


class Circuit(StrEnum):
    CLOSED = "closed"
    OPEN = "open"


@dataclass(frozen=True)
class BreakerPolicy:
    """The documented defaults (docs/pipeline.md, "Pause and circuit breaker")."""

    min_attempts: int = 10
    failure_ratio: float = 0.7
    window: timedelta = timedelta(minutes=5)
    cooldown: timedelta = timedelta(seconds=60)
    cooldown_cap: timedelta = timedelta(minutes=15)
    #: How long a probe delivery may take before another one may be tried (longer than any
    #: delivery: the longest read timeout is 300 s).
    probe_lease: timedelta = timedelta(minutes=6)


DEFAULT_POLICY = BreakerPolicy()


@dataclass(frozen=True)
class PageClaim:
    """A release job's claim on its page of the held set: `claimed`, or not; when not, the end
    of the live claim of the run that holds the page (None: the page is done or a newer release
    started, so nothing is left to do)."""

    claimed: bool
    busy_until: datetime | None = None


@dataclass(frozen=True)
class ConnectionState:
    """What the worker reads before a delivery (one item per connection; absent = all clear)."""

    connection_id: str
    tenant_id: str = ""
    paused: bool = False
    circuit: Circuit = Circuit.CLOSED
    #: When the open breaker lets one probe through.
    probe_at: datetime | None = None
    #: The message delivering the probe now, and until when its claim holds.
    probe_message: str | None = None
    probe_until: datetime | None = None
    cooldown_seconds: int = 0
    #: How often the breaker opened (each re-open too): names its probe schedule.
    opened_count: int = 0
    #: Bumped by every resume and close: a release job of an older generation stops.
    release_generation: int = 0
    #: The page the release goes on with, ``<generation>:<cursor>`` (hub.delivery.release):
    #: each page is claimed once, so a duplicated job cannot release at twice the rate.
    release_page: str = ""
    #: Bumped by every state change (not by counting): the id of its event.
    version: int = 0
    #: The counting window (closed breaker only).
    window_start: datetime | None = None
    failures: int = 0
    attempts: int = 0

    @property
    def holding(self) -> HeldReason | None:
        """Why deliveries wait now (the probe aside), or None."""
        if self.paused:
            return HeldReason.PAUSED
        if self.circuit is Circuit.OPEN:
            return HeldReason.CIRCUIT_OPEN
        return None


class Gate(StrEnum):
    DELIVER = "deliver"
    #: The breaker is open and its cool-down passed: this delivery may be the probe (claim it).
    PROBE = "probe"
    HOLD = "hold"


def admit(state: ConnectionState, now: datetime, message_id: str) -> Gate:
    """What a delivery to `state`'s connection does now."""
    if state.paused:
        return Gate.HOLD
    if state.circuit is Circuit.CLOSED:
        return Gate.DELIVER
    probing_free = state.probe_until is None or state.probe_until < now or state.probe_message == message_id
    if state.probe_at is not None and state.probe_at <= now and probing_free:
        return Gate.PROBE
    return Gate.HOLD


_UNWELL = frozenset({ErrorClass.HTTP_5XX, ErrorClass.HTTP_429, ErrorClass.NETWORK, ErrorClass.TIMEOUT})
_TRANSIENT_FAULT_CODES = frozenset({"Receiver", "Server"})


def counts_against(error_class: ErrorClass, fault_code: str | None = None) -> bool:
    """A failure that says the destination is unwell (retryable by class), not that the message
    or the configuration is wrong: only these open the breaker."""
    if error_class is ErrorClass.SOAP_FAULT:
        return fault_code in _TRANSIENT_FAULT_CODES
    return error_class in _UNWELL


def window_expired(state: ConnectionState, now: datetime, policy: BreakerPolicy = DEFAULT_POLICY) -> bool:
    return state.window_start is None or now - state.window_start >= policy.window


def should_open(failures: int, attempts: int, policy: BreakerPolicy = DEFAULT_POLICY) -> bool:
    """≥ `min_attempts` counted and ≥ `failure_ratio` of them failed (within the window)."""
    return attempts >= policy.min_attempts and failures >= policy.failure_ratio * attempts


def first_cooldown(policy: BreakerPolicy = DEFAULT_POLICY) -> int:
    """Whole seconds (the scheduler's `at()` has no finer grain)."""
    return max(1, int(policy.cooldown.total_seconds()))


def next_cooldown(current: int, policy: BreakerPolicy = DEFAULT_POLICY) -> int:
    """After a failed probe: twice the last cool-down, capped."""
    return min(max(current, first_cooldown(policy)) * 2, int(policy.cooldown_cap.total_seconds()))


@dataclass(frozen=True)
class ReleasePlan:
    """One page of a release: each message's SQS delay, and when the next page runs."""

    delays: tuple[int, ...] = field(default_factory=tuple)
    next_page_delay: int = 0


#: A release page covers this many seconds of deliveries (SQS delays are whole seconds).
RELEASE_PAGE_SECONDS = 5


def release_page_size(rate_per_second: int) -> int:
    return max(1, rate_per_second * RELEASE_PAGE_SECONDS)


def release_plan(count: int, rate_per_second: int) -> ReleasePlan:
    """Spreads `count` released messages over whole seconds, `rate_per_second` per second (the
    first ones at once); the next page starts when this page's last second has passed."""
    rate = max(1, rate_per_second)
    delays = tuple(index // rate for index in range(count))
    return ReleasePlan(delays, math.ceil(count / rate) if count else 0)


def release_page_key(generation: int, cursor: str | None) -> str:
    """The release's position: its generation and the cursor of the page to release next."""
    return f"{generation}:{cursor or ''}"


#: The position of a release that released its last page.
RELEASE_DONE = "#done"
