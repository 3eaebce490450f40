"""A limited connection's permits on the hub table (issue 30, hub.delivery.limits).

``CONNLIMIT#<tenant>#<connection>`` / ``LIMIT``: ``tat`` (the rate's theoretical arrival time,
epoch ms) and per concurrency slot ``s<k>`` (lease end, epoch ms) with ``h<k>`` (its holder,
``<message_id>/<lease owner>``). A permit is one UpdateItem whose condition re-checks what the
plan read: a failed condition returns the item (ALL_OLD) and the plan is made again from it, at
most `ROUNDS` times; after that the delivery waits as if refused (contention means the
connection is busy).

Slots are not given back after each delivery: this instance remembers the slot of its own last
permit per connection and takes it again for its next delivery (it runs one step at a time, so
that delivery is over). When no slot is free otherwise, one consistent BatchGetItem of the
holders' message items (``lease_owner`` only) tells which holders' runs are over: their finishing
write removed the lease the holder names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.table import ConditionFailed, Table, Update
from hub.delivery.breaker import HeldReason
from hub.delivery.limits import (
    LimitState,
    Permit,
    RateForm,
    Refusal,
    Slot,
    holder_parts,
    limited_reason,
    plan,
    without_ended,
)
from hub.domain.delivery_limits import DeliveryLimits

ROUNDS = 3


def limit_state_from(item: Mapping[str, Any] | None) -> LimitState:
    if not item:
        return LimitState()
    slots = {}
    for name, value in item.items():
        if name.startswith("s") and name[1:].isdigit():
            index = int(name[1:])
            slots[index] = Slot(int(value), str(item.get(f"h{index}", "")))
    tat, drain = item.get("tat"), item.get("drain_until")
    return LimitState(
        tat_ms=int(tat) if tat is not None else None,
        slots=slots,
        drain_until_ms=int(drain) if drain is not None else None,
        drain_run=str(item["drain_by"]) if item.get("drain_by") else None,
        drain_next=str(item["drain_next"]) if item.get("drain_next") else None,
    )


def permit_update(permit: Permit, holder: str, tenant_id: str) -> Update:
    """The one write of `permit`: its conditions are the plan's reading of the item (and, for
    a delivery not released from the held set, that no drain is releasing held messages)."""
    update = Update().set(tenant_id=tenant_id)
    if not permit.released:
        drain = update.name("drain_until")
        update.where(f"attribute_not_exists({drain}) OR {drain} < {update.value(permit.now_ms)}")
    if permit.rate is RateForm.START:
        tat = update.name("tat")
        update.set(tat=permit.now_ms + permit.interval_ms)
        update.where(f"attribute_not_exists({tat}) OR {tat} < {update.value(permit.now_ms)}")
    elif permit.rate is RateForm.ADVANCE:
        tat = update.name("tat")
        update.set_expression(f"{tat} = {tat} + {update.value(permit.interval_ms)}")
        low, high = update.value(permit.now_ms), update.value(permit.now_ms + permit.tolerance_ms)
        update.where(f"{tat} BETWEEN {low} AND {high}")
    if permit.slot is not None:
        until, holder_name = update.name(f"s{permit.slot}"), update.name(f"h{permit.slot}")
        update.set(**{f"s{permit.slot}": permit.lease_until_ms, f"h{permit.slot}": holder})
        replaceable = f" OR {holder_name} = {update.value(holder)}"
        if permit.replaces is not None:
            replaceable += f" OR {holder_name} = {update.value(permit.replaces)}"
        update.where(f"attribute_not_exists({until}) OR {until} < {update.value(permit.now_ms)}{replaceable}")
    return update


@dataclass
class _Held:
    """This instance's last permit with a slot on a connection."""

    slot: int
    holder: str
    #: Its delivery has not ended yet (`finished` not called since).
    in_flight: bool


