"""The steps of the pipeline under a held lease: read the payload, apply the business-key rules,
map, deliver, and write the outcome in one finishing update (hub.pipeline.ports.Executions).
The guards that decide whether a step may run at all are in hub.pipeline.worker."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from hub.delivery.breaker import Gate, HeldReason
from hub.delivery.gate import Admission, ConnectionGate, released
from hub.delivery.limits import Permit, Refusal, holder_of
from hub.delivery.port import (
    Connector,
    DeliveryFailed,
    OutboundRequest,
    unusable_destination_class,
)
from hub.domain import idempotency
from hub.domain.failure import ErrorClass
from hub.domain.message import MessageRecord, PayloadFormat, PipelineStep, StepMessage
from hub.domain.status import FINAL_STATUSES, PipelineStatus
from hub.domain.tenancy import (
    Destination,
    DestinationProtocol,
    DuplicateHandling,
    Integration,
    IntegrationMode,
)
from hub.errors import HubError
from hub.mapping import MappingError
from hub.mapping.engine import MappedOutput, apply_mapping, looks_like_xml, passthrough, read_payload
from hub.pipeline import rules
from hub.pipeline.ports import (
    EntityHold,
    Executions,
    FailedDelivery,
    LeaseLost,
    Outcome,
    RetryHook,
    StepOutcome,
    StepReport,
    Taken,
)
from hub.pipeline.time_guard import TimeLeft, capped_read_timeout
from hub.ports import ConfigRepository, Metrics

logger = logging.getLogger(__name__)

OBSERVABILITY_TEXT = "Observability mode: delivery to destination blocked"
#: Why a step taken over from a run that died mid-step does not call the destination again.
INTERRUPTED_ATTEMPT = (
    "an earlier attempt was interrupted (the worker stopped) and may have reached the destination; "
    "not resent: the connection does not declare idempotent retries"
)


@dataclass(frozen=True)
class EntityBusy:
    """The message's business entity is leased by another run: the worker reschedules."""

    record: MessageRecord


