"""The worker's gate in front of a connection (issue 12): pause and circuit breaker around each
delivery, over the rules of hub.delivery.breaker.

Per delivery: `admit` (from a state read at most `cache_seconds` ago; a hold or a probe is
confirmed on a fresh read, so a stale view never holds a message a resume released), then
`delivered` / `failed`. A held message is written by the step's finishing update
(`retry_pending` / `held_reason`), then `held` adds its pointer to the connection's held set.

Cost on a healthy destination: no write at all. Successes are counted in this instance's memory
and written with its next counted failure (one UpdateItem per failure that says the destination
is unwell), so the window holds each failing instance's own ratio; one state read per connection
and `cache_seconds` per instance.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from pydantic import ConfigDict

from hub.delivery.breaker import (
    DEFAULT_POLICY,
    BreakerPolicy,
    Circuit,
    ConnectionState,
    Gate,
    HeldReason,
    admit,
    counts_against,
    first_cooldown,
    next_cooldown,
    should_open,
)
from hub.delivery.limits import LimitState, Permit, Refusal
from hub.domain.delivery_limits import DeliveryLimits
from hub.domain.failure import ErrorClass
from hub.domain.ids import new_id
from hub.domain.message import MessageRecord, PipelineStep, StepMessage
from hub.domain.model import HubModel
from hub.domain.status import PipelineStatus
from hub.errors import HubError

logger = logging.getLogger(__name__)

#: Held for a connection's limits: released by the drain, not by resume or close.
LIMIT_REASONS = frozenset({HeldReason.RATE_LIMITED.value, HeldReason.CONCURRENCY_LIMITED.value})


class JobKind(StrEnum):
    #: Release one page of a connection's held set, then the next page later.
    RELEASE = "release"
    #: The open breaker's cool-down passed: send one held message as the probe.
    PROBE = "probe"
    #: Release messages held for the connection's limits as capacity frees (issue 30,
    #: hub.delivery.drain); `cursor` carries the drain's run id.
    DRAIN = "drain"


class ConnectionJob(HubModel):
    """A job about a connection, on the pipeline queue beside the step messages (or fired by
    the scheduler: one probe schedule per connection and opening, never one per message)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job: JobKind
    connection_id: str
    tenant_id: str
    #: RELEASE: the state's release generation it belongs to; PROBE: its `opened_count`.
    generation: int
    cursor: str | None = None


def parse_job(data: object) -> ConnectionJob | None:
    """The job a pipeline-queue body (parsed JSON) carries; None for a step message."""
    if isinstance(data, dict) and "job" in data:
        return ConnectionJob.model_validate(data)
    return None


#: The publish id of a deliver step a release sent (resume, breaker close, a drain).
RELEASED_PREFIX = "rel_"


def released(step: StepMessage) -> bool:
    """`step` was sent by a release of the held set (not by ingest, a retry or an operator)."""
    return step.publish_id.startswith(RELEASED_PREFIX)


def held_step(record: MessageRecord) -> StepMessage:
    """The deliver step that releases a held message: expects the sequence the hold left, so
    two releases of one hold (a redelivered release job) deliver it once."""
    digest = hashlib.sha256(f"{record.message_id}:{record.step_seq}".encode()).hexdigest()[:26]
    return StepMessage(
        message_id=record.message_id,
        tenant_id=record.tenant_id,
        integration_id=record.integration_id,
        step=PipelineStep.DELIVER,
        attempt=record.retry_count,
        execution_id=record.execution_id,
        correlation_id=record.correlation_id,
        publish_id=f"{RELEASED_PREFIX}{digest}",
        seq=record.step_seq,
    )


def still_held(record: MessageRecord | None, connection_id: str, seq: int) -> bool:
    """The message still waits on `connection_id` under the hold that wrote its pointer."""
    return (
        record is not None
        and record.pipeline_status is PipelineStatus.RETRY_PENDING
        and record.held_on == connection_id
        and record.held_reason is not None
        and record.completed_at is None
        and record.step_seq == seq
    )


