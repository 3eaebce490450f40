"""Delivery-status callbacks (pattern 5): the rank rules, the callback body, the one update that
advances the projection and the outbox event its stream record becomes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.adapters.dynamo.callbacks import advance_update
from hub.adapters.dynamo.messages import record_item
from hub.api.http import validated
from hub.domain.delivery_status import (
    CallbackCredential,
    CallbackStatus,
    DeliveryStatus,
    StatusCallback,
    hash_callback_token,
    may_follow,
    sources_of,
)
from hub.domain.message import MessageRecord, PayloadFormat
from hub.domain.status import PipelineStatus
from hub.errors import ValidationFailed
from hub.outbox.events import EventType, message_event

D = DeliveryStatus
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)

#: current -> the statuses that advance it (the decision, spelled out).
EXPECTED = {
    D.PENDING: {D.ACCEPTED, D.DELIVERED, D.READ, D.REJECTED, D.EXPIRED},
    D.ACCEPTED: {D.DELIVERED, D.READ, D.REJECTED, D.EXPIRED},
    D.DELIVERED: {D.READ},
    D.READ: set(),
    D.REJECTED: set(),
    D.EXPIRED: set(),
}


@pytest.mark.parametrize("current", list(DeliveryStatus))
@pytest.mark.parametrize("new", list(DeliveryStatus))
def test_what_may_follow_what(current, new):
    assert may_follow(current, new) is (new in EXPECTED[current])


def test_no_callback_yet_is_pending():
    assert may_follow(None, D.ACCEPTED)
    assert not may_follow(None, D.PENDING)


def test_sources_are_the_inverse_of_the_rule():
    assert sources_of(D.READ) == {D.PENDING, D.ACCEPTED, D.DELIVERED}
    assert sources_of(D.DELIVERED) == {D.PENDING, D.ACCEPTED}
    assert sources_of(D.ACCEPTED) == {D.PENDING}
    assert sources_of(D.REJECTED) == sources_of(D.EXPIRED) == {D.PENDING, D.ACCEPTED}


def _fold(statuses: list[DeliveryStatus]) -> DeliveryStatus:
    current = D.PENDING
    for status in statuses:
        if may_follow(current, status):
            current = status
    return current


@given(st.permutations([D.ACCEPTED, D.DELIVERED, D.READ]))
def test_the_ladder_in_any_order_ends_at_its_highest_rank(order):
    assert _fold(list(order)) is D.READ


@given(st.lists(st.sampled_from([D.ACCEPTED, D.DELIVERED, D.READ]), min_size=1, max_size=12))
def test_any_ladder_sequence_ends_at_the_highest_rank_it_holds(sequence):
    assert _fold(sequence) is max(sequence, key=[D.ACCEPTED, D.DELIVERED, D.READ].index)


def test_a_failure_is_terminal_and_a_late_delivered_after_read_moves_nothing():
    assert _fold([D.ACCEPTED, D.REJECTED, D.DELIVERED, D.READ]) is D.REJECTED
    assert _fold([D.READ, D.DELIVERED]) is D.READ
    assert _fold([D.DELIVERED, D.EXPIRED]) is D.DELIVERED


# --- the body -----------------------------------------------------------------------------------


def test_a_full_body_is_taken():
    body = {
        "status": "delivered",
        "occurred_at": "2026-12-01T09:59:58.123+02:00",
        "detail": "handset confirmed",
        "external_ref": "wamid.HBgL",
    }
    callback = validated(StatusCallback, body)
    assert callback.status is CallbackStatus.DELIVERED
    assert callback.occurred_at is not None
    assert callback.occurred_at.utcoffset() is not None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "status"),
        ({"status": "pending"}, "status"),  # the hub's own starting point, not a report
        ({"status": "DELIVERED"}, "status"),
        ({"status": 3}, "status"),
        ({"status": "read", "extra": 1}, "extra"),
        ({"status": "read", "occurred_at": "2026-12-01T10:00:00"}, "occurred_at"),  # no offset
        ({"status": "read", "occurred_at": 1795953601}, "occurred_at"),  # Unix seconds
        ({"status": "read", "occurred_at": "2026-12-01"}, "occurred_at"),
        ({"status": "read", "occurred_at": "yesterday"}, "occurred_at"),
        ({"status": "read", "detail": ""}, "detail"),
        ({"status": "read", "detail": "x" * 501}, "detail"),
        ({"status": "read", "detail": "line\nbreak"}, "detail"),
        ({"status": "read", "external_ref": "r" * 256}, "external_ref"),
        ({"status": "read", "external_ref": 7}, "external_ref"),
    ],
)
def test_bad_bodies_name_the_field_and_never_echo_it(body, field):
    with pytest.raises(ValidationFailed) as refused:
        validated(StatusCallback, body)
    fields = [d["field"] for d in refused.value.details]
    assert field in fields
    assert all(set(d) == {"field", "problem", "message"} for d in refused.value.details)
    assert "xxxxxxxx" not in str(refused.value.details)
    assert "rrrrrrrr" not in str(refused.value.details)


# --- the credential ---------------------------------------------------------------------------


def test_the_previous_token_works_only_within_its_grace():
    credential = CallbackCredential(
        connection_id="con_1",
        tenant_id="t1",
        token_id="cbt_1",
        token_sha256=hash_callback_token("new"),
        prefix="hub_cb_x",
        minted_at=NOW,
        previous_sha256=hash_callback_token("old"),
        previous_until=datetime(2026, 12, 2, tzinfo=UTC),
    )
    assert credential.accepts(hash_callback_token("new"), NOW)
    assert credential.accepts(hash_callback_token("old"), NOW)
    assert not credential.accepts(hash_callback_token("old"), datetime(2026, 12, 2, tzinfo=UTC))
    assert not credential.accepts(hash_callback_token("other"), NOW)


# --- the update and its outbox event ----------------------------------------------------------


def _stored_message(**changes: Any) -> dict[str, Any]:
    record = MessageRecord(
        message_id="msg_01jxyz0000000000000000000a",
        tenant_id="t1",
        integration_id="int_1",
        message_type="order",
        pipeline_status=PipelineStatus.SENT,
        received_at=NOW,
        updated_at=NOW,
        correlation_id="c-1",
        execution_id="exe_1",
        payload_format=PayloadFormat.JSON,
        payload_bytes=10,
        dest_status="200",
    )
    return {**record_item(record), "version": 7, "step_seq": 2, **changes}


def _applied(old: dict[str, Any], status: DeliveryStatus, at: datetime) -> dict[str, Any]:
    """The item as the update leaves it: its SET and ADD clauses applied to `old`."""
    update = advance_update("t1", status, at)
    assert update is not None
    assert update.adds == {"version": 1}
    assert not update.removes
    assert not update.raw_sets
    new = {**old, **update.sets}
    new["version"] = old["version"] + 1
    return new


def test_the_update_is_one_conditional_write_that_adds_one_to_the_version():
    update = advance_update("t1", D.READ, NOW)
    assert update is not None
    expression = update.expression()
    assert "ADD #version" in expression
    assert "REMOVE" not in expression
    condition = update.condition() or ""
    # pending (no status stored yet), or one of the lower ranks stored; and the tenant's message.
    assert "attribute_not_exists(#delivery_status)" in condition
    assert "#delivery_status IN (" in condition
    assert "#tenant_id =" in condition
    assert {"accepted", "delivered", "t1", "read"} <= set(map(str, update.values.values()))


def test_an_advance_is_a_delivery_status_changed_event_with_the_message_version_as_id():
    old = _stored_message(delivery_status="accepted", delivery_status_at="2026-12-01T09:00:00.000000Z")
    at = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)
    new = _applied(old, D.DELIVERED, at)

    event = message_event(old, new)

    assert event is not None
    assert event.type is EventType.MESSAGE_DELIVERY_STATUS_CHANGED
    assert event.id == "msg_01jxyz0000000000000000000a:8"
    assert event.version == 8
    assert event.delivery_status == "delivered"
    assert event.status_before == event.status_after == "sent"
    assert event.occurred_at == at  # when the confirmation was recorded, not the last status change
    assert "payload" not in event.body()["data"]


def test_the_first_confirmation_is_an_event_too():
    old = _stored_message()
    new = _applied(old, D.ACCEPTED, NOW)

    event = message_event(old, new)

    assert event is not None
    assert event.type is EventType.MESSAGE_DELIVERY_STATUS_CHANGED
    assert event.delivery_status == "accepted"
