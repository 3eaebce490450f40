"""Scheduler expressions: at(), rate() and AWS six-field cron."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from devstack.cron import (
    AtExpression,
    CronExpression,
    ExpressionError,
    RateExpression,
    UnsupportedExpression,
    parse_expression,
)


def cron(fields: str) -> CronExpression:
    expression = parse_expression(f"cron({fields})")
    assert isinstance(expression, CronExpression)
    return expression


def test_at_is_a_wall_clock_time_in_the_schedule_time_zone() -> None:
    expression = parse_expression("at(2026-11-29T12:00:00)")

    assert isinstance(expression, AtExpression)
    assert expression.fire_time(ZoneInfo("America/Sao_Paulo")) == datetime(2026, 11, 29, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "period"),
    [
        ("rate(1 minute)", timedelta(minutes=1)),
        ("rate(5 minutes)", timedelta(minutes=5)),
        ("rate(2 hours)", timedelta(hours=2)),
        ("rate(1 day)", timedelta(days=1)),
    ],
)
def test_rate_units(text: str, period: timedelta) -> None:
    assert parse_expression(text) == RateExpression(period)


def test_rate_occurrences_count_from_the_anchor() -> None:
    rate = RateExpression(timedelta(minutes=5))
    anchor = datetime(2026, 1, 1, tzinfo=UTC)

    assert rate.latest_at_or_before(anchor, anchor + timedelta(minutes=4)) is None
    assert rate.latest_at_or_before(anchor, anchor + timedelta(minutes=12)) == (
        anchor + timedelta(minutes=10)
    )


@pytest.mark.parametrize(
    ("fields", "after", "expected"),
    [
        ("0/15 * * * ? *", datetime(2026, 3, 1, 10, 7), datetime(2026, 3, 1, 10, 15)),
        ("0 12 * * ? *", datetime(2026, 3, 1, 12, 0), datetime(2026, 3, 2, 12, 0)),
        ("30 9 ? * MON-FRI *", datetime(2026, 11, 27, 10, 0), datetime(2026, 11, 30, 9, 30)),
        ("0 8 ? * 1 *", datetime(2026, 11, 27, 0, 0), datetime(2026, 11, 29, 8, 0)),  # 1 = SUN
        ("0 0 1 JAN,JUL ? *", datetime(2026, 2, 1), datetime(2026, 7, 1)),
        ("0 0 31 * ? *", datetime(2026, 4, 1), datetime(2026, 5, 31)),
        ("5,10 1-2 * * ? 2027", datetime(2026, 6, 1), datetime(2027, 1, 1, 1, 5)),
        ("0 0 ? * FRI-MON *", datetime(2026, 11, 24), datetime(2026, 11, 27)),  # wraps
    ],
)
def test_cron_next_occurrence(fields: str, after: datetime, expected: datetime) -> None:
    occurrence = cron(fields).next_after(after.replace(tzinfo=UTC), UTC)

    assert occurrence == expected.replace(tzinfo=UTC)


def test_cron_is_evaluated_in_the_schedule_time_zone() -> None:
    zone = ZoneInfo("Europe/Berlin")
    occurrence = cron("0 9 * * ? *").next_after(datetime(2026, 7, 1, 12, tzinfo=UTC), zone)

    assert occurrence == datetime(2026, 7, 2, 7, tzinfo=UTC)


def test_cron_with_no_occurrence_returns_none() -> None:
    assert cron("0 0 30 FEB ? *").next_after(datetime(2026, 1, 1, tzinfo=UTC), UTC) is None


@pytest.mark.parametrize("fields", ["0 0 L * ? *", "0 0 ? * 6L *", "0 0 15W * ? *", "0 0 ? * 2#1 *"])
def test_l_w_and_hash_are_reported_as_unsupported(fields: str) -> None:
    with pytest.raises(UnsupportedExpression):
        parse_expression(f"cron({fields})")


@pytest.mark.parametrize(
    "text",
    [
        "cron(0 0 * * * *)",
        "cron(0 0 ? * ? *)",
        "cron(0 0 * *)",
        "cron(61 0 * * ? *)",
        "rate(0 minutes)",
        "rate(5 weeks)",
        "at(2026-13-01T00:00:00)",
        "every day",
        "",
    ],
)
def test_invalid_expressions_raise(text: str) -> None:
    with pytest.raises(ExpressionError):
        parse_expression(text)
