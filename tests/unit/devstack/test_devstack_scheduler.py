"""Scheduler firing rules, on in-memory stand-ins for the scheduler and SQS clients."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devstack.scheduler import Scheduler

CREATED = datetime(2026, 1, 1, tzinfo=UTC)
DUE = CREATED + timedelta(minutes=1)
QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:work"


class NotFoundError(Exception):
    pass


class _Exceptions:
    ResourceNotFoundException = NotFoundError


class _Pages:
    def __init__(self, pages: Callable[[dict[str, Any]], list[dict[str, Any]]]) -> None:
        self._pages = pages

    def paginate(self, **kwargs: Any) -> list[dict[str, Any]]:
        return self._pages(kwargs)


class FakeSchedulerClient:
    """The few EventBridge Scheduler calls the scheduler makes, over a dict."""

    exceptions = _Exceptions

    def __init__(self, on_delete: Callable[[], None] = lambda: None, failing_deletes: int = 0) -> None:
        self.schedules: dict[tuple[str, str], dict[str, Any]] = {}
        self.on_delete = on_delete
        self.failing_deletes = failing_deletes

    def add(self, group: str, name: str, expression: str, after_completion: str = "NONE") -> None:
        self.schedules[(group, name)] = {
            "Name": name,
            "GroupName": group,
            "Arn": f"arn:aws:scheduler:us-east-1:123456789012:schedule/{group}/{name}",
            "ScheduleExpression": expression,
            "Target": {"Arn": QUEUE_ARN, "Input": '{"retry": "msg-1"}'},
            "ActionAfterCompletion": after_completion,
            "CreationDate": CREATED,
            "LastModificationDate": CREATED,
        }

    def get_paginator(self, operation: str) -> _Pages:
        if operation == "list_schedule_groups":
            groups = sorted({group for group, _ in self.schedules} | {"default"})
            return _Pages(lambda _: [{"ScheduleGroups": [{"Name": group} for group in groups]}])
        assert operation == "list_schedules"
        return _Pages(
            lambda kwargs: [
                {
                    "Schedules": [
                        dict(schedule)
                        for (group, _), schedule in list(self.schedules.items())
                        if group == kwargs["GroupName"]
                    ]
                }
            ]
        )

    def get_schedule(self, **kwargs: Any) -> dict[str, Any]:
        try:
            return dict(self.schedules[(kwargs["GroupName"], kwargs["Name"])])
        except KeyError:
            raise NotFoundError(kwargs["Name"]) from None

    def delete_schedule(self, **kwargs: Any) -> None:
        if self.failing_deletes:
            self.failing_deletes -= 1
            raise ConnectionError("moto busy")
        if self.schedules.pop((kwargs["GroupName"], kwargs["Name"]), None) is None:
            raise NotFoundError(kwargs["Name"])
        self.on_delete()


class FakeSqs:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def get_queue_url(self, **kwargs: Any) -> dict[str, str]:
        return {"QueueUrl": f"http://sqs.local/{kwargs['QueueName']}"}

    def send_message(self, **kwargs: Any) -> None:
        with self._lock:
            self.sent.append(kwargs)


@pytest.fixture
def sqs() -> FakeSqs:
    return FakeSqs()


@pytest.fixture
def scheduler_for(sqs: FakeSqs) -> Iterator[Callable[[FakeSchedulerClient], Scheduler]]:
    """A scheduler over ``client``, which holds the one-time schedule jobs/retry-once."""
    made: list[Scheduler] = []

    def make(client: FakeSchedulerClient) -> Scheduler:
        client.add("jobs", "retry-once", f"at({DUE:%Y-%m-%dT%H:%M:%S})", "DELETE")
        scheduler = Scheduler(client, sqs, lambda *_: None, {}, region="us-east-1", account_id="123456789012")
        made.append(scheduler)
        return scheduler

    yield make
    for scheduler in made:
        scheduler.stop()


def test_fired_already_holds_a_firing_whose_deletion_someone_has_seen(
    scheduler_for: Callable[[FakeSchedulerClient], Scheduler],
) -> None:
    deleted = threading.Event()

    def deleted_then_descheduled() -> None:
        deleted.set()
        time.sleep(0.3)  # the tick thread loses the CPU right after the deletion

    scheduler = scheduler_for(FakeSchedulerClient(on_delete=deleted_then_descheduled))
    seen: list[list[str]] = []

    def observer() -> None:
        assert deleted.wait(5)
        seen.append([firing.schedule for firing in scheduler.fired])

    watcher = threading.Thread(target=observer)
    watcher.start()
    scheduler.tick(DUE + timedelta(seconds=1))
    watcher.join(5)

    assert seen == [["retry-once"]]


def test_overlapping_ticks_fire_a_one_time_schedule_once(
    scheduler_for: Callable[[FakeSchedulerClient], Scheduler], sqs: FakeSqs
) -> None:
    client = FakeSchedulerClient()
    scheduler = scheduler_for(client)
    start = threading.Barrier(8)

    def tick() -> None:
        start.wait(5)
        scheduler.tick(DUE + timedelta(seconds=1))

    threads = [threading.Thread(target=tick) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)

    assert [firing.schedule for firing in scheduler.fired] == ["retry-once"]
    assert [message["MessageBody"] for message in sqs.sent] == ['{"retry": "msg-1"}']
    assert client.schedules == {}


def test_a_failed_deletion_keeps_the_firing_and_is_retried_without_firing_again(
    scheduler_for: Callable[[FakeSchedulerClient], Scheduler], sqs: FakeSqs
) -> None:
    client = FakeSchedulerClient(failing_deletes=1)
    scheduler = scheduler_for(client)
    now = DUE + timedelta(seconds=1)

    first = scheduler.tick(now)
    assert [firing.schedule for firing in first] == ["retry-once"]
    assert ("jobs", "retry-once") in client.schedules

    assert scheduler.tick(now + timedelta(seconds=1)) == []
    assert client.schedules == {}
    assert len(sqs.sent) == 1
    assert [firing.schedule for firing in scheduler.fired] == ["retry-once"]


def test_an_occurrence_before_one_already_fired_never_fires(
    scheduler_for: Callable[[FakeSchedulerClient], Scheduler],
) -> None:
    client = FakeSchedulerClient()
    client.add("jobs", "every-five", "cron(0/5 * * * ? *)")
    scheduler = scheduler_for(client)
    at = CREATED.replace

    def occurrences(now: datetime) -> list[datetime]:
        return [f.scheduled_time for f in scheduler.tick(now) if f.schedule == "every-five"]

    assert occurrences(at(minute=2, second=30)) == []  # first seen: nothing due yet
    assert occurrences(at(minute=11)) == [at(minute=10)]  # a test ticking ahead of the clock
    assert occurrences(at(minute=6)) == []  # the background thread, behind: 00:05 is past
    assert occurrences(at(minute=15, second=1)) == [at(minute=15)]