class _Ended(Exception):
    """The step's outcome is decided early (a terminal failure, a rejection): finish with it."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.target)
        self.outcome = outcome


class Steps:
    def __init__(
        self,
        config: ConfigRepository,
        executions: Executions,
        connectors: Mapping[DestinationProtocol, Connector],
        *,
        retries: RetryHook,
        metrics: Metrics,
        clock: Callable[[], datetime],
        gate: ConnectionGate | None = None,
    ) -> None:
        self._config = config
        self._executions = executions
        self._connectors = connectors
        self._retries = retries
        self._metrics = metrics
        self._clock = clock
        self._gate = gate

    def run(
        self, step: StepMessage, taken: Taken, now: datetime, time_left: TimeLeft | None = None
    ) -> StepReport | EntityBusy:
        """Runs `step` on the message it holds, to one finishing update (or EntityBusy). With
        `time_left` (the invocation's seconds left), the attempt's read timeout is capped so
        that it ends before the invocation does (hub.pipeline.time_guard)."""
        record = taken.record
        integration = self._config.get_integration(record.tenant_id, record.integration_id)
        if integration is None:
            self.finish(
                step, taken, failed_outcome(ErrorClass.SYNTAX, "integration no longer exists", step, now)
            )
            return StepReport(StepOutcome.DONE, "no_integration")
        if step.step is PipelineStep.PROCESS and record.pipeline_status is PipelineStatus.RECEIVED:
            return self._process(step, taken, integration, now, time_left)
        if record.pipeline_status in (PipelineStatus.RETRY_PENDING, PipelineStatus.MAPPED):
            if record.superseded_by:
                # A later version of the same business entity replaced this one (overwrite):
                # sending it now could overwrite the newer version at the destination.
                text = f"superseded by {record.superseded_by}"
                self.finish(
                    step,
                    taken,
                    Outcome(
                        PipelineStatus.CANCELLED,
                        {"dest_status_text": text},
                        [log_entry(step, "deliver", "skipped", now, now, detail=text)],
                    ),
                )
                return StepReport(StepOutcome.DONE, "superseded")
            return self._with_entity(
                step, taken, integration, record.entity_key, now, deliver_only=True, time_left=time_left
            )
        # Already delivered, observed or failed: a redelivery has nothing to do.
        self.finish(step, taken, Outcome(None, closes=record.pipeline_status in FINAL_STATUSES))
        return StepReport(StepOutcome.DROPPED, "nothing_to_do")

    def _process(
        self,
        step: StepMessage,
        taken: Taken,
        integration: Integration,
        now: datetime,
        time_left: TimeLeft | None,
    ) -> StepReport | EntityBusy:
        record = taken.record
        try:
            payload, document = self._read(taken)
        except _Ended as ended:
            self.finish(step, taken, ended.outcome)
            return StepReport(StepOutcome.DONE, "failed")
        config = integration.message_type_config(record.message_type)
        entity = record.entity_key or rules.entity_key(
            record.tenant_id,
            record.integration_id,
            record.message_type,
            idempotency.duplicate_key_values(
                document if isinstance(document, dict) else "", config.duplicate_key_fields
            ),
        )
        return self._with_entity(
            step,
            taken,
            integration,
            entity,
            now,
            deliver_only=False,
            read=(payload, document),
            time_left=time_left,
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
        time_left: TimeLeft | None = None,
    ) -> StepReport | EntityBusy:
        """Runs the step under the business entity's lease when the message has one."""
        if entity and not taken.record.entity_key:
            # Only the parsed payload showed the key (XML): record it, so a retry of this message
            # serializes on the same entity.
            taken = replace(taken, learned={**taken.learned, "entity_key": entity})
        record = taken.record
        hold: EntityHold | None = None
        if entity:
            hold = self._executions.take_entity(
                entity, taken.owner, record.message_id, now, rules.LOCK_LEASE, expires_at=record.expires_at
            )
            if hold is None:
                return EntityBusy(record)
        becomes_current = False
        try:
            handling = integration.message_type_config(record.message_type).duplicate_handling
            newer = hold.holder if hold is not None and deliver_only else None
            if newer and handling is DuplicateHandling.OVERWRITE:
                # Read under the entity lease: a newer version took the key since this message
                # was taken (its `superseded_by` may not show it yet). Never send the older one.
                text = f"superseded by {newer}"
                entry = log_entry(step, "deliver", "skipped", now, now, detail=text)
                self.finish(
                    step, taken, Outcome(PipelineStatus.CANCELLED, {"dest_status_text": text}, [entry])
                )
                return StepReport(StepOutcome.DONE, "superseded")
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
                    entry = log_entry(step, "process", "success", started, self._clock(), detail=detail)
                    log.append(entry)
                    self._metrics.count("StepSucceeded", step="process")
                    self._metrics.duration_ms("StepDuration", entry["duration_ms"], step="process")
            except _Ended as ended:
                self.finish(step, taken, ended.outcome, prefix=log)
                return StepReport(StepOutcome.DONE, "failed")
            return self._deliver(step, taken, integration, mapped, log, time_left=time_left)
        finally:
            if hold is not None:
                self._executions.release_entity(
                    hold, record.message_id if becomes_current else None, record.expires_at
                )

    def _read(self, taken: Taken) -> tuple[dict[str, Any] | str, Any]:
        """The payload as received and the document the mapping reads. XML is always parsed once,
        safely (no DOCTYPE, so no XXE or entity bombs), even when it is then sent as received."""
        record = taken.record
        text = taken.inline_payload
        if text is None:
            text = self._executions.payload(record, self._clock())
        if text is None:
            raise _Ended(
                failed_outcome(
                    ErrorClass.PAYLOAD_PURGED,
                    "the payload is no longer kept (payload retention): nothing to deliver",
                    None,
                    self._clock(),
                )
            )
        payload: dict[str, Any] | str = (
            json.loads(text) if record.payload_format is PayloadFormat.JSON else text
        )
        try:
            document = (
                read_payload(payload) if isinstance(payload, str) and looks_like_xml(payload) else payload
            )
        except MappingError as failed:
            raise _Ended(
                failed_outcome(ErrorClass.SYNTAX, failed.message, None, self._clock(), field=failed.field)
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
                failed_outcome(ErrorClass.SYNTAX, failed.message, step, self._clock(), field=failed.field)
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
            logger.info("duplicate rejected", extra={**log_ids(step), "duplicate_of": earlier})
            raise _Ended(
                Outcome(
                    PipelineStatus.DUPLICATE_REJECTED,
                    {"dest_status_text": text},
                    [log_entry(step, "process", "rejected", now, now, detail=text)],
                )
            )
        if handling is DuplicateHandling.OVERWRITE and earlier:
            self._executions.mark_superseded(earlier, record.message_id)
            log.append(log_entry(step, "process", "success", now, now, detail=f"supersedes {earlier}"))
        return True

    def _deliver(
        self,
        step: StepMessage,
        taken: Taken,
        integration: Integration,
        mapped: MappedOutput,
        log: list[dict[str, Any]],
        *,
        time_left: TimeLeft | None = None,
    ) -> StepReport:
        record = taken.record
        started = self._clock()
        if integration.mode is IntegrationMode.OBSERVABILITY:
            # The text is the item's `dest_status_text`: not repeated on the entry, which the
            # item's write unit pays for (issue 29).
            entry = log_entry(step, "observability", "skipped", started, self._clock())
            observed = self.finish(
                step,
                taken,
                Outcome(
                    PipelineStatus.RECEIVED_OBSERVED,
                    {"dest_status": "skipped_observability", "dest_status_text": OBSERVABILITY_TEXT},
                    [entry],
                ),
                prefix=log,
            )
            if observed is not None:
                # The Health view's hourly chart (issue 13); one undimensioned metric.
                self._metrics.count("MessagesObserved")
            return StepReport(StepOutcome.DONE, "observed")
        destination = integration.destination
        if destination is None:
            self.finish(step, taken, _no_destination(integration, step, started), prefix=log)
            return StepReport(StepOutcome.DONE, "failed")
        if taken.interrupted and not destination.idempotent_retries:
            # An earlier run of this step died holding its lease (a crash, Lambda's timeout),
            # perhaps after calling the destination: a timeout's uncertainty. Without the
            # connection's word that it drops repeated Idempotency-Keys, an operator reconciles.
            interrupted = DeliveryFailed(ErrorClass.TIMEOUT, INTERRUPTED_ATTEMPT, uncertain=True)
            return self._deliveryfailed_outcome(step, taken, integration, interrupted, started, log=log)
        connection_id = destination.connection_id if self._gate is not None else None
        admission: Admission | None = None
        if connection_id is not None and self._gate is not None:
            # Pause and circuit breaker (issue 12): a held message waits on its connection.
            admission = self._gate.admit(record.tenant_id, connection_id, record.message_id, started)
            if admission.gate is Gate.HOLD:
                reason = admission.reason or HeldReason.PAUSED
                return self._hold(step, taken, connection_id, reason, started=started, log=log)
        read_timeout = _read_timeout(step, destination, time_left)
        permit = self._permit(step, record, destination, connection_id, read_timeout, owner=taken.owner)
        if isinstance(permit, Refusal) and connection_id is not None:
            return self._hold(step, taken, connection_id, permit.reason, started=started, log=log)
        try:
            return self._send(
                step,
                taken,
                integration,
                mapped,
                log,
                destination=destination,
                connection_id=connection_id,
                admission=admission,
                read_timeout=read_timeout,
                started=started,
            )
        finally:
            if isinstance(permit, Permit) and connection_id is not None and self._gate is not None:
                # After the outcome's write: that write is what frees the slot (issue 30).
                holder = holder_of(record.message_id, taken.owner)
                self._gate.give_back(record.tenant_id, connection_id, permit, holder=holder)

    def _send(
        self,
        step: StepMessage,
        taken: Taken,
        integration: Integration,
        mapped: MappedOutput,
        log: list[dict[str, Any]],
        *,
        destination: Destination,
        connection_id: str | None,
        admission: Admission | None,
        read_timeout: float | None,
        started: datetime,
    ) -> StepReport:
        """The call to the destination (the message admitted, a permit held if it is limited)
        and the write of its outcome."""
        record = taken.record
        request = OutboundRequest(
            message_id=record.message_id,
            idempotency_key=record.message_id,
            body=mapped.body,
            content_type=mapped.content_type,
            correlation_id=step.correlation_id,
            tenant_id=record.tenant_id,
            read_timeout_seconds=read_timeout,
        )
        taken.progress.destination_called = True
        try:
            outcome = self._connectors[destination.protocol].deliver(destination, request)
        except HubError as unusable:
            # A destination we cannot even call (unknown WSDL operation, unreadable client
            # certificate): no retry can fix it; an operator must change the connection.
            error_class = unusable_destination_class(unusable.code)
            self.finish(
                step,
                taken,
                failed_outcome(error_class, unusable.message, step, started, name="deliver"),
                prefix=log,
            )
            return StepReport(StepOutcome.DONE, "failed")
        except DeliveryFailed as failure:
            report = self._deliveryfailed_outcome(step, taken, integration, failure, started, log=log)
            if admission is not None and connection_id is not None and self._gate is not None:
                self._gate.failed(
                    connection_id,
                    admission,
                    tenant_id=record.tenant_id,
                    message_id=record.message_id,
                    error_class=failure.error_class,
                    fault_code=failure.fault_code,
                    now=self._clock(),
                )
            return report
        entry = log_entry(step, "sent", "success", started, self._clock(), dest_status=outcome.dest_status)
        sent = self.finish(
            step,
            taken,
            Outcome(
                PipelineStatus.SENT,
                {
                    "dest_status": outcome.dest_status,
                    # Never a 2xx body (issue 27); clears an earlier attempt's failure text.
                    "dest_status_text": None,
                    "uncertain": None,
                },
                [entry],
            ),
            prefix=log,
        )
        if admission is not None and connection_id is not None and self._gate is not None:
            self._gate.delivered(record.tenant_id, connection_id, admission, record.message_id, self._clock())
        if sent is None:
            # Delivered, but another run took the message over meanwhile (our lease expired): the
            # destination has it, and may get it again from that run with the same
            # Idempotency-Key. Nothing of ours was written.
            logger.warning("delivered after losing the lease", extra=log_ids(step))
            return StepReport(StepOutcome.DROPPED, "lease_lost")
        self._metrics.count("StepSucceeded", step="deliver")
        self._metrics.duration_ms("StepDuration", entry["duration_ms"], step="deliver")
        # The message's one INFO line on the happy path (issue 29): its outcome, ids and duration.
        logger.info(
            "delivered",
            extra={
                **log_ids(step),
                "step": "deliver",
                "dest_status": outcome.dest_status,
                "duration_ms": entry["duration_ms"],
            },
        )
        return StepReport(StepOutcome.DONE, "sent")

    def _permit(
        self,
        step: StepMessage,
        record: MessageRecord,
        destination: Destination,
        connection_id: str | None,
        read_timeout: float | None,
        *,
        owner: str,
    ) -> Permit | Refusal | None:
        """The connection's declared limits (issue 30): a permit for this attempt, or why the
        message must wait (None: no limits, nothing to ask)."""
        limits = destination.limits
        if connection_id is None or self._gate is None or limits is None or not limits.limited:
            return None
        attempt_seconds = destination.connect_timeout_seconds + (
            read_timeout if read_timeout is not None else destination.read_timeout_seconds
        )
        return self._gate.permit(
            record.tenant_id,
            connection_id,
            limits,
            holder=holder_of(record.message_id, owner),
            attempt_ms=int(attempt_seconds * 1000),
            released=released(step),
        )

    def _hold(
        self,
        step: StepMessage,
        taken: Taken,
        connection_id: str,
        reason: HeldReason,
        *,
        started: datetime,
        log: list[dict[str, Any]],
    ) -> StepReport:
        """The connection is paused or its breaker open: the message waits on it in
        `retry_pending` / `held_reason` - no attempt made, `retry_count` unchanged, no schedule
        (hub.delivery.gate); its pointer joins the held set after this update."""
        assert self._gate is not None
        now = self._clock()
        entry = log_entry(
            step, "deliver", "held", started, now, held_reason=reason.value, detail=connection_id
        )
        held = self.finish(
            step,
            taken,
            Outcome(
                PipelineStatus.RETRY_PENDING,
                {"held_reason": reason.value, "held_on": connection_id, "next_retry_at": None},
                [entry],
                closes=False,
            ),
            prefix=log,
            at=now,
        )
        if held is None:
            return StepReport(StepOutcome.DROPPED, "lease_lost")
        # After the update: if this raises, SQS redelivers the step, which finds the message held
        # and only writes the pointer again (hub.pipeline.worker).
        self._gate.held(connection_id, held, reason.value, now)
        self._metrics.count("DeliveriesHeld", held_reason=reason.value)
        logger.info(
            "delivery held",
            extra={**log_ids(step), "held_reason": reason.value, "connection_id": connection_id},
        )
        return StepReport(StepOutcome.DONE, "held")

    def _deliveryfailed_outcome(
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
            self._config.flag_connection_gone(integration, now, failure.dest_status)
        plan = self._retries.plan(FailedDelivery(record, step, failure, integration, now))
        entry = log_entry(
            step,
            "deliver",
            "failure",
            started,
            now,
            error_class=failure.error_class.value,
            # Why, beside the class (dns, refused, timeout, tls, http_status...), and where.
            cause=failure.cause.value if failure.cause else None,
            host=failure.host,
            dest_status=failure.dest_status,
            detail=failure.dest_status_text,
            uncertain=failure.uncertain,
        )
        failed = self.finish(
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
                **log_ids(step),
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

    def finish(
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
        if taken.record.held_reason and outcome.target is not None and "held_reason" not in outcome.changes:
            # Released: whatever the step reached, the message no longer waits on its connection.
            outcome = Outcome(
                outcome.target,
                {**outcome.changes, "held_reason": None, "held_on": None},
                outcome.log,
                outcome.closes,
            )
        try:
            return self._executions.finish(taken, outcome, at or self._clock())
        except LeaseLost as lost:
            current = lost.current
            logger.warning(
                "finishing update refused: the lease or status moved on",
                extra={
                    **log_ids(step),
                    "pipeline_status": current.pipeline_status.value if current else None,
                },
            )
            return None


def log_entry(
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


def failed_outcome(
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


def _no_destination(integration: Integration, step: StepMessage, now: datetime) -> Outcome:
    """`error` / `syntax` (a configuration problem, never retried) for an integration with nowhere
    to deliver: its connection (`connection_id`) is missing or another tenant's, or it names no
    connection at all. Reprocess once an operator has fixed it."""
    if integration.connection_id:
        text = (
            f"connection {integration.connection_id} not found for this tenant: "
            "create it or point the integration at another connection, then reprocess"
        )
        return failed_outcome(ErrorClass.SYNTAX, text, step, now, field="connection_id", name="deliver")
    return failed_outcome(ErrorClass.SYNTAX, "no destination configured", step, now, name="deliver")


def internal_outcome(
    step: StepMessage, crash: BaseException, now: datetime, *, destination_called: bool
) -> Outcome:
    """What a step that raised something unclassified on its last receive leaves: `error` /
    `internal`, never retried by the policy. The reason is the exception's type alone (its text
    may quote payload data); no destination answer stands beside it. Once the connector was
    called the destination may have the message: `uncertain`, for an operator to reconcile."""
    failed = failed_outcome(ErrorClass.INTERNAL, f"internal error ({type(crash).__name__})", step, now)
    entry = {**failed.log[0], **({"uncertain": True} if destination_called else {})}
    changes = {
        **failed.changes,
        "dest_status": None,
        "next_retry_at": None,
        **({"uncertain": True} if destination_called else {}),
    }
    return Outcome(failed.target, changes, [entry])


def log_ids(step: StepMessage) -> dict[str, Any]:
    return {
        "message_id": step.message_id,
        "tenant_id": step.tenant_id,
        "integration_id": step.integration_id,
        "step": step.step.value,
        "attempt": step.attempt,
        "lock_wait": step.lock_wait,
        "correlation_id": step.correlation_id,
    }


def _read_timeout(step: StepMessage, destination: Destination, time_left: TimeLeft | None) -> float | None:
    """The attempt's read timeout when the invocation's time left caps it (issue 30), else None.
    Checked as the attempt starts, after our writes before it: what is left is what it has."""
    read_timeout = capped_read_timeout(destination, time_left()) if time_left is not None else None
    if read_timeout is not None:
        logger.debug(
            "read timeout capped to end before the invocation",
            extra={**log_ids(step), "read_timeout_seconds": round(read_timeout, 1)},
        )
    return read_timeout
