"""Crashing a function instance on purpose (chaos tests, `make soak`): the instance's real
process is killed with SIGKILL; a busy one's invocation fails as when Lambda's sandbox dies, an
idle one leaves the pool, and the next invocation cold-starts a new process."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.lambda_runtime import FunctionPool, InvocationResult
from tests.function_pools import pool_of

HANDLER = """
import os, time

def handler(event, context):
    time.sleep(event.get("sleep", 0))
    return {"pid": os.getpid()}
"""


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[FunctionPool]:
    made = pool_of(tmp_path, HANDLER)
    yield made
    made.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_busy_instance_crashes_mid_invocation_and_the_next_call_cold_starts(pool: FunctionPool) -> None:
    first = pool.invoke({}).payload["pid"]
    outcome: list[InvocationResult] = []
    running = threading.Thread(target=lambda: outcome.append(pool.invoke({"sleep": 20})))
    running.start()
    deadline = time.monotonic() + 60
    while not pool.crash(busy=True):  # until the invocation holds the instance
        assert time.monotonic() < deadline, "the invocation never started"
        time.sleep(0.05)
    running.join(timeout=10)

    assert not running.is_alive()  # answered at once, not after its 20 s
    assert outcome[0].error is not None
    assert outcome[0].error["errorType"] == "Runtime.ExitError"
    assert not _alive(first)
    assert pool.invoke({}).payload["pid"] not in (first, None)


def test_an_idle_instance_crashes_out_of_the_pool(pool: FunctionPool) -> None:
    assert pool.crash(busy=True) == []  # nothing running yet
    first = pool.invoke({}).payload["pid"]

    assert pool.crash(busy=True) == []  # it is idle, not busy
    assert len(pool.crash(busy=False)) == 1
    assert pool.crash(busy=False) == []  # the only one is gone
    deadline = time.monotonic() + 60
    while _alive(first):
        assert time.monotonic() < deadline, "the idle instance's process survived"
        time.sleep(0.05)
    after = pool.invoke({})

    assert after.error is None, after.error
    assert after.payload["pid"] != first
    assert pool.cold_starts == 2
