"""EventBridge Scheduler schedule expressions: ``at(...)``, ``rate(...)`` and ``cron(...)``.

Cron follows the AWS six-field form ``cron(minutes hours day-of-month month day-of-week
year)``: numbers, ``*``, ``?``, lists, ranges (wrapping ones too), steps, month names
JAN-DEC and day names SUN-SAT (AWS numbers days 1-7 starting on Sunday). The ``L``, ``W``
and ``#`` forms raise :class:`UnsupportedExpression` so a caller can log and skip them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

_MONTHS = {
    name: index
    for index, name in enumerate(
        ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], 1
    )
}
_DAYS = {name: index for index, name in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], 1)}
_RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86400}
_AT = re.compile(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$")
_RATE = re.compile(r"^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$")
_CRON = re.compile(r"^cron\((.+)\)$")
_SEARCH_DAYS = 366 * 5  # a cron with no occurrence in five years is treated as never firing


class ExpressionError(ValueError):
    """The expression is not a valid schedule expression."""


class UnsupportedExpression(ExpressionError):
    """Valid for AWS, but uses a form this local scheduler does not evaluate (L, W, #)."""


@dataclass(frozen=True)
class AtExpression:
    """A one-time schedule; ``when`` is a wall-clock time in the schedule's time zone."""

    when: datetime

    def fire_time(self, zone: tzinfo) -> datetime:
        return self.when.replace(tzinfo=zone)


@dataclass(frozen=True)
class RateExpression:
    """A fixed period between invocations, counted from the schedule's anchor time."""

    period: timedelta

    def latest_at_or_before(self, anchor: datetime, now: datetime) -> datetime | None:
        """The most recent occurrence ``anchor + k*period`` (k >= 1) that is <= ``now``."""
        if now < anchor + self.period:
            return None
        periods = int((now - anchor) / self.period)
        return anchor + periods * self.period


@dataclass(frozen=True)
class CronExpression:
    """A parsed AWS cron; the sets hold the allowed values of each field."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int] | None  # None means '?' (day-of-week decides)
    months: frozenset[int]
    days_of_week: frozenset[int] | None  # AWS numbering, 1 = Sunday; None means '?'
    years: frozenset[int]

    def next_after(self, after: datetime, zone: tzinfo) -> datetime | None:
        """First occurrence strictly after ``after``, evaluated in ``zone``; None if none soon."""
        local = after.astimezone(zone).replace(tzinfo=None, second=0, microsecond=0)
        start = local + timedelta(minutes=1)
        day = start.date()
        for _ in range(_SEARCH_DAYS):
            if self._day_matches(day):
                for hour in sorted(self.hours):
                    for minute in sorted(self.minutes):
                        candidate = datetime(day.year, day.month, day.day, hour, minute)
                        if candidate >= start:
                            return candidate.replace(tzinfo=zone)
            day += timedelta(days=1)
        return None

    def _day_matches(self, day: date) -> bool:
        if day.year not in self.years or day.month not in self.months:
            return False
        if self.days_of_month is not None:
            return day.day in self.days_of_month
        aws_weekday = (day.weekday() + 1) % 7 + 1  # Monday=0 in Python, Sunday=1 in AWS
        return self.days_of_week is not None and aws_weekday in self.days_of_week


Expression = AtExpression | RateExpression | CronExpression


def parse_expression(expression: str) -> Expression:
    """Parse any EventBridge Scheduler expression; raises :class:`ExpressionError`."""
    text = expression.strip()
    if match := _AT.match(text):
        try:
            return AtExpression(datetime.fromisoformat(match.group(1)))
        except ValueError as exc:
            raise ExpressionError(f"invalid at() time in {expression!r}") from exc
    if match := _RATE.match(text):
        value = int(match.group(1))
        if value <= 0:
            raise ExpressionError(f"rate must be positive: {expression!r}")
        seconds = _RATE_UNITS[match.group(2).rstrip("s")]
        return RateExpression(timedelta(seconds=value * seconds))
    if match := _CRON.match(text):
        return parse_cron(match.group(1))
    raise ExpressionError(f"not a schedule expression: {expression!r}")


def parse_cron(fields_text: str) -> CronExpression:
    """Parse the six space-separated fields inside ``cron(...)``."""
    fields = fields_text.split()
    if len(fields) != 6:
        raise ExpressionError(f"cron needs 6 fields, got {len(fields)}: {fields_text!r}")
    minute, hour, day_of_month, month, day_of_week, year = fields
    # L, W and # only exist in the day fields; strip names first (JUL and WED contain them).
    day_fields = re.sub("|".join(_DAYS), "", f"{day_of_month} {day_of_week}".upper())
    if any(marker in day_fields for marker in ("L", "W", "#")):
        raise UnsupportedExpression(f"L, W and # are not supported locally: {fields_text!r}")
    if (day_of_month == "?") == (day_of_week == "?"):
        raise ExpressionError("exactly one of day-of-month and day-of-week must be '?'")
    return CronExpression(
        minutes=_parse_field(minute, 0, 59),
        hours=_parse_field(hour, 0, 23),
        days_of_month=None if day_of_month == "?" else _parse_field(day_of_month, 1, 31),
        months=_parse_field(month, 1, 12, _MONTHS),
        days_of_week=None if day_of_week == "?" else _parse_field(day_of_week, 1, 7, _DAYS),
        years=_parse_field(year, 1970, 2199),
    )


def _parse_field(text: str, low: int, high: int, names: dict[str, int] | None = None) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        range_text, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step <= 0:
            raise ExpressionError(f"step must be positive in {text!r}")
        if range_text == "*":
            first, last = low, high
        elif "-" in range_text:
            first_text, last_text = range_text.split("-", 1)
            first, last = _value(first_text, low, high, names), _value(last_text, low, high, names)
        else:
            first = _value(range_text, low, high, names)
            last = high if step_text else first
        span = (
            list(range(first, last + 1))
            if first <= last
            else (
                list(range(first, high + 1)) + list(range(low, last + 1))  # wrapping, e.g. FRI-MON
            )
        )
        values.update(span[::step])
    return frozenset(values)


def _value(text: str, low: int, high: int, names: dict[str, int] | None) -> int:
    upper = text.upper()
    if names and upper in names:
        return names[upper]
    try:
        value = int(text)
    except ValueError as exc:
        raise ExpressionError(f"invalid cron value {text!r}") from exc
    if not low <= value <= high:
        raise ExpressionError(f"cron value {value} outside {low}-{high}")
    return value
