"""EventBridge adapter: outbox events onto the hub's custom bus (seed 002's topic). A consumer
subscribes with a rule on the bus (source ``integration-hub``, detail-type = the event type)
without touching the publisher."""

from __future__ import annotations

import json
from collections.abc import Sequence
from fnmatch import fnmatchcase

from botocore.exceptions import BotoCoreError, ClientError

from hub.adapters.aws import client
from hub.errors import ServiceUnavailable
from hub.outbox.events import OutboxEvent

#: The `source` of every event the hub puts on its bus.
SOURCE = "integration-hub"
#: PutEvents takes at most 10 entries per request.
MAX_ENTRIES = 10


class EventBusUnavailable(ServiceUnavailable):
    code = "event_bus_unavailable"


class EventBridgeSink:
    """Puts the events whose type matches one of `event_types` (shell-style patterns:
    ``message.*``, ``*``) on `bus`. Entries EventBridge refuses are retried once, then the whole
    call raises: the stream record comes back, and an entry already accepted is put again with
    the same `detail.id` (consumers deduplicate by it)."""

    name = "event_bus"

    def __init__(self, bus: str, event_types: Sequence[str]) -> None:
        self._bus = bus
        self._types = tuple(t for t in event_types if t)

    def wants(self, event: OutboxEvent) -> bool:
        return any(fnmatchcase(event.type.value, pattern) for pattern in self._types)

    def publish(self, events: Sequence[OutboxEvent]) -> None:
        entries = [self._entry(e) for e in events if self.wants(e)]
        for start in range(0, len(entries), MAX_ENTRIES):
            self._put(entries[start : start + MAX_ENTRIES])

    def _entry(self, event: OutboxEvent) -> dict[str, object]:
        return {
            "Source": SOURCE,
            "DetailType": event.type.value,
            "Detail": json.dumps(event.body(), separators=(",", ":")),
            "EventBusName": self._bus,
            "Time": event.occurred_at,
        }

    def _put(self, entries: list[dict[str, object]]) -> None:
        for _ in range(2):
            try:
                answer = client("events").put_events(Entries=entries)
            except (ClientError, BotoCoreError) as exc:
                raise EventBusUnavailable("the event bus is temporarily unavailable") from exc
            if not answer.get("FailedEntryCount"):
                return
            results = answer.get("Entries") or []
            entries = [e for e, r in zip(entries, results, strict=False) if r.get("ErrorCode")]
        raise EventBusUnavailable("the event bus refused some events", details={"failed": len(entries)})
