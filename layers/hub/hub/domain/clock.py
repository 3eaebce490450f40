"""The hub's one wall clock. Use cases take a `clock` argument defaulting to `utcnow`, so tests
pass their own instead of patching."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (never a naive datetime)."""
    return datetime.now(UTC)


def within_utc(value: datetime) -> datetime:
    """`value` unchanged when UTC can hold it; ValueError otherwise (a time of year 1 east of
    Greenwich, or of 9999 west of it, falls outside datetime's range once converted). Every
    timestamp the hub stores is stored in UTC, so an outside time must be refused where it
    comes in, as invalid input, not found later as an OverflowError."""
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise ValueError("must be between years 0001 and 9999 in UTC") from None
    return value


#: A timestamp from outside (RFC 3339 with an offset) that the hub can store: in UTC's range.
StorableTime = Annotated[AwareDatetime, AfterValidator(within_utc)]
