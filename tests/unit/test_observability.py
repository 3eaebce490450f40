"""Tracing: on exactly when Powertools would trace, and free (no X-Ray SDK) when off. The
collector: paused through a Lambda instance's cold start, as usual after it."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest
from aws_lambda_powertools import Tracer

from hub import cold_start
from hub.observability import gc_after_first_invocation, traced, tracing_enabled

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"LAMBDA_TASK_ROOT": "/var/task"},
        {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"},
        {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "false"},
        {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "1"},
        {"LAMBDA_TASK_ROOT": "/var/task", "AWS_SAM_LOCAL": "true"},
        {"LAMBDA_TASK_ROOT": "/var/task", "AWS_CHALICE_CLI_MODE": "true"},
        {"POWERTOOLS_TRACE_DISABLED": "false"},
    ],
)
def test_tracing_is_on_exactly_when_powertools_would_trace(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "LAMBDA_TASK_ROOT",
        "POWERTOOLS_TRACE_DISABLED",
        "AWS_SAM_LOCAL",
        "AWS_CHALICE_CLI_MODE",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert tracing_enabled() is not bool(Tracer._is_tracer_disabled())


def test_with_tracing_off_the_handler_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")

    def handler(event: dict[str, str], context: object) -> dict[str, str]:
        return event

    assert traced(handler) is handler


_CHILD = """
import sys
from hub.observability import traced

def handler(event, context):
    return {"echo": event}

class Context:
    function_name = "f"
    aws_request_id = "r"

wrapped = traced(handler)
assert "aws_xray_sdk" in sys.modules, "tracing on: Powertools' Tracer (X-Ray SDK) is used"
assert wrapped is not handler
assert wrapped({"a": 1}, Context()) == {"echo": {"a": 1}}
print("ok")
"""


def test_in_lambda_with_tracing_on_the_handler_runs_under_powertools_tracer() -> None:
    # A fresh process: constructing a Tracer patches botocore and httpx for the whole process.
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT / "layers" / "hub"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "LAMBDA_TASK_ROOT": "/var/task",
        "POWERTOOLS_SERVICE_NAME": "integration-hub-test",
    }
    answer = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip().endswith("ok")


def test_outside_lambda_the_collector_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAMBDA_TASK_ROOT", raising=False)

    def handler(event: dict[str, str], context: object) -> dict[str, str]:
        return event

    assert gc_after_first_invocation(handler) is handler


_GC_CHILD = """
import gc
from hub.observability import gc_after_first_invocation

calls = []

def handler(event, context):
    calls.append(gc.isenabled())
    if event.get("fail"):
        raise RuntimeError("first invocation fails")
    return {"echo": event}

# Python 3.12 starts with a few hundred objects in the permanent generation already.
at_start = gc.get_freeze_count()
assert not gc.isenabled(), "paused from the import of hub.observability (hub.cold_start) on"
wrapped = gc_after_first_invocation(handler)
assert wrapped is not handler and wrapped.__name__ == "handler"
assert not gc.isenabled(), "still paused after the decoration (the handler module's import)"
try:
    wrapped({"fail": FAIL}, None)
except RuntimeError:
    assert FAIL
assert gc.isenabled(), "collecting again after the first invocation, even a failed one"
assert gc.get_freeze_count() > at_start + 1000, "the cold start's objects are frozen"
frozen = gc.get_freeze_count()
assert wrapped({"a": 1}, None) == {"echo": {"a": 1}}
assert calls == [False, True]
assert gc.isenabled() and gc.get_freeze_count() == frozen, "only once"
print("ok")
"""


@pytest.mark.parametrize("fail", [False, True], ids=["answers", "raises"])
def test_in_lambda_the_collector_is_paused_until_the_first_invocation_ends(fail: bool) -> None:
    # A fresh process: the test would otherwise pause and freeze pytest's own collector.
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT / "layers" / "hub"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "LAMBDA_TASK_ROOT": "/var/task",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    code = _GC_CHILD.replace("FAIL", str(fail))
    answer = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip().endswith("ok")


_PAUSED_FROM_THE_FIRST_IMPORT = """
import gc
import hub.cold_start
assert hub.cold_start.paused is IN_LAMBDA and gc.isenabled() is not IN_LAMBDA
import pydantic  # the handler's other imports run with the collector paused (in Lambda)
assert gc.isenabled() is not IN_LAMBDA
from hub.observability import gc_after_first_invocation

def handler(event, context):
    return gc.isenabled()

wrapped = gc_after_first_invocation(handler)
assert gc.isenabled() is not IN_LAMBDA
assert wrapped({}, None) is not IN_LAMBDA, "the first invocation runs paused too (in Lambda)"
assert gc.isenabled(), "collecting again after it"
print("ok")
"""


@pytest.mark.parametrize("in_lambda", [True, False], ids=["lambda", "elsewhere"])
def test_a_handler_importing_cold_start_first_is_paused_from_its_first_import(in_lambda: bool) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT / "layers" / "hub"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        **({"LAMBDA_TASK_ROOT": "/var/task"} if in_lambda else {}),
    }
    code = _PAUSED_FROM_THE_FIRST_IMPORT.replace("IN_LAMBDA", str(in_lambda))
    answer = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip().endswith("ok")


def test_a_collector_paused_by_someone_else_is_left_to_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # Not paused by hub.cold_start (this process is no Lambda instance): the decorator must not
    # resume what another owner paused.
    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")
    monkeypatch.setattr(cold_start, "paused", False)

    def handler(event: dict[str, str], context: object) -> bool:
        return gc.isenabled()

    gc.disable()
    try:
        wrapped = gc_after_first_invocation(handler)
        assert wrapped is handler
        assert handler({}, None) is False
    finally:
        gc.enable()
