"""Retention (issue 29): how long the hub keeps a message's payload, and the message itself.

Two periods in days, each the tenant's own when it has one, else the platform's (template
parameters PayloadRetentionDays and MessageRetentionDays):

- the payload (and so the mapped body, which is computed from it) is purged after
  `payload_days`: the message keeps its metadata, status, timeline and fingerprint;
- the message and its satellites (correlation pointer, status callbacks, business-key item) are
  deleted after `message_days`.

Both are DynamoDB TTLs (`expires_at`), which deletes lazily (up to about two days late): a read
for a view treats an expired message as gone (`expired`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

#: The bounds of either period, platform default or tenant override (ten years at most: a TTL
#: further out is no retention at all).
MIN_RETENTION_DAYS = 1
MAX_RETENTION_DAYS = 3650


@dataclass(frozen=True)
class Retention:
    """How long a tenant's payloads and messages are kept, in days."""

    payload_days: int
    message_days: int

    def __post_init__(self) -> None:
        for days in (self.payload_days, self.message_days):
            if not MIN_RETENTION_DAYS <= days <= MAX_RETENTION_DAYS:
                raise ValueError(f"retention is {MIN_RETENTION_DAYS} to {MAX_RETENTION_DAYS} days")
        if self.payload_days > self.message_days:
            raise ValueError("a payload cannot be kept longer than its message")

    @classmethod
    def effective(cls, defaults: Retention, payload_days: int | None, message_days: int | None) -> Retention:
        """The tenant's overrides (None: the platform's default) over `defaults`. The payload is
        never kept longer than its message: a tenant that set only a message retention shorter
        than the platform's payload default keeps its payloads that long."""
        message = message_days if message_days is not None else defaults.message_days
        payload = payload_days if payload_days is not None else defaults.payload_days
        return cls(payload_days=min(payload, message), message_days=message)

    def payload_until(self, received_at: datetime) -> datetime:
        return received_at + timedelta(days=self.payload_days)

    def message_until(self, received_at: datetime) -> datetime:
        return received_at + timedelta(days=self.message_days)


def check_overrides(payload_days: int | None, message_days: int | None, defaults: Retention) -> list[str]:
    """What is wrong with a tenant's overrides (empty: nothing). Each is within the bounds (the
    model checks that); together with the defaults for what is not set, the payload must not
    outlive its message - except that a payload default longer than a tenant's message retention
    is shortened to it (`Retention.effective`), so only an explicit payload retention is refused."""
    if payload_days is None:
        return []
    message = message_days if message_days is not None else defaults.message_days
    if payload_days > message:
        return [
            f"payload_retention_days ({payload_days}) must not exceed message_retention_days ({message}"
            + ("" if message_days is not None else ", the platform's default")
            + ")"
        ]
    return []


def expired(expires_at: int | None, now: datetime) -> bool:
    """Whether an item whose TTL is `expires_at` (epoch seconds; None: none) is gone at `now`
    for a reader, whether or not DynamoDB has deleted it yet."""
    return expires_at is not None and expires_at <= int(now.timestamp())
