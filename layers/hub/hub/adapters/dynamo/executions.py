"""The pipeline's guards (seed 002, section 8) as conditional updates of the message item and,
for messages with business keys, of their business-key item.

- take: one UpdateItem (ReturnValues ALL_NEW) that requires the step's execution to be the live
  one, its sequence to be the next, and no other run to hold the lease; a refusal is read from
  the item as it was (ALL_OLD), never from a second read;
- finish: one UpdateItem conditioned on the lease still being ours and the status still the
  one taken: the outcome, the log entries, the sequence moved on, the lease released and, when
  the execution ends, `completed_at` (admission released, recent completion from then on);
- the entity lock of a message with business keys is a lease on its `BK#` item, which also
  says which message the key belongs to (duplicate rules) - one update to take, one to give back.
"""

from __future__ import annotations

import zlib
from datetime import UTC, datetime, timedelta
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.messages import (
    admission,
    append_log,
    lease_free,
    payload_from,
    record_from,
    status_update,
    trimmed,
)
from hub.adapters.dynamo.table import ConditionFailed, Table, Update, epoch, format_ts, item_size
from hub.domain.message import MessageRecord, StepMessage
from hub.pipeline import rules
from hub.pipeline.ports import EntityHold, LeaseLost, Outcome, Refusal, Refused, Taken

#: Set by each take to the owner of the expired lease it took over ("" when there was none).
TAKEN_FROM = "taken_from"


