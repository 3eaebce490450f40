"""In-memory fakes of the ports the use cases depend on, for tests that run in milliseconds.

The message and execution fakes share one `FakeTable`, because in DynamoDB they are the same
item; tests/contract holds each fake and its DynamoDB adapter to the same contract."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.fakes.clock import FakeClock
from tests.fakes.config import FakeConfig
from tests.fakes.connector import FakeConnector
from tests.fakes.executions import FakeExecutions
from tests.fakes.messages import FakeMessages
from tests.fakes.metrics import FakeMetrics
from tests.fakes.queue import FakeQueue, Published
from tests.fakes.scheduler import FakeScheduler, Schedule
from tests.fakes.status_index import FakeStatusIndex
from tests.fakes.table import FakeTable

__all__ = [
    "FakeClock",
    "FakeConfig",
    "FakeConnector",
    "FakeExecutions",
    "FakeHub",
    "FakeMessages",
    "FakeMetrics",
    "FakeQueue",
    "FakeScheduler",
    "FakeStatusIndex",
    "FakeTable",
    "Published",
    "Schedule",
]


@dataclass
class FakeHub:
    """Every fake, the repositories over one table."""

    table: FakeTable = field(default_factory=FakeTable)
    queue: FakeQueue = field(default_factory=FakeQueue)
    scheduler: FakeScheduler = field(default_factory=FakeScheduler)
    metrics: FakeMetrics = field(default_factory=FakeMetrics)

    def __post_init__(self) -> None:
        self.config = FakeConfig(self.table)
        self.messages = FakeMessages(self.table)
        self.executions = FakeExecutions(self.table)
        self.status_index = FakeStatusIndex(self.table)
