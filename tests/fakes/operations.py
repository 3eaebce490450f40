"""The operator's use case (`hub.admin.operations.Operations`) over a FakeHub."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from hub.admin.operations import Operations
from tests.fakes import FakeHub


class NoMover:
    """A DLQ mover for tests that never redrive: a redrive is a failure of the test."""

    def move(self, dead_letter_queue: str, work_queue: str, limit: int) -> int:
        raise AssertionError("no redrive here")


def fake_operations(hub: FakeHub, clock: Callable[[], datetime] | None = None, **options: Any) -> Operations:
    """`Operations` over `hub`'s fakes, with no DLQ lanes; `clock` when the test moves time."""
    if clock is not None:
        options["clock"] = clock
    return Operations(
        hub.messages,
        hub.status_index,
        hub.executions,
        hub.queue,
        config=hub.config,
        scheduler=hub.scheduler,
        mover=NoMover(),
        lanes={},
        **options,
    )
