"""An in-memory `hub.pipeline.ports.Executions` over the fakes' shared table: the execution
state lives on the same message item `FakeMessages` writes, and every guard is one conditional
change of it, as in `hub.adapters.dynamo.executions.DynamoExecutions` (held to the same contract
by tests/contract)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.executions import TAKEN_FROM
from hub.adapters.dynamo.messages import payload_from
from hub.adapters.dynamo.table import epoch, format_ts
from hub.domain.message import MessageRecord, StepMessage
from hub.pipeline import rules
from hub.pipeline.ports import EntityHold, LeaseLost, Outcome, Refusal, Refused, Taken
from tests.fakes.messages import admission, key_of, lease_free, message_key, record_of, status_change
from tests.fakes.table import Change, ConditionFailed, FakeTable, Item


def business_key(entity: str) -> tuple[str, str]:
    return key_of(keys.business_key(entity))


class FakeExecutions:
    def __init__(self, table: FakeTable) -> None:
        self.table = table

    # --- a step's hold on its message ---------------------------------------------------------

    def take(self, step: StepMessage, owner: str, now: datetime, lease: timedelta) -> Taken | Refusal:
        change = Change().set(lease_owner=owner, lease_until=epoch(now + lease), active_at=epoch(now))
        change.add("version")
        change.where(
            lambda item: (
                item is not None
                and item.get("tenant_id") == step.tenant_id
                and item.get("execution_id") == step.execution_id
                and "completed_at" not in item
                and (item.get("step_seq") == step.seq or ("step_seq" not in item and step.seq == 0))
                and lease_free(item, now)
            )
        )
        change.copy_from(TAKEN_FROM, "lease_owner", "")
        try:
            item = self.table.update(message_key(step.message_id), change)
        except ConditionFailed as failed:
            return _refusal(step, failed.old, now)
        return Taken(
            record=record_of(item),
            owner=owner,
            inline_payload=item.get("payload"),
            log=tuple(item.get("log", ())),
            interrupted=bool(item.get(TAKEN_FROM)),
        )

    def finish(self, taken: Taken, outcome: Outcome, now: datetime) -> MessageRecord:
        record = taken.record
        change = Change()
        stamp = None
        if outcome.target is not None:
            stamp = status_change(change, record, outcome.target, now, {**taken.learned, **outcome.changes})
        else:
            change.set(**taken.learned).add("version")
        change.where(lambda item: item is not None and item.get("lease_owner") == taken.owner)
        change.remove("lease_owner", "lease_until", TAKEN_FROM)
        change.add("step_seq")
        if outcome.closes:
            change.set(completed_at=format_ts(now))
        change.append_log(taken.log, outcome.log, now, stamp, fitted=True)
        try:
            return record_of(self.table.update(message_key(record.message_id), change))
        except ConditionFailed as failed:
            raise LeaseLost(record_of(failed.old) if failed.old else None) from failed

    def release(self, taken: Taken, now: datetime) -> None:
        change = Change().remove("lease_owner", "lease_until", TAKEN_FROM).add("version")
        change.where(lambda item: item is not None and item.get("lease_owner") == taken.owner)
        try:
            self.table.update(message_key(taken.record.message_id), change)
        except ConditionFailed:
            return

    def release_admission(self, message_id: str, execution_id: str, now: datetime) -> None:
        change = Change().set(active_at=0).remove("lease_owner", "lease_until").add("version")
        change.where(
            lambda item: (
                item is not None
                and item.get("execution_id") == execution_id
                and "completed_at" not in item
                and lease_free(item, now)
            )
        )
        try:
            self.table.update(message_key(message_id), change)
        except ConditionFailed:
            return

    def fail_unleased(
        self, step: StepMessage, current: MessageRecord, outcome: Outcome, now: datetime
    ) -> MessageRecord | None:
        if outcome.target is None:
            raise ValueError("an unleased outcome must move the status")
        change = Change()
        stamp = status_change(change, current, outcome.target, now, outcome.changes)
        change.where(
            lambda item: (
                item is not None
                and item.get("execution_id") == step.execution_id
                and item.get("step_seq") == step.seq
                and lease_free(item, now)
            )
        )
        change.add("step_seq")
        if outcome.closes:
            change.set(completed_at=format_ts(now))
        change.append_log([], outcome.log, now, stamp)
        try:
            return record_of(self.table.update(message_key(current.message_id), change))
        except ConditionFailed:
            return None

    def payload(self, record: MessageRecord, now: datetime | None = None) -> str | None:
        at = now or datetime.now(UTC)
        if not record.fingerprint:
            return payload_from(self.table.get(key_of(keys.payload_key(record.message_id))), at)
        claim = keys.fingerprint_claim_key(record.tenant_id, record.integration_id, record.fingerprint)
        return payload_from(self.table.get(key_of(claim)), at)

    # --- operator admission ------------------------------------------------------------------

    def live_execution(self, message_id: str, now: datetime | None = None) -> str | None:
        item = self.table.get(message_key(message_id))
        stale = epoch((now or datetime.now(UTC)) - rules.ADMISSION_ABANDONED_AFTER)
        if item is None or "completed_at" in item or int(item.get("active_at", 0)) < stale:
            return None
        return str(item["execution_id"])

    def admit(self, message_id: str, execution_id: str, now: datetime, abandoned_after: timedelta) -> bool:
        change = Change().set(execution_id=execution_id).add("version")
        admission(change, now, abandoned_after)
        try:
            self.table.update(message_key(message_id), change)
        except ConditionFailed:
            return False
        return True

    # --- the business-key item ---------------------------------------------------------------

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
        change = Change().set(lease_owner=owner, lease_until=epoch(now + lease), item_type="business_key")
        change.set_if_absent(message_id=message_id)
        if expires_at is not None:
            change.set_if_absent(expires_at=expires_at)
        change.where(lambda item: lease_free(item, now) or _owned_by(item, owner))
        try:
            item = self.table.update(business_key(entity), change)
        except ConditionFailed:
            return None
        holder = str(item["message_id"])
        return EntityHold(entity=entity, owner=owner, holder=None if holder == message_id else holder)

    def release_entity(
        self, hold: EntityHold, current: str | None = None, expires_at: int | None = None
    ) -> None:
        change = Change().remove("lease_owner", "lease_until")
        if current is not None:
            change.set(message_id=current)
            if expires_at is not None:
                change.set(expires_at=expires_at)
            else:
                change.remove("expires_at")
        change.where(lambda item: _owned_by(item, hold.owner))
        try:
            self.table.update(business_key(hold.entity), change)
        except ConditionFailed:
            return

    def acquire_lock(self, entity: str, owner: str, now: datetime, lease: timedelta) -> bool:
        change = Change().set(lease_owner=owner, lease_until=epoch(now + lease))
        change.where(lambda item: lease_free(item, now) or _owned_by(item, owner))
        try:
            self.table.update(business_key(entity), change)
        except ConditionFailed:
            return False
        return True

    def release_lock(self, entity: str, owner: str) -> None:
        self.release_entity(EntityHold(entity=entity, owner=owner, holder=None))

    def mark_superseded(self, message_id: str, by_message_id: str) -> None:
        change = Change().set(superseded_by=by_message_id).add("version")
        change.where(lambda item: item is not None)
        try:
            self.table.update(message_key(message_id), change)
        except ConditionFailed:
            return


def _owned_by(item: Item | None, owner: str) -> bool:
    return item is not None and item.get("lease_owner") == owner


def _refusal(step: StepMessage, old: Item | None, now: datetime) -> Refusal:
    """Why `take` failed, from the item as it was."""
    if old is None or old.get("tenant_id") != step.tenant_id:
        return Refusal(Refused.ORPHAN)
    current = record_of(old)
    if current.execution_id != step.execution_id:
        return Refusal(Refused.STALE_EXECUTION, current)
    if current.step_seq != step.seq:
        return Refusal(Refused.DUPLICATE_STEP, current)
    if current.completed_at is not None:
        recent = now - current.completed_at < rules.RECENT_COMPLETION
        return Refusal(Refused.RECENTLY_COMPLETED if recent else Refused.EXECUTION_FINISHED, current)
    return Refusal(Refused.BUSY, current)
