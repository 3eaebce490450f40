"""The one clock of the hub: aware UTC now. Use cases take it as a parameter so tests move time."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)
