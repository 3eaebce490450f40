"""In-memory fakes of the ports the use cases depend on, for tests that run in milliseconds.

The configuration fakes (tenants, API keys, integrations, connections) share one `ConfigState`
of plain values. The message and execution fakes share one `FakeTable`, because the execution
state is the message item's and their contracts read that item (its lease, its log's budget in
write units, what a refused write left unchanged). tests/contract holds each fake and its
DynamoDB adapter to the same contract."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.fakes.clock import FakeClock
from tests.fakes.config import ConfigState, FakeConfig
from tests.fakes.connector import FakeConnector
from tests.fakes.executions import FakeExecutions
from tests.fakes.messages import FakeMessages
from tests.fakes.metrics import FakeMetrics
from tests.fakes.queue import FakeQueue, Published
from tests.fakes.scheduler import FakeScheduler, Schedule
from tests.fakes.status_index import FakeStatusIndex
from tests.fakes.table import FakeTable

__all__ = [
    "ConfigState",
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
    """Every fake: the configuration over one state, the messages over one table."""

    table: FakeTable = field(default_factory=FakeTable)
    configuration: ConfigState = field(default_factory=ConfigState)
    queue: FakeQueue = field(default_factory=FakeQueue)
    scheduler: FakeScheduler = field(default_factory=FakeScheduler)
    metrics: FakeMetrics = field(default_factory=FakeMetrics)

    def __post_init__(self) -> None:
        self.config = FakeConfig(self.configuration)
        self.messages = FakeMessages(self.table, self.configuration)
        self.executions = FakeExecutions(self.table)
        self.status_index = FakeStatusIndex(self.messages.records)
