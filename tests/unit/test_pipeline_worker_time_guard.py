"""The worker's time guard (issue 30): the guard's decision on its own, then one invocation's
batch (hub.pipeline.batch.WorkerBatch) over the real worker and in-memory ports. The
invocation's remaining time is a stopwatch that the destination's answer spends. No network."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import pytest

from hub.admin.bulk import PAGE_LEASE
from hub.delivery.gate import ConnectionJob, JobKind
from hub.delivery.port import OutboundRequest
from hub.delivery.release import RELEASE_PAGE_LEASE
from hub.domain.bulk_page import BulkPage
from hub.domain.message import StepMessage
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import Destination, IntegrationMode
from hub.errors import QueueUnavailable, StorageUnavailable
from hub.pipeline.batch import QueuedRecord, WorkerBatch
from hub.pipeline.time_guard import (
    FINISH_MARGIN_SECONDS,
    MIN_READ_SECONDS,
    PAGE_SECONDS,
    TimeGuard,
    capped_read_timeout,
    step_need,
)
from tests.fakes.queue import FakeRedelivery
from tests.fakes.world import UNKEYED, World


class Stopwatch:
    """The invocation's remaining time in milliseconds, as the Lambda context reports it."""

    def __init__(self, seconds: float) -> None:
        self.ms = int(seconds * 1000)

    def __call__(self) -> int:
        return self.ms

    def spend(self, seconds: float) -> None:
        self.ms = max(0, self.ms - int(seconds * 1000))


def never_asked() -> float:
    raise AssertionError("the guard asked for a need it does not depend on")


# --- the decision -----------------------------------------------------------------------------


class TestTheDecision:
    def test_the_first_record_always_runs_without_asking_what_it_needs(self) -> None:
        guard = TimeGuard(Stopwatch(1))

        assert guard.admit(never_asked)
        assert (guard.taken, guard.returned) == (1, 0)

    def test_a_later_record_runs_while_its_need_fits_in_the_time_left(self) -> None:
        left = Stopwatch(60)
        guard = TimeGuard(left)
        guard.admit(never_asked)

        assert guard.admit(lambda: 45)
        assert guard.admit(lambda: 60)  # exactly what is left still fits
        left.spend(20)
        assert not guard.admit(lambda: 45)
        assert (guard.taken, guard.returned) == (3, 1)

    def test_once_one_is_returned_every_later_one_is_returned_without_asking(self) -> None:
        left = Stopwatch(10)
        guard = TimeGuard(left)
        guard.admit(never_asked)

        assert not guard.admit(lambda: 45)
        assert not guard.admit(never_asked)
        assert not guard.admit(never_asked)
        assert (guard.taken, guard.returned) == (1, 3)

    def test_a_step_needs_its_connect_and_read_timeouts_and_the_margin(self) -> None:
        assert step_need(Destination(url="https://erp.example/orders")) == 10 + 30 + FINISH_MARGIN_SECONDS
        assert step_need(None) == FINISH_MARGIN_SECONDS

    def test_a_read_timeout_that_fits_is_not_capped(self) -> None:
        assert capped_read_timeout(Destination(url="https://erp.example/orders"), 210) is None
        assert (
            capped_read_timeout(Destination(url="https://x.example", read_timeout_seconds=195), 210) is None
        )

    def test_a_read_timeout_longer_than_the_invocation_ends_the_margin_before_it(self) -> None:
        near_300 = Destination(url="https://erp.example/orders", read_timeout_seconds=300)

        assert capped_read_timeout(near_300, 210) == 210 - FINISH_MARGIN_SECONDS - 10
        assert capped_read_timeout(near_300, 12) == MIN_READ_SECONDS  # never below a second

    def test_a_page_is_bounded_by_the_lease_it_holds_its_page_under(self) -> None:
        assert PAGE_SECONDS == RELEASE_PAGE_LEASE.total_seconds() == PAGE_LEASE.total_seconds()


# --- one invocation's batch -----------------------------------------------------------------


class Recorder:
    """A connection-job runner and a bulk-page runner: what they were asked to run."""

    def __init__(self) -> None:
        self.ran: list[tuple[Any, bool | None]] = []

    def run(self, item: Any, *, last_attempt: bool | None = None) -> str:
        self.ran.append((item, last_attempt))
        return "run"


@pytest.fixture
def world() -> World:
    return World()


