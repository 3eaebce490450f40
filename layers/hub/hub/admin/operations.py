"""What an operator can do from the admin queue: reprocess a message, cancel its retries, list
the waiting / dead-letter / error tabs, and redrive a lane's DLQ once the cause is fixed.

Each action is safe to repeat: a reprocess while an execution of the message is alive is
refused (admission control), a cancel of a message no longer waiting is refused, and a redrive
of an empty DLQ moves nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from hub.admin.access import Role
from hub.admin.audit import PLATFORM_SCOPE, Audit
from hub.admin.integrations import preview_message
from hub.admin.timeline import UNCERTAIN_MEANING, request_summary, timeline
from hub.admin.timeline import complete as timeline_complete
from hub.domain.clock import utcnow
from hub.domain.ids import new_id
from hub.domain.message import MAX_LOG_ENTRIES, MessageRecord, PayloadFormat
from hub.domain.redaction import redact, redact_credentials, redact_payload, redact_text
from hub.domain.retention import expired
from hub.domain.status import PipelineStatus, current_error_class
from hub.domain.tenancy import MessageTypeConfig
from hub.errors import AlreadyActed, Conflict, InvalidTransition, LeaseHeld, NotFound, ServiceUnavailable
from hub.ingest.receive import first_step
from hub.pipeline import rules
from hub.pipeline.retries import RetryScheduler, retry_schedule_name
from hub.ports import CallbackPage, ConfigRepository, QueueFilter, QueuePage, StatusCount, StepQueue

if TYPE_CHECKING:
    from hub.admin.access import Principal

logger = logging.getLogger(__name__)


class ExecutionInFlight(Conflict):
    code = "execution_in_flight"


class NotCancellable(Conflict):
    code = "not_cancellable"


class AlreadyDelivered(Conflict):
    """A reprocess of a message its destination already accepted, without `force`."""

    code = "already_delivered"


#: The statuses whose message reached its end with the destination's acceptance (or, observed,
#: was recorded as received): sending it again needs the operator's explicit `force`.
DELIVERED = frozenset({PipelineStatus.SENT, PipelineStatus.RECEIVED_OBSERVED})


def refuse_redelivery(message_id: str, status: PipelineStatus | str | None, force: bool) -> None:
    """AlreadyDelivered when `status` is a delivered one and the operator did not force."""
    if force or status is None or PipelineStatus(status) not in DELIVERED:
        return
    raise AlreadyDelivered(
        "the destination already accepted this message; reprocess it again only with force",
        details={"message_id": message_id, "pipeline_status": str(PipelineStatus(status).value)},
    )


class DeliveryInProgress(Conflict):
    code = "delivery_in_progress"


class QueueTab(StrEnum):
    """The admin queue's tabs and the status each lists (`all`: every message, by receipt)."""

    WAITING = "waiting"
    DEAD_LETTER = "dead_letter"
    ERROR = "error"
    ALL = "all"

    @property
    def status(self) -> PipelineStatus | None:
        return {
            QueueTab.WAITING: PipelineStatus.RETRY_PENDING,
            QueueTab.DEAD_LETTER: PipelineStatus.DEAD_LETTER,
            QueueTab.ERROR: PipelineStatus.ERROR,
        }.get(self)


class OperatorMoves(Protocol):
    """The message moves an operator makes, each one conditional update of the message item."""

    def get(self, message_id: str) -> MessageRecord | None: ...
    def get_payload(self, message_id: str, now: datetime | None = None) -> str | None: ...
    def message_log(self, message_id: str) -> list[dict[str, Any]]: ...
    def restart(
        self,
        record: MessageRecord,
        execution_id: str,
        now: datetime,
        abandoned_after: timedelta,
        log: Sequence[Mapping[str, Any]] = (),
        *,
        bulk_job: str | None = None,
    ) -> MessageRecord | None: ...
    def cancel(
        self,
        record: MessageRecord,
        now: datetime,
        log: Sequence[Mapping[str, Any]] = (),
        *,
        bulk_job: str | None = None,
    ) -> MessageRecord: ...


class CallbackLog(Protocol):
    def callbacks(self, message_id: str, limit: int, cursor: str | None) -> CallbackPage:
        """A message's status callbacks as received, newest first (issue 12)."""
        ...


#: The newest status callbacks the message view shows (the rest: its callbacks listing).
CALLBACKS_IN_VIEW = 20


class HeldMessages(Protocol):
    """A connection's held set (issue 12): a cancelled message stops waiting on it."""

    def unhold(self, tenant_id: str, connection_id: str, message_id: str, seq: int | None = None) -> None: ...