class DynamoExecutions:
    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "pipeline storage")

    # --- a step's hold on its message ---------------------------------------------------------

    def take(self, step: StepMessage, owner: str, now: datetime, lease: timedelta) -> Taken | Refusal:
        update = Update().set(lease_owner=owner, lease_until=epoch(now + lease), active_at=epoch(now))
        update.add("version")
        update.where(f"attribute_exists({update.name('PK')})")
        update.where(f"{update.name('tenant_id')} = {update.value(step.tenant_id)}")
        update.where(f"{update.name('execution_id')} = {update.value(step.execution_id)}")
        update.where(f"attribute_not_exists({update.name('completed_at')})")
        seq = f"{update.name('step_seq')} = {update.value(step.seq)}"
        # A first step may find an item written before the sequence existed (no `step_seq`).
        update.where(f"{seq} OR attribute_not_exists({update.name('step_seq')})" if step.seq == 0 else seq)
        update.where(lease_free(update, now))
        # The owner of a lease this take overrides (DynamoDB evaluates every SET operand against
        # the item as it was): a run that never gave its lease back died mid-step.
        update.set_expression(
            f"{update.name(TAKEN_FROM)} = if_not_exists({update.name('lease_owner')}, {update.value('')})"
        )
        try:
            item = self._table.update(keys.message_key(step.message_id), update)
        except ConditionFailed as failed:
            if failed.old is None or failed.old.get("lease_owner") != owner:
                return _refusal(step, failed.old, now)
            # Our own take: the SDK resent it after a lost answer (owner is new per run).
            item = failed.old
        return Taken(
            record=record_from(item),
            owner=owner,
            inline_payload=item.get("payload"),
            log=tuple(item.get("log", ())),
            interrupted=bool(item.get(TAKEN_FROM)),
            stored=item,
        )

    def finish(self, taken: Taken, outcome: Outcome, now: datetime) -> MessageRecord:
        record = taken.record
        update = Update()
        stamp = None
        if outcome.target is not None:
            stamp = status_update(update, record, outcome.target, now, {**taken.learned, **outcome.changes})
        else:
            update.set(**taken.learned).add("version")
        update.where(f"{update.name('lease_owner')} = {update.value(taken.owner)}")
        update.remove("lease_owner", "lease_until", TAKEN_FROM)
        update.add("step_seq")
        if outcome.closes:
            update.set(completed_at=format_ts(now))
        # The item as this update leaves it, its log aside: the log is fitted to the write units
        # the update is billed (hub.adapters.dynamo.messages.fitted_log).
        rest = {k: v for k, v in update.applied(taken.stored).items() if k != "log"} if taken.stored else None
        append_log(update, taken.log, outcome.log, now, stamp, rest=rest, before=item_size(taken.stored))
        try:
            return record_from(self._table.update(keys.message_key(record.message_id), update))
        except ConditionFailed as failed:
            if failed.old is not None and _finished_by_this_run(failed.old, taken, outcome):
                return record_from(failed.old)
            raise LeaseLost(record_from(failed.old) if failed.old else None) from failed

    def release(self, taken: Taken, now: datetime) -> None:
        update = Update().remove("lease_owner", "lease_until", TAKEN_FROM).add("version")
        update.where(f"{update.name('lease_owner')} = {update.value(taken.owner)}")
        try:
            self._table.update(keys.message_key(taken.record.message_id), update)
        except ConditionFailed:
            return  # not ours any more: nothing to give back

    def release_admission(self, message_id: str, execution_id: str, now: datetime) -> None:
        update = Update().set(active_at=0).remove("lease_owner", "lease_until").add("version")
        update.where(f"{update.name('execution_id')} = {update.value(execution_id)}")
        update.where(f"attribute_not_exists({update.name('completed_at')})")
        # The caller gave its own lease back already: a live one is another run's, mid-step, and
        # the message must not be offered to a reprocess under it.
        update.where(lease_free(update, now))
        try:
            self._table.update(keys.message_key(message_id), update)
        except ConditionFailed:
            return  # finished meanwhile, or another execution now

    def fail_unleased(
        self, step: StepMessage, current: MessageRecord, outcome: Outcome, now: datetime
    ) -> MessageRecord | None:
        update = Update()
        if outcome.target is None:
            raise ValueError("an unleased outcome must move the status")
        stamp = status_update(update, current, outcome.target, now, outcome.changes)
        update.where(f"{update.name('execution_id')} = {update.value(step.execution_id)}")
        update.where(f"{update.name('step_seq')} = {update.value(step.seq)}")
        # Never under another run's live lease: that run may be delivering the message.
        update.where(lease_free(update, now))
        update.add("step_seq")
        if outcome.closes:
            update.set(completed_at=format_ts(now))
        append_log(update, [], outcome.log, now, stamp)
        try:
            return record_from(
                trimmed(self._table, self._table.update(keys.message_key(current.message_id), update))
            )
        except ConditionFailed:
            return None

    def payload(self, record: MessageRecord, now: datetime | None = None) -> str | None:
        if not record.fingerprint:  # stored before issue 29: a PAYLOAD item of its own
            item = self._table.get(keys.payload_key(record.message_id))
            return zlib.decompress(item["payload_z"]).decode() if item else None
        claim = self._table.get(
            keys.fingerprint_claim_key(record.tenant_id, record.integration_id, record.fingerprint)
        )
        return payload_from(claim, now or datetime.now(UTC))

    # --- operator admission (tests and reprocess use it through the message repository) ----

    def live_execution(self, message_id: str, now: datetime | None = None) -> str | None:
        """The execution that holds the message's admission, if any."""
        item = self._table.get(keys.message_key(message_id))
        stale = epoch((now or datetime.now(UTC)) - rules.ADMISSION_ABANDONED_AFTER)
        if item is None or "completed_at" in item or int(item.get("active_at", 0)) < stale:
            return None
        return str(item["execution_id"])

    def admit(self, message_id: str, execution_id: str, now: datetime, abandoned_after: timedelta) -> bool:
        """Makes `execution_id` the message's live execution, unless another one is alive
        (finished, or idle for `abandoned_after`: taken over)."""
        update = Update().set(execution_id=execution_id).add("version")
        admission(update, now, abandoned_after)
        try:
            self._table.update(keys.message_key(message_id), update)
        except ConditionFailed:
            return False
        return True

    # --- the business-key item: entity lock and duplicate rules --------------------------------

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
        update = Update().set(lease_owner=owner, lease_until=epoch(now + lease), item_type="business_key")
        alias = update.name("message_id")
        update.set_expression(f"{alias} = if_not_exists({alias}, {update.value(message_id)})")
        if expires_at is not None:
            # A new key is the taking message's, and goes with it (issue 29); a held one keeps
            # its holder's TTL until the key changes hands (release_entity).
            ttl = update.name("expires_at")
            update.set_expression(f"{ttl} = if_not_exists({ttl}, {update.value(expires_at)})")
        update.where(lease_free(update, now) + f" OR {update.name('lease_owner')} = {update.value(owner)}")
        try:
            item = self._table.update(keys.business_key(entity), update)
        except ConditionFailed:
            return None
        holder = str(item["message_id"])
        return EntityHold(entity=entity, owner=owner, holder=None if holder == message_id else holder)

    def release_entity(
        self, hold: EntityHold, current: str | None = None, expires_at: int | None = None
    ) -> None:
        update = Update().remove("lease_owner", "lease_until")
        if current is not None:
            # The key is `current`'s now: it lives as long as that message (none: for good).
            update.set(message_id=current)
            if expires_at is not None:
                update.set(expires_at=expires_at)
            else:
                update.remove("expires_at")
        update.where(f"{update.name('lease_owner')} = {update.value(hold.owner)}")
        try:
            self._table.update(keys.business_key(hold.entity), update)
        except ConditionFailed:
            return

    def acquire_lock(self, entity: str, owner: str, now: datetime, lease: timedelta) -> bool:
        """Takes the entity's lease without claiming its key (operators, tests)."""
        update = Update().set(lease_owner=owner, lease_until=epoch(now + lease))
        update.where(lease_free(update, now) + f" OR {update.name('lease_owner')} = {update.value(owner)}")
        try:
            self._table.update(keys.business_key(entity), update)
        except ConditionFailed:
            return False
        return True

    def release_lock(self, entity: str, owner: str) -> None:
        self.release_entity(EntityHold(entity=entity, owner=owner, holder=None))

    def mark_superseded(self, message_id: str, by_message_id: str) -> None:
        update = Update().set(superseded_by=by_message_id).add("version")
        update.where(f"attribute_exists({update.name('PK')})")
        try:
            self._table.update(keys.message_key(message_id), update)
        except ConditionFailed:
            return