@pytest.fixture
def redelivery() -> FakeRedelivery:
    return FakeRedelivery()


@pytest.fixture
def runners() -> Recorder:
    return Recorder()


def connection(world: World, *, connect: float, read: float) -> None:
    """Points the world's integration at a destination with these timeouts."""
    integration = world.configure()
    destination = Destination(
        url="https://erp.example/orders", connect_timeout_seconds=connect, read_timeout_seconds=read
    )
    world.hub.config.put_integration(integration.model_copy(update={"destination": destination}))


def batch_of(
    world: World, left: Stopwatch, redelivery: FakeRedelivery, runners: Recorder | None = None
) -> WorkerBatch:
    other = runners or Recorder()
    return WorkerBatch(
        TimeGuard(left),
        worker=lambda: world.worker,
        jobs=lambda: other,
        pages=lambda: other,
        redelivery=redelivery,
        max_receives=10,
        metrics=world.hub.metrics,
    )


def queued(
    item: StepMessage | ConnectionJob | BulkPage, sent_at: datetime, receives: int = 1
) -> QueuedRecord:
    name = item.message_id if isinstance(item, StepMessage) else "job"
    return QueuedRecord(
        body=item.model_dump_json(),
        receive_count=receives,
        sent_at=sent_at,
        message_attributes={"message_id": {"dataType": "String", "stringValue": name}},
        group_id="t1",
    )


def steps(world: World, count: int) -> list[StepMessage]:
    return [world.send({"n": n}, UNKEYED)[1] for n in range(count)]


def delivered(world: World) -> list[str]:
    return [r.message_id for r in world.connector.requests]


