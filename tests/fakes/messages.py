"""An in-memory message repository over the fakes' shared table: ingest's claims and message
item (separate conditional writes), the reads, and the operator moves
(`transition`, `restart`, `cancel`). The same item as `FakeExecutions` uses, with the same
conditions and errors as `hub.adapters.dynamo.messages.DynamoMessageRepository` (the contract
tests in tests/contract hold both to them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.messages import (
    CHANGEABLE_FIELDS,
    claim_item,
    claim_key,
    create_by_claims,
    payload_from,
    payload_location,
    record_item,
    status_stamp,
)
from hub.adapters.dynamo.messages import record_from as record_of
from hub.adapters.dynamo.table import epoch, format_ts
from hub.domain.idempotency import DedupKind
from hub.domain.message import MessageRecord
from hub.domain.status import PipelineStatus, can_transition
from hub.domain.tenancy import ApiKey
from hub.errors import (
    AlreadyActed,
    InvalidTransition,
    LeaseHeld,
    NotFound,
    StorageUnavailable,
    TransitionNotAllowed,
)
from hub.ports import Claim, NewMessage
from tests.fakes.config import ConfigState
from tests.fakes.table import Change, ConditionFailed, FakeTable, Item, Key, TransactionCancelled


def key_of(key: Mapping[str, str]) -> Key:
    return (key["PK"], key["SK"])


def message_key(message_id: str) -> Key:
    return key_of(keys.message_key(message_id))


def status_change(
    change: Change,
    record: MessageRecord,
    target: PipelineStatus,
    now: datetime,
    changes: Mapping[str, Any],
) -> dict[str, Any]:
    """A status move: the table checked before anything is written, the stored tenant and
    status as conditions, the index keys only for listed statuses, the version bumped. Returns
    the move's log stamp (as the adapter's status_update)."""
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
    change.set(pipeline_status=target.value, updated_at=updated_at)
    change.set(**{name: format_ts(v) if isinstance(v, datetime) else v for name, v in changes.items()})
    if target in keys.LISTED_STATUSES:
        change.set(**keys.status_index_keys(record.tenant_id, target.value, updated_at, record.message_id))
    else:
        change.remove("GSI1PK", "GSI1SK")
    change.add("version")
    tenant, status = record.tenant_id, expected.value
    change.where(lambda item: item is not None and item.get("tenant_id") == tenant)
    change.where(lambda item: item is not None and item.get("pipeline_status") == status)
    return status_stamp(record, target)


def admission(change: Change, now: datetime, abandoned_after: timedelta) -> None:
    """Admission control: the current execution finished, or idle for `abandoned_after` (an
    item without `active_at`, written before the execution state lived on it, counts as idle); a
    new one starts."""
    stale = epoch(now - abandoned_after)
    change.where(
        lambda item: (
            item is not None
            and ("completed_at" in item or "active_at" not in item or int(item["active_at"]) < stale)
            and lease_free(item, now)
        )
    )
    change.set(active_at=epoch(now))
    change.remove("completed_at", "lease_owner", "lease_until")
    change.add("step_seq")


def lease_free(item: Item | None, now: datetime) -> bool:
    """No lease, or one that expired (a lease without `lease_until` never expires: a DynamoDB
    comparison with an absent attribute is false)."""
    if item is None or "lease_owner" not in item:
        return True
    return "lease_until" in item and int(item["lease_until"]) < epoch(now)


def moved(record: MessageRecord, target: PipelineStatus, old: Item | None) -> Exception:
    """What a failed status condition means: gone / another tenant's, or moved on."""
    if not old or old.get("tenant_id") != record.tenant_id:
        return NotFound("message not found")
    return InvalidTransition(
        f"pipeline_status is {old.get('pipeline_status')}, no longer {record.pipeline_status.value}",
        details={"message_id": record.message_id, "from": old.get("pipeline_status"), "to": target.value},
    )


