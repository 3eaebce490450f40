"""A connection's pause and breaker state, and its held set (issue 12), on the hub table.

- ``CONNSTATE#<tenant>#<connection>`` / ``STATE``: paused, circuit, probe claim, counting window,
  counters (hub.delivery.breaker.ConnectionState). Every change of state is one conditional
  write; a change that is an event (paused, resumed, circuit opened / closed) is a transaction
  with its event item (hub.adapters.dynamo.outbox.event_put), the event id
  ``<tenant>:<connection>:state:<version>``. Apart from the connection's own item, which an admin PUT
  replaces whole.
- ``HELD#<tenant>#<connection>`` / ``<message_id>``: one pointer per held message, written after the
  message's finishing update moved it to `retry_pending` / `held_reason`; the release job pages
  through the partition with a cursor and deletes each pointer it handled (conditioned on the
  pointer's `seq`, so a newer hold of the same message keeps its own).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.messages import record_from
from hub.adapters.dynamo.outbox import event_put
from hub.adapters.dynamo.table import ConditionFailed, Table, TransactionCancelled, Update, format_ts
from hub.delivery.breaker import BreakerPolicy, Circuit, ConnectionState, PageClaim, release_page_key
from hub.domain.message import MessageRecord
from hub.outbox.events import EventType, OutboxEvent

_ROUNDS = 3


@dataclass(frozen=True)
class HeldPointer:
    message_id: str
    seq: int
    reason: str


def _ts(value: Any) -> datetime | None:
    return datetime.fromisoformat(str(value)) if value else None


def state_from(tenant_id: str, connection_id: str, item: Mapping[str, Any] | None) -> ConnectionState:
    if not item:
        return ConnectionState(connection_id=connection_id, tenant_id=tenant_id)
    return ConnectionState(
        connection_id=connection_id,
        tenant_id=tenant_id,
        paused=bool(item.get("paused", False)),
        circuit=Circuit(str(item.get("circuit", Circuit.CLOSED.value))),
        probe_at=_ts(item.get("probe_at")),
        probe_message=item.get("probe_message"),
        probe_until=_ts(item.get("probe_until")),
        cooldown_seconds=int(item.get("cooldown_seconds", 0)),
        opened_count=int(item.get("opened_count", 0)),
        release_generation=int(item.get("release_generation", 0)),
        release_page=str(item.get("release_page", "")),
        version=int(item.get("version", 0)),
        window_start=_ts(item.get("window_start")),
        failures=int(item.get("failures", 0)),
        attempts=int(item.get("attempts", 0)),
    )


def _at_version(update: Update, version: int) -> None:
    alias = update.name("version")
    expected = f"{alias} = {update.value(version)}"
    update.where(f"attribute_not_exists({alias}) OR {expected}" if version == 0 else expected)


class DynamoConnectionStates:
    """hub.delivery.gate.ConnectionStates over the hub table."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "connection state storage")

    # --- state ----------------------------------------------------------------------------

    def get(self, tenant_id: str, connection_id: str) -> ConnectionState:
        return state_from(
            tenant_id, connection_id, self._table.get(keys.connection_state_key(tenant_id, connection_id))
        )

    def count(
        self,
        tenant_id: str,
        connection_id: str,
        *,
        failures: int,
        attempts: int,
        now: datetime,
        policy: BreakerPolicy,
    ) -> ConnectionState:
        """Adds to the counting window (a tumbling window of `policy.window`: an expired one
        starts again with these counts). One UpdateItem (two at a window's turn)."""
        key = keys.connection_state_key(tenant_id, connection_id)
        cutoff = format_ts(now - policy.window)
        for _ in range(_ROUNDS):
            add = Update().set(tenant_id=tenant_id).add("failures", failures).add("attempts", attempts)
            start = add.name("window_start")
            add.set_expression(f"{start} = if_not_exists({start}, {add.value(format_ts(now))})")
            add.where(f"attribute_not_exists({start}) OR {start} > {add.value(cutoff)}")
            try:
                return state_from(tenant_id, connection_id, self._table.update(key, add))
            except ConditionFailed:
                pass
            restart = Update().set(
                tenant_id=tenant_id, window_start=format_ts(now), failures=failures, attempts=attempts
            )
            restart.where(f"{restart.name('window_start')} <= {restart.value(cutoff)}")
            try:
                return state_from(tenant_id, connection_id, self._table.update(key, restart))
            except ConditionFailed:
                continue  # another instance turned the window meanwhile: add to its one
        return self.get(tenant_id, connection_id)

    def open(self, state: ConnectionState, now: datetime, cooldown_seconds: int) -> ConnectionState | None:
        """closed -> open with its `connection.circuit_opened` event, in one transaction; None
        when the state changed meanwhile (another instance opened it)."""
        update = Update().set(
            tenant_id=state.tenant_id,
            circuit=Circuit.OPEN.value,
            opened_at=format_ts(now),
            probe_at=format_ts(now + timedelta(seconds=cooldown_seconds)),
            cooldown_seconds=cooldown_seconds,
        )
        update.remove("probe_message", "probe_until").add("opened_count").add("version")
        circuit = update.name("circuit")
        update.where(f"attribute_not_exists({circuit}) OR {circuit} = {update.value(Circuit.CLOSED.value)}")
        _at_version(update, state.version)
        event = self._event(
            state,
            EventType.CONNECTION_CIRCUIT_OPENED,
            now,
            failures=state.failures,
            attempts=state.attempts,
            cooldown_seconds=cooldown_seconds,
        )
        return self._transact(state.tenant_id, state.connection_id, update, event, now)

    def claim_probe(
        self, tenant_id: str, connection_id: str, message_id: str, now: datetime, lease: timedelta
    ) -> ConnectionState | None:
        """Makes `message_id` the open breaker's one probe (None: not due, or another's)."""
        update = Update().set(probe_message=message_id, probe_until=format_ts(now + lease))
        update.where(f"{update.name('circuit')} = {update.value(Circuit.OPEN.value)}")
        update.where(f"{update.name('probe_at')} <= {update.value(format_ts(now))}")
        until, holder = update.name("probe_until"), update.name("probe_message")
        update.where(
            f"attribute_not_exists({until}) OR {until} < {update.value(format_ts(now))} "
            f"OR {holder} = {update.value(message_id)}"
        )
        try:
            return state_from(
                tenant_id,
                connection_id,
                self._table.update(keys.connection_state_key(tenant_id, connection_id), update),
            )
        except ConditionFailed:
            return None

    def close(
        self, tenant_id: str, connection_id: str, message_id: str, now: datetime
    ) -> ConnectionState | None:
        """The probe `message_id` succeeded: open -> closed with `connection.circuit_closed`, the
        window restarted and a new release generation, in one transaction (None: not our probe
        any more)."""
        for _ in range(_ROUNDS):
            state = self.get(tenant_id, connection_id)
            if state.circuit is not Circuit.OPEN or state.probe_message != message_id:
                return None
            update = Update().set(
                circuit=Circuit.CLOSED.value,
                closed_at=format_ts(now),
                window_start=format_ts(now),
                failures=0,
                attempts=0,
                cooldown_seconds=0,
                release_page=release_page_key(state.release_generation + 1, None),
            )
            update.remove("probe_message", "probe_until", "probe_at", "release_lease_until")
            update.add("version").add("release_generation")
            update.where(f"{update.name('probe_message')} = {update.value(message_id)}")
            _at_version(update, state.version)
            event = self._event(state, EventType.CONNECTION_CIRCUIT_CLOSED, now, probe_message_id=message_id)
            closed = self._transact(tenant_id, connection_id, update, event, now)
            if closed is not None:
                return closed
        return None

    def reopen(
        self, tenant_id: str, connection_id: str, message_id: str, now: datetime, cooldown_seconds: int
    ) -> ConnectionState | None:
        """The probe `message_id` failed: the breaker stays open, the next probe after the
        longer cool-down (no event: the state did not change)."""
        probe_at = format_ts(now + timedelta(seconds=cooldown_seconds))
        update = Update().set(probe_at=probe_at, cooldown_seconds=cooldown_seconds)
        update.remove("probe_message", "probe_until").add("opened_count")
        update.where(f"{update.name('circuit')} = {update.value(Circuit.OPEN.value)}")
        update.where(f"{update.name('probe_message')} = {update.value(message_id)}")
        try:
            return state_from(
                tenant_id,
                connection_id,
                self._table.update(keys.connection_state_key(tenant_id, connection_id), update),
            )
        except ConditionFailed as failed:
            # A resend after a lost answer (a read timeout) finds its own write applied: the
            # probe given back and exactly this next probe time (to the microsecond). Read as
            # another's, the next probe would never be scheduled and the held messages wait.
            old = failed.old
            if (
                old is not None
                and old.get("circuit") == Circuit.OPEN.value
                and "probe_message" not in old
                and old.get("probe_at") == probe_at
            ):
                return state_from(tenant_id, connection_id, old)
            return None

    def set_paused(
        self, tenant_id: str, connection_id: str, paused: bool, now: datetime, actor: str
    ) -> tuple[ConnectionState, ConnectionState] | None:
        """Pauses or resumes with its `connection.paused` / `connection.resumed` event in one
        transaction; a resume starts a new release generation. (before, after), or None when
        the connection already was so."""
        for _ in range(_ROUNDS):
            state = self.get(tenant_id, connection_id)
            if state.paused is paused:
                return None
            update = Update().set(tenant_id=tenant_id, paused=paused)
            update.set(**({"paused_at": format_ts(now)} if paused else {"resumed_at": format_ts(now)}))
            update.add("version")
            if not paused:
                update.add("release_generation").remove("release_lease_until")
                update.set(release_page=release_page_key(state.release_generation + 1, None))
            _at_version(update, state.version)
            kind = EventType.CONNECTION_PAUSED if paused else EventType.CONNECTION_RESUMED
            event = self._event(state, kind, now, actor=actor)
            after = self._transact(tenant_id, connection_id, update, event, now)
            if after is not None:
                return state, after
        return None

    def _event(self, state: ConnectionState, kind: EventType, now: datetime, **details: Any) -> OutboxEvent:
        return OutboxEvent(
            # Connection ids are unique within a tenant only: the event id names the tenant.
            id=f"{state.tenant_id}:{state.connection_id}:state:{state.version + 1}",
            type=kind,
            tenant_id=state.tenant_id,
            occurred_at=now,
            connection_id=state.connection_id,
            details=details,
        )

    def _transact(
        self, tenant_id: str, connection_id: str, update: Update, event: OutboxEvent, now: datetime
    ) -> ConnectionState | None:
        key = keys.connection_state_key(tenant_id, connection_id)
        try:
            self._table.transact([self._table.update_entry(key, update), event_put(self._table, event, now)])
        except TransactionCancelled:
            return None
        return self.get(tenant_id, connection_id)

    # --- the release's pages ---------------------------------------------------------------

    def claim_release_page(
        self,
        tenant_id: str,
        connection_id: str,
        generation: int,
        page: str,
        *,
        now: datetime,
        lease: timedelta,
    ) -> PageClaim:
        """Claims the release's next page `page` of `generation` for `lease`. Not claimed: the
        page was released already or a newer release started (nothing to do), or a run holds it
        until `busy_until` (another copy of the job, or a run that died with it)."""
        update = Update().set(release_lease_until=format_ts(now + lease))
        update.where(f"{update.name('release_generation')} = {update.value(generation)}")
        update.where(f"{update.name('release_page')} = {update.value(page)}")
        until = update.name("release_lease_until")
        update.where(f"attribute_not_exists({until}) OR {until} < {update.value(format_ts(now))}")
        try:
            self._table.update(keys.connection_state_key(tenant_id, connection_id), update)
        except ConditionFailed as failed:
            old = failed.old or {}
            held_until = old.get("release_lease_until")
            if old.get("release_generation") == generation and old.get("release_page") == page and held_until:
                return PageClaim(claimed=False, busy_until=datetime.fromisoformat(str(held_until)))
            return PageClaim(claimed=False)
        return PageClaim(claimed=True)

    def advance_release(self, tenant_id: str, connection_id: str, page: str, following: str) -> None:
        """The page `page` is released: the release goes on with `following`."""
        update = Update().set(release_page=following).remove("release_lease_until")
        update.where(f"{update.name('release_page')} = {update.value(page)}")
        try:
            self._table.update(keys.connection_state_key(tenant_id, connection_id), update)
        except ConditionFailed:
            return  # a newer release started meanwhile

    # --- the held set ---------------------------------------------------------------------

    def hold(self, connection_id: str, record: MessageRecord, reason: str, now: datetime) -> None:
        """The pointer of a held message (idempotent: the same hold writes the same item)."""
        self._table.put(
            {
                **keys.held_key(record.tenant_id, connection_id, record.message_id),
                "item_type": "held",
                "tenant_id": record.tenant_id,
                "message_id": record.message_id,
                "seq": record.step_seq,
                "reason": reason,
                "held_at": format_ts(now),
            }
        )

    def held_page(
        self, tenant_id: str, connection_id: str, limit: int, cursor: str | None
    ) -> tuple[list[HeldPointer], str | None]:
        """Up to `limit` pointers after `cursor` (a message id), oldest message first."""
        partition = keys.held_partition(tenant_id, connection_id)
        request: dict[str, Any] = {
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": partition}},
            "Limit": limit,
            "ConsistentRead": True,
        }
        if cursor:
            request["ExclusiveStartKey"] = {"PK": {"S": partition}, "SK": {"S": cursor}}
        rows, last = self._table.query(**request)
        pointers = [HeldPointer(str(r["message_id"]), int(r["seq"]), str(r.get("reason", ""))) for r in rows]
        return pointers, (str(last["SK"]) if last else None)

    def held_messages(self, message_ids: Sequence[str]) -> dict[str, MessageRecord]:
        if not message_ids:
            return {}
        found = self._table.batch_get([keys.message_key(m) for m in message_ids])
        records = (record_from(item) for item in found.values())
        return {record.message_id: record for record in records}

    def unhold(self, tenant_id: str, connection_id: str, message_id: str, seq: int | None = None) -> None:
        """Deletes the pointer (only the hold at `seq`, when given)."""
        try:
            if seq is None:
                self._table.delete(keys.held_key(tenant_id, connection_id, message_id))
            else:
                self._table.delete(
                    keys.held_key(tenant_id, connection_id, message_id),
                    condition="seq = :seq",
                    values={":seq": seq},
                )
        except ConditionFailed:
            return  # held again since (a newer pointer) or gone already
