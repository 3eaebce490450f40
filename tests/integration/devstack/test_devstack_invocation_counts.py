"""A function pool counts its invocations, started and finished, by what made them (an event
source or a caller's request): the progress marker the tests' waits watch (tests/waiting.py,
LocalStack.activity)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.lambda_runtime import FunctionPool
from tests.function_pools import pool_of
from tests.waiting import wait_for

HANDLER = """
import time

def handler(event, context):
    if event.get("raise"):
        raise ValueError("asked to")
    time.sleep(event.get("sleep", 0))
    return "done"
"""


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[FunctionPool]:
    made = pool_of(tmp_path, HANDLER, max_instances=2)
    yield made
    made.close()


def test_finished_invocations_are_counted_by_trigger_failures_included(pool: FunctionPool) -> None:
    assert (pool.invocations(), pool.started(), pool.in_flight()) == (0, 0, 0)

    assert pool.invoke({}).ok
    assert pool.invoke({}, trigger="event").ok
    assert not pool.invoke({"raise": True}, trigger="event").ok
    assert not pool.invoke({1, 2}, trigger="event").ok  # not JSON: refused before any instance

    assert (pool.invocations("request"), pool.invocations("event"), pool.invocations()) == (1, 3, 4)
    assert pool.started() == 4
    assert pool.in_flight() == 0


def test_an_invocation_under_way_is_in_flight_until_it_ends(pool: FunctionPool) -> None:
    running = threading.Thread(target=pool.invoke, args=({"sleep": 2},), kwargs={"trigger": "event"})
    running.start()

    wait_for(lambda: pool.in_flight("event"), "the invocation to start", progress=lambda: None)
    assert (pool.started("event"), pool.invocations("event"), pool.in_flight("request")) == (1, 0, 0)
    running.join(timeout=60)

    assert (pool.in_flight(), pool.invocations("event")) == (0, 1)