class ConnectionStates(Protocol):
    """Connection state and held set (hub.adapters.dynamo.connection_state)."""

    def get(self, tenant_id: str, connection_id: str) -> ConnectionState: ...
    def count(
        self,
        tenant_id: str,
        connection_id: str,
        *,
        failures: int,
        attempts: int,
        now: datetime,
        policy: BreakerPolicy,
    ) -> ConnectionState: ...
    def open(
        self, state: ConnectionState, now: datetime, cooldown_seconds: int
    ) -> ConnectionState | None: ...
    def claim_probe(
        self, tenant_id: str, connection_id: str, message_id: str, now: datetime, lease: timedelta
    ) -> ConnectionState | None: ...
    def close(
        self, tenant_id: str, connection_id: str, message_id: str, now: datetime
    ) -> ConnectionState | None: ...
    def reopen(
        self, tenant_id: str, connection_id: str, message_id: str, now: datetime, cooldown_seconds: int
    ) -> ConnectionState | None: ...
    def hold(self, connection_id: str, record: MessageRecord, reason: str, now: datetime) -> None:
        """Adds `record` to the held set of its tenant's connection `connection_id`."""
        ...


class ConnectionLimits(Protocol):
    """Permits of limited connections and their drain lease (hub.adapters.dynamo.connection_limits)."""

    def acquire(
        self,
        tenant_id: str,
        connection_id: str,
        limits: DeliveryLimits,
        *,
        holder: str,
        now_ms: int,
        attempt_ms: int,
        released: bool = False,
    ) -> Permit | Refusal: ...
    def release(self, tenant_id: str, connection_id: str, permit: Permit, *, holder: str) -> LimitState: ...
    def finished(self, tenant_id: str, connection_id: str, *, holder: str) -> LimitState:
        """`holder`'s delivery ended: its slot is free without a write. The item as last seen."""
        ...

    def get(self, tenant_id: str, connection_id: str) -> LimitState: ...
    def settled(self, state: LimitState, now_ms: int) -> LimitState:
        """`state` with the slots whose holders' runs are over counted free."""
        ...

    def claim_drain(
        self, tenant_id: str, connection_id: str, *, run: str, first: str, now_ms: int, lease_ms: int
    ) -> bool: ...
    def run_drain(
        self,
        tenant_id: str,
        connection_id: str,
        *,
        run: str,
        job: str,
        following: str,
        now_ms: int,
        lease_ms: int,
    ) -> bool: ...
    def end_drain(self, tenant_id: str, connection_id: str, *, run: str) -> None: ...


#: A refusal this close to a permit is waited out in the worker instead of holding the message
#: (the hold and its release cost more than the wait).
INLINE_WAIT_MS = 1000


class JobQueue(Protocol):
    def publish(self, step: StepMessage, delay_seconds: int = 0) -> None: ...
    def publish_job(self, job: ConnectionJob, delay_seconds: int = 0) -> None: ...


class JobScheduler(Protocol):
    def schedule_job(self, job: ConnectionJob, at: datetime, name: str) -> None:
        """Sends `job` to the pipeline queue at `at`, once. Idempotent per `name`."""
        ...


def probe_schedule_name(tenant_id: str, connection_id: str, opened_count: int) -> str:
    """One per connection and opening. Connection ids are unique within a tenant only, and a
    schedule name takes neither every id character nor more than 64: a digest of both."""
    digest = hashlib.sha256(f"{tenant_id}#{connection_id}".encode()).hexdigest()[:32]
    return f"probe-{digest}-{opened_count}"


@dataclass(frozen=True)
class Admission:
    gate: Gate
    state: ConnectionState
    reason: HeldReason | None = None


#: How long a drain run's lease lasts (renewed by each run, about every second).
DRAIN_LEASE_MS = 60_000


def seconds_of(wait_ms: int) -> int:
    """A wait as an SQS delay: whole seconds, rounded up, at most 15 minutes."""
    return min(900, max(0, math.ceil(wait_ms / 1000)))


