from decimal import Decimal

import pytest
from pydantic import TypeAdapter, ValidationError

from hub.domain.mapping_transforms import Transform, TransformFailed

_transform: TypeAdapter[Transform] = TypeAdapter(Transform)


def apply(spec: dict, value):
    return _transform.validate_python(spec).apply(value)


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        ({"name": "upper"}, "s\u00e3o paulo", "S\u00c3O PAULO"),
        ({"name": "lower"}, "ABC", "abc"),
        ({"name": "trim"}, "  0000123  \n", "0000123"),
        ({"name": "to_string"}, 35, "35"),
        ({"name": "to_string"}, True, "true"),
        ({"name": "to_string"}, Decimal("1.50"), "1.50"),
        ({"name": "to_int"}, " 0042 ", 42),
        ({"name": "to_int"}, "10.000", 10),
        ({"name": "to_int", "decimal_separator": ","}, "10.000", 10000),
        ({"name": "to_int"}, "150-", -150),
        ({"name": "to_int"}, 3.0, 3),
        ({"name": "to_decimal"}, "12.5", Decimal("12.5")),
        ({"name": "to_decimal", "places": 2}, "1,234.5", Decimal("1234.50")),
        ({"name": "to_decimal", "places": 2, "decimal_separator": ","}, "1.234,565", Decimal("1234.57")),
        ({"name": "to_decimal", "places": 2, "rounding": "half_even"}, "0.125", Decimal("0.12")),
        ({"name": "to_decimal", "places": 2}, "150.00-", Decimal("-150.00")),
        ({"name": "to_decimal", "places": 3}, 0.1, Decimal("0.100")),
        ({"name": "number_format"}, 1234.5, "1234.50"),
        (
            {"name": "number_format", "decimal_separator": ",", "thousands_separator": "."},
            "1234567.891",
            "1.234.567,89",
        ),
        ({"name": "number_format", "places": 0, "thousands_separator": ","}, -1234567, "-1,234,567"),
        ({"name": "number_format", "places": 3, "decimal_separator": ","}, Decimal("-0.5"), "-0,500"),
        ({"name": "date_format", "from": "%Y%m%d", "to": "%Y-%m-%d"}, "20240131", "2024-01-31"),
        ({"name": "date_format", "from": "%Y%m%d", "to": "%d/%m/%Y"}, "20240131", "31/01/2024"),
        ({"name": "date_format", "from": "%d/%m/%Y", "to": "iso"}, "31/01/2024", "2024-01-31T00:00:00"),
        (
            {"name": "date_format", "to": "%d/%m/%Y %H:%M"},
            "2024-01-31T14:05:00-03:00",
            "31/01/2024 14:05",
        ),
        ({"name": "date_format", "to": "iso"}, "2024-01-31T14:05:00Z", "2024-01-31T14:05:00+00:00"),
        ({"name": "default_if_empty", "value": "N/A"}, "", "N/A"),
        ({"name": "default_if_empty", "value": "N/A"}, None, "N/A"),
        ({"name": "default_if_empty", "value": 0}, [], 0),
        ({"name": "default_if_empty", "value": "N/A"}, "x", "x"),
    ],
)
def test_transform(spec, value, expected):
    result = apply(spec, value)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize("name", ["upper", "trim", "to_int", "to_decimal", "number_format", "to_string"])
def test_nothing_found_passes_through(name):
    assert apply({"name": name}, None) is None


@pytest.mark.parametrize(
    ("spec", "value", "problem"),
    [
        ({"name": "upper"}, 12, "expects text, found number"),
        ({"name": "trim"}, {"a": 1}, "expects text, found object"),
        ({"name": "to_string"}, [1], "expects a scalar, found list"),
        ({"name": "to_int"}, "12.5", "whole number"),
        ({"name": "to_int"}, "10,5", "numeric text with '.'"),
        ({"name": "to_int"}, "-5-", "numeric text"),
        ({"name": "to_int"}, True, "found a boolean"),
        ({"name": "to_decimal"}, "123.456.789-09", "numeric text"),
        ({"name": "to_decimal"}, float("nan"), "finite"),
        ({"name": "to_decimal", "places": 18}, "1" * 20, "too large"),
        ({"name": "number_format"}, "1.234,56", "numeric text"),
        ({"name": "date_format", "from": "%Y%m%d", "to": "iso"}, "2024-01-31", "format '%Y%m%d'"),
        ({"name": "date_format", "to": "iso"}, "31/01/2024", "format 'iso'"),
    ],
)
def test_unconvertible_values_fail_without_quoting_them(spec, value, problem):
    with pytest.raises(TransformFailed) as raised:
        apply(spec, value)
    assert problem in str(raised.value)
    if isinstance(value, str):
        assert value not in str(raised.value)


@pytest.mark.parametrize(
    "spec",
    [
        {"name": "capitalize"},
        {"name": "upper", "places": 2},
        {"name": "to_decimal", "places": -1},
        {"name": "to_decimal", "places": "two"},
        {"name": "to_int", "decimal_separator": ";"},
        {"name": "number_format", "decimal_separator": ",", "thousands_separator": ","},
        {"name": "number_format", "rounding": "up"},
        {"name": "date_format", "from": "%Y%m%d"},
        {"name": "date_format", "from": "%Q", "to": "iso"},
        {"name": "date_format", "to": "%c"},
        {"name": "date_format", "to": "100%"},
        {"name": "default_if_empty"},
        {"name": "default_if_empty", "value": {"nested": 1}},
    ],
)
def test_bad_names_and_arguments_are_rejected_at_construction(spec):
    with pytest.raises(ValidationError):
        _transform.validate_python(spec)
