"""An in-memory message repository over the fakes' shared table: ingest `create` (one
all-or-nothing write of the message item and its claims), the reads, and the operator moves
(`transition`, `restart`, `cancel`). The same item as `FakeExecutions` uses, with the same
conditions and errors as `hub.adapters.dynamo.messages.DynamoMessageRepository` (the contract
tests in tests/contract hold both to them)."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.messages import CHANGEABLE_FIELDS, fits_inline, record_item, status_stamp
from hub.adapters.dynamo.messages import record_from as record_of
from hub.adapters.dynamo.table import epoch, format_ts
from hub.domain.idempotency import DedupKind
from hub.domain.message import MessageRecord
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
from hub.ports import Claim, IngestLookup, NewMessage
from tests.fakes.config import api_key_of
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
    """A stored claim, None once expired (TTL deletes lazily, so an expired one may remain)."""
    if int(item["expires_at"]) <= epoch(now):
        return None
    return Claim(
        kind=kind,
        message_id=item["message_id"],
        fingerprint=item["fingerprint"],
        request_sha256=item["request_sha256"],
        claimed_at=datetime.fromisoformat(item["claimed_at"]) if item.get("claimed_at") else None,
    )


class FakeMessages:
    """`hub.ports.MessageRepository` plus the operator moves, in memory.

    Test knobs: `fail_create` (raise StorageUnavailable instead of writing) and
    `fail_create_after_commit` (write, then raise StorageUnavailable: the answer was lost)."""

    def __init__(self, table: FakeTable) -> None:
        self.table = table
        self.fail_create = False
        self.fail_create_after_commit = False

    # --- ingest --------------------------------------------------------------------------

    def lookup_for_ingest(
        self,
        key_hash: str | None,
        tenant_id: str,
        integration_id: str,
        idempotency_key_hash: str | None,
        fingerprint: str,
        *,
        now: datetime,
    ) -> IngestLookup:
        wanted = [(DedupKind.FINGERPRINT, keys.fingerprint_claim_key(tenant_id, integration_id, fingerprint))]
        if idempotency_key_hash is not None:
            wanted.insert(
                0,
                (
                    DedupKind.IDEMPOTENCY_KEY,
                    keys.idempotency_claim_key(tenant_id, integration_id, idempotency_key_hash),
                ),
            )
        claims = []
        for kind, key in wanted:
            item = self.table.get(key_of(key))
            claim = claim_of(item, kind, now) if item is not None else None
            if claim is not None:
                claims.append(claim)
        return IngestLookup(api_key=None, integration=None, claims=tuple(claims))

    def _claim_items(self, new: NewMessage, now: datetime) -> list[tuple[DedupKind, Item]]:
        record = new.record
        base = {
            "item_type": "claim",
            "tenant_id": record.tenant_id,
            "message_id": record.message_id,
            "fingerprint": record.fingerprint,
            "request_sha256": new.request_sha256,
            "claimed_at": format_ts(now),
        }
        claims: list[tuple[DedupKind, Item]] = []
        if new.idempotency_key_hash is not None:
            claims.append(
                (
                    DedupKind.IDEMPOTENCY_KEY,
                    {
                        **keys.idempotency_claim_key(
                            record.tenant_id, record.integration_id, new.idempotency_key_hash
                        ),
                        **base,
                        "expires_at": epoch(new.idempotency_expires_at),
                    },
                )
            )
        claims.append(
            (
                DedupKind.FINGERPRINT,
                {
                    **keys.fingerprint_claim_key(record.tenant_id, record.integration_id, record.fingerprint),
                    **base,
                    "expires_at": epoch(new.fingerprint_expires_at),
                },
            )
        )
        return claims

    def create(self, new: NewMessage, now: datetime) -> None:
        """The message item and its claims, all or nothing. Raises ClaimTaken naming the live
        claims another message holds; an expired claim is taken over."""
        if self.fail_create:
            raise StorageUnavailable("message storage is busy", details={"operation": "TransactWriteItems"})
        record = new.record
        # DynamoDB stores no null attribute (the adapter's encoder drops them).
        stored = {name: value for name, value in record_item(record).items() if value is not None}
        item = {**stored, "active_at": epoch(now), "version": 1}
        if fits_inline(item, new.payload_text):
            item["payload"] = new.payload_text
        else:
            item["payload_apart"] = True
            self.table.put(
                {
                    **keys.payload_key(record.message_id),
                    "item_type": "payload",
                    "payload_z": zlib.compress(new.payload_text.encode(), 6),
                }
            )
        claims = self._claim_items(new, now)
        at = epoch(now)

        def claim_free(old: Item | None) -> bool:
            return old is None or int(old["expires_at"]) <= at

        def absent(old: Item | None) -> bool:
            return old is None

        try:
            self.table.transact([*((claim, claim_free) for _, claim in claims), (item, absent)])
        except TransactionCancelled as cancelled:
            if item.get("payload_apart"):  # as the adapter: no message will point to it
                payload = keys.payload_key(record.message_id)
                self.table.delete((payload["PK"], payload["SK"]))
            taken = [
                claim
                for (kind, _), (code, old) in zip(claims, cancelled.reasons, strict=False)
                if code == "ConditionalCheckFailed" and old
                for claim in [claim_of(old, kind, now)]
                if claim is not None
            ]
            if not taken:
                raise StorageUnavailable(
                    "message storage is busy", details={"operation": "TransactWriteItems"}
                ) from cancelled
            raise ClaimTaken("another message holds this claim", claims=tuple(taken)) from cancelled
        if self.fail_create_after_commit:
            self.fail_create_after_commit = False
            raise StorageUnavailable("message storage timed out", details={"operation": "TransactWriteItems"})

    # --- reads -----------------------------------------------------------------------------

    def item(self, message_id: str) -> Item | None:
        """The stored message item (tests)."""
        return self.table.get(message_key(message_id))

    def get(self, message_id: str) -> MessageRecord | None:
        item = self.item(message_id)
        return record_of(item) if item else None

    def get_for_key(self, key_hash: str, message_id: str) -> tuple[ApiKey | None, MessageRecord | None]:
        api_item = self.table.get(key_of(keys.api_key_key(key_hash)))
        return (api_key_of(api_item) if api_item else None, self.get(message_id))

    def get_payload(self, message_id: str) -> str | None:
        item = self.item(message_id)
        if item is None:
            return None
        if "payload" in item:
            return str(item["payload"])
        apart = self.table.get(key_of(keys.payload_key(message_id)))
        return zlib.decompress(apart["payload_z"]).decode() if apart else None

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
                and old.get("tenant_id") == record.tenant_id
                and old.get("pipeline_status") == record.pipeline_status.value
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
            old = failed.old
            _acted(old, bulk_job, failed)
            if (
                old
                and old.get("tenant_id") == record.tenant_id
                and old.get("pipeline_status") == record.pipeline_status.value
            ):
                return None
            raise moved(record, PipelineStatus.RECEIVED, old) from failed


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
