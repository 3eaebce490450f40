"""An in-memory metrics sink (`hub.ports.Metrics`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    name: str
    value: float
    dimensions: tuple[tuple[str, str], ...]


class FakeMetrics:
    def __init__(self) -> None:
        self.counts: list[Point] = []
        self.durations: list[Point] = []
        self._lock = threading.Lock()

    def count(self, name: str, value: float = 1, **dimensions: str) -> None:
        with self._lock:
            self.counts.append(Point(name, value, tuple(sorted(dimensions.items()))))

    def duration_ms(self, name: str, milliseconds: float, **dimensions: str) -> None:
        with self._lock:
            self.durations.append(Point(name, milliseconds, tuple(sorted(dimensions.items()))))

    def total(self, name: str, **dimensions: str) -> float:
        """The sum of `name`'s counts whose dimensions include `dimensions`."""
        wanted = set(dimensions.items())
        return sum(p.value for p in self.counts if p.name == name and wanted <= set(p.dimensions))

    def names(self) -> set[str]:
        return {p.name for p in self.counts}
