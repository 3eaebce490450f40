"""The one JSON reader of partner input (issue 10, items 1-4): strict RFC 8259, one nesting
limit, and nothing it accepts that a later step cannot serialize, map or store."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.domain.mapping_errors import MappingError
from hub.domain.strict_json import MAX_NESTING_DEPTH, parse_json
from hub.errors import MalformedBody
from hub.mapping.engine import passthrough, read_payload, to_json
from hub.mapping.xml_input import MAX_XML_DEPTH


def nested(depth: int, leaf: str = "1") -> str:
    """JSON text whose objects and arrays nest exactly `depth` levels."""
    opening = ['{"k": ' if level % 2 else "[" for level in reversed(range(depth))]
    closing = ["}" if level % 2 else "]" for level in range(depth)]
    return "".join(opening) + leaf + "".join(closing)


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


def numbers_of(value: Any) -> list[int | float]:
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [number for item in value for number in numbers_of(item)]
    return [value] if isinstance(value, int | float) and not isinstance(value, bool) else []


def refused(data: bytes | str) -> MalformedBody:
    with pytest.raises(MalformedBody) as raised:
        parse_json(data)
    assert (raised.value.http_status, raised.value.code) == (400, "malformed_json")
    return raised.value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": [1, 2.5, "x", true, null]}', {"a": [1, 2.5, "x", True, None]}),
        ('"\\ud83d\\ude00"', "\U0001f600"),  # a surrogate *pair* is one character
        ('"\\\\ud800"', "\\ud800"),  # an escaped backslash, then plain text
        ("1e-400", 0.0),  # underflow is a finite number
        ("9" * 308, int("9" * 308)),
        ("-1.7976931348623157e308", -1.7976931348623157e308),
    ],
)
def test_strict_json_accepts(text, expected):
    assert parse_json(text.encode()) == expected
    assert parse_json(text) == expected


def test_the_deepest_accepted_document_is_at_the_limit_and_one_more_level_is_refused():
    assert depth_of(parse_json(nested(MAX_NESTING_DEPTH))) == MAX_NESTING_DEPTH
    error = refused(nested(MAX_NESTING_DEPTH + 1))
    assert error.details == {"problem": "depth", "max_depth": MAX_NESTING_DEPTH}
    assert str(MAX_NESTING_DEPTH) in error.message


@pytest.mark.parametrize("depth", [MAX_NESTING_DEPTH + 1, 600, 990, 1_000, 100_000])
def test_deep_nesting_is_refused_never_a_recursion_error(depth):
    assert refused(nested(depth)).details["problem"] == "depth"
    assert refused("[" * depth).details["problem"] in {"depth", "syntax"}  # unclosed


def test_json_and_xml_share_the_one_nesting_limit():
    assert MAX_XML_DEPTH == MAX_NESTING_DEPTH == 64


@pytest.mark.parametrize(
    "text",
    ["NaN", "[Infinity]", '{"a": -Infinity}', "1e400", "-1e400", "9" * 309, "9" * 250 + "e99", "9" * 5_000],
)
def test_numbers_json_cannot_carry_are_refused(text):
    error = refused(text)
    assert error.details == {"problem": "number"}


@pytest.mark.parametrize(
    "data",
    [
        b'"\\ud800"',
        b'{"\\udfff": 1}',
        b'{"a": ["ok", "\\udbff"]}',
        b'"\\\\ud800\\udc00"',  # an escaped backslash, then a lone low surrogate
        b'"\\ud800\\ud800"',  # two highs are not a pair
        '"\ud800"',  # a raw lone surrogate in the event's text
        b"\xed\xa0\x80",  # an encoded surrogate: not UTF-8
        b"\xff\xfe{}",
    ],
)
def test_text_that_is_not_unicode_is_refused(data):
    assert refused(data).details == {"problem": "encoding"}


def test_syntax_errors_say_where_and_never_echo_the_body():
    error = refused(b'{"cpf": "123.456.789-09",}')
    assert error.details == {"problem": "syntax", "line": 1, "column": 26}
    assert "123.456" not in error.message


def test_the_input_is_named_in_the_message():
    with pytest.raises(MalformedBody, match=r"^payload nests"):
        parse_json(nested(MAX_NESTING_DEPTH + 1), what="payload")


def test_a_string_payload_read_by_the_mapping_follows_the_same_rules():
    assert read_payload(nested(MAX_NESTING_DEPTH)) == json.loads(nested(MAX_NESTING_DEPTH))
    for text in (nested(MAX_NESTING_DEPTH + 1), nested(900), '{"a": Infinity}', '{"a": 1e400}', '"\\ud800"'):
        with pytest.raises(MappingError) as raised:
            read_payload(text)
        assert raised.value.message.startswith("payload ")


# --- property: whatever the input, a document or MalformedBody; and what is accepted, every
# later step can write out ---------------------------------------------------------------------

#: Number literals as a partner may write them; json.dumps would never write most of these.
_NUMBERS = ["0", "-0", "1.5e-400", "1e308", "1e309", "-1e400", "1E+999", "9" * 309, "-" + "9" * 400, "2.5"]
_RAW = "\x00raw:"
_any_text = st.text(st.characters(codec=None)) | st.text(
    st.sampled_from(["a", "\u00e9", "\ud800", "\udbff", "\udc00", "\U0001f600", "\\"]), max_size=4
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and ±inf, written as NaN / Infinity
    st.sampled_from(_NUMBERS).map(lambda literal: _RAW + literal),
    _any_text,  # lone surrogates, written as "\udXXX" escapes
)
_documents = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_any_text, inner, max_size=3),
    max_leaves=12,
)


def _as_text(document: Any, depth: int) -> str:
    text = json.dumps(document)
    text = re.sub(r'"\\u0000raw:([^"]*)"', r"\1", text)  # the literal, unquoted
    return "[" * depth + text + "]" * depth


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.one_of(
        st.builds(_as_text, _documents, st.sampled_from([0, 0, 1, 62, 63, 64]) | st.integers(0, 1_200)).map(
            str.encode
        ),
        st.binary(max_size=64),
        _any_text,
    )
)
def test_any_input_is_a_document_every_step_can_write_or_malformed_body(data):
    try:
        document = parse_json(data)
    except MalformedBody as error:
        problem = error.details["problem"]
    else:
        problem = None
    if problem is not None:
        assert problem in {"encoding", "syntax", "number", "depth"}
        return
    assert depth_of(document) <= MAX_NESTING_DEPTH
    # Every number reads as a finite double (what a transform or another JSON parser makes of it).
    assert all(math.isfinite(float(number)) for number in numbers_of(document))
    # What ingest hashes and stores, and what the worker sends: no exception for any of them.
    json.dumps(document, sort_keys=True, ensure_ascii=False, allow_nan=False).encode()
    to_json(document)
    if isinstance(document, dict):
        passthrough(document)