class TestABatchRunningShortOfTime:
    def test_returns_its_untaken_steps_untouched_and_in_order(
        self, world: World, redelivery: FakeRedelivery
    ) -> None:
        connection(world, connect=1, read=2)  # a step may need 1 + 2 + 5 = 8 s
        batch = steps(world, 4)
        versions = {s.message_id: world.record(s.message_id).version for s in batch}
        left = Stopwatch(9)
        world.connector.during = lambda _: left.spend(1.5)  # a slow destination

        with batch_of(world, left, redelivery) as invocation:
            for step in batch:
                invocation.run(queued(step, world.clock.now))

        assert delivered(world) == [batch[0].message_id]
        assert [sent.body for sent in redelivery.sent] == [s.model_dump_json() for s in batch[1:]]
        assert [sent.message_attributes["message_id"]["stringValue"] for sent in redelivery.sent] == [
            s.message_id for s in batch[1:]
        ]
        assert {sent.group_id for sent in redelivery.sent} == {"t1"}
        for step in batch[1:]:  # nothing of them ran: no lease, no write, no attempt
            untouched = world.record(step.message_id)
            assert (untouched.pipeline_status, untouched.version) == (
                PipelineStatus.RECEIVED,
                versions[step.message_id],
            )
        assert world.hub.metrics.total("RecordsReturned") == 3

    def test_the_returned_steps_are_each_delivered_once_when_run_again_even_twice(
        self, world: World, redelivery: FakeRedelivery
    ) -> None:
        connection(world, connect=1, read=2)
        batch = steps(world, 3)
        left = Stopwatch(9)
        world.connector.during = lambda _: left.spend(1.5)
        with batch_of(world, left, redelivery) as invocation:
            for step in batch:
                invocation.run(queued(step, world.clock.now))
        copies = [StepMessage.model_validate_json(sent.body) for sent in redelivery.sent]
        world.connector.during = None

        for _ in range(2):  # the copies, then the same copies again (SQS delivers at least once)
            with batch_of(world, Stopwatch(210), FakeRedelivery()) as again:
                for step in copies:
                    again.run(queued(step, world.clock.now))

        assert sorted(delivered(world)) == sorted(s.message_id for s in batch)
        assert {world.record(s.message_id).pipeline_status for s in batch} == {PipelineStatus.SENT}

    def test_once_one_is_returned_a_later_record_that_would_fit_is_returned_too(
        self, world: World, redelivery: FakeRedelivery, runners: Recorder
    ) -> None:
        connection(world, connect=1, read=2)
        first, second = steps(world, 2)
        probe = ConnectionJob(job=JobKind.PROBE, connection_id="con_1", tenant_id="t1", generation=1)
        left = Stopwatch(9)
        world.connector.during = lambda _: left.spend(1.5)  # 7.5 s left: a probe's 5 s would fit

        with batch_of(world, left, redelivery, runners) as invocation:
            for record in (
                queued(first, world.clock.now),
                queued(second, world.clock.now),
                queued(probe, world.clock.now),
            ):
                invocation.run(record)

        assert runners.ran == []
        assert [sent.body for sent in redelivery.sent] == [second.model_dump_json(), probe.model_dump_json()]

    def test_a_copy_the_queue_refuses_is_reported_failed_and_nothing_of_it_ran(
        self, world: World, redelivery: FakeRedelivery
    ) -> None:
        connection(world, connect=1, read=2)
        batch = steps(world, 3)
        left = Stopwatch(9)
        world.connector.during = lambda _: left.spend(1.5)
        redelivery.failing = True

        with batch_of(world, left, redelivery) as invocation:
            invocation.run(queued(batch[0], world.clock.now))
            for step in batch[1:]:
                with pytest.raises(QueueUnavailable):  # the batch reports it: SQS returns it
                    invocation.run(queued(step, world.clock.now))

        assert (invocation.resent, invocation.reported) == (0, 2)
        assert delivered(world) == [batch[0].message_id]
        assert {world.record(s.message_id).pipeline_status for s in batch[1:]} == {PipelineStatus.RECEIVED}

    def test_says_so_in_one_info_line_with_counts_and_no_payload(
        self, world: World, redelivery: FakeRedelivery, caplog: pytest.LogCaptureFixture
    ) -> None:
        connection(world, connect=1, read=2)
        batch = steps(world, 3)
        left = Stopwatch(9)
        world.connector.during = lambda _: left.spend(1.5)

        with (
            caplog.at_level(logging.INFO, logger="hub.pipeline.batch"),
            batch_of(world, left, redelivery) as invocation,
        ):
            for step in batch:
                invocation.run(queued(step, world.clock.now))

        [line] = [r for r in caplog.records if r.name == "hub.pipeline.batch"]
        assert line.levelno == logging.INFO
        counts = {k: getattr(line, k) for k in ("taken", "returned", "resent", "reported_failed")}
        assert counts == {"taken": 1, "returned": 2, "resent": 2, "reported_failed": 0}
        assert '"n"' not in line.getMessage()

    def test_a_batch_with_time_enough_runs_everything_and_says_nothing(
        self, world: World, redelivery: FakeRedelivery, caplog: pytest.LogCaptureFixture
    ) -> None:
        batch = steps(world, 3)  # the default connection: 10 + 30 + 5 s

        with (
            caplog.at_level(logging.INFO, logger="hub.pipeline.batch"),
            batch_of(world, Stopwatch(210), redelivery) as invocation,
        ):
            for step in batch:
                invocation.run(queued(step, world.clock.now))

        assert sorted(delivered(world)) == sorted(s.message_id for s in batch)
        assert redelivery.sent == []
        assert [r for r in caplog.records if r.name == "hub.pipeline.batch"] == []
        assert "RecordsReturned" not in world.hub.metrics.names()


class TestTheFirstRecord:
    def test_runs_even_when_its_connection_cannot_fit_with_its_read_timeout_capped(
        self, world: World, redelivery: FakeRedelivery
    ) -> None:
        connection(world, connect=10, read=300)  # the connection: 315 s > 210 s
        first, second = steps(world, 2)

        with batch_of(world, Stopwatch(210), redelivery) as invocation:
            invocation.run(queued(first, world.clock.now))
            invocation.run(queued(second, world.clock.now))

        [request] = world.connector.requests
        assert request.message_id == first.message_id
        assert request.read_timeout_seconds == 210 - FINISH_MARGIN_SECONDS - 10
        assert request.read_timeout(Destination(url="https://x.example", read_timeout_seconds=300)) == 195
        assert [StepMessage.model_validate_json(s.body) for s in redelivery.sent] == [second]

    def test_the_cap_is_what_is_left_when_the_attempt_starts(
        self, world: World, redelivery: FakeRedelivery
    ) -> None:
        connection(world, connect=10, read=300)
        [step] = steps(world, 1)
        left = Stopwatch(210)
        # Our writes before the attempt took 40 s (a slow table): the attempt has what is left.
        world.hub.executions.take = spending(world.hub.executions.take, left, 40)  # type: ignore[method-assign]

        with batch_of(world, left, redelivery) as invocation:
            invocation.run(queued(step, world.clock.now))

        [request] = world.connector.requests
        assert request.read_timeout_seconds == 170 - FINISH_MARGIN_SECONDS - 10

    def test_a_connection_that_fits_is_not_capped(self, world: World, redelivery: FakeRedelivery) -> None:
        [step] = steps(world, 1)

        with batch_of(world, Stopwatch(210), redelivery) as invocation:
            invocation.run(queued(step, world.clock.now))

        [request] = world.connector.requests
        assert request.read_timeout_seconds is None
        assert world.record(step.message_id).pipeline_status is PipelineStatus.SENT


