"""Lambda event-source filtering: the EventBridge content-filter pattern syntax.

A pattern is a JSON object whose leaves are lists of matchers; a record matches when every
key of the pattern matches (AND) and, for each leaf, at least one matcher matches (OR).
Supported matchers: exact values (string, number, boolean, null), ``prefix``, ``suffix``,
``equals-ignore-case``, ``wildcard``, ``anything-but`` (values, prefix, suffix,
equals-ignore-case), ``numeric`` and ``exists``, plus ``$or`` lists of sub-patterns.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import json
from collections.abc import Iterable, Mapping
from typing import Any

_MISSING = object()


class FilterPatternError(ValueError):
    """The pattern is not valid filter syntax (Lambda would reject the mapping)."""


def parse_patterns(filter_criteria: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The patterns of a ``FilterCriteria`` property; an absent criteria means no filter."""
    if not filter_criteria:
        return []
    patterns = []
    for entry in filter_criteria.get("Filters", []):
        raw = entry.get("Pattern")
        pattern = json.loads(raw) if isinstance(raw, str) else raw
        if not isinstance(pattern, dict):
            raise FilterPatternError(f"filter pattern must be a JSON object: {raw!r}")
        patterns.append(pattern)
    return patterns


def matches_any(patterns: Iterable[Mapping[str, Any]], record: Mapping[str, Any]) -> bool:
    """True when no patterns are configured or the record matches at least one of them."""
    pattern_list = list(patterns)
    return not pattern_list or any(matches(pattern, record) for pattern in pattern_list)


def matches(pattern: Mapping[str, Any], record: Any) -> bool:
    """True when ``record`` satisfies every field of ``pattern``."""
    for key, expected in pattern.items():
        if key == "$or":
            if not any(matches(alternative, record) for alternative in expected):
                return False
            continue
        actual = record.get(key, _MISSING) if isinstance(record, Mapping) else _MISSING
        if isinstance(expected, Mapping):
            # A nested pattern over a missing or non-object field sees an empty object, so
            # only `exists: false` leaves below it can still match.
            if not matches(expected, actual if isinstance(actual, Mapping) else {}):
                return False
        elif isinstance(expected, list):
            if not _leaf_matches(expected, actual):
                return False
        else:
            raise FilterPatternError(f"pattern value for {key!r} must be a list or an object")
    return True


def _leaf_matches(matchers: list[Any], actual: Any) -> bool:
    values = actual if isinstance(actual, list) else [actual]
    for matcher in matchers:
        if isinstance(matcher, Mapping) and "exists" in matcher:
            # `exists` looks at the field, not at each element of an array value.
            if bool(matcher["exists"]) == (actual is not _MISSING):
                return True
            continue
        if any(_value_matches(matcher, value) for value in values):
            return True
    return False


def _value_matches(matcher: Any, value: Any) -> bool:  # noqa: PLR0911 - one per operator
    if value is _MISSING:
        return False
    if not isinstance(matcher, Mapping):
        return _equal(matcher, value)
    if len(matcher) != 1:
        raise FilterPatternError(f"a matcher object needs exactly one operator: {matcher!r}")
    ((operator, operand),) = matcher.items()
    if operator == "prefix":
        return _text_test(operand, value, str.startswith)
    if operator == "suffix":
        return _text_test(operand, value, str.endswith)
    if operator == "equals-ignore-case":
        return isinstance(value, str) and value.casefold() == str(operand).casefold()
    if operator == "wildcard":
        return isinstance(value, str) and fnmatch.fnmatchcase(value, str(operand))
    if operator == "anything-but":
        return _anything_but(operand, value)
    if operator == "numeric":
        return _numeric(operand, value)
    if operator == "cidr":
        return _cidr(str(operand), value)
    raise FilterPatternError(f"unsupported filter operator {operator!r}")


def _equal(expected: Any, value: Any) -> bool:
    if isinstance(expected, bool) or isinstance(value, bool):
        return expected is value
    if _is_number(expected) and _is_number(value):
        return float(expected) == float(value)
    return bool(expected == value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text_test(operand: Any, value: Any, test: Any) -> bool:
    if not isinstance(value, str):
        return False
    if isinstance(operand, Mapping) and "equals-ignore-case" in operand:
        return bool(test(value.casefold(), str(operand["equals-ignore-case"]).casefold()))
    return bool(test(value, str(operand)))


def _anything_but(operand: Any, value: Any) -> bool:
    if isinstance(operand, Mapping):
        ((operator, inner),) = operand.items()
        if operator in ("prefix", "suffix"):
            return isinstance(value, str) and not _value_matches({operator: inner}, value)
        if operator == "equals-ignore-case":
            options = inner if isinstance(inner, list) else [inner]
            return isinstance(value, str) and all(
                value.casefold() != str(option).casefold() for option in options
            )
        raise FilterPatternError(f"unsupported anything-but operator {operator!r}")
    options = operand if isinstance(operand, list) else [operand]
    return all(not _equal(option, value) for option in options)


_COMPARATORS = {
    "=": lambda a, b: a == b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _numeric(operand: Any, value: Any) -> bool:
    if not _is_number(value):
        return False
    if not isinstance(operand, list) or len(operand) % 2:
        raise FilterPatternError(f"numeric needs [op, value, ...]: {operand!r}")
    for index in range(0, len(operand), 2):
        comparator = _COMPARATORS.get(operand[index])
        if comparator is None:
            raise FilterPatternError(f"unknown numeric operator {operand[index]!r}")
        if not comparator(float(value), float(operand[index + 1])):
            return False
    return True


def _cidr(network: str, value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return ipaddress.ip_address(value) in ipaddress.ip_network(network, strict=False)
    except ValueError:
        return False
