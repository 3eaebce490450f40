"""The pipeline worker: runs one step message with the guarantees of seed 002, section 8.

At-least-once in, no duplicate effect out:
1. admission control - one live execution per message (conditional put; 24 h takeover);
2. recent completion - a finished execution is not readmitted for 5 minutes;
3. message dedup - a completed step id is remembered for 5 minutes; redeliveries are dropped;
4. per-entity lock - one step at a time per business entity, busy steps rescheduled on a ladder
   without using their attempt counter, `error` / `lock_timeout` after 30 waits;
5. status transitions are conditional, so a stale step never regresses a message.

Steps: `process` (duplicate handling, mapping) -> `deliver` -> finished (done inline at the end
of the last step: it releases admission and records the completion; nothing is published).
Every step first re-reads the message; a redelivered step resumes from the stored status.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

from hub.delivery.port import Connector, DeliveryFailed, OutboundRequest
from hub.domain import idempotency
from hub.domain.failure import ErrorClass
from hub.domain.ids import new_id
from hub.domain.message import MessageRecord, PayloadFormat, PipelineStep, StepMessage
from hub.domain.status import FINAL_STATUSES, PipelineStatus
from hub.domain.tenancy import (
    DestinationProtocol,
    DuplicateHandling,
    Integration,
    IntegrationMode,
    MessageTypeConfig,
)
from hub.errors import HubError, InvalidTransition, QueueUnavailable
from hub.mapping import MappingError
from hub.mapping.engine import MappedOutput, apply_mapping, looks_like_xml, passthrough, read_payload
from hub.pipeline import rules
from hub.ports import ConfigRepository, MessageRepository, Metrics, StepQueue

logger = logging.getLogger(__name__)

OBSERVABILITY_TEXT = "Observability mode: delivery to destination blocked"


class PipelineStore(Protocol):
    def admit(
        self, message_id: str, operation: str, execution_id: str, now: datetime, abandoned_after: Any
    ) -> bool: ...
    def release_admission(self, message_id: str, operation: str, execution_id: str) -> None: ...
    def mark_completed(
        self, message_id: str, operation: str, execution_id: str, now: datetime, window: Any
    ) -> None: ...
    def recently_completed(
        self, message_id: str, operation: str, execution_id: str, now: datetime
    ) -> bool: ...
    def step_done(self, step_id: str, now: datetime) -> bool: ...
    def record_step_done(self, step_id: str, now: datetime, window: Any) -> None: ...
    def acquire_lock(self, entity: str, owner: str, now: datetime, lease: Any) -> bool: ...
    def release_lock(self, entity: str, owner: str) -> None: ...
    def claim_business_key(self, key: str, message_id: str) -> str | None: ...
    def current_for_business_key(self, key: str) -> str | None: ...
    def replace_business_key(self, key: str, message_id: str) -> None: ...
    def mark_superseded(self, message_id: str, by_message_id: str) -> None: ...
    def put_mapped(self, message_id: str, body: bytes, content_type: str) -> None: ...
    def get_mapped(self, message_id: str) -> tuple[bytes, str] | None: ...
    def append_log(self, message_id: str, now: datetime, entry: dict[str, Any]) -> None: ...


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
    step message is redelivered and the deliver step runs again from the stored status."""

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


class _RetryPending:
    """Returned by a step whose execution goes on later (a scheduled retry)."""


RETRY_PENDING = _RetryPending()


def utcnow() -> datetime:
    return datetime.now(UTC)