def spending(take: Any, left: Stopwatch, seconds: float) -> Any:
    def slow_take(*args: Any, **kwargs: Any) -> Any:
        left.spend(seconds)
        return take(*args, **kwargs)

    return slow_take


class TestJobsAndPages:
    def test_a_probe_needs_the_margin_and_a_release_page_its_lease(
        self, world: World, redelivery: FakeRedelivery, runners: Recorder
    ) -> None:
        [step] = steps(world, 1)
        probe = ConnectionJob(job=JobKind.PROBE, connection_id="con_1", tenant_id="t1", generation=1)
        release = ConnectionJob(job=JobKind.RELEASE, connection_id="con_1", tenant_id="t1", generation=1)

        with batch_of(world, Stopwatch(100), redelivery, runners) as invocation:
            for item in (step, probe, release):
                invocation.run(queued(item, world.clock.now))

        assert [item for item, _ in runners.ran] == [probe]
        assert [sent.body for sent in redelivery.sent] == [release.model_dump_json()]

    def test_a_bulk_page_needs_its_lease_and_runs_when_it_fits(
        self, world: World, redelivery: FakeRedelivery, runners: Recorder
    ) -> None:
        first, second = steps(world, 2)
        page = BulkPage(bulk_job="bulk_1", tenant_id="t1", page=0)

        with batch_of(world, Stopwatch(100), redelivery, runners) as short:
            short.run(queued(first, world.clock.now))
            short.run(queued(page, world.clock.now))
        with batch_of(world, Stopwatch(210), redelivery, runners) as enough:
            enough.run(queued(second, world.clock.now))
            enough.run(queued(page, world.clock.now, receives=10))

        assert [sent.body for sent in redelivery.sent] == [page.model_dump_json()]
        assert runners.ran == [(page, True)]  # its last receive: the page's last attempt

    def test_a_step_of_an_integration_that_delivers_nothing_needs_the_margin(self, world: World) -> None:
        [step] = steps(world, 1)
        world.configure(mode=IntegrationMode.OBSERVABILITY)
        assert world.worker.need(step) == FINISH_MARGIN_SECONDS
        world.configure(destination=False)
        assert world.worker.need(step) == FINISH_MARGIN_SECONDS
        connection(world, connect=1, read=2)
        assert world.worker.need(step) == 1 + 2 + FINISH_MARGIN_SECONDS


def test_a_request_never_reads_longer_than_its_connection() -> None:
    destination = Destination(url="https://erp.example/orders", read_timeout_seconds=30)
    request = OutboundRequest("m", "m", b"{}", "application/json", "c", read_timeout_seconds=60)

    assert request.read_timeout(destination) == 30
    assert OutboundRequest("m", "m", b"{}", "application/json", "c").read_timeout(destination) == 30


def test_a_step_whose_need_cannot_be_read_runs_and_meets_the_outage_itself(
    world: World, redelivery: FakeRedelivery, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The configuration is unreadable when the guard asks (an outage): the step is not guessed
    to fit or not; it runs, and its own run handles the outage (here it has passed already)."""
    first, second = steps(world, 2)
    read = world.hub.config.get_integration
    outage = iter([False, True])  # the first record's run reads it, then the guard's ask fails

    def get_integration(tenant_id: str, integration_id: str) -> Any:
        if next(outage, False):
            raise StorageUnavailable("storage is temporarily unavailable")
        return read(tenant_id, integration_id)

    monkeypatch.setattr(world.hub.config, "get_integration", get_integration)

    with batch_of(world, Stopwatch(210), redelivery) as invocation:
        invocation.run(queued(first, world.clock.now))
        invocation.run(queued(second, world.clock.now))

    assert sorted(delivered(world)) == sorted([first.message_id, second.message_id])
    assert redelivery.sent == []