class DynamoConnectionLimits:
    """hub.delivery.gate.ConnectionLimits over the hub table."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "connection limit storage")
        #: The item as this instance last saw it, per (tenant, connection): the next plan's guess.
        self._seen: dict[tuple[str, str], LimitState] = {}
        #: This instance's last permit with a slot, per (tenant, connection).
        self._mine: dict[tuple[str, str], _Held] = {}

    def acquire(
        self,
        tenant_id: str,
        connection_id: str,
        limits: DeliveryLimits,
        *,
        holder: str,
        now_ms: int,
        attempt_ms: int,
        released: bool = False,
    ) -> Permit | Refusal:
        scoped = (tenant_id, connection_id)
        key = keys.connection_limit_key(tenant_id, connection_id)
        seen = self._seen.get(scoped)
        # An instance's first permit on a connection reads the item (a read unit, not a write
        # whose condition fails on a guess); later ones plan from what their last write returned.
        state = seen if seen is not None else self.get(tenant_id, connection_id)
        if seen is not None and state.draining(now_ms) and not released:
            # A drain this instance saw may have ended since: one read, not a refusal that lasts
            # as long as the lease it remembers.
            state = self.get(tenant_id, connection_id)
        looked: dict[int, str] | None = None
        for _ in range(ROUNDS):
            ended = self._own_ended(scoped)
            if looked is not None:
                ended.update(looked)
            decision = plan(limits, state, now_ms, holder, attempt_ms, released=released, ended=ended)
            if isinstance(decision, Refusal):
                waits_for_a_slot = decision.reason is HeldReason.CONCURRENCY_LIMITED and (
                    released or not state.draining(now_ms)
                )
                if not waits_for_a_slot or looked is not None:
                    return decision
                # No slot free by its lease: which holders' runs are over (one read, once)?
                looked = self._ended(state, now_ms)
                if not looked:
                    return decision
                decision = plan(limits, state, now_ms, holder, attempt_ms, released=released, ended=looked)
                if isinstance(decision, Refusal):
                    return decision
            try:
                self._seen[scoped] = limit_state_from(
                    self._table.update(key, permit_update(decision, holder, tenant_id))
                )
            except ConditionFailed as failed:
                state = limit_state_from(failed.old)
                self._seen[scoped] = state
                continue
            if decision.slot is not None:
                self._mine[scoped] = _Held(decision.slot, holder, in_flight=True)
            return decision
        return Refusal(limited_reason(limits), 1)

    def finished(self, tenant_id: str, connection_id: str, *, holder: str) -> LimitState:
        """`holder`'s delivery ended (its outcome written): this instance may take its slot again
        without a write to give it back. The item as this instance last saw it."""
        scoped = (tenant_id, connection_id)
        mine = self._mine.get(scoped)
        if mine is not None and mine.holder == holder:
            mine.in_flight = False
        return self._seen.get(scoped, LimitState())

    def _own_ended(self, scoped: tuple[str, str]) -> dict[int, str]:
        mine = self._mine.get(scoped)
        return {} if mine is None or mine.in_flight else {mine.slot: mine.holder}

    def _ended(self, state: LimitState, now_ms: int) -> dict[int, str]:
        """The slots under a live lease whose holder's run is over: its message item no longer
        holds the lease the holder names (or is gone). Consistent reads: an older copy of the
        item could show a lease given back before this run took it."""
        live = {
            index: slot
            for index, slot in state.slots.items()
            if slot.until_ms >= now_ms and holder_parts(slot.holder) is not None
        }
        if not live:
            return {}
        parts = {index: holder_parts(slot.holder) for index, slot in live.items()}
        found = self._table.batch_get(
            [keys.message_key(p[0]) for p in parts.values() if p is not None], projection=("lease_owner",)
        )
        ended: dict[int, str] = {}
        for index, slot in live.items():
            message_id, owner = parts[index] or ("", "")
            key = keys.message_key(message_id)
            item = found.get((key["PK"], key["SK"]))
            if item is None or item.get("lease_owner") != owner:
                ended[index] = slot.holder
        return ended

    def release(self, tenant_id: str, connection_id: str, permit: Permit, *, holder: str) -> LimitState:
        """Gives the permit's slot back (nothing to do for a rate alone): conditioned on still
        holding it, so a slot whose lease ended and another delivery took is left alone. The
        item as it is after (a drain under way may hand the slot on)."""
        if permit.slot is None:
            return self._seen.get((tenant_id, connection_id), LimitState())
        update = Update().remove(f"s{permit.slot}", f"h{permit.slot}")
        update.where(f"{update.name(f'h{permit.slot}')} = {update.value(holder)}")
        try:
            item = self._table.update(keys.connection_limit_key(tenant_id, connection_id), update)
        except ConditionFailed as failed:
            item = failed.old or {}
        state = limit_state_from(item)
        self._seen[(tenant_id, connection_id)] = state
        return state

    # --- the drain (hub.delivery.release): one at a time per connection -------------------------

    def get(self, tenant_id: str, connection_id: str) -> LimitState:
        state = limit_state_from(self._table.get(keys.connection_limit_key(tenant_id, connection_id)))
        self._seen[(tenant_id, connection_id)] = state
        return state

    def settled(self, state: LimitState, now_ms: int) -> LimitState:
        """`state` with the slots whose holders' runs are over counted free (what a drain may
        release into)."""
        return without_ended(state, self._ended(state, now_ms))

    def claim_drain(
        self, tenant_id: str, connection_id: str, *, run: str, first: str, now_ms: int, lease_ms: int
    ) -> bool:
        """Starts drain `run`, whose job `first` runs next, unless a live drain holds the lease."""
        update = Update().set(
            tenant_id=tenant_id, drain_until=now_ms + lease_ms, drain_by=run, drain_next=first
        )
        until = update.name("drain_until")
        update.where(f"attribute_not_exists({until}) OR {until} < {update.value(now_ms)}")
        return self._applied(tenant_id, connection_id, update)

    def run_drain(
        self,
        tenant_id: str,
        connection_id: str,
        *,
        run: str,
        job: str,
        following: str,
        now_ms: int,
        lease_ms: int,
    ) -> bool:
        """Job `job` of drain `run` runs: renews the lease and names `following` (already sent)
        the one job to run next. False when `job` is not the one (a copy, or one a crash-retry
        replaced), or the drain ended: that job then does nothing."""
        update = Update().set(drain_until=now_ms + lease_ms, drain_next=following)
        update.where(f"{update.name('drain_by')} = {update.value(run)}")
        update.where(f"{update.name('drain_next')} = {update.value(job)}")
        return self._applied(tenant_id, connection_id, update)

    def end_drain(self, tenant_id: str, connection_id: str, *, run: str) -> None:
        """Gives the drain lease back (if this run still holds it): new deliveries go straight
        to the destination again."""
        update = Update().remove("drain_until", "drain_by", "drain_next")
        update.where(f"{update.name('drain_by')} = {update.value(run)}")
        self._applied(tenant_id, connection_id, update)

    def _applied(self, tenant_id: str, connection_id: str, update: Update) -> bool:
        """Applies a conditional update of the connection's limit item; False when its condition
        did not hold."""
        try:
            self._table.update(keys.connection_limit_key(tenant_id, connection_id), update)
        except ConditionFailed:
            return False
        return True