class PipelineWorker:
    def __init__(
        self,
        config: ConfigRepository,
        messages: MessageRepository,
        store: PipelineStore,
        queue: StepQueue,
        connectors: Mapping[DestinationProtocol, Connector],
        *,
        retries: RetryHook | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], datetime] = utcnow,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._config = config
        self._messages = messages
        self._store = store
        self._queue = queue
        self._connectors = connectors
        self._retries: RetryHook = retries or NoRetries()
        self._metrics: Metrics = metrics or Uncounted()
        self._clock = clock
        self._rand = rand

    # --- entry ------------------------------------------------------------------------------

    def run(self, step: StepMessage, sent_at: datetime, *, last_delivery: bool = False) -> StepReport:
        """Runs `step` once. Raises only for infrastructure failures (the SQS message is then
        redelivered); every business outcome is recorded and reported. On the `last_delivery`
        SQS will make (the next failure sends the step to the DLQ) a failure also releases
        admission, so an operator can reprocess the message; its status is left as it is: the
        message may already have been delivered (seed 002, 7.2)."""
        try:
            return self._run(step, sent_at)
        except Exception:
            if last_delivery:
                self._store.release_admission(step.message_id, step.operation, step.execution_id)
                logger.error(
                    "step failed for the last time: released to the dead-letter queue", extra=_log_ids(step)
                )
                self._metrics.count("StepsSentToDLQ")
            self._metrics.count("StepErrors", step=step.step.value)
            raise

    def _run(self, step: StepMessage, sent_at: datetime) -> StepReport:  # noqa: PLR0911 - one exit per guard
        now = self._clock()
        ids = _log_ids(step)
        if self._store.step_done(step.step_id, now):
            self._metrics.count("DuplicateStepsDropped")
            logger.info("duplicate step dropped", extra=ids)
            return StepReport(StepOutcome.DROPPED, "duplicate_step")
        record = self._messages.get(step.message_id)
        if record is None:
            return self._orphan(step, sent_at, now)
        ids["tenant_id"] = record.tenant_id
        if record.execution_id != step.execution_id:
            # A newer execution replaced this one: it must not keep the message admitted.
            self._store.release_admission(step.message_id, step.operation, step.execution_id)
            logger.info("stale step of an earlier execution dropped", extra=ids)
            return self._done(step, StepReport(StepOutcome.DROPPED, "stale_execution"))
        if self._store.recently_completed(step.message_id, step.operation, step.execution_id, now):
            logger.info("step of a just-completed operation dropped", extra=ids)
            return self._done(step, StepReport(StepOutcome.DROPPED, "recently_completed"))
        if not self._store.admit(
            step.message_id, step.operation, step.execution_id, now, rules.ADMISSION_ABANDONED_AFTER
        ):
            self._metrics.count("AdmissionSuppressed")
            logger.info("another execution is live: step suppressed", extra=ids)
            return self._done(step, StepReport(StepOutcome.DROPPED, "admission_suppressed"))

        entity = record.lock_entity
        # Each run holds the lock under its own id: two copies of one step (a redelivery racing
        # the original) are serialized like steps of different messages.
        owner = f"{step.execution_id}:{new_id('run')}"
        if not self._store.acquire_lock(entity, owner, now, rules.LOCK_LEASE):
            return self._busy(step, record, now)
        try:
            following = self._execute(step, record, now)
        finally:
            self._store.release_lock(entity, owner)
        if following is not None:
            try:
                self._queue.publish(following)
            except QueueUnavailable:
                # Free the message for an operator's reprocess; SQS redelivers this step.
                self._store.release_admission(step.message_id, step.operation, step.execution_id)
                raise
        return self._done(step, StepReport(StepOutcome.DONE, step.step.value))

    def _done(self, step: StepMessage, report: StepReport) -> StepReport:
        self._store.record_step_done(step.step_id, self._clock(), rules.STEP_DEDUP_WINDOW)
        return report

    def _orphan(self, step: StepMessage, sent_at: datetime, now: datetime) -> StepReport:
        """No such message. Within the grace the ingest may still be committing it: look again
        shortly. After it, the step belongs to a failed or lost ingest and is dropped."""
        young = now - sent_at < rules.ORPHAN_GRACE
        if young and step.orphan_checks < rules.MAX_ORPHAN_CHECKS:
            again = step.rescheduled(new_id("pub"), orphan_checks=step.orphan_checks + 1)
            self._queue.publish(again, delay_seconds=rules.ORPHAN_RECHECK_SECONDS)
            return self._done(step, StepReport(StepOutcome.RESCHEDULED, "message_not_yet_visible"))
        logger.info("orphan step dropped: its message was never stored", extra=_log_ids(step))
        return self._done(step, StepReport(StepOutcome.DROPPED, "orphan"))

    def _busy(self, step: StepMessage, record: MessageRecord, now: datetime) -> StepReport:
        ids = _log_ids(step)
        if step.lock_wait + 1 > rules.MAX_LOCK_WAITS:
            self._metrics.count("LockGiveUps")
            self._fail_terminal(record, step, now, "lock_timeout", "entity busy for too long: gave up")
            self._finish(step, now)
            logger.warning("lock wait exhausted", extra=ids)
            return self._done(step, StepReport(StepOutcome.DONE, "lock_timeout"))
        delay = rules.lock_wait_delay(step.lock_wait, self._rand)
        self._metrics.count("LockContention")
        self._queue.publish(
            step.rescheduled(new_id("pub"), lock_wait=step.lock_wait + 1), delay_seconds=delay
        )
        logger.info("entity busy: step rescheduled", extra={**ids, "delay_seconds": delay})
        return self._done(step, StepReport(StepOutcome.RESCHEDULED, "entity_busy"))

    def _finish(self, step: StepMessage, now: datetime) -> None:
        """Closes the execution: admission released, recent completion recorded."""
        self._store.mark_completed(
            step.message_id, step.operation, step.execution_id, self._clock(), rules.RECENT_COMPLETION
        )
        self._store.release_admission(step.message_id, step.operation, step.execution_id)

    # --- steps ------------------------------------------------------------------------------

    def _execute(self, step: StepMessage, record: MessageRecord, now: datetime) -> StepMessage | None:
        integration = self._config.get_integration(record.integration_id)
        if integration is None:
            self._fail_terminal(record, step, now, ErrorClass.SYNTAX, "integration no longer exists")
            self._finish(step, now)
            return None
        try:
            if step.step is PipelineStep.PROCESS:
                following = self._process(step, record, integration, now)
            else:
                delivered = self._deliver(step, record, integration, now)
                if isinstance(delivered, _RetryPending):
                    return None  # the execution goes on with the scheduled retry
                following = delivered
        except InvalidTransition as moved:
            logger.info("status moved on: step dropped", extra={**_log_ids(step), **(moved.details or {})})
            current = self._messages.get(record.message_id)
            # Close the execution only when the message is really done with (cancelled, sent...);
            # if another copy of this step is mid-way, it carries the execution on.
            if (
                current is None
                or current.execution_id != step.execution_id
                or current.pipeline_status in FINAL_STATUSES
            ):
                self._finish(step, now)
            return None
        if following is None:
            self._finish(step, now)
        return following

    def _process(
        self, step: StepMessage, record: MessageRecord, integration: Integration, now: datetime
    ) -> StepMessage | None:
        if record.pipeline_status is PipelineStatus.MAPPED:  # redelivered after mapping
            return step.next(PipelineStep.DELIVER)
        if record.pipeline_status is not PipelineStatus.RECEIVED:
            return None
        started = self._clock()
        text = self._messages.get_payload(record.message_id) or ""
        payload: dict[str, Any] | str = (
            json.loads(text) if record.payload_format is PayloadFormat.JSON else text
        )
        rules_for_type = integration.message_type_config(record.message_type)
        try:
            # XML is always parsed once, safely (no DOCTYPE, so no XXE or entity bombs), even
            # when it is then sent as received: an unsafe document is never passed on.
            document = (
                read_payload(payload) if isinstance(payload, str) and looks_like_xml(payload) else payload
            )
        except MappingError as failed:
            self._fail_terminal(record, step, now, ErrorClass.SYNTAX, failed.message, field=failed.field)
            return None

        if self._duplicate_rejected(record, step, document, rules_for_type, now):
            return None
        try:
            mapping = rules_for_type.mapping
            # The mapping reads the document parsed above; passthrough sends the payload as received.
            mapped: MappedOutput = apply_mapping(mapping, document) if mapping else passthrough(payload)
        except MappingError as failed:
            self._fail_terminal(record, step, now, ErrorClass.SYNTAX, failed.message, field=failed.field)
            return None
        self._store.put_mapped(record.message_id, mapped.body, mapped.content_type)
        self._messages.transition(record, PipelineStatus.MAPPED, now)
        self._log(
            record, step, now, "success", started, detail="mapped" if mapping else "no mapping: passthrough"
        )
        return step.next(PipelineStep.DELIVER)

    def _duplicate_rejected(
        self,
        record: MessageRecord,
        step: StepMessage,
        document: Any,
        config: MessageTypeConfig,
        now: datetime,
    ) -> bool:
        """Business-key duplicates (seed 000, "Tratamento de Duplicatas"), read from the JSON
        payload or the parsed XML document. True when rejected."""
        values = idempotency.duplicate_key_values(
            document if isinstance(document, dict) else "", config.duplicate_key_fields
        )
        if not values:
            return False
        digest = idempotency.sha256_hex(chr(31).join(values).encode())
        key = f"{record.integration_id}#{record.message_type}#{digest}"
        if config.duplicate_handling is DuplicateHandling.REJECT:
            earlier = self._store.claim_business_key(key, record.message_id)
            if earlier is None or earlier == record.message_id:
                return False
            self._messages.transition(
                record, PipelineStatus.DUPLICATE_REJECTED, now, dest_status_text=f"duplicate of {earlier}"
            )
            self._log(record, step, now, "rejected", now, detail=f"duplicate of {earlier}")
            logger.info("duplicate rejected", extra={**_log_ids(step), "duplicate_of": earlier})
            return True
        earlier = self._store.current_for_business_key(key)
        if (
            config.duplicate_handling is DuplicateHandling.OVERWRITE
            and earlier
            and earlier != record.message_id
        ):
            self._store.mark_superseded(earlier, record.message_id)
            self._log(record, step, now, "success", now, detail=f"supersedes {earlier}", counted=False)
        self._store.replace_business_key(key, record.message_id)
        return False

    def _deliver(  # noqa: PLR0911 - one exit per delivery outcome
        self, step: StepMessage, record: MessageRecord, integration: Integration, now: datetime
    ) -> StepMessage | _RetryPending | None:
        if record.pipeline_status not in (PipelineStatus.MAPPED, PipelineStatus.RETRY_PENDING):
            return None  # already delivered, observed or failed: a redelivery has nothing to do
        if record.pipeline_status is PipelineStatus.RETRY_PENDING:
            # Under the entity lock now: read again, so a cancel that landed since the first read
            # (the operator holds the same lock while cancelling) is seen before anything is sent.
            current = self._messages.get(record.message_id)
            if current is None or current.pipeline_status is not PipelineStatus.RETRY_PENDING:
                return None
            record = current
            if step.attempt < record.retry_count:
                # This step made the decision and is redelivered (its schedule may not exist: the
                # create failed). Only the scheduled attempt may call the destination.
                self._retries.resume(record, step)
                return RETRY_PENDING
        started = self._clock()
        if integration.mode is IntegrationMode.OBSERVABILITY:
            self._messages.transition(
                record,
                PipelineStatus.RECEIVED_OBSERVED,
                now,
                dest_status="skipped_observability",
                dest_status_text=OBSERVABILITY_TEXT,
            )
            self._log(
                record, step, now, "skipped", started, step_name="observability", detail=OBSERVABILITY_TEXT
            )
            return None
        if record.superseded_by:
            # A later version of the same business entity replaced this one (overwrite): sending
            # it now could overwrite the newer version at the destination.
            text = f"superseded by {record.superseded_by}"
            self._messages.transition(record, PipelineStatus.CANCELLED, now, dest_status_text=text)
            self._log(record, step, now, "skipped", started, detail=text)
            return None
        destination = integration.destination
        mapped = self._store.get_mapped(record.message_id)
        if destination is None or mapped is None:
            reason = "no destination configured" if destination is None else "mapped body missing"
            self._fail_terminal(record, step, now, ErrorClass.SYNTAX, reason)
            return None
        request = OutboundRequest(
            message_id=record.message_id,
            idempotency_key=record.message_id,
            body=mapped[0],
            content_type=mapped[1],
            correlation_id=step.correlation_id,
            tenant_id=record.tenant_id,
        )
        try:
            outcome = self._connectors[destination.protocol].deliver(destination, request)
        except HubError as unusable:
            # A destination we cannot even call (unknown WSDL operation, unreadable client
            # certificate): no retry can fix it; an operator must change the connection.
            error_class = ErrorClass.TLS if unusable.code == "certificate_invalid" else ErrorClass.SYNTAX
            self._fail_terminal(record, step, now, error_class, unusable.message)
            return None
        except DeliveryFailed as failure:
            return self._delivery_failed(step, record, integration, failure, started)
        try:
            self._messages.transition(
                record,
                PipelineStatus.SENT,
                self._clock(),
                dest_status=outcome.dest_status,
                dest_status_text=outcome.dest_status_text,
                uncertain=None,
            )
        except InvalidTransition:
            # Delivered, but the status moved on meanwhile: the destination has it; say so.
            self._log(
                record, step, now, "delivered_after_status_change", started, dest_status=outcome.dest_status
            )
            logger.warning("delivered after the status moved on", extra=_log_ids(step))
            raise
        self._log(record, step, now, "success", started, dest_status=outcome.dest_status, step_name="sent")
        logger.info("delivered", extra={**_log_ids(step), "dest_status": outcome.dest_status})
        return None

    def _delivery_failed(
        self,
        step: StepMessage,
        record: MessageRecord,
        integration: Integration,
        failure: DeliveryFailed,
        started: datetime,
    ) -> _RetryPending | None:
        """Records the failure and the retry policy's decision in one conditional update."""
        now = self._clock()
        if failure.error_class is ErrorClass.HTTP_410 and integration.destination is not None:
            self._config.flag_connection_gone(integration.integration_id, now, failure.dest_status)
        plan = self._retries.plan(FailedDelivery(record, step, failure, integration, now))
        failed = self._messages.transition(
            record,
            plan.target,
            now,
            dest_status=failure.dest_status,
            dest_status_text=failure.dest_status_text,
            last_retry_error_class=failure.error_class.value,
            # An earlier uncertain attempt stays uncertain until the message is sent or rerun.
            **({"uncertain": True} if failure.uncertain else {}),
            **plan.changes,
        )
        self._log(
            failed,
            step,
            now,
            "failure",
            started,
            error_class=failure.error_class.value,
            dest_status=failure.dest_status,
            detail=failure.dest_status_text,
            uncertain=failure.uncertain,
        )
        logger.warning(
            "delivery failed",
            extra={
                **_log_ids(step),
                "error_class": failure.error_class.value,
                "dest_status": failure.dest_status,
                "pipeline_status": failed.pipeline_status.value,
            },
        )
        if plan.then is not None:
            plan.then(failed)
        if failed.pipeline_status is PipelineStatus.RETRY_PENDING:
            self._metrics.count("RetriesScheduled", error_class=failure.error_class.value)
            return RETRY_PENDING
        if failed.pipeline_status is PipelineStatus.DEAD_LETTER:
            self._metrics.count("DeadLettered")
        return None

    # --- helpers ----------------------------------------------------------------------------

    def _fail_terminal(
        self,
        record: MessageRecord,
        step: StepMessage,
        now: datetime,
        error_class: str,
        text: str,
        *,
        field: str | None = None,
    ) -> None:
        """A failure no retry can fix (mapping, configuration, lock timeout): `error`."""
        try:
            failed = self._messages.transition(
                record,
                PipelineStatus.ERROR,
                now,
                dest_status_text=text,
                last_retry_error_class=str(error_class),
            )
        except InvalidTransition:
            return
        self._log(failed, step, now, "failure", now, error_class=str(error_class), detail=text, field=field)

    def _log(
        self,
        record: MessageRecord,
        step: StepMessage,
        now: datetime,
        status: str,
        started: datetime,
        *,
        step_name: str | None = None,
        counted: bool = True,
        **extra: Any,
    ) -> None:
        duration_ms = max(0, int((self._clock() - started).total_seconds() * 1000))
        entry = {
            "step": step_name or step.step.value,
            "status": status,
            "attempt": step.attempt,
            "execution_id": step.execution_id,
            "duration_ms": duration_ms,
            **{k: v for k, v in extra.items() if v is not None},
        }
        self._store.append_log(record.message_id, now, entry)
        if counted and status in ("success", "failure"):
            outcome = "StepSucceeded" if status == "success" else "StepFailed"
            self._metrics.count(outcome, step=step.step.value)
            self._metrics.duration_ms("StepDuration", duration_ms, step=step.step.value)


def _log_ids(step: StepMessage) -> dict[str, Any]:
    return {
        "message_id": step.message_id,
        "tenant_id": step.tenant_id,
        "integration_id": step.integration_id,
        "step": step.step.value,
        "attempt": step.attempt,
        "lock_wait": step.lock_wait,
        "correlation_id": step.correlation_id,
    }
