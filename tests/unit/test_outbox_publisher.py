"""The publisher's order and failure rules (hub.outbox.publisher), with sinks that record."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from boto3.dynamodb.types import TypeSerializer

from hub.errors import ServiceUnavailable
from hub.outbox.events import OutboxEvent
from hub.outbox.publisher import CHUNK, Publisher


class RecordingSink:
    name = "recording"

    def __init__(self, fail_on_call: int | None = None) -> None:
        self.calls: list[list[str]] = []
        self._fail_on = fail_on_call

    def publish(self, events: Sequence[OutboxEvent]) -> None:
        if self._fail_on is not None and len(self.calls) == self._fail_on:
            self.calls.append([])
            raise ServiceUnavailable("down")
        self.calls.append([e.id for e in events])


def inserted(n: int) -> dict[str, Any]:
    typed = TypeSerializer().serialize
    item = {
        "PK": f"MSG#m{n}",
        "SK": "STATUS",
        "message_id": f"m{n}",
        "tenant_id": "t1",
        "integration_id": "i",
        "pipeline_status": "received",
        "received_at": "2026-12-01T10:00:00Z",
        "execution_id": "e",
        "version": 1,
    }
    return {
        "eventName": "INSERT",
        "dynamodb": {"SequenceNumber": str(1000 + n), "NewImage": {k: typed(v) for k, v in item.items()}},
    }


def test_events_go_to_every_sink_in_stream_order_in_chunks() -> None:
    first, second = RecordingSink(), RecordingSink()
    records = [inserted(n) for n in range(CHUNK + 3)]

    report = Publisher([first, second]).publish(records)

    expected = [[f"m{n}:1" for n in range(CHUNK)], [f"m{n}:1" for n in range(CHUNK, CHUNK + 3)]]
    assert first.calls == expected
    assert second.calls == expected
    assert (report.events, report.failed_sequences) == (CHUNK + 3, [])


def test_a_failing_sink_stops_the_batch_at_the_first_record_of_its_chunk() -> None:
    sink = RecordingSink(fail_on_call=1)
    records = [inserted(n) for n in range(2 * CHUNK + 5)]

    report = Publisher([sink]).publish(records)

    # The second chunk failed: Lambda resumes at its first record; nothing after it was handed on.
    assert report.failed_sequences == [str(1000 + CHUNK)]
    assert len(sink.calls) == 2
    assert report.events == CHUNK


def test_an_unreadable_record_is_skipped_not_retried_forever() -> None:
    sink = RecordingSink()
    broken = inserted(1)
    del broken["dynamodb"]["NewImage"]["tenant_id"]

    report = Publisher([sink]).publish([broken, inserted(2)])

    assert sink.calls == [["m2:1"]]
    assert report.failed_sequences == []
