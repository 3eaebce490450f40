"""Which changes of the hub table are events, and what an event says (hub.outbox.events)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer

from hub.adapters.dynamo.outbox import event_item
from hub.outbox.events import EventType, OutboxEvent, events_of_record, message_event

T0 = "2026-12-01T10:00:00.000000Z"


def message(**changes: Any) -> dict[str, Any]:
    item = {
        "PK": "MSG#msg_1",
        "SK": "STATUS",
        "message_id": "msg_1",
        "tenant_id": "t1",
        "integration_id": "int_a",
        "message_type": "order",
        "pipeline_status": "received",
        "received_at": T0,
        "updated_at": T0,
        "execution_id": "exe_1",
        "version": 1,
        "payload": '{"card": "4111"}',
    }
    item.update(changes)
    return {k: v for k, v in item.items() if v is not None}


def record(name: str, new: dict[str, Any] | None, old: dict[str, Any] | None = None) -> dict[str, Any]:
    typed = TypeSerializer().serialize
    change: dict[str, Any] = {"SequenceNumber": "100"}
    if new is not None:
        change["NewImage"] = {k: typed(v) for k, v in new.items()}
    if old is not None:
        change["OldImage"] = {k: typed(v) for k, v in old.items()}
    return {"eventName": name, "dynamodb": change}


def test_the_insert_of_a_message_is_its_received_event() -> None:
    event = message_event(None, message())

    assert event is not None
    assert (event.id, event.type, event.version) == ("msg_1:1", EventType.MESSAGE_RECEIVED, 1)
    assert (event.status_before, event.status_after) == (None, "received")
    assert event.occurred_at == datetime(2026, 12, 1, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        ("sent", EventType.MESSAGE_SENT),
        ("error", EventType.MESSAGE_ERROR),
        ("retry_pending", EventType.MESSAGE_RETRY_SCHEDULED),
        ("dead_letter", EventType.MESSAGE_DEAD_LETTERED),
        ("cancelled", EventType.MESSAGE_RETRY_CANCELLED),
        ("received_observed", EventType.MESSAGE_OBSERVED),
        ("duplicate_rejected", EventType.MESSAGE_DUPLICATE_REJECTED),
        ("mapped", EventType.MESSAGE_MAPPED),
    ],
)
def test_each_new_status_names_its_event(status: str, kind: EventType) -> None:
    event = message_event(
        message(), message(pipeline_status=status, version=3, last_retry_error_class="http_5xx")
    )

    assert event is not None
    assert (event.id, event.type, event.status_before, event.status_after) == (
        "msg_1:3",
        kind,
        "received",
        status,
    )
    failed = status in ("error", "retry_pending", "dead_letter")
    assert event.error_class == ("http_5xx" if failed else None)


def test_a_change_that_moves_no_announced_field_is_no_event() -> None:
    taken = message(version=2, lease_owner="run_1", lease_until=1, step_seq=1)
    given_back = message(version=3, step_seq=1)

    assert message_event(message(), taken) is None
    assert message_event(taken, given_back) is None


def test_another_retry_of_a_waiting_message_is_another_retry_scheduled_event() -> None:
    first = message(pipeline_status="retry_pending", retry_count=1, version=3)
    second = message(pipeline_status="retry_pending", retry_count=2, version=5, next_retry_at=T0)

    event = message_event(first, second)

    assert event is not None
    assert (event.type, event.retry_count, event.next_retry_at) == (EventType.MESSAGE_RETRY_SCHEDULED, 2, T0)


def test_a_reprocess_of_a_message_left_in_received_is_a_new_received_event() -> None:
    event = message_event(message(version=4), message(version=5, execution_id="exe_2"))

    assert event is not None
    assert (event.type, event.status_before) == (EventType.MESSAGE_RECEIVED, "received")


def test_a_confirmation_alone_is_a_delivery_status_event() -> None:
    sent = message(pipeline_status="sent", version=4)

    event = message_event(sent, {**sent, "delivery_status": "delivered", "version": 5})

    assert event is not None
    assert (event.type, event.delivery_status, event.id) == (
        EventType.MESSAGE_DELIVERY_STATUS_CHANGED,
        "delivered",
        "msg_1:5",
    )


def test_an_event_body_never_carries_the_payload_and_leaves_unset_fields_out() -> None:
    event = message_event(None, message())
    assert event is not None

    body = event.body()

    assert body["id"] == "msg_1:1"
    assert body["type"] == "message.received"
    assert body["timestamp"].startswith("2026-12-01T10:00:00")
    assert "4111" not in str(body)
    assert "dest_status" not in body["data"]
    assert body["data"]["message_id"] == "msg_1"


def test_stream_records_of_messages_and_event_items_are_events_and_others_are_not() -> None:
    connection_event = OutboxEvent(
        id="evt_1",
        type=EventType.CONNECTION_CIRCUIT_OPENED,
        tenant_id="t1",
        occurred_at=datetime(2026, 12, 1, tzinfo=UTC),
        connection_id="conn_a",
        details={"failures": 10},
    )
    item = event_item(connection_event, datetime(2026, 12, 1, tzinfo=UTC))

    assert events_of_record(record("INSERT", item)) == [connection_event]
    assert events_of_record(record("REMOVE", None, item)) == []  # its TTL expiry
    assert events_of_record(record("MODIFY", item, item)) == []
    assert [e.id for e in events_of_record(record("INSERT", message()))] == ["msg_1:1"]
    assert events_of_record(record("INSERT", {"PK": "APIKEY#x", "SK": "APIKEY"})) == []
    assert events_of_record(record("MODIFY", message(version=2, lease_owner="r"), message())) == []
