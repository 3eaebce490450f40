"""A clock tests move by hand; each reading can also tick (so two reads are never equal)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

EPOCH = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class FakeClock:
    def __init__(self, start: datetime = EPOCH, tick: timedelta = timedelta(0)) -> None:
        self.now = start
        self.tick = tick
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            current = self.now
            self.now += self.tick
            return current

    def advance(self, by: timedelta) -> datetime:
        with self._lock:
            self.now += by
            return self.now