class Admissions(Protocol):
    def release_admission(self, message_id: str, execution_id: str, now: datetime) -> None: ...


class StatusIndex(Protocol):
    def row(self, record: MessageRecord) -> dict[str, Any]:
        """`record` as a queue row, exactly as the listing shows it (no I/O)."""
        ...

    def list_by_status(
        self,
        tenant_id: str,
        status: PipelineStatus,
        limit: int,
        cursor: str | None,
        filters: QueueFilter | None = None,
    ) -> QueuePage:
        """Messages of `tenant_id` in `status`, most recently changed first (`filters`: the
        last change's time, the integration). Raises ValidationFailed for a cursor that is not
        one this listing gave out, CursorMismatch for one given out under other filters."""
        ...

    def list_received(
        self, tenant_id: str, limit: int, cursor: str | None, filters: QueueFilter | None = None
    ) -> QueuePage:
        """Every message of `tenant_id`, newest received first (`filters`: the receipt's
        time, the integration); the same cursor rules."""
        ...

    def count_by_status(
        self, tenant_id: str, status: PipelineStatus, cap: int, integration_id: str | None = None
    ) -> StatusCount:
        """How many of `tenant_id`'s messages are in `status` now (of `integration_id` only,
        when given), counted up to `cap` with a bounded read (`at_least` when it stopped
        early); never a scan."""
        ...


#: The queue tabs' counts stop here: "1000 or more" tells an operator as much as the exact
#: figure, and bounds what a count reads (GET /api/admin/queue/counts).
COUNT_CAP = 1000


@dataclass(frozen=True)
class QueueCounts:
    """How many messages each status tab holds now, each counted up to `capped_at`."""

    tenant_id: str
    #: Tab -> count (`waiting`, `dead_letter`, `error`; `all` has none).
    counts: dict[str, int]
    #: Tabs whose count is a lower bound ("n or more"): the cap was reached, or the read bound
    #: of a filtered count was.
    at_least: list[str]
    capped_at: int = COUNT_CAP

    def view(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id,
            "counts": dict(self.counts),
            "capped_at": self.capped_at,
            "at_least": list(self.at_least),
        }


class DeadLetterMover(Protocol):
    def move(self, dead_letter_queue: str, work_queue: str, limit: int) -> int:
        """Moves up to `limit` messages back, each sent before it is deleted; how many."""
        ...


@dataclass(frozen=True)
class Lane:
    """A pipeline lane: its work queue and the DLQ that work queue redrives to."""

    work_queue_url: str
    dead_letter_queue_url: str


