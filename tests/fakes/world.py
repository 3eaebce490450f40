"""The use cases wired to the fakes, the way hub.wiring wires them to AWS: an `Ingestor` and a
`PipelineWorker` (with the real retry policy on a FakeScheduler) over one FakeHub, a clock the
test moves, and a scripted connector."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hub.config import Settings
from hub.domain.message import InboundMessage, MessageRecord, StepMessage
from hub.domain.retry import RetryPolicy
from hub.domain.tenancy import (
    ApiKey,
    Destination,
    DestinationProtocol,
    DuplicateHandling,
    Integration,
    IntegrationMode,
    MessageTypeConfig,
    Tenant,
    UnknownMessageTypes,
    hash_api_key,
)
from hub.ingest.receive import Ingestor, ReceiveOutcome
from hub.pipeline.ports import StepReport
from hub.pipeline.retries import RetryOrchestrator
from hub.pipeline.worker import PipelineWorker
from hub.ports import MessageRepository
from tests.fakes import FakeClock, FakeConnector, FakeHub

API_KEY = "hub_k1_world"
INTEGRATION = "int_erp"
#: A message type keyed by po_number (its messages share an entity per PO), and one without keys.
KEYED, UNKEYED = "purchase_order", "order"


@dataclass
class World:
    hub: FakeHub = field(default_factory=FakeHub)
    clock: FakeClock = field(default_factory=FakeClock)
    connector: FakeConnector = field(default_factory=FakeConnector)
    #: The jitter of lock waits and retry backoff: 0.5 is the ladder entry exactly.
    rand: Callable[[], float] = lambda: 0.5

    def __post_init__(self) -> None:
        self.hub.config.put_tenant(Tenant(tenant_id="t1", name="T1"))
        self.hub.config.put_api_key(ApiKey(key_id="k1", tenant_id="t1", key_hash=hash_api_key(API_KEY)))
        self.configure()
        self.worker = PipelineWorker(
            self.hub.config,
            self.hub.executions,
            self.hub.queue,
            {DestinationProtocol.HTTP: self.connector},
            retries=RetryOrchestrator(self.hub.scheduler, rand=self.rand),
            metrics=self.hub.metrics,
            clock=self.clock,
            rand=self.rand,
        )
        self.use_messages(self.hub.messages)

    def use_messages(self, messages: MessageRepository) -> None:
        """Rebuilds the ingestor over `messages` (e.g. a FakeMessages that races)."""
        self.ingestor = Ingestor(
            self.hub.config,
            messages,
            self.hub.queue,
            Settings(table_name="fake", pipeline_queue_url="fake"),
            clock=self.clock,
            # The fake clock is the request's stopwatch too, and a pause moves it on.
            monotonic=self.stopwatch,
            pause=self.pause,
        )

    def stopwatch(self) -> float:
        return self.clock.now.timestamp()

    def pause(self, seconds: float) -> None:
        """The ingest's short wait, on the fake clock: no test sleeps."""
        self.clock.advance(timedelta(seconds=seconds))

    def configure(
        self,
        *,
        mode: IntegrationMode = IntegrationMode.ORCHESTRATION,
        handling: DuplicateHandling = DuplicateHandling.ACCEPT,
        retry_policy: RetryPolicy | None = None,
        destination: bool = True,
        unknown_message_types: UnknownMessageTypes = UnknownMessageTypes.REJECT,
    ) -> Integration:
        integration = Integration(
            integration_id=INTEGRATION,
            tenant_id="t1",
            name="erp",
            mode=mode,
            destination=Destination(url="https://erp.example/orders") if destination else None,
            message_types={
                KEYED: MessageTypeConfig(duplicate_key_fields=("po_number",), duplicate_handling=handling),
                UNKEYED: MessageTypeConfig(),
            },
            retry_policy=retry_policy or RetryPolicy(),
            unknown_message_types=unknown_message_types,
        )
        self.hub.config.put_integration(integration)
        return integration

    def receive(
        self, payload: dict[str, Any] | str, message_type: str = KEYED, idempotency_key: str | None = None
    ) -> ReceiveOutcome:
        inbound = InboundMessage(integration_id=INTEGRATION, message_type=message_type, payload=payload)
        return self.ingestor.receive(API_KEY, inbound, idempotency_key, "corr-1")

    def send(
        self, payload: dict[str, Any] | str, message_type: str = KEYED
    ) -> tuple[MessageRecord, StepMessage]:
        """A stored message and its first step (taken off the queue)."""
        outcome = self.receive(payload, message_type)
        [published] = self.hub.queue.drain()
        return outcome.record, published.step

    def run(self, step: StepMessage, sent_at: datetime | None = None, **options: Any) -> StepReport:
        return self.worker.run(step, sent_at or self.clock.now, **options)

    def settle(self, rounds: int = 20) -> list[StepReport]:
        """Runs queued steps, then due schedules, until nothing is left."""
        reports: list[StepReport] = []
        for _ in range(rounds):
            steps = [p.step for p in self.hub.queue.drain()] or self.hub.scheduler.fire_all()
            if not steps:
                return reports
            self.clock.advance(timedelta(minutes=1))
            reports += [self.run(step) for step in steps]
        raise AssertionError("the pipeline did not settle")

    def record(self, message_id: str) -> MessageRecord:
        found = self.hub.messages.get(message_id)
        assert found is not None
        return found

    def steps_logged(self, message_id: str) -> list[tuple[str, str]]:
        return [(e["step"], e["status"]) for e in self.hub.messages.message_log(message_id)]