def _refusal(step: StepMessage, old: dict[str, Any] | None, now: datetime) -> Refusal:
    """Why `take` failed, from the item as it was."""
    if old is None or old.get("tenant_id") != step.tenant_id:
        return Refusal(Refused.ORPHAN)
    current = record_from(old)
    if current.execution_id != step.execution_id:
        return Refusal(Refused.STALE_EXECUTION, current)
    if current.step_seq != step.seq:
        return Refusal(Refused.DUPLICATE_STEP, current)
    if current.completed_at is not None:
        recent = now - current.completed_at < rules.RECENT_COMPLETION
        return Refusal(Refused.RECENTLY_COMPLETED if recent else Refused.EXECUTION_FINISHED, current)
    return Refusal(Refused.BUSY, current)


def _finished_by_this_run(item: dict[str, Any], taken: Taken, outcome: Outcome) -> bool:
    """Whether the finishing update that failed its condition had already been applied: the SDK
    resends a request whose answer was lost (a read timeout), and the resend finds the lease it
    gave back. Exactly one write since the take (the version one on), and it released the lease,
    moved the sequence on and reached the outcome: ours, since nothing else can move the sequence
    while our lease is live (5 minutes; the SDK's resends come within seconds). Seen in the
    10,000-message soak: read as "lease lost", the retry's schedule was never created."""
    record = taken.record
    return (
        "lease_owner" not in item
        and int(item.get("version", -1)) == record.version + 1
        and int(item.get("step_seq", -1)) == record.step_seq + 1
        and (outcome.target is None or item.get("pipeline_status") == outcome.target.value)
    )
