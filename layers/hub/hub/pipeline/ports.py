"""What the pipeline worker depends on and what it hands out: the execution store (the guards
of seed 002, section 8, kept on the message item), the retry hook and its types, and the null
objects a worker is built with when it has no retries or metrics."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

from hub.delivery.port import DeliveryFailed
from hub.domain.message import MessageRecord, StepMessage
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import Integration


class Refused(StrEnum):
    """Why a step could not take its message (read from the failed condition)."""

    #: No such message (yet): the ingest may still be committing it.
    ORPHAN = "orphan"
    #: A newer execution (an operator's reprocess) replaced the step's.
    STALE_EXECUTION = "stale_execution"
    #: The step's execution finished less than RECENT_COMPLETION ago.
    RECENTLY_COMPLETED = "recently_completed"
    #: The step's execution finished longer ago.
    EXECUTION_FINISHED = "execution_finished"
    #: The step already ran (its sequence has passed): a redelivery.
    DUPLICATE_STEP = "duplicate_step"
    #: Another run holds the message's lease.
    BUSY = "entity_busy"


@dataclass
class RunProgress:
    """How far one run got, for what its failure means (one per run, shared by every copy of
    its `Taken`): after the connector was called, the destination may have the message."""

    destination_called: bool = False


@dataclass(frozen=True)
class Taken:
    """A step's hold on its message: the record as it is now (lease ours), and the payload
    when it is stored inline."""

    record: MessageRecord
    owner: str
    inline_payload: str | None
    #: The item's bounded log as stored (the finishing update appends to it).
    log: tuple[Mapping[str, Any], ...] = ()
    #: What the step learnt about the message that its finishing update records (the business
    #: key an XML payload shows, so later steps take the same entity lease).
    learned: Mapping[str, Any] = field(default_factory=dict)
    progress: RunProgress = field(default_factory=RunProgress, compare=False)
    #: The take overrode an expired lease: an earlier run died mid-step (a crash, Lambda's
    #: timeout) and may have called the destination before it did - an uncertain outcome.
    interrupted: bool = False
    #: The stored item as the take left it, in the store's own shape: what the finishing update
    #: sizes itself against (a write is billed per KB of the larger of the item before and
    #: after). Empty when the store does not say.
    stored: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Refusal:
    reason: Refused
    #: The message as it was (None for an orphan).
    current: MessageRecord | None = None


@dataclass(frozen=True)
class EntityHold:
    """A lease on a business-key item; `holder` is the message the key belonged to before
    (None: nobody, this message is the first)."""

    entity: str
    owner: str
    holder: str | None


@dataclass(frozen=True)
class Outcome:
    """What a step's finishing update writes: the status reached and its fields, the log
    entries of the step, whether the execution ends with it."""

    #: None: the status stays as it is.
    target: PipelineStatus | None
    changes: Mapping[str, Any] = field(default_factory=dict)
    log: Sequence[Mapping[str, Any]] = ()
    closes: bool = True


class LeaseLost(Exception):
    """The finishing update found the lease no longer ours (it expired and another run took
    the message) or the status moved: nothing was written."""

    def __init__(self, current: MessageRecord | None) -> None:
        super().__init__("lease lost")
        self.current = current


class Executions(Protocol):
    """The execution state on the message item: every guard is one conditional update."""

    def take(self, step: StepMessage, owner: str, now: datetime, lease: timedelta) -> Taken | Refusal:
        """Leases the message for `step` (one conditional update returning the item)."""
        ...

    def finish(self, taken: Taken, outcome: Outcome, now: datetime) -> MessageRecord:
        """Writes the outcome and releases the lease in one update conditioned on the lease
        and the status still being the taken ones. Raises LeaseLost otherwise,
        TransitionNotAllowed for a move outside the transition table."""
        ...

    def release(self, taken: Taken, now: datetime) -> None:
        """Gives the lease back, nothing else changed (idempotent)."""
        ...

    def release_admission(self, message_id: str, execution_id: str, now: datetime) -> None:
        """Frees the message for an operator's reprocess (its lease released, the execution no
        longer counted as alive) without ending `execution_id`: a redriven step of it may still
        run. Only if `execution_id` is still current and unfinished."""
        ...

    def fail_unleased(
        self, step: StepMessage, current: MessageRecord, outcome: Outcome, now: datetime
    ) -> MessageRecord | None:
        """Writes `outcome` for a step that could not take its message (e.g. `lock_timeout`),
        only if the execution, sequence and status are still the ones in `current`."""
        ...

    def payload(self, record: MessageRecord, now: datetime | None = None) -> str | None:
        """The message's payload when it is not inline (Taken.inline_payload): on its
        fingerprint claim; None once it was purged (its TTL passed at `now`, deleted or not)."""
        ...

    def take_entity(
        self,
        entity: str,
        owner: str,
        message_id: str,
        now: datetime,
        lease: timedelta,
        *,
        expires_at: int | None = None,
    ) -> EntityHold | None:
        """Leases the business-key item `entity` (None: busy). The key is claimed for
        `message_id` if nobody holds it yet, and then lives until `expires_at` (the message's
        TTL; issue 29)."""
        ...

    def release_entity(
        self, hold: EntityHold, current: str | None = None, expires_at: int | None = None
    ) -> None:
        """Gives the lease back; with `current`, the key now belongs to that message, and lives
        until its `expires_at` (None: for good)."""
        ...

    def mark_superseded(self, message_id: str, by_message_id: str) -> None: ...


class StepOutcome(StrEnum):
    DONE = "done"
    RESCHEDULED = "rescheduled"
    DROPPED = "dropped"


@dataclass(frozen=True)
class StepReport:
    outcome: StepOutcome
    reason: str


@dataclass(frozen=True)
class FailedDelivery:
    """What the retry policy (failure hook) gets after a failed delivery attempt: the message as
    read before the attempt."""

    record: MessageRecord
    step: StepMessage
    failure: DeliveryFailed
    integration: Integration
    #: When the failure is recorded (the update's `updated_at`): the retry's wait counts from it.
    failed_at: datetime


@dataclass(frozen=True)
class FailurePlan:
    """What a failed delivery becomes. The worker writes the failure and this decision in one
    conditional update (`error`, `retry_pending` with its counters, or `dead_letter`), then runs
    `then` with the updated record (e.g. create the retry's schedule). If `then` raises, the
    step message is redelivered; it finds its sequence passed and the retry pending, and only
    runs `resume`."""

    target: PipelineStatus
    changes: Mapping[str, Any] = field(default_factory=dict)
    then: Callable[[MessageRecord], None] | None = None


class RetryHook(Protocol):
    """The one hook for the retry policy (hub.pipeline.retries)."""

    def plan(self, failed: FailedDelivery) -> FailurePlan:
        """What the failed delivery becomes (decided before anything is written)."""
        ...

    def resume(self, record: MessageRecord, step: StepMessage) -> None:
        """`step` already decided the pending retry of `record` (a redelivery of it): make sure
        that retry's schedule exists, without another attempt now. Idempotent."""
        ...


class NoRetries:
    """Every failed delivery stays in `error` (a worker built without a retry policy)."""

    def plan(self, failed: FailedDelivery) -> FailurePlan:
        return FailurePlan(PipelineStatus.ERROR)

    def resume(self, record: MessageRecord, step: StepMessage) -> None:
        return None


class Uncounted:
    """Metrics that go nowhere: for a worker built without a metrics sink."""

    def count(self, name: str, value: float = 1, **dimensions: str) -> None:
        return None

    def duration_ms(self, name: str, milliseconds: float, **dimensions: str) -> None:
        return None
