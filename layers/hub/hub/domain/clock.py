"""The hub's one wall clock. Use cases take a `clock` argument defaulting to `utcnow`, so tests
pass their own instead of patching."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BeforeValidator


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


_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})")


def rfc3339_text(value: Any) -> Any:
    """`value` when it is RFC 3339 text with an offset (or None); ValueError otherwise. pydantic
    alone also takes Unix numbers ("-1.5e-215" is 1970) and dates without a time."""
    if value is not None and not (isinstance(value, str) and _RFC3339.fullmatch(value)):
        raise ValueError("must be an RFC 3339 timestamp with offset, e.g. 2026-12-01T10:00:00Z")
    return value


#: A timestamp from outside that the hub can store: in UTC's range.
StorableTime = Annotated[AwareDatetime, AfterValidator(within_utc)]
#: The same, and written as the documents say (`format: date-time`): RFC 3339 with an offset.
Rfc3339Time = Annotated[AwareDatetime, BeforeValidator(rfc3339_text), AfterValidator(within_utc)]