#: The job a delivery that freed a slot sends a running drain: release now, outside its chain.
KICK = "kick"


def drain_job(tenant_id: str, connection_id: str, run: str, job: str) -> ConnectionJob:
    """One job of drain `run`: `cursor` is ``<run>/<job>`` (a chain job's id, or KICK)."""
    return ConnectionJob(
        job=JobKind.DRAIN,
        connection_id=connection_id,
        tenant_id=tenant_id,
        generation=0,
        cursor=f"{run}/{job}",
    )


def drain_ids(job: ConnectionJob) -> tuple[str, str]:
    """(run, job) of a drain job."""
    run, _, which = (job.cursor or "").partition("/")
    return run, which


def start_drain(
    leases: ConnectionLimits,
    queue: JobQueue,
    tenant_id: str,
    connection_id: str,
    *,
    now_ms: int,
    wait_ms: int = 0,
) -> bool:
    """After a hold for a limit: takes the drain lease unless a live drain has it, and sends its
    first run for when the connection has room again. True when this call started it."""
    run, first = new_id("drn"), new_id("dj")
    if not leases.claim_drain(
        tenant_id, connection_id, run=run, first=first, now_ms=now_ms, lease_ms=DRAIN_LEASE_MS
    ):
        return False
    queue.publish_job(drain_job(tenant_id, connection_id, run, first), delay_seconds=seconds_of(wait_ms))
    return True


