"""How an instance starts (devstack/lambda_runtime.py, INSTANCE_START_ENV): spawned, a fresh
interpreter as `make run` does, or forked from a server that imported the third-party libraries
once, as the test suite does. Either way the handler sees only its function's environment, its
own folders first on sys.path and its code folder as cwd, and imports its module itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.lambda_runtime import INSTANCE_START_ENV, FunctionPool, instance_context
from tests.function_pools import pool_of

HANDLER = """
import os, sys

PRELOADED = "boto3" in sys.modules  # before this module imported anything of its own
IMPORTED_HERE = __name__

def handler(event, context):
    return {
        "preloaded": PRELOADED,
        "module": IMPORTED_HERE,
        "env": {k: os.environ.get(k) for k in ("HUB_ONLY_HERE", "PARENT_ONLY", "AWS_EXECUTION_ENV")},
        "path0": sys.path[0],
        "cwd": os.getcwd(),
    }
"""


def _pool(code_dir: Path) -> FunctionPool:
    return pool_of(code_dir, HANDLER, environment={"HUB_ONLY_HERE": "yes"})


@pytest.fixture(params=["spawn", "forkserver"])
def pool(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FunctionPool]:
    monkeypatch.setenv(INSTANCE_START_ENV, request.param)
    monkeypatch.setenv("PARENT_ONLY", "leaked")
    made = _pool(tmp_path)
    yield made
    made.close()


def test_an_instance_sees_its_functions_environment_and_folders_however_it_starts(
    pool: FunctionPool, tmp_path: Path
) -> None:
    seen = pool.invoke({}).payload

    assert seen["module"] == "app"
    assert seen["env"] == {
        "HUB_ONLY_HERE": "yes",
        "PARENT_ONLY": None,
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
    }
    assert seen["path0"] == str(tmp_path)
    assert seen["cwd"] == str(tmp_path)


def test_a_forked_instance_starts_with_the_libraries_imported_and_a_spawned_one_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    preloaded = {}
    for mode in ("spawn", "forkserver"):
        monkeypatch.setenv(INSTANCE_START_ENV, mode)
        code_dir = tmp_path / mode
        code_dir.mkdir()
        made = _pool(code_dir)
        try:
            preloaded[mode] = made.invoke({}).payload["preloaded"]
        finally:
            made.close()

    assert preloaded == {"spawn": False, "forkserver": True}


def test_built_mode_always_spawns_since_it_checks_where_each_import_comes_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(INSTANCE_START_ENV, "forkserver")

    assert instance_context(isolated=True).get_start_method() == "spawn"
    assert instance_context(isolated=False).get_start_method() == "forkserver"
