"""The pipeline worker: runs one step message with the guarantees of seed 002, section 8, each
one a condition of the update that takes the message (hub.pipeline.ports.Executions):

1. admission - one live execution per message: a step of another execution is dropped, and an
   operator's reprocess is refused while the execution lives (24 h takeover when idle);
2. recent completion - a step of an execution that finished less than 5 minutes ago is dropped;
3. step dedup - a step carries the message's step sequence it expects; once a step finished,
   the sequence has moved on and a redelivered copy is dropped;
4. per-entity lock - the lease on the message (and, for a message with business keys, on its
   business-key item) lets one step run at a time; a busy step is rescheduled on the ladder
   without using its attempt counter, `error` / `lock_timeout` after 30 waits;
5. status transitions are conditional, so a stale step never regresses a message.

One step on the happy path: `process` maps the payload and delivers it in the same invocation.
A separate `deliver` step exists only for what waits: a retry on the scheduler (it maps the
payload again). The finishing update writes the outcome, the log entries and releases the lease
in one request, so a delivered message costs two writes of its item.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping
from datetime import datetime

from hub.delivery.gate import ConnectionGate
from hub.delivery.port import Connector
from hub.domain.clock import utcnow
from hub.domain.failure import ErrorClass
from hub.domain.ids import new_id
from hub.domain.message import MessageRecord, StepMessage
from hub.domain.status import FINAL_STATUSES, PipelineStatus, can_transition
from hub.domain.tenancy import DestinationProtocol, IntegrationMode
from hub.errors import HubError, ServiceUnavailable
from hub.pipeline import rules
from hub.pipeline.ports import (
    Executions,
    FailedDelivery,
    FailurePlan,
    NoRetries,
    Refusal,
    Refused,
    RetryHook,
    StepOutcome,
    StepReport,
    Taken,
    Uncounted,
)
from hub.pipeline.steps import (
    OBSERVABILITY_TEXT,
    EntityBusy,
    Steps,
    failed_outcome,
    internal_outcome,
    log_ids,
)
from hub.pipeline.time_guard import TimeLeft, step_need
from hub.ports import ConfigRepository, Metrics, StepQueue

logger = logging.getLogger(__name__)

__all__ = [
    "OBSERVABILITY_TEXT",
    "FailedDelivery",
    "FailurePlan",
    "NoRetries",
    "PipelineWorker",
    "RetryHook",
    "StepOutcome",
    "StepReport",
]


class PipelineWorker:
    def __init__(
        self,
        config: ConfigRepository,
        executions: Executions,
        queue: StepQueue,
        connectors: Mapping[DestinationProtocol, Connector],
        *,
        retries: RetryHook | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], datetime] = utcnow,
        rand: Callable[[], float] = random.random,
        gate: ConnectionGate | None = None,
    ) -> None:
        self._config = config
        self._executions = executions
        self._queue = queue
        self._connectors = connectors
        self._retries: RetryHook = retries or NoRetries()
        self._metrics: Metrics = metrics or Uncounted()
        self._clock = clock
        self._rand = rand
        self._gate = gate
        self._steps = Steps(
            config,
            executions,
            connectors,
            retries=self._retries,
            metrics=self._metrics,
            clock=clock,
            gate=gate,
        )

    # --- entry ------------------------------------------------------------------------------

    def run(
        self,
        step: StepMessage,
        sent_at: datetime,
        *,
        last_delivery: bool = False,
        time_left: TimeLeft | None = None,
    ) -> StepReport:
        """Runs `step` once. Raises for every failure it cannot record as an outcome (the SQS
        message is then redelivered); every business outcome is recorded and reported. With
        `time_left` (the invocation's seconds left) a delivery attempt ends before the
        invocation does (hub.pipeline.time_guard.capped_read_timeout).

        On the `last_delivery` SQS will make (the step goes to the DLQ when it fails again):
        a step that held its message and raised something unexpected (not an outage of a
        service the hub uses) moves it to `error` / `internal`, so the failure shows in the
        admin `error` tab and the partner's status; an outage leaves the status as it is (a
        redrive after the outage resumes the step). Either way the execution stops counting as
        alive, so an operator can reprocess the message, and the step still raises: it lands in
        the DLQ, whose alarm fires."""
        try:
            return self._run(step, sent_at, last_delivery, time_left)
        except Exception:
            if last_delivery:
                self._executions.release_admission(step.message_id, step.execution_id, self._clock())
                logger.error(
                    "step failed for the last time: released to the dead-letter queue", extra=log_ids(step)
                )
                self._metrics.count("StepsSentToDLQ")
            self._metrics.count("StepErrors", step=step.step.value)
            raise

    def need(self, step: StepMessage) -> float:
        """The seconds running `step` may take (hub.pipeline.time_guard.step_need): its
        connection's timeouts when its integration delivers, plus the margin for our writes.
        Reads the integration as the run would (the configuration cache serves the run's read)."""
        integration = self._config.get_integration(step.tenant_id, step.integration_id)
        if integration is None or integration.mode is IntegrationMode.OBSERVABILITY:
            return step_need(None)
        return step_need(integration.destination)

    def _run(
        self, step: StepMessage, sent_at: datetime, last_delivery: bool, time_left: TimeLeft | None
    ) -> StepReport:
        now = self._clock()
        # Each run holds the lease under its own id: two copies of one step (a redelivery racing
        # the original) are serialized like steps of different messages.
        owner = f"{step.execution_id}:{new_id('run')}"
        taken = self._executions.take(step, owner, now, rules.LOCK_LEASE)
        if isinstance(taken, Refusal):
            return self._refused(step, taken, sent_at, now)
        try:
            done = self._steps.run(step, taken, now, time_left)
            return self._busy(step, done.record, now, taken) if isinstance(done, EntityBusy) else done
        except BaseException as crash:
            if last_delivery and _unexpected(crash) and self._fail_internal(step, taken, crash):
                raise
            # Give the lease back so the redelivery can run at once (best effort: an expired
            # lease frees it anyway). After a finish this finds the lease gone and does nothing.
            try:
                self._executions.release(taken, now)
            except HubError:
                logger.warning("lease not released", extra=log_ids(step))
            raise

    def _fail_internal(self, step: StepMessage, taken: Taken, crash: BaseException) -> bool:
        """Records `error` / `internal` for the step that raised `crash` on its last receive, in
        the finishing update (lease still ours, status still the one taken: a step that already
        finished, or lost its lease, changes nothing). True when written."""
        status = taken.record.pipeline_status
        if status in FINAL_STATUSES or not can_transition(status, PipelineStatus.ERROR):
            return False
        outcome = internal_outcome(
            step, crash, self._clock(), destination_called=taken.progress.destination_called
        )
        try:
            failed = self._steps.finish(step, taken, outcome)
        except HubError:
            logger.warning("internal error not recorded", extra=log_ids(step))
            return False
        if failed is None:
            return False
        logger.error(
            "step raised on every receive: message moved to error",
            extra={
                **log_ids(step),
                "error_class": ErrorClass.INTERNAL.value,
                "error_type": type(crash).__name__,
            },
        )
        return True

    def _refused(self, step: StepMessage, refusal: Refusal, sent_at: datetime, now: datetime) -> StepReport:
        ids = log_ids(step)
        current = refusal.current
        if refusal.reason is Refused.ORPHAN:
            return self._orphan(step, sent_at, now)
        if refusal.reason is Refused.BUSY:
            assert current is not None
            return self._busy(step, current, now)
        if (
            refusal.reason is Refused.DUPLICATE_STEP
            and current is not None
            and _decided_a_retry(step, current)
        ):
            # This step decided the pending retry and is redelivered (its schedule may not exist:
            # the create failed). Only the scheduled attempt may call the destination.
            self._retries.resume(current, step)
            return StepReport(StepOutcome.DONE, "retry_resumed")
        if (
            refusal.reason is Refused.DUPLICATE_STEP
            and current is not None
            and self._gate is not None
            and _decided_a_hold(step, current)
        ):
            # This step held the message and is redelivered (its pointer may not exist: the
            # write failed). Writing it again is harmless; without it the message would wait
            # on nothing.
            self._gate.held(str(current.held_on), current, str(current.held_reason), now)
            return StepReport(StepOutcome.DONE, "hold_resumed")
        if refusal.reason is Refused.DUPLICATE_STEP:
            self._metrics.count("DuplicateStepsDropped")
        # A redelivered copy or one of an ended execution (SQS delivers at least once): no outcome.
        logger.debug("step dropped", extra={**ids, "reason": refusal.reason.value})
        return StepReport(StepOutcome.DROPPED, refusal.reason.value)

    def _orphan(self, step: StepMessage, sent_at: datetime, now: datetime) -> StepReport:
        """No such message. Within the grace the ingest may still be committing it: look again
        shortly. After it, the step belongs to a failed or lost ingest and is dropped."""
        young = now - sent_at < rules.ORPHAN_GRACE
        if young and step.orphan_checks < rules.MAX_ORPHAN_CHECKS:
            again = step.rescheduled(new_id("pub"), orphan_checks=step.orphan_checks + 1)
            self._queue.publish(again, delay_seconds=rules.ORPHAN_RECHECK_SECONDS)
            return StepReport(StepOutcome.RESCHEDULED, "message_not_yet_visible")
        logger.info("orphan step dropped: its message was never stored", extra=log_ids(step))
        return StepReport(StepOutcome.DROPPED, "orphan")

    def _busy(
        self, step: StepMessage, record: MessageRecord, now: datetime, taken: Taken | None = None
    ) -> StepReport:
        """The entity is busy: the step runs again later, on the ladder; after 30 waits the
        message ends in `error` / `lock_timeout`."""
        ids = log_ids(step)
        if step.lock_wait + 1 > rules.MAX_LOCK_WAITS:
            self._metrics.count("LockGiveUps")
            text = "entity busy for too long: gave up"
            outcome = failed_outcome("lock_timeout", text, step, now)
            if taken is not None:
                self._steps.finish(step, taken, outcome)
            elif self._executions.fail_unleased(step, record, outcome, now) is None:
                # Another run still holds the message itself (a copy of this step): it finishes
                # the step; this copy only stops waiting.
                logger.warning("lock wait exhausted while another run holds the message", extra=ids)
                return StepReport(StepOutcome.DROPPED, "entity_busy")
            logger.warning("lock wait exhausted", extra=ids)
            return StepReport(StepOutcome.DONE, "lock_timeout")
        if taken is not None:
            self._executions.release(taken, now)
        delay = rules.lock_wait_delay(step.lock_wait, self._rand)
        self._metrics.count("LockContention")
        self._queue.publish(
            step.rescheduled(new_id("pub"), lock_wait=step.lock_wait + 1), delay_seconds=delay
        )
        logger.debug("entity busy: step rescheduled", extra={**ids, "delay_seconds": delay})
        return StepReport(StepOutcome.RESCHEDULED, "entity_busy")


def _unexpected(crash: BaseException) -> bool:
    """A failure nothing classified: not an outage of a service the hub uses (those raise
    ServiceUnavailable and pass), nor an interpreter exit."""
    return isinstance(crash, Exception) and not isinstance(crash, ServiceUnavailable)


def _decided_a_hold(step: StepMessage, current: MessageRecord) -> bool:
    """`current` is held, and `step` is the one that held it (the sequence just before)."""
    return (
        current.pipeline_status is PipelineStatus.RETRY_PENDING
        and current.held_on is not None
        and current.held_reason is not None
        and step.seq == current.step_seq - 1
    )


def _decided_a_retry(step: StepMessage, current: MessageRecord) -> bool:
    return current.pipeline_status is PipelineStatus.RETRY_PENDING and step.attempt < current.retry_count
