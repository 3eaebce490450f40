"""Named transforms a mapping rule applies to a value, in order.

Each transform is a small frozen model (its arguments are validated when the spec is saved)
with an `apply` that either returns the new value or raises `TransformFailed` naming what is
wrong with the value's *kind*, never the value itself. None (nothing found) passes through
every transform except `default_if_empty`, so ``["trim", {"name": "default_if_empty", ...}]``
works on absent fields too.
"""

from __future__ import annotations

import re
import sys
from datetime import datetime
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from hub.domain.model import HubModel

JsonScalar = str | int | float | bool | None
Separator = Literal[".", ","]

_ROUNDING = {"half_up": ROUND_HALF_UP, "half_even": ROUND_HALF_EVEN}
# Locale-independent strftime directives only: %c, %x, %X and friends change with the locale.
_DATE_DIRECTIVE = re.compile(r"%(.?)")
_DATE_DIRECTIVES = frozenset("aAbBdHIjmMpSfyYzZ%")
ISO = "iso"


class TransformFailed(ValueError):
    """A value this transform cannot convert. The message never quotes the value."""


def kind_of(value: Any) -> str:
    """A value's JSON kind, for messages that must not show the value."""
    kinds: tuple[tuple[type | tuple[type, ...], str], ...] = (
        (type(None), "null"),
        (bool, "boolean"),  # before int: bool is an int
        ((int, float, Decimal), "number"),
        (str, "text"),
        (dict, "object"),
        (list, "list"),
    )
    return next((name for types, name in kinds if isinstance(value, types)), type(value).__name__)


def _number_pattern(decimal_separator: str) -> re.Pattern[str]:
    group = "," if decimal_separator == "." else "."
    g, d = re.escape(group), re.escape(decimal_separator)
    sign, fraction, trail = r"(?P<lead>[+-])?", rf"(?:{d}(?P<frac>\d+))?", r"(?P<trail>-)?"
    # Thousands groups only in well-formed runs of three, so "10,5" is never read as 105.
    # A trailing minus is how SAP writes negative amounts ("150.00-").
    return re.compile(rf"{sign}(?P<int>\d{{1,3}}(?:{g}\d{{3}})+|\d+){fraction}{trail}")


_NUMBER = {sep: _number_pattern(sep) for sep in (".", ",")}


def to_number(value: Any, decimal_separator: str = ".") -> Decimal:
    """`value` as an exact Decimal: JSON numbers as written, text in the given format
    (surrounding blanks ignored, thousands groups of the other separator allowed)."""
    if isinstance(value, bool):
        raise TransformFailed("expects a number or numeric text, found a boolean")
    if isinstance(value, Decimal | int):
        number = Decimal(value)
    elif isinstance(value, float):
        number = Decimal(repr(value))  # repr is the shortest text that reads back as this float
    elif isinstance(value, str):
        match = _NUMBER[decimal_separator].fullmatch(value.strip())
        if match is None or (match["lead"] and match["trail"]):
            raise TransformFailed(f"expects numeric text with '{decimal_separator}' as decimal separator")
        digits = re.sub(r"\D", "", match["int"]) + (f".{match['frac']}" if match["frac"] else "")
        number = Decimal(digits)
        if match["lead"] == "-" or match["trail"]:
            number = -number
    else:
        raise TransformFailed(f"expects a number or numeric text, found {kind_of(value)}")
    if not number.is_finite():
        raise TransformFailed("expects a finite number")
    return number


def _quantize(number: Decimal, places: int, rounding: str) -> Decimal:
    try:
        return number.quantize(Decimal(1).scaleb(-places), rounding=_ROUNDING[rounding])
    except InvalidOperation:
        raise TransformFailed(f"number is too large to keep {places} decimal places") from None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TransformFailed(f"expects text, found {kind_of(value)}")
    return value


class _Transform(HubModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def apply(self, value: Any) -> Any:
        """The transformed value; None stays None."""
        return None if value is None else self._convert(value)

    def _convert(self, value: Any) -> Any:
        raise NotImplementedError


class Upper(_Transform):
    name: Literal["upper"]

    def _convert(self, value: Any) -> Any:
        return _text(value).upper()


class Lower(_Transform):
    name: Literal["lower"]

    def _convert(self, value: Any) -> Any:
        return _text(value).lower()


class Trim(_Transform):
    name: Literal["trim"]

    def _convert(self, value: Any) -> Any:
        return _text(value).strip()


class ToString(_Transform):
    name: Literal["to_string"]

    def _convert(self, value: Any) -> Any:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, Decimal):
            return format(value, "f")
        if isinstance(value, int | float | str):
            return str(value)
        raise TransformFailed(f"expects a scalar, found {kind_of(value)}")