def claim_of(item: Mapping[str, Any], kind: DedupKind, now: datetime) -> Claim | None:
    """A stored claim, None once its window passed (TTL deletes lazily, so it may remain)."""
    if int(item.get("dedup_until", item["expires_at"])) <= epoch(now):
        return None
    return Claim(
        kind=kind,
        message_id=item["message_id"],
        fingerprint=item["fingerprint"],
        request_sha256=item["request_sha256"],
        claimed_at=datetime.fromisoformat(item["claimed_at"]) if item.get("claimed_at") else None,
    )


def claim_free(item: Item | None, now: datetime) -> bool:
    return item is None or claim_of(item, DedupKind.FINGERPRINT, now) is None


class FakeMessages:
    """`hub.ports.MessageRepository` plus the operator moves, in memory.

    `config` holds the API keys `get_for_key` reads (in DynamoDB, items of the same table).

    Test knobs: `fail_create` (a claim's write raises StorageUnavailable), `fail_store` (the
    message item's write does) and `fail_create_after_commit` (the message item is written, then
    StorageUnavailable: the answer was lost)."""

    def __init__(self, table: FakeTable, config: ConfigState | None = None) -> None:
        self.table = table
        self.config = config or ConfigState()
        self.fail_create = False
        self.fail_store = False
        self.fail_create_after_commit = False

    # --- ingest --------------------------------------------------------------------------

    def _put_if(self, item: Item, condition: Any) -> Item | None:
        """Writes `item` when `condition` holds of the stored one: None, else the stored item."""
        try:
            self.table.transact([(item, condition)])
        except TransactionCancelled as cancelled:
            [(_, old)] = cancelled.reasons
            return old if old is not None else {}
        return None

    def claim(self, new: NewMessage, kind: DedupKind, now: datetime) -> Claim | None:
        if self.fail_create:
            raise StorageUnavailable("message storage is busy", details={"operation": "PutItem"})
        for _ in range(2):
            old = self._put_if(claim_item(new, kind, now), lambda item: claim_free(item, now))
            if old is None:
                return None
            held = claim_of(old, kind, now) if old else None
            if held is not None:
                return held
        raise StorageUnavailable("message storage is busy", details={"operation": "PutItem"})

    def take_over(self, new: NewMessage, kind: DedupKind, held: Claim, now: datetime) -> Claim | None:
        at = format_ts(held.claimed_at) if held.claimed_at else None

        def unchanged(item: Item | None) -> bool:
            return item is not None and item["message_id"] == held.message_id and item.get("claimed_at") == at

        old = self._put_if(claim_item(new, kind, now), unchanged)
        if old is None:
            return None
        return (claim_of(old, kind, now) if old else None) or self.claim(new, kind, now)

    def release(self, new: NewMessage, kind: DedupKind) -> None:
        key = key_of(claim_key(new, kind))
        with self.table.lock:
            stored = self.table.items.get(key)
            if stored is not None and stored["message_id"] == new.record.message_id:
                del self.table.items[key]

    def store(self, new: NewMessage, now: datetime) -> None:
        if self.fail_store:
            raise StorageUnavailable("message storage is busy", details={"operation": "PutItem"})
        record = new.record
        # DynamoDB stores no null attribute (the adapter's encoder drops them).
        stored = {name: value for name, value in record_item(record).items() if value is not None}
        item = {**stored, "active_at": epoch(now), "version": 1}
        if self._put_if(item, lambda old: old is None) is not None:
            raise StorageUnavailable("a message with this id exists", details={"operation": "PutItem"})
        if self.fail_create_after_commit:
            self.fail_create_after_commit = False
            raise StorageUnavailable("message storage timed out", details={"operation": "PutItem"})

    def create(self, new: NewMessage, now: datetime) -> None:
        create_by_claims(self, new, now)

    # --- reads -----------------------------------------------------------------------------

    def item(self, message_id: str) -> Item | None:
        """The stored message item (tests)."""
        return self.table.get(message_key(message_id))

    def get(self, message_id: str) -> MessageRecord | None:
        item = self.item(message_id)
        return record_of(item) if item else None

    def get_for_key(self, key_hash: str, message_id: str) -> tuple[ApiKey | None, MessageRecord | None]:
        return (self.config.api_keys.get(key_hash), self.get(message_id))

    def records(self) -> list[MessageRecord]:
        """Every stored message (tests, and the integration store's "do messages wait")."""
        with self.table.lock:
            items = [
                item
                for (pk, sk), item in self.table.items.items()
                if pk.startswith(keys.MESSAGE_PREFIX) and sk == keys.MESSAGE_SK
            ]
        return [record_of(item) for item in items]

    def get_payload(self, message_id: str, now: datetime | None = None) -> str | None:
        item = self.item(message_id)
        if item is None:
            return None
        if "payload" in item:
            return str(item["payload"])
        where = payload_location(item)
        return payload_from(self.table.get(key_of(where)), now or datetime.now(UTC)) if where else None

    def message_log(self, message_id: str) -> list[dict[str, Any]]:
        item = self.item(message_id)
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
        change = Change()
        stamp = status_change(change, record, target, now, changes)
        if target is record.pipeline_status or record.pipeline_status is PipelineStatus.RETRY_PENDING:
            version = record.version
            change.where(lambda item: item is not None and item.get("version") == version)
        change.append_log([], log, now, stamp)
        try:
            return record_of(self.table.update(message_key(record.message_id), change))
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
        """`cancelled`, only while no step holds the lease (LeaseHeld) and the item is unchanged
        since `record` (InvalidTransition, NotFound); a `bulk_job` marks it (AlreadyActed)."""
        change = Change()
        _mark(change, bulk_job)
        stamp = status_change(change, record, PipelineStatus.CANCELLED, now, {"next_retry_at": None})
        version = record.version
        change.where(lambda item: item is not None and item.get("version") == version)
        change.where(lambda item: lease_free(item, now))
        change.set(completed_at=format_ts(now)).remove("lease_owner", "lease_until").add("step_seq")
        change.append_log([], log, now, stamp)
        try:
            return record_of(self.table.update(message_key(record.message_id), change))
        except ConditionFailed as failed:
            old = failed.old
            _acted(old, bulk_job, failed)
            if (
                old
                and _unmoved(record, old)
                and old.get("lease_owner")
                and int(old.get("lease_until", 0)) >= epoch(now)
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
        """A new execution from `received`; None while another one is alive; a `bulk_job`
        marks it (AlreadyActed when that job already did)."""
        change = Change()
        _mark(change, bulk_job)
        stamp = status_change(
            change,
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
                "superseded_by": None,
            },
        )
        admission(change, now, abandoned_after)
        change.append_log([], log, now, stamp)
        try:
            return record_of(self.table.update(message_key(record.message_id), change))
        except ConditionFailed as failed:
            _acted(failed.old, bulk_job, failed)
            if _unmoved(record, failed.old):
                return None  # another execution is alive
            raise moved(record, PipelineStatus.RECEIVED, failed.old) from failed


def _unmoved(record: MessageRecord, old: Item | None) -> bool:
    """Whether the item is still `record`'s tenant's, in `record`'s status."""
    return (
        old is not None
        and old.get("tenant_id") == record.tenant_id
        and old.get("pipeline_status") == record.pipeline_status.value
    )


def _mark(change: Change, bulk_job: str | None) -> None:
    if bulk_job is None:
        return
    change.add("bulk_jobs", frozenset({bulk_job}))
    change.where(lambda item: item is None or bulk_job not in (item.get("bulk_jobs") or ()))


def _acted(old: Mapping[str, Any] | None, bulk_job: str | None, failed: Exception) -> None:
    if bulk_job is not None and old and bulk_job in (old.get("bulk_jobs") or ()):
        raise AlreadyActed(
            "this bulk job already acted on the message", details={"bulk_job": bulk_job}
        ) from failed
