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

import json
import logging
import random
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from hub.delivery.port import Connector, DeliveryFailed, OutboundRequest
from hub.domain import idempotency
from hub.domain.clock import utcnow
from hub.domain.failure import ErrorClass
from hub.domain.ids import new_id
from hub.domain.message import MessageRecord, PayloadFormat, PipelineStep, StepMessage
from hub.domain.status import FINAL_STATUSES, PipelineStatus
from hub.domain.tenancy import DestinationProtocol, DuplicateHandling, Integration, IntegrationMode
from hub.errors import HubError
from hub.mapping import MappingError
from hub.mapping.engine import MappedOutput, apply_mapping, looks_like_xml, passthrough, read_payload
from hub.pipeline import rules
from hub.pipeline.ports import (
    EntityHold,
    Executions,
    FailedDelivery,
    FailurePlan,
    LeaseLost,
    NoRetries,
    Outcome,
    Refusal,
    Refused,
    RetryHook,
    StepOutcome,
    StepReport,
    Taken,
    Uncounted,
)
from hub.ports import ConfigRepository, Metrics, StepQueue

logger = logging.getLogger(__name__)

OBSERVABILITY_TEXT = "Observability mode: delivery to destination blocked"

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


class _Ended(Exception):
    """The step's outcome is decided early (a terminal failure, a rejection): finish with it."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.target)
        self.outcome = outcome


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
    ) -> None:
        self._config = config
        self._executions = executions
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
        SQS will make (the next failure sends the step to the DLQ) a failure also ends the
        execution, so an operator can reprocess the message; its status is left as it is: the
        message may already have been delivered (seed 002, 7.2)."""
        try:
            return self._run(step, sent_at)
        except Exception:
            if last_delivery:
                self._executions.release_admission(step.message_id, step.execution_id, self._clock())
                logger.error(
                    "step failed for the last time: released to the dead-letter queue", extra=_log_ids(step)
                )
                self._metrics.count("StepsSentToDLQ")
            self._metrics.count("StepErrors", step=step.step.value)
            raise

    def _run(self, step: StepMessage, sent_at: datetime) -> StepReport:
        now = self._clock()
        # Each run holds the lease under its own id: two copies of one step (a redelivery racing
        # the original) are serialized like steps of different messages.
        owner = f"{step.execution_id}:{new_id('run')}"
        taken = self._executions.take(step, owner, now, rules.LOCK_LEASE)
        if isinstance(taken, Refusal):
            return self._refused(step, taken, sent_at, now)
        try:
            return self._hold(step, taken, now)
        except BaseException:
            # Give the lease back so the redelivery can run at once (best effort: an expired
            # lease frees it anyway). After a finish this finds the lease gone and does nothing.
            try:
                self._executions.release(taken, now)
            except HubError:
                logger.warning("lease not released", extra=_log_ids(step))
            raise

    def _refused(self, step: StepMessage, refusal: Refusal, sent_at: datetime, now: datetime) -> StepReport:
        ids = _log_ids(step)
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
        if refusal.reason is Refused.DUPLICATE_STEP:
            self._metrics.count("DuplicateStepsDropped")
        logger.info("step dropped", extra={**ids, "reason": refusal.reason.value})
        return StepReport(StepOutcome.DROPPED, refusal.reason.value)

    def _orphan(self, step: StepMessage, sent_at: datetime, now: datetime) -> StepReport:
        """No such message. Within the grace the ingest may still be committing it: look again
        shortly. After it, the step belongs to a failed or lost ingest and is dropped."""
        young = now - sent_at < rules.ORPHAN_GRACE
        if young and step.orphan_checks < rules.MAX_ORPHAN_CHECKS:
            again = step.rescheduled(new_id("pub"), orphan_checks=step.orphan_checks + 1)
            self._queue.publish(again, delay_seconds=rules.ORPHAN_RECHECK_SECONDS)
            return StepReport(StepOutcome.RESCHEDULED, "message_not_yet_visible")
        logger.info("orphan step dropped: its message was never stored", extra=_log_ids(step))
        return StepReport(StepOutcome.DROPPED, "orphan")

    def _busy(
        self, step: StepMessage, record: MessageRecord, now: datetime, taken: Taken | None = None
    ) -> StepReport:
        """The entity is busy: the step runs again later, on the ladder; after 30 waits the
        message ends in `error` / `lock_timeout`."""
        ids = _log_ids(step)
        if step.lock_wait + 1 > rules.MAX_LOCK_WAITS:
            self._metrics.count("LockGiveUps")
            text = "entity busy for too long: gave up"
            outcome = _failed("lock_timeout", text, step, now)
            if taken is not None:
                self._finish(step, taken, outcome)
            else:
                self._executions.fail_unleased(step, record, outcome, now)
            logger.warning("lock wait exhausted", extra=ids)
            return StepReport(StepOutcome.DONE, "lock_timeout")
        if taken is not None:
            self._executions.release(taken, now)
        delay = rules.lock_wait_delay(step.lock_wait, self._rand)
        self._metrics.count("LockContention")
        self._queue.publish(
            step.rescheduled(new_id("pub"), lock_wait=step.lock_wait + 1), delay_seconds=delay
        )
        logger.info("entity busy: step rescheduled", extra={**ids, "delay_seconds": delay})
        return StepReport(StepOutcome.RESCHEDULED, "entity_busy")

    # --- the step, under the lease -----------------------------------------------------------

    def _hold(self, step: StepMessage, taken: Taken, now: datetime) -> StepReport:
        record = taken.record
        integration = self._config.get_integration(record.integration_id)
        if integration is None:
            self._finish(step, taken, _failed(ErrorClass.SYNTAX, "integration no longer exists", step, now))
            return StepReport(StepOutcome.DONE, "no_integration")
        if step.step is PipelineStep.PROCESS and record.pipeline_status is PipelineStatus.RECEIVED:
            return self._process(step, taken, integration, now)
        if record.pipeline_status in (PipelineStatus.RETRY_PENDING, PipelineStatus.MAPPED):
            if record.superseded_by:
                # A later version of the same business entity replaced this one (overwrite):
                # sending it now could overwrite the newer version at the destination.
                text = f"superseded by {record.superseded_by}"
                self._finish(
                    step,
                    taken,
                    Outcome(
                        PipelineStatus.CANCELLED,
                        {"dest_status_text": text},
                        [_entry(step, "deliver", "skipped", now, now, detail=text)],
                    ),
                )
                return StepReport(StepOutcome.DONE, "superseded")
            return self._with_entity(step, taken, integration, record.entity_key, now, deliver_only=True)
        # Already delivered, observed or failed: a redelivery has nothing to do.
        self._finish(step, taken, Outcome(None, closes=record.pipeline_status in FINAL_STATUSES))
        return StepReport(StepOutcome.DROPPED, "nothing_to_do")

    def _process(
        self, step: StepMessage, taken: Taken, integration: Integration, now: datetime
    ) -> StepReport:
        record = taken.record
        try:
            payload, document = self._read(taken)
        except _Ended as ended:
            self._finish(step, taken, ended.outcome)
            return StepReport(StepOutcome.DONE, "failed")
        config = integration.message_type_config(record.message_type)
        entity = record.entity_key or rules.entity_key(
            record.integration_id,
            record.message_type,
            idempotency.duplicate_key_values(
                document if isinstance(document, dict) else "", config.duplicate_key_fields
            ),
        )
        return self._with_entity(
            step, taken, integration, entity, now, deliver_only=False, read=(payload, document)
        )

    def _with_entity(
        self,
        step: StepMessage,
        taken: Taken,
        integration: Integration,
        entity: str,
        now: datetime,
        *,
        deliver_only: bool,
        read: tuple[Any, Any] | None = None,
    ) -> StepReport:
        """Runs the step under the business entity's lease when the message has one."""
        record = taken.record
        hold: EntityHold | None = None
        if entity:
            hold = self._executions.take_entity(entity, taken.owner, record.message_id, now, rules.LOCK_LEASE)
            if hold is None:
                return self._busy(step, record, now, taken)
        becomes_current = False
        try:
            started = self._clock()
            log: list[dict[str, Any]] = []
            try:
                payload, document = read or self._read(taken)
                if not deliver_only and hold is not None:
                    becomes_current = self._duplicate_rules(step, record, integration, hold, now, log=log)
                mapped = self._map(step, record, integration, payload, document)
                if not deliver_only:
                    detail = (
                        "mapped"
                        if integration.message_type_config(record.message_type).mapping
                        else "no mapping: passthrough"
                    )
                    entry = _entry(step, "process", "success", started, self._clock(), detail=detail)
                    log.append(entry)
                    self._metrics.count("StepSucceeded", step="process")
                    self._metrics.duration_ms("StepDuration", entry["duration_ms"], step="process")
            except _Ended as ended:
                self._finish(step, taken, ended.outcome, prefix=log)
                return StepReport(StepOutcome.DONE, "failed")
            return self._deliver(step, taken, integration, mapped, log)
        finally:
            if hold is not None:
                self._executions.release_entity(hold, record.message_id if becomes_current else None)

    def _read(self, taken: Taken) -> tuple[dict[str, Any] | str, Any]:
        """The payload as received and the document the mapping reads. XML is always parsed once,
        safely (no DOCTYPE, so no XXE or entity bombs), even when it is then sent as received."""
        record = taken.record
        text = taken.inline_payload
        if text is None:
            text = self._executions.payload(record.message_id) or ""
        payload: dict[str, Any] | str = (
            json.loads(text) if record.payload_format is PayloadFormat.JSON else text
        )
        try:
            document = (
                read_payload(payload) if isinstance(payload, str) and looks_like_xml(payload) else payload
            )
        except MappingError as failed:
            raise _Ended(
                _failed(ErrorClass.SYNTAX, failed.message, None, self._clock(), field=failed.field)
            ) from None
        return payload, document

    def _map(
        self, step: StepMessage, record: MessageRecord, integration: Integration, payload: Any, document: Any
    ) -> MappedOutput:
        mapping = integration.message_type_config(record.message_type).mapping
        try:
            # The mapping reads the parsed document; passthrough sends the payload as received.
            return apply_mapping(mapping, document) if mapping else passthrough(payload)
        except MappingError as failed:
            raise _Ended(
                _failed(ErrorClass.SYNTAX, failed.message, step, self._clock(), field=failed.field)
            ) from None

    def _duplicate_rules(
        self,
        step: StepMessage,
        record: MessageRecord,
        integration: Integration,
        hold: EntityHold,
        now: datetime,
        *,
        log: list[dict[str, Any]],
    ) -> bool:
        """Business-key duplicates (seed 000, "Tratamento de Duplicatas"); `hold.holder` is the
        message the key belonged to. Raises _Ended when rejected; True when this message becomes
        the key's current one."""
        handling = integration.message_type_config(record.message_type).duplicate_handling
        earlier = hold.holder
        if handling is DuplicateHandling.REJECT:
            if earlier is None:
                return False  # the key is ours now (claimed when taken)
            text = f"duplicate of {earlier}"
            logger.info("duplicate rejected", extra={**_log_ids(step), "duplicate_of": earlier})
            raise _Ended(
                Outcome(
                    PipelineStatus.DUPLICATE_REJECTED,
                    {"dest_status_text": text},
                    [_entry(step, "process", "rejected", now, now, detail=text)],
                )
            )
        if handling is DuplicateHandling.OVERWRITE and earlier:
            self._executions.mark_superseded(earlier, record.message_id)
            log.append(_entry(step, "process", "success", now, now, detail=f"supersedes {earlier}"))
        return True

    def _deliver(
        self,
        step: StepMessage,
        taken: Taken,
        integration: Integration,
        mapped: MappedOutput,
        log: list[dict[str, Any]],
    ) -> StepReport:
        record = taken.record
        started = self._clock()
        if integration.mode is IntegrationMode.OBSERVABILITY:
            entry = _entry(
                step, "observability", "skipped", started, self._clock(), detail=OBSERVABILITY_TEXT
            )
            self._finish(
                step,
                taken,
                Outcome(
                    PipelineStatus.RECEIVED_OBSERVED,
                    {"dest_status": "skipped_observability", "dest_status_text": OBSERVABILITY_TEXT},
                    [entry],
                ),
                prefix=log,
            )
            return StepReport(StepOutcome.DONE, "observed")
        destination = integration.destination
        if destination is None:
            self._finish(
                step,
                taken,
                _failed(ErrorClass.SYNTAX, "no destination configured", step, started, name="deliver"),
                prefix=log,
            )
            return StepReport(StepOutcome.DONE, "failed")
        request = OutboundRequest(
            message_id=record.message_id,
            idempotency_key=record.message_id,
            body=mapped.body,
            content_type=mapped.content_type,
            correlation_id=step.correlation_id,
            tenant_id=record.tenant_id,
        )
        try:
            outcome = self._connectors[destination.protocol].deliver(destination, request)
        except HubError as unusable:
            # A destination we cannot even call (unknown WSDL operation, unreadable client
            # certificate): no retry can fix it; an operator must change the connection.
            error_class = ErrorClass.TLS if unusable.code == "certificate_invalid" else ErrorClass.SYNTAX
            self._finish(
                step, taken, _failed(error_class, unusable.message, step, started, name="deliver"), prefix=log
            )
            return StepReport(StepOutcome.DONE, "failed")
        except DeliveryFailed as failure:
            return self._delivery_failed(step, taken, integration, failure, started, log=log)
        entry = _entry(step, "sent", "success", started, self._clock(), dest_status=outcome.dest_status)
        sent = self._finish(
            step,
            taken,
            Outcome(
                PipelineStatus.SENT,
                {
                    "dest_status": outcome.dest_status,
                    "dest_status_text": outcome.dest_status_text,
                    "uncertain": None,
                },
                [entry],
            ),
            prefix=log,
        )
        if sent is None:
            # Delivered, but another run took the message over meanwhile (our lease expired): the
            # destination has it, and may get it again from that run with the same
            # Idempotency-Key. Nothing of ours was written.
            logger.warning("delivered after losing the lease", extra=_log_ids(step))
            return StepReport(StepOutcome.DROPPED, "lease_lost")
        self._metrics.count("StepSucceeded", step="deliver")
        self._metrics.duration_ms("StepDuration", entry["duration_ms"], step="deliver")
        logger.info(
            "delivered", extra={**_log_ids(step), "step": "deliver", "dest_status": outcome.dest_status}
        )
        return StepReport(StepOutcome.DONE, "sent")

    def _delivery_failed(
        self,
        step: StepMessage,
        taken: Taken,
        integration: Integration,
        failure: DeliveryFailed,
        started: datetime,
        *,
        log: list[dict[str, Any]],
    ) -> StepReport:
        """Records the failure and the retry policy's decision in one conditional update."""
        record = taken.record
        now = self._clock()
        if failure.error_class is ErrorClass.HTTP_410 and integration.destination is not None:
            self._config.flag_connection_gone(integration.integration_id, now, failure.dest_status)
        plan = self._retries.plan(FailedDelivery(record, step, failure, integration, now))
        entry = _entry(
            step,
            "deliver",
            "failure",
            started,
            now,
            error_class=failure.error_class.value,
            dest_status=failure.dest_status,
            detail=failure.dest_status_text,
            uncertain=failure.uncertain,
        )
        failed = self._finish(
            step,
            taken,
            Outcome(
                plan.target,
                {
                    "dest_status": failure.dest_status,
                    "dest_status_text": failure.dest_status_text,
                    "last_retry_error_class": failure.error_class.value,
                    # An earlier uncertain attempt stays uncertain until the message is sent or rerun.
                    **({"uncertain": True} if failure.uncertain else {}),
                    **plan.changes,
                },
                [entry],
                closes=plan.target is not PipelineStatus.RETRY_PENDING,
            ),
            prefix=log,
            at=now,  # the retry's wait counts from this recorded time
        )
        if failed is None:
            return StepReport(StepOutcome.DROPPED, "lease_lost")
        self._metrics.count("StepFailed", step="deliver")
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
            return StepReport(StepOutcome.DONE, "retry_scheduled")
        if failed.pipeline_status is PipelineStatus.DEAD_LETTER:
            self._metrics.count("DeadLettered")
        return StepReport(StepOutcome.DONE, failed.pipeline_status.value)

    def _finish(
        self,
        step: StepMessage,
        taken: Taken,
        outcome: Outcome,
        prefix: list[dict[str, Any]] | None = None,
        at: datetime | None = None,
    ) -> MessageRecord | None:
        """The one finishing update (stamped `at`, default now); None when the lease was lost
        (nothing written)."""
        if prefix:
            outcome = Outcome(outcome.target, outcome.changes, [*prefix, *outcome.log], outcome.closes)
        try:
            return self._executions.finish(taken, outcome, at or self._clock())
        except LeaseLost as lost:
            current = lost.current
            logger.warning(
                "finishing update refused: the lease or status moved on",
                extra={
                    **_log_ids(step),
                    "pipeline_status": current.pipeline_status.value if current else None,
                },
            )
            return None


