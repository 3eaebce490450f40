"""An in-memory pipeline queue (`hub.ports.StepQueue`): records each published step with its
delay; told to fail, it raises QueueUnavailable as the SQS adapter does."""

from __future__ import annotations

import threading
from dataclasses import dataclass

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