class Operations:
    def __init__(
        self,
        messages: OperatorMoves,
        index: StatusIndex,
        executions: Admissions,
        queue: StepQueue,
        *,
        config: ConfigRepository,
        scheduler: RetryScheduler,
        mover: DeadLetterMover,
        lanes: Mapping[str, Lane],
        clock: Callable[[], datetime] = utcnow,
        audit: Audit | None = None,
        callbacks: CallbackLog | None = None,
        held: HeldMessages | None = None,
    ) -> None:
        self._audit = audit or Audit(None)
        self._callbacks = callbacks
        self._held = held
        self._messages = messages
        self._index = index
        self._executions = executions
        self._queue = queue
        self._scheduler = scheduler
        self._config = config
        self._mover = mover
        self._lanes = lanes
        self._clock = clock

    def _record(self, message_id: str, principal: Principal, role: Role) -> MessageRecord:
        """The message, when `principal` may act on it with `role`: another tenant's message is
        the same NotFound as a missing one; Forbidden when the role is too low."""
        record = self._messages.get(message_id)
        gone = record is None or expired(record.expires_at, self._clock())
        if gone or record is None or not principal.sees(record.tenant_id):
            # Past its retention it is gone, whether or not DynamoDB's TTL has deleted it yet.
            raise NotFound("message not found", details={"message_id": message_id})
        principal.require(role, record.tenant_id, what="message")
        return record

    def reprocess(
        self,
        message_id: str,
        actor: Principal,
        *,
        force: bool = False,
        bulk_job: str | None = None,
        delay_seconds: int = 0,
    ) -> MessageRecord:
        """Re-runs the message's pipeline from the start as a new execution (seed 000, D). One
        conditional update admits the execution and moves the message to `received`: while
        another execution is alive - a click a moment ago, a pending retry - this raises
        ExecutionInFlight and nothing is published. A message its destination already accepted
        (`sent`, `received_observed`) is sent again only with `force` (else AlreadyDelivered):
        the update is conditioned on the status read, so one delivered in between is refused
        the same way.

        A `bulk_job` (hub.admin.bulk) marks the message in the same update and its timeline
        entry names the job; the job's own audit entry stands for the per-message ones. A
        message the job already marked raises AlreadyActed (and an admitted execution whose step
        was lost gets it again: a second copy of a step is dropped by its sequence)."""
        record = self._record(message_id, actor, Role.OPERATOR)
        if bulk_job is not None and bulk_job in record.bulk_jobs:
            self._step_again(record)
            raise AlreadyActed("this bulk job already acted on the message", details={"bulk_job": bulk_job})
        refuse_redelivery(message_id, record.pipeline_status, force)
        now = self._clock()
        execution_id = new_id("exe")
        # The message's own timeline keeps a short event; the audit log has the full entry.
        audit: dict[str, Any] = {
            "event": "message.reprocessed",
            "actor": actor.token_id,
            "execution_id": execution_id,
        }
        if force and record.pipeline_status in DELIVERED:
            audit["forced"] = True
        if bulk_job is not None:
            audit["bulk_job"] = bulk_job
        try:
            rerun = self._messages.restart(
                record, execution_id, now, rules.ADMISSION_ABANDONED_AFTER, [audit], bulk_job=bulk_job
            )
        except InvalidTransition as moved:
            refuse_redelivery(message_id, (moved.details or {}).get("from"), force)
            raise ExecutionInFlight(
                "the message changed while reprocessing was requested; try again", details=moved.details
            ) from moved
        if rerun is None:
            raise ExecutionInFlight(
                "an execution of this message is in flight; wait for it to finish",
                details={"message_id": message_id, "pipeline_status": record.pipeline_status.value},
            )
        try:
            self._queue.publish(first_step(rerun), delay_seconds=delay_seconds)
        except Exception:
            # Not published: free the message so the operator's next click can run it.
            self._executions.release_admission(message_id, execution_id, now)
            raise
        if bulk_job is not None:
            return rerun
        self._audit.record(
            actor,
            record.tenant_id,
            "message.reprocessed",
            {"message_id": message_id, "execution_id": execution_id},
            now,
            before=_status_view(record),
            after={**_status_view(rerun), **({"forced": True} if "forced" in audit else {})},
        )
        logger.info("message reprocessed", extra={"message_id": message_id, "execution_id": execution_id})
        return rerun

    def _step_again(self, record: MessageRecord) -> None:
        """A bulk job's reprocess admitted `record` but may have died before its first step was
        out: publishes it again while that execution has not started (still `received`, alive,
        unleased). A copy already out and this one carry the same sequence: one runs."""
        if (
            record.pipeline_status is PipelineStatus.RECEIVED
            and record.completed_at is None
            and record.lease_owner is None
        ):
            self._queue.publish(first_step(record))

    def cancel_retry(
        self, message_id: str, actor: Principal, *, bulk_job: str | None = None
    ) -> MessageRecord:
        """Stops a waiting or dead-lettered message for good (seed 000, G): `cancelled`, no next
        retry, its pending schedule deleted (or its place in a connection's held set), and its
        execution closed - in one update that
        requires no step to hold the message: during a delivery attempt this raises
        DeliveryInProgress (try again in a moment); after it, every step finds the message
        cancelled and sends nothing. Idempotent: cancelling a cancelled message again finishes
        any cleanup a failure left undone."""
        record = self._record(message_id, actor, Role.OPERATOR)
        if bulk_job is not None and bulk_job in record.bulk_jobs:
            self._close(record)
            raise AlreadyActed("this bulk job already acted on the message", details={"bulk_job": bulk_job})
        if record.pipeline_status is PipelineStatus.CANCELLED:
            self._close(record)
            if bulk_job is not None:
                raise NotCancellable("already cancelled", details={"message_id": message_id})
            return record
        if record.pipeline_status not in (PipelineStatus.RETRY_PENDING, PipelineStatus.DEAD_LETTER):
            raise NotCancellable(
                "only waiting or dead-lettered messages can be cancelled",
                details={"message_id": message_id, "pipeline_status": record.pipeline_status.value},
            )
        now = self._clock()
        audit = {
            "event": "message.retry_cancelled",
            "actor": actor.token_id,
            "previous": record.pipeline_status.value,
        }
        if bulk_job is not None:
            audit["bulk_job"] = bulk_job
        try:
            cancelled = self._messages.cancel(record, now, [audit], bulk_job=bulk_job)
        except LeaseHeld as running:
            raise DeliveryInProgress(
                "a delivery attempt of this message is in progress; try again in a moment",
                details={"message_id": message_id},
            ) from running
        except InvalidTransition as moved:
            raise NotCancellable("the message moved on; reload it", details=moved.details) from moved
        self._close(cancelled)
        if record.held_on and self._held is not None:
            # Held on a paused connection or an open breaker: it leaves the held set (a release
            # that read it already finds the message cancelled and sends nothing).
            try:
                self._held.unhold(record.tenant_id, record.held_on, message_id)
            except ServiceUnavailable:
                logger.warning("held pointer not deleted", extra={"message_id": message_id})
        if bulk_job is not None:
            return cancelled
        self._audit.record(
            actor,
            record.tenant_id,
            "message.retry_cancelled",
            {"message_id": message_id},
            now,
            before=_status_view(record),
            after=_status_view(cancelled),
        )
        logger.info("retry cancelled", extra={"message_id": message_id})
        return cancelled

    def _close(self, cancelled: MessageRecord) -> None:
        """Deletes the execution's pending schedule (if any)."""
        if cancelled.retry_count:
            name = retry_schedule_name(cancelled.execution_id, cancelled.retry_count)
            try:
                self._scheduler.cancel(name)
            except ServiceUnavailable:
                # Harmless if it stays: its step finds the message cancelled.
                logger.warning("retry schedule not deleted", extra={"message_id": cancelled.message_id})

    def message_view(self, message_id: str, principal: Principal) -> dict[str, Any]:
        """A message for the admin page: status, payload and log, every part through the
        redaction helper (the message type's sensitive fields; personal data in free text)."""
        record = self._record(message_id, principal, Role.VIEWER)
        integration = self._config.get_integration(record.tenant_id, record.integration_id)
        config = integration.message_type_config(record.message_type) if integration else None
        fields = config.sensitive_fields if config else ()
        text = self._messages.get_payload(message_id, self._clock())
        payload: Any = text
        if text is not None and record.payload_format is PayloadFormat.JSON:
            payload = json.loads(text)
        log = [_shown(entry) for entry in self._messages.message_log(message_id)]
        view = {
            **record.public_view(),
            # Only while the message still fails with it: a sent message's last failure is its
            # attempt's, in the timeline (issue 28).
            "last_retry_error_class": current_error_class(
                record.pipeline_status, record.last_retry_error_class
            ),
            "dest_status_text": record.shown_status_text(),
            "tenant_id": record.tenant_id,
            "execution_id": record.execution_id,
            # Waiting on its connection (issue 12): paused / circuit_open, and which connection.
            "held_reason": record.held_reason,
            "held_on": record.held_on,
            "payload": redact_payload(payload, fields) if payload is not None else None,
            # Deleted by its retention (payload_retention_days): the metadata and timeline stay.
            "payload_purged": text is None,
            # When the message itself is deleted (message_retention_days); null: kept for good.
            "kept_until": _iso_epoch(record.expires_at),
            # What the message type's current mapping makes of the payload (computed as the
            # worker does, no side effect), masked like the payload.
            "mapped": _mapped_view(config, payload, fields) if config and payload is not None else None,
            "log": log,
        }
        callbacks: list[dict[str, Any]] = []
        if self._callbacks is not None:
            page = self._callbacks.callbacks(message_id, CALLBACKS_IN_VIEW, None)
            callbacks = _callback_rows(page)
            view["callbacks"] = callbacks
            view["callbacks_next_cursor"] = page.next_cursor
        # Issue 13: one list, oldest first, of steps, attempts, status events, operators' moves
        # and callbacks (hub.admin.timeline), from what was read above: no extra request.
        request = request_summary(record, integration.destination if integration else None)
        view["timeline"] = timeline(record, log, callbacks, request)
        view["timeline_complete"] = timeline_complete(log, MAX_LOG_ENTRIES, trimmed=record.log_trimmed)
        view["uncertain_meaning"] = UNCERTAIN_MEANING if record.uncertain else None
        return view

    def message_callbacks(
        self, message_id: str, principal: Principal, limit: int, cursor: str | None
    ) -> dict[str, Any]:
        """Every status callback of the message as received, newest first (a page)."""
        self._record(message_id, principal, Role.VIEWER)
        if self._callbacks is None:
            return {"message_id": message_id, "items": [], "next_cursor": None}
        page = self._callbacks.callbacks(message_id, limit, cursor)
        return {"message_id": message_id, "items": _callback_rows(page), "next_cursor": page.next_cursor}

    def integration_view(self, tenant_id: str, integration_id: str, principal: Principal) -> dict[str, Any]:
        """The tenant's integration for the admin page: its configuration with every credential
        masked, and whether its connection was found gone (410). Another tenant's is not found
        (and ids are the tenant's own: another tenant's of the same id is another integration)."""
        principal.require(Role.VIEWER, tenant_id, what="integration")
        integration = self._config.get_integration(tenant_id, integration_id)
        if integration is None:
            raise NotFound("integration not found", details={"integration_id": integration_id})
        return redact_credentials(integration.model_dump(mode="json"))

    def queue_row(self, record: MessageRecord) -> dict[str, Any]:
        """The message's row as the queue tabs show it: what an action answers with, so a page
        updates the row without reloading the tab."""
        return self._index.row(record)

    def queue(
        self,
        tenant_id: str,
        tab: QueueTab,
        limit: int,
        cursor: str | None,
        filters: QueueFilter | None = None,
    ) -> QueuePage:
        """A page of a queue tab, newest first; never a scan (one Query, plus one BatchGetItem
        for `all`), so a tenant with many messages lists as fast as one with few."""
        status = tab.status
        if status is None:
            return self._index.list_received(tenant_id, limit, cursor, filters)
        return self._index.list_by_status(tenant_id, status, limit, cursor, filters)

    def queue_counts(self, tenant_id: str, integration_id: str | None = None) -> QueueCounts:
        """How many messages each status tab (waiting, dead_letter, error) of `tenant_id` holds
        now, of `integration_id` only when given: one counting read of each tab's index
        partition, up to COUNT_CAP each; no row is returned and nothing is scanned."""
        counts: dict[str, int] = {}
        at_least: list[str] = []
        for tab in QueueTab:
            if tab.status is None:
                continue
            counted = self._index.count_by_status(tenant_id, tab.status, COUNT_CAP, integration_id)
            counts[tab.value] = counted.count
            if counted.at_least:
                at_least.append(tab.value)
        return QueueCounts(tenant_id=tenant_id, counts=counts, at_least=at_least)

    def redrive(self, lane: str, actor: Principal, limit: int = 1000) -> int:
        """Moves the lane's dead-lettered step messages back to its work queue. Their messages'
        states are left as they are: each step re-reads its message and resumes or drops."""
        found = self._lanes.get(lane)
        if found is None:
            raise NotFound("no such lane", details={"lanes": sorted(self._lanes)})
        moved = self._mover.move(found.dead_letter_queue_url, found.work_queue_url, limit)
        self._audit.record(
            actor, PLATFORM_SCOPE, "dlq.redriven", {"lane": lane}, self._clock(), after={"moved": moved}
        )
        logger.info(
            "dead-letter queue redriven", extra={"lane": lane, "moved": moved, "actor": actor.token_id}
        )
        return moved


