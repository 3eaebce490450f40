"""A message's timeline for the admin page (issue 13): one list, oldest first, of what happened
to it - its steps and delivery attempts (the item's bounded log), its status changes as the
outbox events they are, operators' moves, and the destination's status callbacks.

Nothing here reads storage: the outbox events are derived from what the message item keeps.
The item is created in `received` at version 1 (event ``<message_id>:1``), and every status move
stamps the log entry written with it with the new status (`to`) and the version it writes (`v`,
hub.adapters.dynamo.messages.status_stamp), so each event is ``<message_id>:<v>`` of type
STATUS_EVENTS[to], as the outbox publisher derives it from the item's stream record. Callbacks
that advanced `delivery_status` also leave as `message.delivery_status_changed` events; their
version is not stored, so they show as the callbacks they are.

The log keeps the last entries only (hub.adapters.dynamo.messages.MAX_LOG_ENTRIES), and fewer
when the item would otherwise pass its write unit (hub.adapters.dynamo.messages.fitted_log): an
older message's first steps may have dropped off, and the view says so (`timeline_complete`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from hub.domain.message import MessageRecord
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import Destination, DestinationProtocol
from hub.outbox.events import STATUS_EVENTS, message_event_id

#: Shown with a message whose `uncertain` is true.
UNCERTAIN_MEANING = (
    "The destination may or may not have applied this message: an attempt's outcome is unknown "
    "(it failed after the request was sent, e.g. a timeout). Every retry and reprocess sends the "
    "same Idempotency-Key (the message id), so a destination that honours it applies the "
    "message at most once; one that does not may apply it twice - check with it before "
    "reprocessing."
)

#: Entry fields that place the entry; the rest is shown as the entry's fields.
_PLACING = frozenset({"at", "to", "v"})

_OPERATOR_MOVES = {
    "message.reprocessed": "Reprocessed by an operator",
    "message.retry_cancelled": "Retry cancelled by an operator",
}


def timeline(
    record: MessageRecord,
    log: Sequence[Mapping[str, Any]],
    callbacks: Iterable[Mapping[str, Any]],
    request: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The merged timeline, oldest first (ties keep this order: creation, log, callbacks).
    `log` and `callbacks` are shown already redacted; `callbacks` come newest first, as stored
    pages list them. Each delivery attempt (issue 28) carries its `number`, its `answer_class`
    (`accepted`, or the failure's error class) and `request`: what every attempt sends that
    identifies it, beside the destination as configured now (the attempt itself stores none)."""
    entries: list[dict[str, Any]] = [
        _event(record.message_id, PipelineStatus.RECEIVED.value, 1, record.received_at)
    ]
    for entry in log:
        at = _time(entry.get("at"))
        if at is None:
            continue
        fields = {key: value for key, value in entry.items() if key not in _PLACING}
        if "event" in fields:
            move = str(fields["event"])
            entries.append(_entry(at, "audit", _OPERATOR_MOVES.get(move, move), fields))
        elif "step" in fields:
            entries.append(_step(at, fields, request))
        to, version = entry.get("to"), entry.get("v")
        if isinstance(to, str) and isinstance(version, int) and to in _STATUSES:
            entries.append(_event(record.message_id, to, version, at))
    for callback in sorted(callbacks, key=lambda row: _time(row.get("received_at")) or _EPOCH):
        at = _time(callback.get("received_at"))
        if at is not None:
            fields = {key: value for key, value in callback.items() if key != "received_at"}
            entries.append(_entry(at, "callback", f"Status callback: {callback.get('status')}", fields))
    entries.sort(key=lambda entry: entry["at"])
    # One text form for every time (the log's, the callbacks' and the record's differ).
    return [
        {**entry, "at": entry["at"].astimezone(UTC).isoformat().replace("+00:00", "Z")} for entry in entries
    ]


def complete(log: Sequence[Mapping[str, Any]], kept: int, *, trimmed: bool = False) -> bool:
    """Whether the log can still hold the message's first entries (fewer than `kept`, and none
    shed to keep the item within its write unit: `trimmed`, MessageRecord.log_trimmed)."""
    return not trimmed and len(log) < kept


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_STATUSES = frozenset(status.value for status in PipelineStatus)


def _step(at: datetime, fields: dict[str, Any], request: Mapping[str, Any] | None) -> dict[str, Any]:
    """A delivery attempt (the destination was called: `sent`, or `deliver` failed), or another
    step (process, a delivery held or skipped, observability)."""
    step, outcome = fields.get("step"), fields.get("status")
    reason = ", ".join(
        str(fields[key]) for key in ("error_class", "held_reason", "dest_status") if fields.get(key)
    )
    suffix = f" ({reason})" if reason else ""
    if step == "sent" or (step == "deliver" and outcome == "failure"):
        attempt = int(fields.get("attempt") or 0) + 1
        answer = "accepted" if step == "sent" else str(fields.get("error_class") or "failed")
        shown = {**fields, "number": attempt, "answer_class": answer}
        if request is not None:
            shown["request"] = dict(request)
        return _entry(at, "attempt", f"Delivery attempt {attempt}: {outcome}{suffix}", shown)
    return _entry(at, "step", f"{step}: {outcome}{suffix}", fields)


def request_summary(record: MessageRecord, destination: Destination | None) -> dict[str, Any] | None:
    """What an attempt of `record` sends that identifies it, and where (the destination as
    configured now: its protocol, method and host; never its path, query, headers or
    credentials, which may hold secrets). None without a destination."""
    if destination is None:
        return None
    where = urlsplit(destination.url)
    host = where.hostname or ""
    with suppress(ValueError):  # a port that is not a number: the host alone
        if where.port is not None:
            host = f"{host}:{where.port}"
    if destination.protocol is DestinationProtocol.SOAP:
        operation = destination.soap.operation if destination.soap else None
        return {
            "protocol": "soap",
            "host": host,
            "operation": operation,
            "connection_id": destination.connection_id,
        }
    return {
        "protocol": "http",
        "method": destination.method,
        "host": host,
        "connection_id": destination.connection_id,
        # hub.delivery.http sends both on every attempt: the key is the message id, always.
        "idempotency_key": record.message_id,
        "correlation_id": record.correlation_id,
    }


def _event(message_id: str, status: str, version: int, at: datetime) -> dict[str, Any]:
    kind = STATUS_EVENTS[PipelineStatus(status)].value
    return _entry(
        at,
        "event",
        f"{kind} (status {status})",
        {
            "event_id": message_event_id(message_id, version),
            "type": kind,
            "status": status,
            "version": version,
        },
    )


def _entry(at: datetime, kind: str, title: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    shown = {key: value for key, value in fields.items() if key not in ("at", "kind", "title")}
    return {"at": at, "kind": kind, "title": title, **shown}


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