def _decided_a_retry(step: StepMessage, current: MessageRecord) -> bool:
    return current.pipeline_status is PipelineStatus.RETRY_PENDING and step.attempt < current.retry_count


def _entry(
    step: StepMessage, name: str, status: str, started: datetime, ended: datetime, **extra: Any
) -> dict[str, Any]:
    """One log entry of the message (never payload data: ids, statuses, classes and short
    destination excerpts only)."""
    entry: dict[str, Any] = {
        "at": ended,
        "step": name,
        "status": status,
        "duration_ms": max(0, int((ended - started).total_seconds() * 1000)),
        **{k: v for k, v in extra.items() if v is not None},
    }
    if step.attempt:  # kept lean: every byte of the item is paid by each later update of it
        entry["attempt"] = step.attempt
    return entry


def _failed(
    error_class: str,
    text: str,
    step: StepMessage | None,
    now: datetime,
    *,
    field: str | None = None,
    name: str | None = None,
) -> Outcome:
    """A failure no retry can fix (mapping, configuration, lock timeout): `error`."""
    entry: dict[str, Any] = {
        "step": name or (step.step.value if step else "process"),
        "status": "failure",
        "error_class": str(error_class),
        "detail": text,
        "field": field,
    }
    if step is not None and step.attempt:
        entry["attempt"] = step.attempt
    return Outcome(
        PipelineStatus.ERROR,
        {"dest_status_text": text, "last_retry_error_class": str(error_class)},
        [{k: v for k, v in entry.items() if v is not None}],
    )


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
