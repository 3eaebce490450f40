"""The message item and the claims ingest writes before it, what the partner API and the admin
views read, and the status moves operators make (reprocess, cancel).

The item is `MSG#<id>` / `STATUS` (hub.adapters.dynamo.keys): the status record, the execution
state the worker keeps on it (hub.adapters.dynamo.executions) and a bounded log of the last
steps. The payload is not on it (every update of the item would pay for it again): it rides,
compressed, on the message's fingerprint claim (claim_item). Messages stored before issue 29
may still carry it inline or name a `PAYLOAD` item of their own (read_payload reads all three).
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.table import (
    WRITE_UNIT_BYTES,
    ConditionFailed,
    Table,
    Update,
    epoch,
    format_ts,
    item_size,
)
from hub.adapters.dynamo.tenancy import api_key_from
from hub.domain.clock import utcnow
from hub.domain.idempotency import DedupKind, claim_order
from hub.domain.message import MAX_LOG_ENTRIES, MessageRecord
from hub.domain.retention import expired
from hub.domain.status import PipelineStatus, can_transition
from hub.domain.tenancy import ApiKey
from hub.errors import (
    AlreadyActed,
    ClaimTaken,
    InvalidTransition,
    LeaseHeld,
    NotFound,
    StorageUnavailable,
    TransitionNotAllowed,
)
from hub.ports import Claim, MessageRepository, NewMessage

logger = logging.getLogger(__name__)

#: Set on a message item whose log lost entries to its write-unit budget (fitted_log), not only
#: to the MAX_LOG_ENTRIES bound: its timeline is incomplete whatever the log's length.
LOG_TRIMMED = "log_trimmed"
#: What a transition may change besides the status; identity and keys never change.
CHANGEABLE_FIELDS = frozenset(
    {
        "dest_status",
        "dest_status_text",
        "retry_count",
        "next_retry_at",
        "last_retry_error_class",
        "uncertain",
        "execution_id",
        "execution_started_at",
        "superseded_by",
        # Set once, by the first step of a message whose business key only the parsed payload
        # (XML) shows: its later steps then take the same entity lease.
        "entity_key",
        # A reprocess starts the destination's confirmations afresh (hub.domain.delivery_status).
        "delivery_status",
        "delivery_status_at",
        # Held on a paused connection or an open breaker (issue 12).
        "held_reason",
        "held_on",
    }
)


def record_item(record: MessageRecord) -> dict[str, Any]:
    # Ingest-only values (on the claims) and defaults are not stored: every byte of the item
    # is paid again by each update of it. The fingerprint is kept: it names the claim that
    # carries the payload (payload_location) and lets a fingerprint match be checked.
    data = record.model_dump(
        mode="python",
        exclude={"lease_owner", "lease_until", "completed_at", "payload_sha256"},
    )
    for name in ("uncertain", "retry_count", "entity_key", "bulk_jobs", LOG_TRIMMED):
        if not data.get(name):
            data.pop(name, None)
    for name, value in data.items():
        if isinstance(value, datetime):
            data[name] = format_ts(value)
    data["pipeline_status"] = record.pipeline_status.value
    data["payload_format"] = record.payload_format.value
    item = {
        **keys.message_key(record.message_id),
        "item_type": "message",
        **data,
        # GSI2 (the queue's `all` tab, sorted by `received_at`): set here once, never changed.
        **keys.received_index_keys(record.tenant_id),
        # GSI3 (search by external id, else correlation id): likewise.
        **keys.lookup_index_keys(record.tenant_id, record.external_id or record.correlation_id),
    }
    if record.pipeline_status in keys.LISTED_STATUSES:
        item.update(
            keys.status_index_keys(
                record.tenant_id, record.pipeline_status.value, item["updated_at"], record.message_id
            )
        )
    return item


def _correlation_pointer(record: MessageRecord, correlation_id: str) -> dict[str, Any]:
    """The item that puts the message in GSI3 under its correlation id too (keys.lookup_values):
    nothing but keys, so the index row names the message by its `PK`."""
    pointer: dict[str, Any] = {
        **keys.correlation_pointer_key(record.message_id),
        "item_type": "correlation_pointer",
        **keys.lookup_index_keys(record.tenant_id, correlation_id),
        keys.LOOKUP_SORT_KEY: format_ts(record.received_at),
    }
    if record.expires_at is not None:  # deleted with its message (issue 29)
        pointer["expires_at"] = record.expires_at
    return pointer


def record_from(item: Mapping[str, Any]) -> MessageRecord:
    return MessageRecord.model_validate(item)


def status_stamp(record: MessageRecord, target: PipelineStatus) -> dict[str, Any]:
    """What the log entry written with a status move records of it (issue 13): the new status
    (`to`) and the item's version the move writes (`v`: the one read + 1, as every move adds 1;
    a writer slipping in between the read and the move - a supersede mark under a step's lease,
    a status callback before an operator's move - leaves it one short). The message's outbox
    event is ``<message_id>:<v>`` of type STATUS_EVENTS[to] (hub.outbox.events), so the admin
    timeline names each event without reading anything else. Short keys: the item carries
    its last MAX_LOG_ENTRIES entries and every update pays for its size."""
    return {"to": target.value, "v": record.version + 1}


def with_stamp(
    entries: Sequence[Mapping[str, Any]], stamp: Mapping[str, Any] | None
) -> list[Mapping[str, Any]]:
    """`entries` with a status move's stamp on the last one (the step that moved it), or as an
    entry of its own when the move logs nothing else."""
    if stamp is None:
        return list(entries)
    if not entries:
        return [dict(stamp)]
    return [*entries[:-1], {**entries[-1], **stamp}]


def status_update(
    update: Update, record: MessageRecord, target: PipelineStatus, now: datetime, changes: Mapping[str, Any]
) -> dict[str, Any]:
    """Adds a status move to `update`: the transition table checked here, the stored status
    (and tenant) checked by the condition, the index keys kept only for listed statuses. Returns
    its log stamp (status_stamp), for the entries the same update appends."""
    expected = record.pipeline_status
    if not can_transition(expected, target):
        raise TransitionNotAllowed(
            f"pipeline_status cannot move from {expected.value} to {target.value}",
            details={"message_id": record.message_id, "from": expected.value, "to": target.value},
        )
    unknown = set(changes) - CHANGEABLE_FIELDS
    if unknown:
        raise ValueError(f"not changeable through a transition: {sorted(unknown)}")
    updated_at = format_ts(now)
    update.set(pipeline_status=target.value, updated_at=updated_at)
    update.set(**{name: format_ts(v) if isinstance(v, datetime) else v for name, v in changes.items()})
    if target in keys.LISTED_STATUSES:
        update.set(**keys.status_index_keys(record.tenant_id, target.value, updated_at, record.message_id))
    elif expected in keys.LISTED_STATUSES:
        update.remove("GSI1PK", "GSI1SK")  # leaves the index (only a listed status is in it)
    update.add("version")
    update.where(f"{update.name('tenant_id')} = {update.value(record.tenant_id)}")
    update.where(f"{update.name('pipeline_status')} = {update.value(expected.value)}")
    return status_stamp(record, target)


def fitted_log(
    rest: Mapping[str, Any],
    kept: Sequence[Mapping[str, Any]],
    new: Sequence[Mapping[str, Any]],
    *,
    before: int = 0,
) -> tuple[list[Mapping[str, Any]], bool]:
    """The log an update writes on an item that is `rest` besides it (every other attribute as
    the update leaves it): the stored entries `kept` and the update's `new` ones, the last
    MAX_LOG_ENTRIES of them, then - only where that lowers the update's bill - shed oldest
    first: the stored entries, then the update's own but its last (which carries the status
    move's stamp and its outcome; an earlier one of the same update, a `process` success, says
    nothing a later attempt does not). An update is billed per started KB of the larger of the
    item `before` it (bytes) and after it, so entries go only while the item would pass the write
    units that neither the item before nor the item with its last entry alone exceeds: a history
    entry is the one thing on the item worth less than a write unit; the status, its failure
    text and the last entry never go. Returns the log and whether entries went for the budget
    (the item is then marked LOG_TRIMMED: its timeline is no longer complete)."""
    log = [*kept, *new][-MAX_LOG_ENTRIES:]
    if item_size({**rest, "log": log}) <= max(before, WRITE_UNIT_BYTES):
        return log, False
    marked = rest if LOG_TRIMMED in rest else {**rest, LOG_TRIMMED: True}
    floor = max(before, item_size({**marked, "log": log[-1:]}))
    budget = max(1, -(-floor // WRITE_UNIT_BYTES)) * WRITE_UNIT_BYTES
    cut = 0
    while len(log) - cut > 1 and item_size({**marked, "log": log[cut:]}) > budget:
        cut += 1
    return log[cut:], cut > 0


def append_log(
    update: Update,
    log: Sequence[Mapping[str, Any]],
    entries: Sequence[Mapping[str, Any]],
    now: datetime,
    stamp: Mapping[str, Any] | None = None,
    *,
    rest: Mapping[str, Any] | None = None,
    before: int = 0,
) -> None:
    """Adds `entries` (stamped `at`: their own, else `now`; the status move's `stamp` on the
    last) to the item's bounded log in `update`. `log` is the list as stored now: when it is
    full, the trimmed list is written whole. With `rest` (the item as `update` leaves it, its
    log aside) and `before` (the item's size now), the log is also fitted to the write units
    the update is billed (fitted_log); when that sheds entries, the fitted list is written whole
    and the item marked LOG_TRIMMED."""
    stamped = [
        {
            "at": format_ts(now),
            **{k: format_ts(v) if isinstance(v, datetime) else v for k, v in e.items() if v is not None},
        }
        for e in with_stamp(entries, stamp)
    ]
    if not stamped:
        return
    if rest is not None:
        fitted, cut = fitted_log(rest, log, stamped, before=before)
        if cut:
            update.set(log=fitted, **{LOG_TRIMMED: True})
            return
    if len(log) + len(stamped) > MAX_LOG_ENTRIES:
        update.set(log=[*log, *stamped][-MAX_LOG_ENTRIES:])
        return
    alias = update.name("log")
    update.set_expression(
        f"{alias} = list_append(if_not_exists({alias}, {update.value([])}), {update.value(stamped)})"
    )


def trimmed(table: Table, item: dict[str, Any]) -> dict[str, Any]:
    """`item` as an update that appended to its log without reading it (an operator's move, an
    unleased outcome) left it, with the log cut back to its last MAX_LOG_ENTRIES: when the append
    overflowed the bound, a second update writes the trimmed list, conditioned on the item still
    being the version just written (a change meanwhile trims its own log). Best effort, and not
    a change of the message: the version stays. Only an overflowing item pays the extra write."""
    log = item.get("log") or []
    if len(log) <= MAX_LOG_ENTRIES:
        return item
    update = Update().set(log=log[-MAX_LOG_ENTRIES:])
    update.where(f"{update.name('version')} = {update.value(item['version'])}")
    try:
        return table.update({"PK": item["PK"], "SK": item["SK"]}, update)
    except (ConditionFailed, StorageUnavailable):
        return item  # the next move or finish trims it


def moved(record: MessageRecord, target: PipelineStatus, old: Mapping[str, Any] | None) -> Exception:
    """What a failed status condition means: gone / another tenant's, or moved on."""
    if not old or old.get("tenant_id") != record.tenant_id:
        return NotFound("message not found")
    return InvalidTransition(
        f"pipeline_status is {old.get('pipeline_status')}, no longer {record.pipeline_status.value}",
        details={"message_id": record.message_id, "from": old.get("pipeline_status"), "to": target.value},
    )


def _unmoved(record: MessageRecord, old: Mapping[str, Any] | None) -> bool:
    """The stored item is still the caller's message, in the status the caller read."""
    return bool(
        old
        and old.get("tenant_id") == record.tenant_id
        and old.get("pipeline_status") == record.pipeline_status.value
    )


def _claim_from(item: Mapping[str, Any], kind: DedupKind, now: datetime) -> Claim | None:
    # TTL deletes lazily (up to days late): an expired claim no longer counts. A fingerprint
    # claim outlives its window (it carries the payload): its window is `dedup_until`.
    live_until = item.get("dedup_until", item["expires_at"])
    if int(live_until) <= epoch(now):
        return None
    return Claim(
        kind=kind,
        message_id=item["message_id"],
        fingerprint=item["fingerprint"],
        request_sha256=item["request_sha256"],
        claimed_at=datetime.fromisoformat(item["claimed_at"]) if item.get("claimed_at") else None,
    )


def claim_key(new: NewMessage, kind: DedupKind) -> dict[str, str]:
    record = new.record
    if kind is DedupKind.IDEMPOTENCY_KEY:
        assert new.idempotency_key_hash is not None, "an idempotency claim needs a key"
        return keys.idempotency_claim_key(record.tenant_id, record.integration_id, new.idempotency_key_hash)
    return keys.fingerprint_claim_key(record.tenant_id, record.integration_id, record.fingerprint)


def claim_item(new: NewMessage, kind: DedupKind, now: datetime) -> dict[str, Any]:
    """The claim `new` writes. The fingerprint claim carries the payload, compressed: it is
    content-addressed (the fingerprint covers the payload's hash), so a later message taking the
    claim over stores the same bytes, and every message it ever named still reads its payload
    there. It lives as long as the payload is kept; its deduplication window is `dedup_until`."""
    record = new.record
    item: dict[str, Any] = {
        **claim_key(new, kind),
        "item_type": "claim",
        "tenant_id": record.tenant_id,
        "message_id": record.message_id,
        "fingerprint": record.fingerprint,
        "request_sha256": new.request_sha256,
        "claimed_at": format_ts(now),
    }
    if kind is DedupKind.IDEMPOTENCY_KEY:
        item["expires_at"] = epoch(new.idempotency_expires_at)
        return item
    dedup_until = epoch(new.fingerprint_expires_at)
    kept_until = epoch(new.payload_expires_at) if new.payload_expires_at else dedup_until
    item["dedup_until"] = dedup_until
    item["expires_at"] = max(kept_until, dedup_until)
    item["payload_z"] = zlib.compress(new.payload_text.encode(), 6)
    return item


#: A claim may be written over only when none is stored or the stored one's window has passed
#: (fingerprint claims before issue 29 have no `dedup_until`: their `expires_at` is the window).
_CLAIM_FREE = (
    "attribute_not_exists(PK) OR dedup_until <= :now"
    " OR (attribute_not_exists(dedup_until) AND expires_at <= :now)"
)


def payload_from(claim: Mapping[str, Any] | None, now: datetime) -> str | None:
    """The payload a fingerprint claim (or a `PAYLOAD` item) carries, if any: none once its TTL
    has passed (its retention ran out; DynamoDB deletes it up to days later)."""
    if not claim or "payload_z" not in claim:
        return None
    if expired(int(claim["expires_at"]) if "expires_at" in claim else None, now):
        return None
    return zlib.decompress(claim["payload_z"]).decode()


def payload_location(item: Mapping[str, Any]) -> dict[str, str] | None:
    """Where a message item's payload is kept when it is not on the item: its fingerprint
    claim; a message stored before issue 29 may name a `PAYLOAD` item of its own instead."""
    if item.get("payload_apart"):
        return keys.payload_key(keys.message_id_of(item["PK"]))
    if item.get("fingerprint"):
        return keys.fingerprint_claim_key(item["tenant_id"], item["integration_id"], item["fingerprint"])
    return None


def read_payload(table: Table, item: Mapping[str, Any], now: datetime) -> str | None:
    """The payload of the message `item`; None once it was purged (or never kept)."""
    if "payload" in item:  # inline, as messages stored before issue 29 may have it
        return str(item["payload"])
    where = payload_location(item)
    return payload_from(table.get(where), now) if where else None


def create_by_claims(messages: MessageRepository, new: NewMessage, now: datetime) -> None:
    """`MessageRepository.create` on the repository's own writes: the claims, then the message;
    ClaimTaken naming the claims other messages hold, its own given back first."""
    mine: list[DedupKind] = []
    held: list[Claim] = []
    for kind in claim_order(new.idempotency_key_hash is not None):
        holder = messages.claim(new, kind, now)
        if holder is None:
            mine.append(kind)
        else:
            held.append(holder)
    if held:
        for kind in mine:
            messages.release(new, kind)
        raise ClaimTaken("another message holds this claim", claims=tuple(held))
    messages.store(new, now)


class DynamoMessageRepository:
    """Message items, payloads and ingest claims."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "message storage")

    # --- ingest: separate conditional writes, the protocol in hub.ingest.receive ------------

    def claim(self, new: NewMessage, kind: DedupKind, now: datetime) -> Claim | None:
        for _ in range(2):
            try:
                self._table.put(claim_item(new, kind, now), _CLAIM_FREE, {":now": epoch(now)})
                return None
            except ConditionFailed as failed:
                held = _claim_from(failed.old, kind, now) if failed.old else None
                if held is not None:
                    return held
                # Expired or gone between the write and its answer: write again.
        raise StorageUnavailable("message storage is busy", details={"operation": "PutItem"})

    def take_over(self, new: NewMessage, kind: DedupKind, held: Claim, now: datetime) -> Claim | None:
        values: dict[str, Any] = {":m": held.message_id}
        condition = "message_id = :m AND "
        if held.claimed_at is None:
            condition += "attribute_not_exists(claimed_at)"
        else:
            condition += "claimed_at = :c"
            values[":c"] = format_ts(held.claimed_at)
        try:
            self._table.put(claim_item(new, kind, now), condition, values)
            return None
        except ConditionFailed as failed:
            if failed.old is None:
                return self.claim(new, kind, now)
            return _claim_from(failed.old, kind, now) or self.claim(new, kind, now)

    def release(self, new: NewMessage, kind: DedupKind) -> None:
        try:
            self._table.delete(claim_key(new, kind), "message_id = :m", {":m": new.record.message_id})
        except (ConditionFailed, StorageUnavailable):
            logger.info("claim not released", extra={"message_id": new.record.message_id, "kind": kind.value})

    def store(self, new: NewMessage, now: datetime) -> None:
        record = new.record
        _, correlation = keys.lookup_values(record.external_id, record.correlation_id, new.correlation_given)
        if correlation is not None:
            # Its item is in GSI3 by the external id: the partner's correlation id gets a pointer
            # (written first: a pointer to a message never stored finds nothing, search skips it).
            self._table.put(_correlation_pointer(record, correlation))
        item = {**record_item(record), "active_at": epoch(now), "version": 1}
        try:
            self._table.put(item, "attribute_not_exists(PK)")
        except ConditionFailed as failed:
            raise StorageUnavailable(
                "a message with this id exists", details={"operation": "PutItem"}
            ) from failed

    def create(self, new: NewMessage, now: datetime) -> None:
        create_by_claims(self, new, now)

    # --- reads -----------------------------------------------------------------------------

    def get(self, message_id: str) -> MessageRecord | None:
        item = self._table.get(keys.message_key(message_id))
        return record_from(item) if item else None

    def get_for_key(self, key_hash: str, message_id: str) -> tuple[ApiKey | None, MessageRecord | None]:
        """API key and message, in one call."""
        api_key, message = keys.api_key_key(key_hash), keys.message_key(message_id)
        found = self._table.batch_get([api_key, message])
        api_item = found.get((api_key["PK"], api_key["SK"]))
        msg_item = found.get((message["PK"], message["SK"]))
        return (api_key_from(api_item) if api_item else None, record_from(msg_item) if msg_item else None)

    def get_payload(self, message_id: str, now: datetime | None = None) -> str | None:
        item = self._table.get(keys.message_key(message_id))
        return read_payload(self._table, item, now or utcnow()) if item else None

    def message_log(self, message_id: str) -> list[dict[str, Any]]:
        """The message's last log entries, oldest first."""
        item = self._table.get(keys.message_key(message_id))
        return list(item.get("log", [])) if item else []

    # --- operator moves --------------------------------------------------------------------

    def transition(
        self,
        record: MessageRecord,
        target: PipelineStatus,
        now: datetime,
        *,
        log: Sequence[Mapping[str, Any]] = (),
        **changes: Any,
    ) -> MessageRecord:
        """Moves the message from `record.pipeline_status` to `target` in one conditional
        update; where several actors meet (a move to the same status, out of `retry_pending`)
        the item must also be unchanged since `record` was read."""
        update = Update()
        stamp = status_update(update, record, target, now, changes)
        if target is record.pipeline_status or record.pipeline_status is PipelineStatus.RETRY_PENDING:
            update.where(f"{update.name('version')} = {update.value(record.version)}")
        append_log(update, [], log, now, stamp)
        try:
            return record_from(
                trimmed(self._table, self._table.update(keys.message_key(record.message_id), update))
            )
        except ConditionFailed as failed:
            raise moved(record, target, failed.old) from failed

    def cancel(
        self,
        record: MessageRecord,
        now: datetime,
        log: Sequence[Mapping[str, Any]] = (),
        *,
        bulk_job: str | None = None,
    ) -> MessageRecord:
        """`cancelled`, no next retry, the execution closed and its pending step dropped (the
        sequence moves on): only while no step holds the message's lease. Raises
        InvalidTransition when the status moved, LeaseHeld while a step runs; with a `bulk_job`,
        AlreadyActed when that job already marked the message."""
        update = Update()
        _mark(update, bulk_job)
        stamp = status_update(
            update,
            record,
            PipelineStatus.CANCELLED,
            now,
            {"next_retry_at": None, "held_reason": None, "held_on": None},
        )
        update.where(f"{update.name('version')} = {update.value(record.version)}")
        update.where(lease_free(update, now))
        update.set(completed_at=format_ts(now)).remove("lease_owner", "lease_until").add("step_seq")
        append_log(update, [], log, now, stamp)
        try:
            return record_from(
                trimmed(self._table, self._table.update(keys.message_key(record.message_id), update))
            )
        except ConditionFailed as failed:
            old = failed.old
            _acted(old, bulk_job, failed)
            if (
                _unmoved(record, old)
                and old
                and old.get("lease_owner")
                and int(old["lease_until"]) >= epoch(now)
            ):
                raise LeaseHeld("a step holds the message") from failed
            raise moved(record, PipelineStatus.CANCELLED, old) from failed

    def restart(
        self,
        record: MessageRecord,
        execution_id: str,
        now: datetime,
        abandoned_after: timedelta,
        log: Sequence[Mapping[str, Any]] = (),
        *,
        bulk_job: str | None = None,
    ) -> MessageRecord | None:
        """Admits a new execution and moves the message back to `received` in one update: only
        while no other execution is alive (finished, or idle for `abandoned_after`). None when
        one is; InvalidTransition / NotFound when the status moved; with a `bulk_job`,
        AlreadyActed when that job already marked the message."""
        update = Update()
        _mark(update, bulk_job)
        stamp = status_update(
            update,
            record,
            PipelineStatus.RECEIVED,
            now,
            {
                "execution_id": execution_id,
                "execution_started_at": now,
                "retry_count": 0,
                "next_retry_at": None,
                "dest_status": None,
                "dest_status_text": None,
                "uncertain": None,
                # A rerun of an older version makes it the key's current one again (its process
                # step supersedes the newer version under overwrite).
                "superseded_by": None,
                # A new delivery: its confirmations start again from pending.
                "delivery_status": None,
                "delivery_status_at": None,
                "held_reason": None,
                "held_on": None,
            },
        )
        admission(update, now, abandoned_after)
        append_log(update, [], log, now, stamp)
        try:
            return record_from(
                trimmed(self._table, self._table.update(keys.message_key(record.message_id), update))
            )
        except ConditionFailed as failed:
            _acted(failed.old, bulk_job, failed)
            if _unmoved(record, failed.old):
                return None  # another execution is alive
            raise moved(record, PipelineStatus.RECEIVED, failed.old) from failed


def _mark(update: Update, bulk_job: str | None) -> None:
    """Adds the bulk job acting on the message to its set, unless that job already did (a set,
    not one slot: another job acting in between must not make this one's rerun act again)."""
    if bulk_job is None:
        return
    name = update.name("bulk_jobs")
    update.add("bulk_jobs", frozenset({bulk_job}))
    update.where(f"attribute_not_exists({name}) OR NOT contains({name}, {update.value(bulk_job)})")


def _acted(old: Mapping[str, Any] | None, bulk_job: str | None, failed: Exception) -> None:
    if bulk_job is not None and old and bulk_job in (old.get("bulk_jobs") or ()):
        raise AlreadyActed(
            "this bulk job already acted on the message", details={"bulk_job": bulk_job}
        ) from failed


def lease_free(update: Update, now: datetime) -> str:
    """The condition that no run holds the message (or its business key) under a live lease."""
    owner = update.name("lease_owner")
    return f"attribute_not_exists({owner}) OR {update.name('lease_until')} < {update.value(epoch(now))}"


def admission(update: Update, now: datetime, abandoned_after: timedelta) -> None:
    """Adds admission control to `update`: the current execution must have finished, or been
    idle for `abandoned_after` (taken over); the update then starts a new one."""
    stale = update.value(epoch(now - abandoned_after))
    # An item written before the execution state moved onto it has no `active_at`: not alive.
    active_at = update.name("active_at")
    update.where(f"attribute_exists({update.name('PK')})")
    finished = f"attribute_exists({update.name('completed_at')})"
    update.where(f"{finished} OR attribute_not_exists({active_at}) OR {active_at} < {stale}")
    # ...and no step may be running under a live lease (a run mid-delivery).
    update.where(lease_free(update, now))
    update.set(active_at=epoch(now))
    update.remove("completed_at", "lease_owner", "lease_until")
    update.add("step_seq")
