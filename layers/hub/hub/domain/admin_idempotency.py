"""The admin API's Idempotency-Key rules (issue 28, point 1): an operator's double submit is one
action, and a repeat answers what the first answered. Pure: the header's validation, the
request's fingerprint, and what a stored claim means for a new request.

A key is the calling token's (another token's same key is another claim), kept 24 hours. The
first request claims it as `running` under a lease; its answer (2xx or 4xx) is then kept, a 5xx
or a crash frees it. A claim still `running` after its lease was left by a run that died (the
lease outlives the function's timeout), so a resend of the same request takes it over.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from hub.errors import IdempotencyKeyInUse, IdempotencyKeyReused, ValidationFailed

#: The request header, as the contract names it (HTTP headers are case-insensitive).
HEADER = "Idempotency-Key"
#: The answer header of a repeat.
REPLAYED_HEADER = "Idempotent-Replayed"
#: The methods that change something: only these take a key.
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: How long a key is remembered (DynamoDB's TTL then deletes its claim).
RETENTION = timedelta(hours=24)
#: How long a run holds its claim: beyond the admin function's timeout (60 s, template.yaml),
#: so a live run always ends first, and a claim still running after it belongs to a dead one.
LEASE = timedelta(seconds=90)

_KEY_RE = re.compile(r"[\x20-\x7e]{1,255}")


def idempotency_key(raw: str) -> str:
    """The header's value when it is 1-255 printable ASCII characters; ValidationFailed (400,
    naming the header, never echoing the value) otherwise. Never trimmed: two callers must not
    meet on a key we rewrote."""
    if not _KEY_RE.fullmatch(raw):
        raise ValidationFailed(
            f"{HEADER} must be 1 to 255 printable ASCII characters",
            details=[
                {
                    "field": HEADER,
                    "problem": "idempotency_key",
                    "message": "1 to 255 printable ASCII characters (space to ~)",
                }
            ],
        )
    return raw


def key_hash(key: str) -> str:
    """Claims are stored by the key's SHA-256: bounded, and no caller text in a table key."""
    return hashlib.sha256(key.encode("ascii")).hexdigest()


def request_fingerprint(method: str, path: str, query: Iterable[tuple[str, str]], body: bytes) -> str:
    """SHA-256 of what makes two requests the same one: the method, the path, the query's
    (name, value) pairs in any order, and the body's bytes exactly as sent."""
    head = json.dumps([method.upper(), path, sorted(query)], separators=(",", ":")).encode()
    return hashlib.sha256(len(head).to_bytes(8, "big") + head + hashlib.sha256(body).digest()).hexdigest()


class ClaimState(StrEnum):
    #: The first request is running (until `lease_until`).
    RUNNING = "running"
    #: Its answer is kept: a repeat answers it.
    KEPT = "kept"


@dataclass(frozen=True)
class StoredClaim:
    """A key's claim as stored (its kept answer, sealed, stays with the store)."""

    request_sha256: str
    state: ClaimState
    #: Running claims: when the lease of the run that holds it ends.
    lease_until: datetime | None
    #: When the key is forgotten (retention from its claim).
    expires_at: datetime


class Verdict(StrEnum):
    #: The claim is free (none, expired, or abandoned by a dead run): claim it again.
    CLAIM = "claim"
    #: The same request's kept answer: answer it again, do nothing.
    REPLAY = "replay"


def verdict(stored: StoredClaim | None, request_sha256: str, now: datetime) -> Verdict:
    """What a request with the key of `stored` gets. Raises IdempotencyKeyReused (422) when the
    key was first used with another request, IdempotencyKeyInUse (409) while the same request's
    first run still holds it."""
    if stored is None or stored.expires_at <= now:
        return Verdict.CLAIM
    if stored.request_sha256 != request_sha256:
        raise IdempotencyKeyReused(
            f"this {HEADER} was first used with a different request; send a new request with a new key",
            details={"header": HEADER},
        )
    if stored.state is ClaimState.KEPT:
        return Verdict.REPLAY
    if stored.lease_until is not None and stored.lease_until <= now:
        return Verdict.CLAIM  # its run died (the lease outlives the function's timeout)
    raise IdempotencyKeyInUse(
        f"the first request with this {HEADER} is still running; resend it in a moment for its answer",
        details={"header": HEADER},
    )


def kept(status: int) -> bool:
    """Whether an answer with `status` is kept for repeats: 2xx and 4xx are; a 5xx is not (the
    request is safe to resend, and a resend runs again)."""
    return status < 500
