"""Test-suite-wide collection rules."""

from __future__ import annotations

import os

# tests/built runs the `sam build` output; `make validate` builds it and sets HUB_BUILT_DIR.
# Without a build there is nothing to run them on, so plain `make test` does not collect them.
collect_ignore = [] if os.environ.get("HUB_BUILT_DIR") else ["built"]
