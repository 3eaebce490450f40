"""An in-memory pipeline queue (`hub.ports.StepQueue`): records each published step with its
delay; told to fail, it raises QueueUnavailable as the SQS adapter does. And the worker's way
back to it for a record it did not take (`hub.pipeline.batch.Redelivery`)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hub.domain.message import StepMessage
from hub.errors import QueueUnavailable


@dataclass(frozen=True)
class Published:
    step: StepMessage
    delay_seconds: int


class FakeQueue:
    def __init__(self) -> None:
        self.published: list[Published] = []
        #: Publishes to refuse from now on (-1: every one).
        self.failures = 0
        self._lock = threading.Lock()

    def fail(self, times: int = -1) -> None:
        """Makes the next `times` publishes (every one with -1) raise QueueUnavailable."""
        self.failures = times

    def publish(self, step: StepMessage, delay_seconds: int = 0) -> None:
        with self._lock:
            if self.failures:
                self.failures -= 1 if self.failures > 0 else 0
                raise QueueUnavailable(
                    "the pipeline queue is temporarily unavailable", details={"operation": "SendMessage"}
                )
            self.published.append(Published(step, delay_seconds))

    @property
    def steps(self) -> list[StepMessage]:
        return [p.step for p in self.published]

    def drain(self) -> list[Published]:
        """Takes every published step off the queue (oldest first)."""
        with self._lock:
            taken, self.published = self.published, []
        return taken


@dataclass(frozen=True)
class SentBack:
    body: str
    message_attributes: Mapping[str, Mapping[str, Any]]
    group_id: str | None


class FakeRedelivery:
    """The worker's way back to the queue (`hub.pipeline.batch.Redelivery`): records each copy
    sent back; told to fail, it raises QueueUnavailable as the SQS adapter does."""

    def __init__(self) -> None:
        self.sent: list[SentBack] = []
        self.failing = False

    def send_again(
        self, body: str, message_attributes: Mapping[str, Mapping[str, Any]], group_id: str | None
    ) -> None:
        if self.failing:
            raise QueueUnavailable(
                "the pipeline queue is temporarily unavailable", details={"operation": "SendMessage"}
            )
        self.sent.append(SentBack(body, message_attributes, group_id))