def _mapped_view(config: MessageTypeConfig, payload: Any, fields: Sequence[str]) -> dict[str, Any]:
    """The mapped body for the admin page: the preview of the current mapping, its body masked by
    the sensitive field names (JSON by key, XML by element) and by the personal-data patterns, so
    a field the mapping renamed is still caught when it looks like a CPF, an e-mail or a phone."""
    preview = preview_message(config, payload)
    shown = {key: preview.get(key) for key in ("ok", "mapped", "content_type", "error")}
    body = preview.get("body")
    if isinstance(body, str) and "json" in str(preview.get("content_type")):
        with contextlib.suppress(ValueError):
            body = json.dumps(redact(json.loads(body), fields), ensure_ascii=False)
    shown["body"] = redact_payload(body, fields) if isinstance(body, str) else None
    return shown


def _iso_epoch(seconds: int | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _status_view(record: MessageRecord) -> dict[str, Any]:
    return {"pipeline_status": record.pipeline_status.value, "execution_id": record.execution_id}


_LOG_KEYS = frozenset({"PK", "SK", "item_type"})


def _shown(entry: dict[str, Any]) -> dict[str, Any]:
    """A log entry as JSON: DynamoDB numbers as int/float, text through the redaction helper."""
    return {key: _json_value(value) for key, value in entry.items() if key not in _LOG_KEYS}


def _json_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _callback_rows(page: CallbackPage) -> list[dict[str, Any]]:
    """A destination's free text may name people: redacted like `dest_status_text`."""
    return [
        {**row, "detail": redact_text(row["detail"]) if isinstance(row.get("detail"), str) else None}
        for row in page.rows
    ]
