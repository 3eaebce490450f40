"""How many messages the largest reliability proofs send: a smaller run in `make test` (the
same checks, minutes less on a 2-core machine), the sizes their requirements name with
`HUB_FULL_SIZE=1`, which `make soak` sets (as the soak itself runs small in `make test` and at
10,000 messages in `make soak`)."""

from __future__ import annotations

import os


def full_size() -> bool:
    return os.environ.get("HUB_FULL_SIZE", "").lower() in {"1", "true", "yes"}


def proof_size(small: int, full: int) -> int:
    """`full` under HUB_FULL_SIZE=1, else `small`."""
    return full if full_size() else small
