"""The outbox publisher: stream records of the hub table -> events -> every sink (outbound
webhook subscriptions, the EventBridge bus).

Records are handled in stream order, in chunks of at most `CHUNK` events. When a sink fails on
a chunk, the first record of that chunk and every later one are left for Lambda to deliver again
(ReportBatchItemFailures: a stream resumes at the lowest failed sequence number), so nothing
after a failure is published ahead of it, and a redelivered record yields the same event id.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hub.errors import HubError
from hub.outbox.events import OutboxEvent, events_of_record
from hub.outbox.ports import EventSink

logger = logging.getLogger(__name__)

#: Events handed to the sinks at once: SQS SendMessageBatch and EventBridge PutEvents both take
#: ten entries per request.
CHUNK = 10


@dataclass
class PublishReport:
    events: int = 0
    #: Sequence numbers of the records to deliver again (the first failed one is enough).
    failed_sequences: list[str] = field(default_factory=list)
    per_type: dict[str, int] = field(default_factory=dict)


class Publisher:
    def __init__(self, sinks: Sequence[EventSink]) -> None:
        self._sinks = tuple(sinks)

    def publish(self, records: Sequence[Mapping[str, Any]]) -> PublishReport:
        report = PublishReport()
        chunk: list[tuple[str, OutboxEvent]] = []
        for record in records:
            sequence = str((record.get("dynamodb") or {}).get("SequenceNumber", ""))
            try:
                events = events_of_record(record)
            except (ValueError, KeyError) as exc:
                # A record we cannot read is not retried forever: it is logged (ids only) and
                # skipped, as a retry would fail the same way.
                logger.error(
                    "outbox record unreadable, skipped",
                    extra={"sequence": sequence, "error": type(exc).__name__},
                )
                continue
            for event in events:
                chunk.append((sequence, event))
                if len(chunk) == CHUNK:
                    if not self._flush(chunk, report):
                        return report
                    chunk = []
        if chunk:
            self._flush(chunk, report)
        return report

    def _flush(self, chunk: list[tuple[str, OutboxEvent]], report: PublishReport) -> bool:
        events = [event for _, event in chunk]
        for sink in self._sinks:
            try:
                sink.publish(events)
            except HubError as exc:
                logger.warning(
                    "outbox sink failed, records left for redelivery",
                    extra={"sink": sink.name, "code": exc.code, "first_event": events[0].id},
                )
                report.failed_sequences.append(chunk[0][0])
                return False
        report.events += len(events)
        for event in events:
            report.per_type[event.type.value] = report.per_type.get(event.type.value, 0) + 1
        return True
