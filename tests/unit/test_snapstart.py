"""SnapStart (issue 29): every environment resumed from one snapshot starts with the same memory,
so after a restore the hub re-seeds `random` and forgets what it built - use cases and their
caches, settings, boto3's session, clients and credentials (hub.wiring.after_restore)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hub import wiring
from hub.adapters import aws
from hub.config import settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def stack_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    # A client resolves its credentials when it is made (from here: no metadata endpoint).
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("HUB_TABLE_NAME", "hub-test")
    monkeypatch.setenv("HUB_PIPELINE_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/123456789012/pipeline")
    wiring.reset()
    aws.reset_clients()
    yield
    wiring.reset()
    aws.reset_clients()


def test_after_a_restore_everything_built_is_forgotten(stack_env: None) -> None:
    # Given what a warm instance holds: settings, use cases with their caches, a session and clients
    throttle, config, current = wiring.tenant_throttle(), wiring.config_repository(), settings()
    session, dynamodb = aws._session(), aws.client("dynamodb")
    aws.best_effort_client("dynamodb")

    # When the runtime resumes the environment from a snapshot
    wiring.after_restore()

    # Then nothing built before it is used again
    assert wiring.tenant_throttle.cache_info().currsize == 0
    assert wiring.config_repository.cache_info().currsize == 0
    assert settings.cache_info().currsize == 0
    assert (aws._session.cache_info().currsize, aws.client.cache_info().currsize) == (0, 0)
    assert aws.best_effort_client.cache_info().currsize == 0
    # ... and the next use builds afresh: new buckets, a new configuration cache (its entries'
    # ages counted on the snapshot's clock), a new session (its credentials resolved again)
    assert wiring.tenant_throttle() is not throttle
    assert wiring.config_repository() is not config
    assert settings() is not current
    assert aws._session() is not session
    assert aws.client("dynamodb") is not dynamodb


def test_after_a_restore_random_is_reseeded_from_the_os(stack_env: None) -> None:
    # Given the generator's state as the snapshot holds it (the same in every resumed environment)
    random.seed(29)
    snapshot = random.getstate()

    # When two environments are resumed from it
    wiring.after_restore()
    first = [random.random() for _ in range(4)]
    random.setstate(snapshot)
    wiring.after_restore()
    second = [random.random() for _ in range(4)]

    # Then they draw different jitter, and not the snapshot's sequence
    random.setstate(snapshot)
    from_snapshot = [random.random() for _ in range(4)]
    assert first != second
    assert from_snapshot not in (first, second)


def test_before_the_snapshot_boto3_is_loaded_but_no_session_or_client_is_made(stack_env: None) -> None:
    wiring.before_snapshot()

    assert "boto3" in sys.modules
    assert (aws._session.cache_info().currsize, aws.client.cache_info().currsize) == (0, 0)


class _Runtime:
    """Stands in for snapshot_restore_py."""

    def __init__(self) -> None:
        self.before: list[Callable[[], None]] = []
        self.after: list[Callable[[], None]] = []

    def register_before_snapshot(self, hook: Callable[[], None]) -> None:
        self.before.append(hook)

    def register_after_restore(self, hook: Callable[[], None]) -> None:
        self.after.append(hook)


def test_the_hooks_are_registered_with_the_runtime() -> None:
    runtime = _Runtime()

    assert wiring.register_snapstart_hooks(runtime) is True
    assert (runtime.before, runtime.after) == ([wiring.before_snapshot], [wiring.after_restore])


def test_outside_lambda_there_is_no_runtime_to_register_with(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wiring, "_snapstart_runtime", lambda: None)

    assert wiring.register_snapstart_hooks() is False


_FAKE_RUNTIME = """
before, after = [], []

def register_before_snapshot(func, *args, **kwargs):
    before.append(func)

def register_after_restore(func, *args, **kwargs):
    after.append(func)
"""

_CHILD = """
import importlib.util, random, sys
spec = importlib.util.spec_from_file_location("handler_under_test", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
import snapshot_restore_py as runtime
from hub import wiring
assert (runtime.before, runtime.after) == ([wiring.before_snapshot], [wiring.after_restore])
for hook in runtime.before:
    hook()
ingestor = wiring.ingestor()
random.seed(1)
for hook in runtime.after:
    hook()
assert wiring.ingestor.cache_info().currsize == 0 and wiring.ingestor() is not ingestor
assert random.random() != (random.seed(1) or random.random())
print("ok")
"""


def test_a_handler_registers_the_hooks_where_the_runtime_has_them(tmp_path: Path) -> None:
    # Given the runtime's hooks library on the path, as in Lambda's Python runtimes
    (tmp_path / "snapshot_restore_py.py").write_text(_FAKE_RUNTIME)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "layers" / "hub"), str(ROOT)]),
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "HUB_TABLE_NAME": "hub-test",
        "HUB_PIPELINE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/pipeline",
    }
    handler = ROOT / "functions" / "ingest_api" / "app.py"

    # When the handler module is imported (Lambda's init), then snapshotted and restored
    answer = subprocess.run(
        [sys.executable, "-c", _CHILD, str(handler)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    # Then the hub's hooks were registered, and run as the runtime runs them
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip().endswith("ok")
