"""An in-memory retry scheduler (`hub.pipeline.retries.RetryScheduler`): one schedule per name
(a second `schedule` of the same name keeps the first, as EventBridge's ConflictException
does); told to fail, it raises ServiceUnavailable."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime

from hub.domain.message import StepMessage
from hub.errors import ServiceUnavailable


class FakeSchedulerUnavailable(ServiceUnavailable):
    code = "scheduler_unavailable"


@dataclass(frozen=True)
class Schedule:
    name: str
    step: StepMessage
    at: datetime


class FakeScheduler:
    def __init__(self) -> None:
        self.schedules: dict[str, Schedule] = {}
        #: Every `schedule` call that was accepted, repeats included.
        self.calls: list[Schedule] = []
        self.failures = 0
        self._lock = threading.Lock()

    def fail(self, times: int = -1) -> None:
        """The next `times` calls (every one with -1) raise FakeSchedulerUnavailable."""
        self.failures = times

    def _refuse(self) -> None:
        if self.failures:
            self.failures -= 1 if self.failures > 0 else 0
            raise FakeSchedulerUnavailable("retry scheduling is temporarily unavailable")

    def schedule(self, step: StepMessage, at: datetime, name: str) -> None:
        with self._lock:
            self._refuse()
            scheduled = Schedule(name, step, at)
            self.calls.append(scheduled)
            self.schedules.setdefault(name, scheduled)

    def cancel(self, name: str) -> bool:
        with self._lock:
            self._refuse()
            return self.schedules.pop(name, None) is not None

    def fire_all(self) -> list[StepMessage]:
        """What EventBridge does when the schedules are due: their steps, schedules deleted."""
        with self._lock:
            due, self.schedules = list(self.schedules.values()), {}
        return [s.step for s in due]
