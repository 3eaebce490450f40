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
from hub.domain.failure import ErrorClass
from hub.domain.message import MessageRecord, PipelineStep, StepMessage
from hub.domain.model import HubModel
from hub.domain.status import PipelineStatus
from hub.errors import HubError

logger = logging.getLogger(__name__)


class JobKind(StrEnum):
    #: Release one page of a connection's held set, then the next page later.
    RELEASE = "release"
    #: The open breaker's cool-down passed: send one held message as the probe.
    PROBE = "probe"


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
        publish_id=f"rel_{digest}",
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
    ) -> None:
        self._states = states
        self._queue = queue
        self._scheduler = scheduler
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
