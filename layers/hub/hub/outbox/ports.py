"""What the publisher hands events to (hub.outbox.publisher)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from hub.outbox.events import OutboxEvent


class EventSink(Protocol):
    """Takes events durably or raises (hub.errors.ServiceUnavailable or a subclass): the stream
    record is then retried. Must accept the same event id twice (a redelivered record)."""

    name: str

    def publish(self, events: Sequence[OutboxEvent]) -> None: ...
