"""Test-suite-wide collection rules."""

from __future__ import annotations

import os

from devstack.lambda_runtime import INSTANCE_START_ENV

# tests/built runs the `sam build` output; `make validate` builds it and sets HUB_BUILT_DIR.
# Without a build there is nothing to run them on, so plain `make test` does not collect them.
collect_ignore = [] if os.environ.get("HUB_BUILT_DIR") else ["built"]

# The local stacks of the e2e, reliability and soak tiers start hundreds of function instances:
# forked from a server that has imported the third-party libraries once, instead of a fresh
# interpreter each (devstack/lambda_runtime.py, INSTANCE_START_ENV). `make run` still spawns.
os.environ.setdefault(INSTANCE_START_ENV, "forkserver")
