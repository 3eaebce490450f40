"""The worker's finishing update keeps the message item within one DynamoDB write unit (issue 29):
an update is billed per started KB of the larger of the item before and after it, and every later
update of the item pays again. Through the real handlers on moto (resources from template.yaml)
and a real HTTP destination on 127.0.0.1; sizes by DynamoDB's rules (hub.adapters.dynamo.table)."""

from __future__ import annotations

from typing import Any

import boto3

from hub.adapters.dynamo.messages import INLINE_LOG_ROOM, DynamoMessageRepository
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


def largest_inline_message(stack: Any, ingest_api: Any, tenancy: Any) -> tuple[str, dict[str, Any]]:
    """A message (type `order`: no business key) whose payload is the largest ingest still keeps
    on the item: the item then leaves exactly INLINE_LOG_ROOM for the finish (give or take the
    digits of `payload_bytes`)."""
    first = stored(stack, send(ingest_api, tenancy, {"po_number": "PO-W0", "pad": ""}, "order"))
    room = WRITE_UNIT_BYTES - INLINE_LOG_ROOM - item_size(first)
    for pad in range(room, room - 4, -1):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-W1", "pad": "p" * pad}, "order")
        item = stored(stack, message_id)
        if "payload" in item:
            return message_id, item
    raise AssertionError("no payload near the limit was kept inline")


class TestFinishWithinOneWriteUnit:
    def test_a_sent_message_with_the_largest_inline_payload_stays_within_1_kb(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        """Given a message whose inline payload leaves the item only INLINE_LOG_ROOM, and a
        destination answering 200 with a 2 KB body, when the worker delivers it, then the item
        after `sent` is within 1 KB: no text of the 2xx answer is kept (issue 27), the payload
        stays inline, and the process entry (made redundant by the delivery) is shed rather than
        the unit passed - the item says its log is no longer complete."""
        configure(stack, tenancy, destination)
        message_id, created = largest_inline_message(stack, ingest_api, tenancy)
        assert item_size(created) > WRITE_UNIT_BYTES - INLINE_LOG_ROOM - 4
        destination.script(Answer(200, LONG_ANSWER))

        worker()

        item = stored(stack, message_id)
        assert item["pipeline_status"] == "sent"
        assert item_size(item) <= WRITE_UNIT_BYTES
        assert item["payload"] == created["payload"]
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
