"""tests/waiting.py: a wait ends when the thing happens, fails only once nothing advanced for its
stall bound (or at its ceiling), and counts a changing answer or progress marker as advancing.
On a fake clock: no real sleep."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests import waiting
from tests.waiting import combined, cpu_seconds, every_invocation, local_stacks, wait_for


@dataclass
class Clock:
    """A monotonic clock that only sleeping moves; it records the sleeps."""

    now: float = 1_000.0
    sleeps: list[float] = field(default_factory=list)

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def waited(self) -> float:
        return self.now - 1_000.0


@pytest.fixture
def clock() -> Clock:
    return Clock()


def answers(*values: Any) -> Callable[[], Any]:
    """A probe answering `values` in turn, then its last one for ever."""
    queue = list(values)
    return lambda: queue.pop(0) if len(queue) > 1 else queue[0]


def constant() -> None:
    return None


def test_the_first_truthy_answer_is_returned_without_a_sleep(clock: Clock) -> None:
    found = wait_for(lambda: {"id": 1}, "something", progress=constant, clock=clock, sleep=clock.sleep)

    assert found == {"id": 1}
    assert clock.sleeps == []


def test_it_polls_every_interval_until_the_answer_is_truthy(clock: Clock) -> None:
    found = wait_for(
        answers(None, [], 0, "there"), "it", progress=constant, interval=0.5, clock=clock, sleep=clock.sleep
    )

    assert found == "there"
    assert clock.sleeps == [0.5, 0.5, 0.5]


def test_until_decides_and_the_answer_itself_is_returned(clock: Clock) -> None:
    views = answers({"status": "received"}, {"status": "received"}, {"status": "sent", "code": 200})

    found = wait_for(
        views,
        "sent",
        until=lambda view: view["status"] == "sent",
        progress=constant,
        clock=clock,
        sleep=clock.sleep,
    )

    assert found == {"status": "sent", "code": 200}


def test_nothing_advancing_fails_after_the_stall_bound_naming_what_and_the_last_answer(clock: Clock) -> None:
    with pytest.raises(AssertionError) as failed:
        wait_for(
            lambda: {"status": "received"},
            "msg_1 to be sent",
            until=lambda view: view["status"] == "sent",
            progress=constant,
            stall=10,
            interval=1,
            clock=clock,
            sleep=clock.sleep,
        )

    assert clock.waited() == 10
    message = str(failed.value)
    assert "msg_1 to be sent" in message
    assert "{'status': 'received'}" in message  # the last answer
    assert "waited 10 s" in message
    assert "nothing advanced for 10 s" in message


def test_a_changing_answer_is_progress_and_keeps_the_wait_going_past_the_stall_bound(clock: Clock) -> None:
    # The answer changes every 8 s (a stall of 10 s never passes) and is done after 100 s.
    def probe() -> int:
        return int(clock.waited() // 8) if clock.waited() < 100 else -1

    found = wait_for(
        probe,
        "done",
        until=lambda n: n < 0,
        progress=constant,
        stall=10,
        interval=1,
        clock=clock,
        sleep=clock.sleep,
    )

    assert found == -1
    assert clock.waited() == 100


def test_the_same_list_grown_since_is_a_changed_answer(clock: Clock) -> None:
    requests: list[int] = []

    def probe() -> list[int]:
        if clock.waited() <= 30:
            requests.append(1)  # a request arrives every poll for 30 s (the same list each time)
        return requests

    with pytest.raises(AssertionError, match="nothing advanced for 10 s"):
        wait_for(
            probe,
            "it",
            until=lambda seen: len(seen) > 1_000,
            progress=constant,
            stall=10,
            interval=1,
            clock=clock,
            sleep=clock.sleep,
        )

    assert clock.waited() == 40


def test_a_moving_progress_marker_keeps_the_wait_going_and_its_stop_starts_the_stall(clock: Clock) -> None:
    # The marker moves for 50 s (a busy stack), then stands still; the answer never changes.
    def marker() -> float:
        return min(clock.waited(), 50)

    with pytest.raises(AssertionError, match="nothing advanced for 10 s"):
        wait_for(
            lambda: False, "never", progress=marker, stall=10, interval=1, clock=clock, sleep=clock.sleep
        )

    assert clock.waited() == 60  # its last move at 50 s, then 10 s of nothing


def test_the_ceiling_ends_a_wait_that_advances_for_ever(clock: Clock) -> None:
    with pytest.raises(AssertionError, match="the ceiling of 30 s passed") as failed:
        wait_for(
            lambda: False,
            "never",
            progress=clock,  # the time itself: always moving
            stall=10,
            ceiling=30,
            interval=1,
            clock=clock,
            sleep=clock.sleep,
        )

    assert clock.waited() == 30
    assert "waited 30 s for never" in str(failed.value)


def test_a_probe_that_raises_is_not_retried(clock: Clock) -> None:
    def probe() -> None:
        raise RuntimeError("the API is down")

    with pytest.raises(RuntimeError, match="the API is down"):
        wait_for(probe, "it", progress=constant, clock=clock, sleep=clock.sleep)


def test_a_long_last_answer_is_cut_short_in_the_failure(clock: Clock) -> None:
    with pytest.raises(AssertionError) as failed:
        wait_for(
            lambda: ["x" * 100] * 50,
            "it",
            until=lambda _: False,
            progress=constant,
            stall=1,
            clock=clock,
            sleep=clock.sleep,
        )

    assert len(str(failed.value)) < 700


def test_an_answer_that_cannot_be_compared_counts_as_a_change(clock: Clock) -> None:
    class Incomparable:
        def __eq__(self, other: object) -> bool:
            raise TypeError("no")

        __hash__ = object.__hash__

    with pytest.raises(AssertionError, match="the ceiling"):
        wait_for(
            Incomparable,
            "it",
            until=lambda _: False,
            progress=constant,
            stall=5,
            ceiling=20,
            clock=clock,
            sleep=clock.sleep,
        )


# --- the progress markers ---------------------------------------------------------------------


@dataclass
class FakeStack:
    moves: int = 0
    running: bool = False
    requests: int = 0
    serving: bool = False

    def activity(self, trigger: str | None = "event") -> int:
        return self.moves + (self.requests if trigger is None else 0)

    def busy(self, trigger: str | None = "event") -> bool:
        return self.running or (trigger is None and self.serving)


@pytest.fixture
def stacks(monkeypatch: pytest.MonkeyPatch) -> list[FakeStack]:
    running: list[FakeStack] = []
    monkeypatch.setattr("devstack.stack.running_stacks", lambda: list(running))
    return running


def test_the_default_marker_follows_the_running_stacks_activity(stacks: list[FakeStack]) -> None:
    assert local_stacks() == local_stacks() == ()  # no stack: constant
    one, two = FakeStack(moves=3), FakeStack(moves=5)
    stacks += [one, two]
    before = local_stacks()

    assert local_stacks() == before  # idle: the same
    two.moves += 1
    assert local_stacks() != before
    one.running = True
    assert local_stacks() != local_stacks()  # busy: a new marker on every call


def test_every_invocation_counts_the_requests_too(stacks: list[FakeStack]) -> None:
    stack = FakeStack()
    stacks.append(stack)
    before, every = local_stacks(), every_invocation()

    stack.requests += 1  # a request served: no progress of the stack's own

    assert local_stacks() == before
    assert every_invocation() != every
    stack.serving = True
    assert local_stacks() == local_stacks()
    assert every_invocation() != every_invocation()


def test_a_wait_without_a_marker_watches_the_stacks(clock: Clock, stacks: list[FakeStack]) -> None:
    stack = FakeStack()
    stacks.append(stack)

    def probe() -> bool:
        stack.moves = min(int(clock.waited()), 40)  # the stack works for 40 s, then idles
        return False

    with pytest.raises(AssertionError, match="nothing advanced for 10 s"):
        wait_for(probe, "it", stall=10, interval=1, clock=clock, sleep=clock.sleep)

    assert clock.waited() == 50


def test_combined_markers_advance_when_any_does() -> None:
    first, second = [0], [0]
    marker = combined(lambda: first[0], lambda: second[0])
    before = marker()

    second[0] += 1

    assert marker() != before
    assert marker() == marker()


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_cpu_seconds_of_a_process_at_work_and_of_a_gone_one() -> None:
    mine = cpu_seconds(os.getpid())
    before = mine()
    end = time.process_time() + 0.05
    while time.process_time() < end:  # some work of this process's own
        pass
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its pid names no process now

    assert isinstance(before, float)
    assert mine() != before
    assert cpu_seconds(child.pid)() is None


def test_the_defaults_are_generous() -> None:
    assert waiting.STALL_SECONDS >= 60
    assert waiting.CEILING_SECONDS >= 600
