"""A function instance is stopped once, whichever thread asks first (devstack/lambda_runtime)."""

from __future__ import annotations

import multiprocessing
import threading
from typing import Any

from devstack.lambda_runtime import _Instance


def _serve(conn: Any) -> None:
    conn.recv()  # until told to stop


def test_a_pool_close_and_the_invocation_it_cut_short_both_kill_the_instance_without_error() -> None:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_serve, args=(child,), daemon=True)
    process.start()
    child.close()
    instance = _Instance(process, parent)
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def kill() -> None:
        start.wait()
        try:
            instance.kill()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=kill) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    assert errors == []
    assert not process.is_alive()
    assert parent.closed