class ConnectionGate:
    def __init__(
        self,
        states: ConnectionStates,
        queue: JobQueue,
        scheduler: JobScheduler,
        *,
        policy: BreakerPolicy = DEFAULT_POLICY,
        breaker: bool = True,
        cache_seconds: float = 5.0,
        monotonic: Callable[[], float] = time.monotonic,
        limits: ConnectionLimits | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        run_job: Callable[[ConnectionJob], str] | None = None,
    ) -> None:
        self._states = states
        #: Runs a connection job here and now (the drain's kick) instead of queueing it.
        self._run_job = run_job
        self._queue = queue
        self._scheduler = scheduler
        self._limits = limits
        self._sleep = sleep
        self._clock_ms = clock_ms
        self._policy = policy
        self._breaker = breaker
        self._cache_seconds = cache_seconds
        self._monotonic = monotonic
        #: By (tenant, connection): connection ids are unique within a tenant only.
        self._cache: dict[tuple[str, str], tuple[float, ConnectionState]] = {}
        #: Successes seen by this instance since its last counted failure, per connection.
        self._successes: dict[tuple[str, str], int] = {}

    # --- before a delivery ----------------------------------------------------------------

    def admit(self, tenant_id: str, connection_id: str, message_id: str, now: datetime) -> Admission:
        state, fresh = self._cached(tenant_id, connection_id)
        if admit(state, now, message_id) is Gate.DELIVER:
            return Admission(Gate.DELIVER, state)
        if not fresh:
            state = self._fresh(tenant_id, connection_id)
        gate = admit(state, now, message_id)
        if gate is Gate.PROBE:
            claimed = self._states.claim_probe(
                tenant_id, connection_id, message_id, now, self._policy.probe_lease
            )
            if claimed is not None:
                self._remember(claimed)
                logger.info("breaker probe", extra={"connection_id": connection_id, "message_id": message_id})
                return Admission(Gate.PROBE, claimed)
            state = self._fresh(tenant_id, connection_id)
            gate = Gate.HOLD if state.holding else Gate.DELIVER
        if gate is Gate.DELIVER:
            return Admission(Gate.DELIVER, state)
        return Admission(Gate.HOLD, state, state.holding or HeldReason.CIRCUIT_OPEN)

    def permit(
        self,
        tenant_id: str,
        connection_id: str,
        limits: DeliveryLimits,
        *,
        holder: str,
        attempt_ms: int,
        released: bool,
    ) -> Permit | Refusal:
        """A permit for one delivery to a limited connection (issue 30), or why it must wait.
        `holder`: the message and this run's take of it (hub.delivery.limits.holder_of). A
        refusal whose wait is at most `INLINE_WAIT_MS` is waited out here, once."""
        store = self._limits
        if store is None:
            return Permit(self._clock_ms(), None, 0, None, 0, 0, released)

        def acquire() -> Permit | Refusal:
            return store.acquire(
                tenant_id,
                connection_id,
                limits,
                holder=holder,
                now_ms=self._clock_ms(),
                attempt_ms=attempt_ms,
                released=released,
            )

        decision = acquire()
        if isinstance(decision, Refusal) and decision.wait_ms <= INLINE_WAIT_MS:
            self._sleep(decision.wait_ms / 1000)
            decision = acquire()
        return decision

    def give_back(self, tenant_id: str, connection_id: str, permit: Permit, *, holder: str) -> None:
        """After the attempt and the write of its outcome. The slot needs no write to be free
        (the outcome's write gave the message's lease back, hub.delivery.limits), unless held
        messages wait for the connection: then it is given back now and the drain told, so the
        next of them goes without waiting for the drain's next run. Best effort: a slot not given
        back is free to the drain's reads, and to anyone when its lease ends."""
        if self._limits is None or permit.slot is None:
            return
        try:
            seen = self._limits.finished(tenant_id, connection_id, holder=holder)
            if not seen.draining(self._clock_ms()):
                return
            after = self._limits.release(tenant_id, connection_id, permit, holder=holder)
            if after.drain_run is not None and after.draining(self._clock_ms()):
                # A kick: it releases into the slot, the drain's chain goes on as it was.
                self._kick(drain_job(tenant_id, connection_id, after.drain_run, KICK))
        except HubError:
            logger.warning("delivery slot not given back", extra={"connection_id": connection_id})

    def _kick(self, job: ConnectionJob) -> None:
        """Runs the kick in this worker (the next held message leaves now, not after a trip
        through the queue); queued instead when it cannot run here."""
        if self._run_job is not None:
            try:
                self._run_job(job)
                return
            except HubError:
                logger.warning("kick not run here: queued", extra={"connection_id": job.connection_id})
        self._queue.publish_job(job)

    # --- after it -------------------------------------------------------------------------

    def delivered(
        self, tenant_id: str, connection_id: str, admission: Admission, message_id: str, now: datetime
    ) -> None:
        if admission.gate is not Gate.PROBE:
            scoped = (tenant_id, connection_id)
            self._successes[scoped] = self._successes.get(scoped, 0) + 1
            return
        try:
            closed = self._states.close(tenant_id, connection_id, message_id, now)
            if closed is None:
                return
            self._remember(closed)
            logger.info("circuit closed", extra={"connection_id": connection_id, "message_id": message_id})
            self._start_release(closed)
        except HubError:
            # The claim expires and the next probe closes it.
            logger.warning("circuit not closed after a good probe", extra={"connection_id": connection_id})

    def failed(
        self,
        connection_id: str,
        admission: Admission,
        *,
        tenant_id: str,
        message_id: str,
        error_class: ErrorClass,
        fault_code: str | None,
        now: datetime,
    ) -> None:
        """Counts a failed delivery (best effort: a storage outage loses a count, never the
        message's own outcome, which is written before)."""
        try:
            self._failed(
                connection_id, tenant_id, admission, message_id, counts_against(error_class, fault_code), now
            )
        except HubError:
            logger.warning("breaker not updated", extra={"connection_id": connection_id})

    def _failed(  # noqa: PLR0917 - private, called once
        self,
        connection_id: str,
        tenant_id: str,
        admission: Admission,
        message_id: str,
        unwell: bool,
        now: datetime,
    ) -> None:
        if admission.gate is Gate.PROBE:
            cooldown = next_cooldown(admission.state.cooldown_seconds, self._policy)
            reopened = self._states.reopen(tenant_id, connection_id, message_id, now, cooldown)
            if reopened is not None:
                self._remember(reopened)
                logger.warning(
                    "breaker probe failed: open again",
                    extra={"connection_id": connection_id, "cooldown_seconds": cooldown},
                )
                self._schedule_probe(reopened)
            return
        if not unwell:
            # The destination answered (a 4xx is the message's problem): an attempt, not a failure.
            scoped = (tenant_id, connection_id)
            self._successes[scoped] = self._successes.get(scoped, 0) + 1
            return
        if not self._breaker:
            return
        successes = self._successes.pop((tenant_id, connection_id), 0)
        state = self._states.count(
            tenant_id, connection_id, failures=1, attempts=1 + successes, now=now, policy=self._policy
        )
        self._remember(state)
        if state.circuit is not Circuit.CLOSED or not should_open(
            state.failures, state.attempts, self._policy
        ):
            return
        opened = self._states.open(state, now, first_cooldown(self._policy))
        if opened is None:
            return  # another instance opened it (and scheduled its probe)
        self._remember(opened)
        logger.warning(
            "circuit opened",
            extra={
                "connection_id": connection_id,
                "failures": state.failures,
                "attempts": state.attempts,
                "cooldown_seconds": opened.cooldown_seconds,
            },
        )
        self._schedule_probe(opened)

    # --- holding --------------------------------------------------------------------------

    def held(self, connection_id: str, record: MessageRecord, reason: str, now: datetime) -> None:
        """`record` was just moved to `retry_pending` / `held_reason` (or a redelivered step
        found it so): its pointer joins the held set. Then a fresh look: if the connection was
        resumed (or closed) meanwhile - after the release already passed - the message releases
        itself; a release that does see the pointer sends the same step (delivered once)."""
        self._states.hold(connection_id, record, reason, now)
        if reason in LIMIT_REASONS and self._limits is not None:
            # Over the connection's limits: the drain releases it, oldest first (issue 30).
            start_drain(self._limits, self._queue, record.tenant_id, connection_id, now_ms=self._clock_ms())
            return
        state = self._fresh(record.tenant_id, connection_id)
        if state.holding is None:
            self._queue.publish(held_step(record))
            logger.info("held message released at once", extra={"message_id": record.message_id})

    # --- helpers --------------------------------------------------------------------------

    def _start_release(self, state: ConnectionState) -> None:
        self._queue.publish_job(
            ConnectionJob(
                job=JobKind.RELEASE,
                connection_id=state.connection_id,
                tenant_id=state.tenant_id,
                generation=state.release_generation,
            )
        )

    def _schedule_probe(self, state: ConnectionState) -> None:
        if state.probe_at is None:
            return
        job = ConnectionJob(
            job=JobKind.PROBE,
            connection_id=state.connection_id,
            tenant_id=state.tenant_id,
            generation=state.opened_count,
        )
        self._scheduler.schedule_job(
            job, state.probe_at, probe_schedule_name(state.tenant_id, state.connection_id, state.opened_count)
        )

    def _cached(self, tenant_id: str, connection_id: str) -> tuple[ConnectionState, bool]:
        """The state as last read (True: read just now)."""
        found = self._cache.get((tenant_id, connection_id))
        if found is not None and found[0] > self._monotonic():
            return found[1], False
        return self._fresh(tenant_id, connection_id), True

    def _fresh(self, tenant_id: str, connection_id: str) -> ConnectionState:
        state = self._states.get(tenant_id, connection_id)
        self._remember(state)
        return state

    def _remember(self, state: ConnectionState) -> None:
        if self._cache_seconds > 0:
            self._cache[(state.tenant_id, state.connection_id)] = (
                self._monotonic() + self._cache_seconds,
                state,
            )


def first_valid(
    pointers: Sequence[tuple[str, int]], records: dict[str, MessageRecord], connection_id: str
) -> MessageRecord | None:
    for message_id, seq in pointers:
        record = records.get(message_id)
        if still_held(record, connection_id, seq):
            return record
    return None
