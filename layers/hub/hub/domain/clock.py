"""The hub's one wall clock. Use cases take a `clock` argument defaulting to `utcnow`, so tests
pass their own instead of patching."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (never a naive datetime)."""
    return datetime.now(UTC)
