"""The worker's finishing update keeps the message item within one DynamoDB write unit (issue 29):
an update is billed per started KB of the larger of the item before and after it, and every later
update of the item pays again. Through the real handlers on moto (resources from template.yaml)
and a real HTTP destination on 127.0.0.1; sizes by DynamoDB's rules (hub.adapters.dynamo.table)."""

from __future__ import annotations

import uuid
from typing import Any

import boto3

from hub.adapters.dynamo.messages import DynamoMessageRepository
from hub.adapters.dynamo.table import WRITE_UNIT_BYTES, decode, item_size
from hub.domain.redaction import STATUS_TEXT_LIMIT
from tests.destinations import Answer
from tests.pipeline import configure, send

#: A destination's long answer (2 KB), in letters no redaction pattern touches.
LONG_ANSWER = "accepted " * 228


def stored(stack: Any, message_id: str) -> dict[str, Any]:
    answer = boto3.client("dynamodb").get_item(
        TableName=stack.table, Key={"PK": {"S": f"MSG#{message_id}"}, "SK": {"S": "STATUS"}}
    )
    return decode(answer["Item"])


def send_keyed(ingest_api: Any, tenancy: Any, external_id: str, key: str) -> str:
    """A message (type `order`: no business key) with a long external id and Idempotency-Key:
    what makes a message item large now that its payload rides on its fingerprint claim."""
    from tests.events import http_event  # noqa: PLC0415

    body = {
        "integration_id": tenancy.integration_id,
        "message_type": "order",
        "payload": {"po_number": key[:3] + "-" + uuid.uuid4().hex[:8]},
        "external_id": external_id,
    }
    headers: dict[str, str | None] = {"authorization": f"Bearer {tenancy.key}", "idempotency-key": key}
    answer = ingest_api(http_event("receive_message.json", body=body, headers=headers))
    assert answer.status == 202, answer.body
    return str(answer.body["message_id"])


#: What the take (its lease, ~100 bytes) and the happy path's finish (`completed_at`,
#: `dest_status`, the `sent` entry with its stamp) add to a message item, about.
FINISH_ROOM = 176


def nearly_full_message(stack: Any, ingest_api: Any, tenancy: Any) -> tuple[str, dict[str, Any]]:
    """A message whose item leaves the take's lease room in its write unit, but less than the
    lease and the finish together add (FINISH_ROOM)."""
    for length in range(8, 256, 4):
        message_id = send_keyed(ingest_api, tenancy, "E" * length, f"key-{length:03d}-" + "k" * 140)
        item = stored(stack, message_id)
        if item_size(item) > WRITE_UNIT_BYTES - FINISH_ROOM:
            return message_id, item
    raise AssertionError("no message item came near the write unit")


class TestFinishWithinOneWriteUnit:
    def test_a_sent_message_near_the_unit_stays_within_1_kb(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        """Given a message whose item leaves the finish less room than it needs, and a
        destination answering 200 with a 2 KB body, when the worker delivers it, then the item
        after `sent` is within 1 KB: no text of the 2xx answer is kept (issue 27), and the process
        entry (made redundant by the delivery) is shed rather than the unit passed - the item
        says its log is no longer complete."""
        configure(stack, tenancy, destination)
        message_id, created = nearly_full_message(stack, ingest_api, tenancy)
        destination.script(Answer(200, LONG_ANSWER))

        worker()

        item = stored(stack, message_id)
        assert item["pipeline_status"] == "sent"
        assert item_size(created) <= WRITE_UNIT_BYTES
        assert item_size(item) <= WRITE_UNIT_BYTES
        assert "dest_status_text" not in item
        assert "accepted" not in repr(item)
        assert [(e["step"], e["status"], e.get("to")) for e in item["log"]] == [("sent", "success", "sent")]
        assert DynamoMessageRepository(stack.table).get(message_id).log_trimmed is True

    def test_a_message_with_room_keeps_its_whole_log(self, stack, tenancy, ingest_api, worker, destination):
        configure(stack, tenancy, destination)
        destination.script(Answer(200, LONG_ANSWER))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-W2"}, "order")

        worker()

        item = stored(stack, message_id)
        assert item_size(item) <= WRITE_UNIT_BYTES
        assert [e["step"] for e in item["log"]] == ["process", "sent"]
        assert "log_trimmed" not in item
        assert "accepted" not in repr(item)


class TestFailureKeepsItsText:
    def test_a_failed_delivery_keeps_its_bounded_answer(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        """A failure's answer is what an operator reads: it keeps its STATUS_TEXT_LIMIT
        characters, on the item and in the attempt's log entry, whatever the item's size."""
        configure(stack, tenancy, destination)
        destination.script(Answer(500, LONG_ANSWER))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-W3"}, "order")

        worker()

        item = stored(stack, message_id)
        assert item["pipeline_status"] != "sent"
        text = item["dest_status_text"]
        assert len(text) == STATUS_TEXT_LIMIT
        assert text.startswith("accepted accepted")
        assert item["log"][-1]["detail"] == text
        assert item["log"][-1]["dest_status"] == "500"
