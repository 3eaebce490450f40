"""The outbox on mock_aws: the real pipeline changes messages, the table's real stream carries
each change, the template's FilterCriteria select what the real publisher handler reads, and a
consumer that subscribed to the hub's EventBridge bus by rule receives the events."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import boto3
import pytest

from hub import wiring
from hub.domain.retry import RetryPolicy
from tests.destinations import Answer
from tests.outbox import BusTap, Outbox, StreamReader, image
from tests.pipeline import configure, fire_all, run_with_retries, send

AUTO = RetryPolicy(retry_auto_enabled=True, retry_max=2)
MARKER = "payload-marker-7f3c"


@pytest.fixture
def outbox(stack, monkeypatch) -> Outbox:
    # Every event type onto the bus (the template's parameter OutboxBusEventTypes = "*").
    monkeypatch.setenv("HUB_BUS_EVENT_TYPES", "*")
    wiring.reset()
    return Outbox(StreamReader(stack.table))


@pytest.fixture
def tap(stack) -> BusTap:
    return BusTap.on(stack.env["HUB_EVENT_BUS_NAME"])


def details(envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["detail"] for e in envelopes]


def status_changes(records: list[dict[str, Any]], message_id: str) -> list[tuple[str | None, str, int]]:
    """Every change of the message's status the table made: (before, after, version)."""
    moves = []
    for record in records:
        new = image(record)
        if new.get("PK") != f"MSG#{message_id}" or new.get("SK") != "STATUS":
            continue
        old = image(record, "OldImage") if record["dynamodb"].get("OldImage") else None
        before = old.get("pipeline_status") if old else None
        changed = old is None or any(
            old.get(f) != new.get(f) for f in ("pipeline_status", "retry_count", "execution_id")
        )
        if changed:
            moves.append((before, str(new["pipeline_status"]), int(new["version"])))
    return moves


def test_every_status_change_of_a_retried_message_leaves_once_with_its_version_as_id(
    stack, tenancy, ingest_api, worker, destination, outbox, tap
):
    configure(stack, tenancy, destination, retry_policy=AUTO)
    destination.script(Answer(503, '{"error": "maintenance"}'), Answer(200))
    message_id = send(ingest_api, tenancy, {"n": 1, "secret": MARKER}, "order")
    worker()
    fire_all(stack)
    worker()

    answer = outbox.publish()

    assert answer == {"batchItemFailures": []}
    events = details(tap.drain())
    moves = status_changes(outbox.changes, message_id)
    # No status change without its event: the table's own changes, one event each.
    assert [
        (e["data"].get("status_before"), e["data"]["status_after"], e["data"]["version"]) for e in events
    ] == moves
    assert [e["type"] for e in events] == ["message.received", "message.retry_scheduled", "message.sent"]
    assert [e["id"] for e in events] == [f"{message_id}:{v}" for _, _, v in moves]
    versions = [e["data"]["version"] for e in events]
    assert versions == sorted(versions)
    assert len(set(versions)) == 3
    retry = events[1]["data"]
    assert (retry["error_class"], retry["dest_status"], retry["retry_count"]) == ("http_5xx", "503", 1)
    assert retry["next_retry_at"]
    sent = events[2]["data"]
    assert (sent["tenant_id"], sent["integration_id"], sent["message_id"]) == (
        "t1",
        tenancy.integration_id,
        message_id,
    )
    assert sent["dest_status"] == "200"
    assert "error_class" not in sent
    # Never the payload.
    assert MARKER not in json.dumps(events)


def test_a_redelivered_stream_batch_publishes_the_same_event_ids_again_never_new_ones(
    stack, tenancy, ingest_api, worker, destination, outbox, tap
):
    configure(stack, tenancy, destination)
    destination.script(Answer(200))
    message_id = send(ingest_api, tenancy, {"n": 2}, "order")
    worker()
    batch = outbox.pending()

    outbox.publish(batch)
    # The publisher "crashed" after putting the events: Lambda hands it the same records again.
    outbox.publish(batch)

    ids = [e["id"] for e in details(tap.drain())]
    assert Counter(ids) == {f"{message_id}:1": 2, f"{message_id}:{max_version(outbox)}": 2}
    # A consumer deduplicating by id sees each change once.
    assert len(set(ids)) == 2


