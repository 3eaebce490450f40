"""Test-suite-wide collection rules."""

from __future__ import annotations

import os
import sys

import pytest

from devstack.lambda_runtime import INSTANCE_START_ENV

# tests/built runs the `sam build` output; `make validate` builds it and sets HUB_BUILT_DIR.
# Without a build there is nothing to run them on, so plain `make test` does not collect them.
collect_ignore = [] if os.environ.get("HUB_BUILT_DIR") else ["built"]

# The local stacks of the e2e, reliability and soak tiers start hundreds of function instances:
# forked from a server that has imported the third-party libraries once, instead of a fresh
# interpreter each (devstack/lambda_runtime.py, INSTANCE_START_ENV). `make run` still spawns.
os.environ.setdefault(INSTANCE_START_ENV, "forkserver")

# Compiled modules are cached (__pycache__, ignored by git) even where the shell asks Python not
# to write them (PYTHONDONTWRITEBYTECODE): without the cache, each of the four workers compiled
# every test module, and each function instance and hubctl run our code, afresh (collection
# 12 s against 5 s). For this process from here on, and for every process it starts.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

#: `make test` hands whole files to its workers (`--dist loadfile`): a module's local stack,
#: browser and worlds are built once, on one worker. The files go out longest tier first, so the
#: few minute-long proofs start at once and the many short unit files fill the end.
_TIER_ORDER = ("reliability", "soak", "e2e", "fuzz", "integration", "contract", "unit")


def _tier_rank(item: pytest.Item) -> int:
    parts = item.nodeid.split("/")
    tier = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
    return _TIER_ORDER.index(tier) if tier in _TIER_ORDER else len(_TIER_ORDER)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_tier_rank)  # stable: each file's tests stay together and in order
