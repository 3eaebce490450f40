"""Delivery-status callbacks (seed 004, pattern 5): what a destination may confirm later, and
the rule that the message's projection of it only ever moves forward.

The ladder is ``pending < accepted < delivered < read``; ``rejected`` and ``expired`` are terminal
failures kept apart from it:

- a ladder status replaces a lower one (pending is "no callback yet": never stored);
- a failure replaces ``pending`` or ``accepted`` only: once the destination said `delivered`, a
  later failure is a contradiction kept in the callback log, not a change of the projection;
- after a failure nothing moves (not another failure either);
- the same status again, or a lower one, moves nothing (a late `delivered` after `read`).

Every callback is recorded as received whether it moves the projection or not.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import ConfigDict, Field

from hub.domain.clock import Rfc3339Time
from hub.domain.model import HubModel


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    DELIVERED = "delivered"
    READ = "read"
    REJECTED = "rejected"
    EXPIRED = "expired"


D = DeliveryStatus

#: The ladder's ranks; the failures are not on it.
LADDER: dict[DeliveryStatus, int] = {D.PENDING: 0, D.ACCEPTED: 1, D.DELIVERED: 2, D.READ: 3}
#: Terminal failures: reached from pending or accepted only, and nothing follows them.
FAILURES = frozenset({D.REJECTED, D.EXPIRED})
#: The statuses a failure may replace.
FAILURE_SOURCES = frozenset({D.PENDING, D.ACCEPTED})


class CallbackStatus(StrEnum):
    """What a destination may report (pending is the hub's own starting point)."""

    ACCEPTED = "accepted"
    DELIVERED = "delivered"
    READ = "read"
    REJECTED = "rejected"
    EXPIRED = "expired"


def may_follow(current: DeliveryStatus | None, new: DeliveryStatus) -> bool:
    """Whether `new` advances a projection standing at `current` (None: pending)."""
    now = current or D.PENDING
    if now in FAILURES or new is D.PENDING:
        return False
    if new in FAILURES:
        return now in FAILURE_SOURCES
    return LADDER[new] > LADDER[now]


def sources_of(new: DeliveryStatus) -> frozenset[DeliveryStatus]:
    """Every status `new` may replace: the condition of the one update that advances it.
    `pending` in it means "no status stored yet"."""
    return frozenset(s for s in DeliveryStatus if may_follow(s, new))


_NO_CONTROLS = r"^[^\x00-\x1f\x7f]*$"


class StatusCallback(HubModel):
    """The body of `POST /api/edi-hub/status-callback/{message_id}`."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    status: CallbackStatus
    #: When the destination says it happened (RFC 3339 with offset); kept in the callback
    #: record, apart from `received_at`, when the hub got it.
    occurred_at: Rfc3339Time | None = None
    #: A short reason or note from the destination (kept for troubleshooting; never logged).
    detail: str | None = Field(default=None, min_length=1, max_length=500, pattern=_NO_CONTROLS)
    #: The destination's own id of the message or of this status event.
    external_ref: str | None = Field(default=None, min_length=1, max_length=255, pattern=_NO_CONTROLS)


# --- the per-connection credential ---------------------------------------------------------------

CALLBACK_TOKEN_PREFIX = "hub_cb_"  # noqa: S105 - a prefix, not a secret
#: How many characters of a token may be shown and stored in clear (prefix + 8 random).
SHOWN_TOKEN_PREFIX_LENGTH = len(CALLBACK_TOKEN_PREFIX) + 8
#: How long the previous token keeps working after a new one is minted, by default and at most.
DEFAULT_CALLBACK_GRACE = timedelta(hours=24)
MAX_CALLBACK_GRACE_HOURS = 720


def generate_callback_token() -> str:
    """A new callback token, shown once: `hub_cb_` and 256 random bits."""
    return f"{CALLBACK_TOKEN_PREFIX}{secrets.token_urlsafe(32)}"


def hash_callback_token(raw: str) -> str:
    """Hex SHA-256 of a token: the only form it is stored in (it is random, so no salt)."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


class CallbackCredential(HubModel):
    """A connection's status-callback credential: the current token's hash and, during a
    rotation's grace period, the previous one's."""

    model_config = ConfigDict(frozen=True)

    connection_id: str
    tenant_id: str
    token_id: str
    token_sha256: str
    prefix: str
    minted_at: datetime
    previous_sha256: str | None = None
    previous_until: datetime | None = None

    def accepts(self, presented_sha256: str, now: datetime) -> bool:
        """Constant-time: compares with the current hash and (within its grace) the previous."""
        current = secrets.compare_digest(presented_sha256, self.token_sha256)
        previous = bool(
            self.previous_sha256
            and self.previous_until is not None
            and now < self.previous_until
            and secrets.compare_digest(presented_sha256, self.previous_sha256)
        )
        return current or previous


def credential_view(credential: CallbackCredential, now: datetime) -> dict[str, Any]:
    """A credential as the admin API shows it: never a token, nor a hash."""
    live_previous = credential.previous_until is not None and now < credential.previous_until
    return {
        "connection_id": credential.connection_id,
        "token_id": credential.token_id,
        "prefix": credential.prefix,
        "minted_at": _iso(credential.minted_at),
        "previous_valid_until": _iso(credential.previous_until) if live_previous else None,
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None
