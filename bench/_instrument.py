"""Bench-only instrumentation of the local stack's function instances (bench/e2e.py).

``installed(directory)`` swaps ``devstack.lambda_runtime._instance_main``, the target each new
instance process is spawned with, for ``instance_main`` here, which runs the original unchanged
after three things:

- the instance's stdout and stderr (file descriptors 1 and 2, so every writer) go to
  ``<directory>/<LogicalId>.log``, appended: each function's log output, measured apart;
- botocore's ``Endpoint._send`` (one HTTP attempt to AWS) is timed, per operation
  (``Endpoint.make_request`` names it), as the time this instance waited on AWS;
- the instance's pipe is wrapped: from an invocation's arrival to its answer is the handler's
  duration; at the answer, stdout is flushed and one JSON line is appended to
  ``<directory>/<LogicalId>.<pid>.jsonl``:
  ``{"function", "handler_s", "aws_s", "calls": {"dynamodb:GetItem": [attempts, seconds]}, "ok"}``.

Nothing here changes what the handler does. Only the standard library at module level: spawned
instances import this module first.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DIRECTORY_ENV = "HUB_BENCH_INSTRUMENT_DIR"
FUNCTION_ENV = "HUB_BENCH_FUNCTION"


class _AwsClock:
    """Time spent in HTTP attempts to AWS since the last ``take``, by operation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self._calls: dict[str, list[float]] = {}

    def install(self) -> None:
        from botocore.endpoint import Endpoint  # noqa: PLC0415

        make_request, send = Endpoint.make_request, Endpoint._send
        clock = self

        def timed_make_request(endpoint: Any, operation_model: Any, request_dict: Any) -> Any:
            clock._local.operation = f"{operation_model.service_model.service_name}:{operation_model.name}"
            return make_request(endpoint, operation_model, request_dict)

        def timed_send(endpoint: Any, request: Any) -> Any:
            started = time.perf_counter()
            try:
                return send(endpoint, request)
            finally:
                clock.add(getattr(clock._local, "operation", "unknown"), time.perf_counter() - started)

        setattr(Endpoint, "make_request", timed_make_request)  # noqa: B010
        setattr(Endpoint, "_send", timed_send)  # noqa: B010

    def add(self, operation: str, seconds: float) -> None:
        with self._lock:
            entry = self._calls.setdefault(operation, [0, 0.0])
            entry[0] += 1
            entry[1] += seconds

    def take(self) -> dict[str, list[float]]:
        with self._lock:
            calls, self._calls = self._calls, {}
        return calls


class _TimedConnection:
    """The instance's end of the pipe, noting each invocation's duration and AWS time."""

    def __init__(self, conn: Any, clock: _AwsClock, function: str, stats_path: Path | None) -> None:
        self._conn = conn
        self._clock = clock
        self._function = function
        self._stats = stats_path.open("a", encoding="utf-8") if stats_path else None
        self._started: float | None = None

    def recv(self) -> Any:
        message = self._conn.recv()
        if isinstance(message, tuple):  # (request id, event, deadline): an invocation starts
            self._clock.take()
            self._started = time.perf_counter()
        return message

    def send(self, message: Any) -> None:
        if self._started is not None and isinstance(message, tuple) and message[0] in ("ok", "error"):
            handler_s = time.perf_counter() - self._started
            self._started = None
            sys.stdout.flush()
            sys.stderr.flush()
            calls = self._clock.take()
            if self._stats is not None:
                line = {
                    "function": self._function,
                    "handler_s": handler_s,
                    "aws_s": sum(seconds for _, seconds in calls.values()),
                    "calls": calls,
                    "ok": message[0] == "ok",
                }
                self._stats.write(json.dumps(line) + "\n")
                self._stats.flush()
        self._conn.send(message)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def instance_main(conn: Any, boot: dict[str, Any]) -> None:
    """The instrumented entry point of an instance process (see the module docstring)."""
    from devstack import lambda_runtime  # noqa: PLC0415

    env = boot.get("env") or {}
    directory = env.get(DIRECTORY_ENV)
    function = env.get(FUNCTION_ENV) or str(boot.get("name", "unknown"))
    stats_path = None
    if directory:
        fd = os.open(Path(directory) / f"{function}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        stats_path = Path(directory) / f"{function}.{os.getpid()}.jsonl"
    clock = _AwsClock()
    clock.install()
    timed: Any = _TimedConnection(conn, clock, function, stats_path)  # duck-typed Connection
    lambda_runtime._instance_main(timed, boot)


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """New instances of every FunctionPool start through ``instance_main`` (parent side)."""
    from devstack import lambda_runtime  # noqa: PLC0415

    original = lambda_runtime._instance_main
    setattr(lambda_runtime, "_instance_main", instance_main)  # noqa: B010
    try:
        yield
    finally:
        setattr(lambda_runtime, "_instance_main", original)  # noqa: B010


def env_overrides(directory: Path, functions: list[str]) -> dict[str, dict[str, str]]:
    """Per function: where to write, and its name (also its SDK app id, which the request
    counter reads from the User-Agent)."""
    return {
        logical_id: {
            DIRECTORY_ENV: str(directory),
            FUNCTION_ENV: logical_id,
            "AWS_SDK_UA_APP_ID": logical_id,
        }
        for logical_id in functions
    }


class Window:
    """What the instances wrote to ``directory`` between ``start`` and ``read``: log bytes per
    function and the invocation lines."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._offsets: dict[Path, int] = {}

    def start(self) -> None:
        self._offsets = {path: path.stat().st_size for path in self.directory.iterdir()}

    def read(self) -> tuple[dict[str, int], list[dict[str, Any]]]:
        log_bytes: dict[str, int] = {}
        invocations: list[dict[str, Any]] = []
        for path in sorted(self.directory.iterdir()):
            offset = self._offsets.get(path, 0)
            if path.suffix == ".log":
                log_bytes[path.stem] = path.stat().st_size - offset
            elif path.suffix == ".jsonl":
                with path.open("rb") as file:
                    file.seek(offset)
                    data = file.read()
                complete = data[: data.rfind(b"\n") + 1]
                invocations += [json.loads(line) for line in complete.splitlines() if line.strip()]
        return log_bytes, invocations

    def metric_sum(self, function: str, metric: str) -> float:
        """The sum of `metric`'s values in the EMF documents `function` printed since `start`."""
        path = self.directory / f"{function}.log"
        if not path.exists():
            return 0.0
        with path.open("rb") as file:
            file.seek(self._offsets.get(path, 0))
            text = file.read().decode("utf-8", "replace")
        pattern = re.compile(rf'"{re.escape(metric)}":\s*\[([^\]]*)\]')
        return sum(float(v) for match in pattern.findall(text) for v in match.split(",") if v.strip())
