"""Properties of the pipeline status table (hub.domain.status) and of the one function that
writes a status move (hub.adapters.dynamo.messages.status_update, pure: it only builds the
update): no sequence of moves regresses a message within an execution, a final status is left
only by the documented operator moves, and every move bumps the version, so it is one outbox
event (hub.outbox.events.message_event) and never zero.

The operator moves (seed 000, G; status.py's table comment): a reprocess starts a new execution
from `received` (from any status), and a cancel may also end a failed message (`error`,
`dead_letter` -> `cancelled`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from hub.adapters.dynamo.messages import record_from, record_item, status_update
from hub.adapters.dynamo.table import Update
from hub.domain.message import MessageRecord, PayloadFormat
from hub.domain.status import ALLOWED_TRANSITIONS, FINAL_STATUSES, PipelineStatus, can_transition, sources_of
from hub.errors import TransitionNotAllowed
from hub.outbox.events import STATUS_EVENTS, message_event, message_event_id

S = PipelineStatus
T0 = datetime(2026, 12, 1, 12, tzinfo=UTC)

#: How far an execution has gone: a move within one execution never lowers it.
RANK = {S.RECEIVED: 0, S.MAPPED: 1, S.RETRY_PENDING: 2, **dict.fromkeys(FINAL_STATUSES, 3)}
#: The documented moves out of a final status (besides a reprocess to `received`).
OPERATOR_CANCELS = {(S.ERROR, S.CANCELLED), (S.DEAD_LETTER, S.CANCELLED)}
#: The same status again within an execution: another retry scheduled.
REPEATS = {(S.RETRY_PENDING, S.RETRY_PENDING)}

statuses = st.sampled_from(list(PipelineStatus))


def test_every_status_has_its_moves_and_its_event() -> None:
    assert set(ALLOWED_TRANSITIONS) == set(PipelineStatus)
    assert set(STATUS_EVENTS) == set(PipelineStatus)
    assert set(RANK) == set(PipelineStatus)


@settings(derandomize=True, deadline=None, max_examples=100)
@given(current=statuses, target=statuses)
def test_no_allowed_move_regresses_except_the_operator_moves(current: S, target: S) -> None:
    allowed = can_transition(current, target)
    assert allowed == (current in sources_of(target))  # the update's condition agrees with the table
    if not allowed or target is S.RECEIVED:
        return  # a reprocess (to received) starts a new execution: allowed from anywhere
    if current in FINAL_STATUSES:
        assert (current, target) in OPERATOR_CANCELS
    else:
        assert RANK[target] > RANK[current] or (current, target) in REPEATS


@settings(derandomize=True, deadline=None, max_examples=30)
@given(current=statuses)
def test_a_reprocess_is_possible_from_every_status(current: S) -> None:
    assert can_transition(current, S.RECEIVED)


def _changes(record: MessageRecord, target: S, now: datetime) -> dict[str, Any]:
    """What the real callers change with each kind of move."""
    if target is S.RECEIVED:  # reprocess (adapters.dynamo.messages.reprocess)
        return {"execution_id": f"exe_{record.version + 1}", "execution_started_at": now, "retry_count": 0}
    if target is S.RETRY_PENDING:  # pipeline.retries: decide() counts the retry
        return {"retry_count": record.retry_count + 1, "next_retry_at": now + timedelta(minutes=1)}
    if target is S.CANCELLED:
        return {"next_retry_at": None, "held_reason": None, "held_on": None}
    return {"next_retry_at": None}


def _apply(item: dict[str, Any], update: Update) -> dict[str, Any]:
    """What DynamoDB makes of the update's SET, REMOVE and ADD clauses (the log aside)."""
    new = {**item, **update.sets}
    for name in update.removes:
        new.pop(name, None)
    for name, amount in update.adds.items():
        assert isinstance(amount, int)
        new[name] = new.get(name, 0) + amount
    return new


class MessageLife(RuleBasedStateMachine):
    """One message item moved by any sequence of steps and operator actions."""

    def __init__(self) -> None:
        super().__init__()
        record = MessageRecord(
            message_id="msg_1",
            tenant_id="ten_1",
            integration_id="int_1",
            message_type="order",
            pipeline_status=S.RECEIVED,
            received_at=T0,
            updated_at=T0,
            correlation_id="cor_1",
            execution_id="exe_0",
            payload_format=PayloadFormat.JSON,
            payload_bytes=2,
        )
        self.item = record_item(record)
        created = message_event(None, self.item)
        assert created is not None
        self.event_ids = [created.id]
        self.execution_rank = 0
        self.moves = 0

    @property
    def record(self) -> MessageRecord:
        return record_from(self.item)

    @rule(to=statuses)
    def move(self, to: S) -> None:
        target = to
        record = self.record
        current = record.pipeline_status
        self.moves += 1
        now = T0 + timedelta(seconds=self.moves)
        update = Update()
        if not can_transition(current, target):
            with pytest.raises(TransitionNotAllowed):
                status_update(update, record, target, now, _changes(record, target, now))
            return
        stamp = status_update(update, record, target, now, _changes(record, target, now))
        # The condition pins the status read: a concurrent move makes this one fail, not stack.
        assert current.value in update.values.values()
        assert update.adds.get("version") == 1
        old, self.item = self.item, _apply(self.item, update)
        assert self.record.version == record.version + 1 == stamp["v"]
        assert self.record.pipeline_status is target
        event = message_event(old, self.item)
        assert event is not None, f"{current} -> {target} announced nothing"
        assert event.id == message_event_id("msg_1", record.version + 1)
        assert event.type is STATUS_EVENTS[target]
        assert (event.status_before, event.status_after) == (current.value, target.value)
        self.event_ids.append(event.id)
        # Within an execution the status never goes back; a reprocess starts a new one.
        if target is S.RECEIVED:
            self.execution_rank = 0
        elif current in FINAL_STATUSES:
            assert (current, target) in OPERATOR_CANCELS
        else:
            assert RANK[target] >= self.execution_rank
            assert RANK[target] > RANK[current] or (current, target) in REPEATS
            self.execution_rank = RANK[target]

    @invariant()
    def one_event_per_version(self) -> None:
        assert len(set(self.event_ids)) == len(self.event_ids) == self.record.version + 1


MessageLife.TestCase.settings = settings(
    derandomize=True, deadline=None, max_examples=60, stateful_step_count=25
)
TestMessageLife = MessageLife.TestCase
