"""Lambda / EventBridge content filtering, as used by FilterCriteria."""

from __future__ import annotations

from typing import Any

import pytest

from devstack.event_filter import FilterPatternError, matches, matches_any, parse_patterns

OUTBOX_INSERT = {
    "eventName": "INSERT",
    "dynamodb": {
        "NewImage": {
            "SK": {"S": "OUTBOX#42"},
            "amount": 12,
            "tags": ["a", "b"],
            "note": None,
            "email": "Ops@Example.COM",
        }
    },
}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ({"eventName": ["INSERT"]}, True),
        ({"eventName": ["MODIFY", "REMOVE"]}, False),
        ({"dynamodb": {"NewImage": {"SK": {"S": [{"prefix": "OUTBOX#"}]}}}}, True),
        ({"dynamodb": {"NewImage": {"SK": {"S": [{"prefix": "INBOX#"}]}}}}, False),
        ({"dynamodb": {"NewImage": {"SK": {"S": [{"suffix": "#42"}]}}}}, True),
        ({"dynamodb": {"NewImage": {"SK": {"S": [{"suffix": "#4"}]}}}}, False),
        ({"eventName": [{"anything-but": ["REMOVE"]}]}, True),
        ({"eventName": [{"anything-but": "INSERT"}]}, False),
        ({"eventName": [{"anything-but": {"prefix": "INS"}}]}, False),
        ({"dynamodb": {"NewImage": {"amount": [{"numeric": [">", 10, "<=", 12]}]}}}, True),
        ({"dynamodb": {"NewImage": {"amount": [{"numeric": ["<", 10]}]}}}, False),
        ({"dynamodb": {"NewImage": {"amount": [12.0]}}}, True),
        ({"dynamodb": {"NewImage": {"amount": ["12"]}}}, False),
        ({"dynamodb": {"NewImage": {"OldKey": [{"exists": False}]}}}, True),
        ({"dynamodb": {"NewImage": {"SK": [{"exists": True}]}}}, True),
        ({"dynamodb": {"OldImage": {"SK": [{"exists": True}]}}}, False),
        ({"dynamodb": {"NewImage": {"note": [None]}}}, True),
        ({"dynamodb": {"NewImage": {"missing": [None]}}}, False),
        ({"dynamodb": {"NewImage": {"tags": ["b"]}}}, True),
        ({"dynamodb": {"NewImage": {"email": [{"equals-ignore-case": "ops@example.com"}]}}}, True),
        ({"dynamodb": {"NewImage": {"email": [{"wildcard": "Ops@*.COM"}]}}}, True),
        ({"eventName": ["INSERT"], "dynamodb": {"NewImage": {"SK": {"S": ["nope"]}}}}, False),
        ({"$or": [{"eventName": ["REMOVE"]}, {"dynamodb": {"NewImage": {"amount": [12]}}}]}, True),
    ],
)
def test_pattern_matching(pattern: dict[str, Any], expected: bool) -> None:
    assert matches(pattern, OUTBOX_INSERT) is expected


def test_anything_but_does_not_match_a_missing_field() -> None:
    assert matches({"absent": [{"anything-but": ["x"]}]}, OUTBOX_INSERT) is False


def test_no_patterns_means_everything_passes_and_any_pattern_may_match() -> None:
    assert matches_any([], {"a": 1}) is True
    assert matches_any([{"a": [2]}, {"a": [1]}], {"a": 1}) is True
    assert matches_any([{"a": [2]}], {"a": 1}) is False


def test_filter_criteria_patterns_are_parsed_from_json_strings() -> None:
    patterns = parse_patterns({"Filters": [{"Pattern": '{"eventName": ["INSERT"]}'}]})

    assert patterns == [{"eventName": ["INSERT"]}]
    assert parse_patterns(None) == []


def test_invalid_patterns_are_rejected() -> None:
    with pytest.raises(FilterPatternError):
        matches({"eventName": "INSERT"}, OUTBOX_INSERT)
    with pytest.raises(FilterPatternError):
        matches({"eventName": [{"regex": ".*"}]}, OUTBOX_INSERT)
    with pytest.raises(FilterPatternError):
        parse_patterns({"Filters": [{"Pattern": "[1]"}]})