class ToInt(_Transform):
    name: Literal["to_int"]
    #: How numeric text writes decimals; "," reads Brazilian "1.234" as 1234.
    decimal_separator: Separator = "."

    def _convert(self, value: Any) -> Any:
        number = to_number(value, self.decimal_separator)
        if number != number.to_integral_value():
            raise TransformFailed("expects a whole number")
        # Python refuses to write an int of more digits than this as text (JSON or XML output).
        if number.adjusted() + 1 > sys.get_int_max_str_digits():
            raise TransformFailed(f"expects a whole number of at most {sys.get_int_max_str_digits()} digits")
        return int(number)


class ToDecimal(_Transform):
    """An exact Decimal (written as a JSON number with exactly these places)."""

    name: Literal["to_decimal"]
    places: int | None = Field(default=None, ge=0, le=18)
    rounding: Literal["half_up", "half_even"] = "half_up"
    decimal_separator: Separator = "."

    def _convert(self, value: Any) -> Any:
        number = to_number(value, self.decimal_separator)
        return number if self.places is None else _quantize(number, self.places, self.rounding)


class NumberFormat(_Transform):
    """Text such as "1.234,50" (Brazilian) or "1234.50". Numeric text input uses "."; chain
    `to_decimal` with ``decimal_separator: ","`` first to read Brazilian input."""

    name: Literal["number_format"]
    places: int = Field(default=2, ge=0, le=18)
    decimal_separator: Separator = "."
    thousands_separator: Literal["", ".", ",", " "] = ""
    rounding: Literal["half_up", "half_even"] = "half_up"

    @model_validator(mode="after")
    def _separators_differ(self) -> NumberFormat:
        if self.thousands_separator == self.decimal_separator:
            raise ValueError("thousands_separator must differ from decimal_separator")
        return self

    def _convert(self, value: Any) -> Any:
        number = _quantize(to_number(value), self.places, self.rounding)
        whole, _, fraction = format(abs(number), "f").partition(".")
        grouped = f"{int(whole):,}".replace(",", self.thousands_separator)
        sign = "-" if number < 0 else ""
        return f"{sign}{grouped}{self.decimal_separator}{fraction}" if fraction else f"{sign}{grouped}"


def _check_date_format(fmt: str) -> str:
    if fmt == ISO:
        return fmt
    directives = _DATE_DIRECTIVE.findall(fmt)
    unknown = [d for d in directives if d not in _DATE_DIRECTIVES]
    if unknown:
        known = " ".join(f"%{d}" for d in sorted(_DATE_DIRECTIVES))
        raise ValueError(f"unsupported date directive %{unknown[0]} (known: {known}, or 'iso')")
    return fmt


class DateFormat(_Transform):
    """Re-writes a date/time text: `from` and `to` are strftime formats or "iso" (ISO 8601),
    e.g. SAP's "%Y%m%d" → "%Y-%m-%d", or "iso" → "%d/%m/%Y" (Brazilian)."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    name: Literal["date_format"]
    from_: str = Field(default=ISO, alias="from")
    to: str

    @model_validator(mode="after")
    def _formats_known(self) -> DateFormat:
        _check_date_format(self.from_)
        _check_date_format(self.to)
        return self

    def _convert(self, value: Any) -> Any:
        text = _text(value).strip()
        try:
            if self.from_ == ISO:
                moment = datetime.fromisoformat(text)
            else:
                moment = datetime.strptime(text, self.from_)
        except ValueError:
            raise TransformFailed(f"expects a date in the format {self.from_!r}") from None
        return moment.isoformat() if self.to == ISO else moment.strftime(self.to)


class DefaultIfEmpty(_Transform):
    """`value` when the current value is null, empty text, an empty list or an empty object."""

    name: Literal["default_if_empty"]
    value: JsonScalar

    def apply(self, value: Any) -> Any:
        return self.value if value is None or value in ("", [], {}) else value


Transform = Annotated[
    Upper | Lower | Trim | ToString | ToInt | ToDecimal | NumberFormat | DateFormat | DefaultIfEmpty,
    Field(discriminator="name"),
]
