"""Pipeline timing and keys (seed 002, sections 6 and 8). Pure."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from datetime import timedelta

#: Busy entity lock: reschedule after these delays, the last repeating (seed 002, 6).
LOCK_WAIT_LADDER_SECONDS = (2, 5, 15, 30, 60, 120)
LOCK_WAIT_JITTER = 0.2
#: After this many busy reschedules the message ends in error (about 52 minutes).
MAX_LOCK_WAITS = 30
#: The longest a message stays in flight (received, not yet at an outcome) when nothing fails:
#: every busy-entity wait at its longest jitter, plus a margin for its steps and redeliveries.
#: Later than that it is at an outcome, waiting in a queue tab (error, retry_pending,
#: dead_letter), or stuck (its step dead-lettered on the pipeline queue).
_LONGEST_WAITS = sum(
    LOCK_WAIT_LADDER_SECONDS[min(i, len(LOCK_WAIT_LADDER_SECONDS) - 1)] for i in range(MAX_LOCK_WAITS)
)
LONGEST_IN_FLIGHT = timedelta(seconds=_LONGEST_WAITS * (1 + LOCK_WAIT_JITTER)) + timedelta(minutes=5)
LOCK_LEASE = timedelta(minutes=5)
#: A live admission record with no activity for this long is abandoned and may be taken over.
ADMISSION_ABANDONED_AFTER = timedelta(hours=24)
#: After an execution finishes, the same work is not readmitted for this long.
RECENT_COMPLETION = timedelta(minutes=5)
#: How long a completed step id is remembered to drop redeliveries.
STEP_DEDUP_WINDOW = timedelta(minutes=5)
#: A step whose message does not exist (yet): the ingest may still be committing it. The ingest
#: publishes the step, then commits within its own invocation (the template's 10 s timeout);
#: after that, plus a margin for clock skew, the step is an orphan of a failed ingest or of a
#: duplicate (its transaction lost to an earlier claim) and is dropped.
ORPHAN_GRACE = timedelta(seconds=15)
ORPHAN_RECHECK_SECONDS = 5
MAX_ORPHAN_CHECKS = int(ORPHAN_GRACE.total_seconds()) // ORPHAN_RECHECK_SECONDS


def lock_wait_delay(lock_wait: int, rand: Callable[[], float] = random.random) -> int:
    """Seconds before a busy step runs again: the ladder entry for this wait, +/-20%."""
    base = LOCK_WAIT_LADDER_SECONDS[min(lock_wait, len(LOCK_WAIT_LADDER_SECONDS) - 1)]
    factor = 1 + LOCK_WAIT_JITTER * (2 * rand() - 1)
    return max(1, round(base * factor))


def entity_key(tenant_id: str, integration_id: str, message_type: str, key_values: list[str]) -> str:
    """What one step at a time is serialized on, and what duplicate rules compare: the business
    entity when the message type declares duplicate-key fields and the payload has them (two
    versions of PO-1 never interleave); "" when the message is its own entity. It names the
    tenant: integration ids are unique within a tenant only."""
    if not key_values:
        return ""
    digest = hashlib.sha256(chr(31).join(key_values).encode()).hexdigest()
    return f"{tenant_id}#{integration_id}#{message_type}#{digest}"