def max_version(outbox: Outbox) -> int:
    return max(int(image(r).get("version", 0)) for r in outbox.changes if image(r).get("SK") == "STATUS")


def test_a_bus_outage_leaves_the_batch_to_the_stream_from_the_first_unpublished_record(
    stack, tenancy, ingest_api, worker, destination, outbox, tap
):
    configure(stack, tenancy, destination)
    destination.script(Answer(200))
    first = send(ingest_api, tenancy, {"n": 3}, "order")
    second = send(ingest_api, tenancy, {"n": 4}, "order")
    batch = outbox.pending()
    assert len(batch) == 2
    events = boto3.client("events")
    bus = stack.env["HUB_EVENT_BUS_NAME"]
    events.remove_targets(Rule="tap", EventBusName=bus, Ids=["tap"])
    events.delete_rule(Name="tap", EventBusName=bus)
    events.delete_event_bus(Name=bus)

    answer = outbox.publish(batch)

    assert answer == {"batchItemFailures": [{"itemIdentifier": batch[0]["dynamodb"]["SequenceNumber"]}]}
    events.create_event_bus(Name=bus)
    tap = BusTap.on(bus)
    assert outbox.publish(batch) == {"batchItemFailures": []}
    assert [e["id"] for e in details(tap.drain())] == [f"{first}:1", f"{second}:1"]


def test_dead_letter_and_cancel_are_announced_with_their_error_class(
    stack, tenancy, ingest_api, worker, destination, outbox, tap, admin_api
):
    configure(stack, tenancy, destination, retry_policy=AUTO)
    destination.script(Answer(503))
    dead = send(ingest_api, tenancy, {"n": 5}, "order")
    run_with_retries(stack, worker)
    outbox.publish()
    assert admin_api("POST", f"/api/admin/messages/{dead}/cancel-retry").status == 200

    outbox.publish()

    events = details(tap.drain())
    assert [e["type"] for e in events] == [
        "message.received",
        "message.retry_scheduled",
        "message.retry_scheduled",
        "message.dead_lettered",
        "message.retry_cancelled",
    ]
    assert events[3]["data"]["error_class"] == "http_5xx"
    assert events[4]["data"]["status_before"] == "dead_letter"


def test_takes_and_lease_give_backs_announce_nothing(stack, tenancy, ingest_api, worker, destination, outbox):
    configure(stack, tenancy, destination)
    destination.script(Answer(200))
    send(ingest_api, tenancy, {"n": 6}, "order")
    worker()

    selected = outbox.pending()

    message_changes = [r for r in outbox.changes if image(r).get("SK") == "STATUS"]
    # ingest's insert, the take (lease written), the finish (lease removed, status sent)
    assert len(message_changes) == 3
    assert len(selected) == 2  # the take never reaches the publisher
    assert all("lease_owner" not in image(r) for r in selected)


def test_a_gone_destination_is_announced_once_in_the_transaction_that_flags_it(
    stack, tenancy, ingest_api, worker, destination, outbox, tap
):
    configure(stack, tenancy, destination)
    destination.script(Answer(410, "gone"))
    first = send(ingest_api, tenancy, {"n": 7}, "order")
    second = send(ingest_api, tenancy, {"n": 8}, "order")
    worker()

    outbox.publish()

    events = details(tap.drain())
    gone = [e for e in events if e["type"] == "connection.gone"]
    assert len(gone) == 1  # the second 410 only moves the flag's time
    announced = gone[0]["data"]
    assert (announced["integration_id"], announced["dest_status"]) == (tenancy.integration_id, "410")
    failed = [e["data"] for e in events if e["type"] == "message.error"]
    errors = {data["message_id"]: data["error_class"] for data in failed}
    assert errors == {first: "http_410", second: "http_410"}
