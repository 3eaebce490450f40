"""The one JSON reader for what partners send: RFC 8259, strictly, within limits the rest of
the hub can always handle.

Every JSON body the hub accepts (receive-message, inbound webhooks) and every JSON text payload
the pipeline reads goes through `parse_json`, so the door never accepts what a later step
cannot process (serialize, map, hash, store). Refused, as MalformedBody (400 ``malformed_json``)
with ``details.problem`` naming the kind, never a value:

- ``encoding``: not UTF-8, or a string holding an unpaired surrogate (``"\\ud800"``), which
  no UTF-8 text, DynamoDB item or HTTP body can carry;
- ``syntax``: not JSON (``details.line`` / ``details.column`` say where);
- ``number``: ``NaN``, ``Infinity``, ``-Infinity`` (not JSON at all) and numbers beyond the
  range of a double (``1e400``, a 400-digit integer): what a JSON parser elsewhere reads as
  infinity or refuses;
- ``depth``: objects and arrays nested deeper than MAX_NESTING_DEPTH (the outermost counts as
  level 1).
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from hub.errors import MalformedBody

#: How deep objects and arrays may nest in a JSON body (the outermost one is level 1); the
#: same bound as XML elements. Far below what any recursive step (mapping, JSON or XML output,
#: redaction) needs, and far above what business documents use.
MAX_NESTING_DEPTH = 64

_SURROGATE = re.compile("[\ud800-\udfff]")
# Only text with one of these can hold what the plain parse lets through; the rest skips the check.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONG_INTEGER = re.compile(r"\d{309}")
_MAX_INT = int(sys.float_info.max)
_CONTAINER = dict | list


class _BadNumber(Exception):
    """Raised from the parser's number hooks; never leaves this module."""


def _constant(_name: str) -> Any:
    raise _BadNumber  # NaN, Infinity, -Infinity


def _float(text: str) -> float:
    value = float(text)  # 1e400 and a 400-digit mantissa become inf
    if not math.isfinite(value):
        raise _BadNumber
    return value


def _int(text: str) -> int:
    value = int(text)
    if abs(value) > _MAX_INT:
        raise _BadNumber
    return value


def _has_surrogate(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def _depth(document: Any) -> int:
    """How deep objects and arrays nest (0 for a scalar), level by level without recursion, and
    stopping one level past the limit."""
    level = [document] if isinstance(document, _CONTAINER) else []
    depth = 0
    while level and depth <= MAX_NESTING_DEPTH:
        depth += 1
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, _CONTAINER)
        ]
    return depth


def _refused(what: str, problem: str, message: str, **details: int) -> MalformedBody:
    return MalformedBody(f"{what} {message}", details={"problem": problem, **details})


def _too_deep(what: str) -> MalformedBody:
    return _refused(
        what,
        "depth",
        f"nests objects and arrays deeper than {MAX_NESTING_DEPTH} levels",
        max_depth=MAX_NESTING_DEPTH,
    )


_BAD_NUMBER = "is not valid JSON: NaN, Infinity or a number beyond ±1.8e308"
_LONE_SURROGATE = "is not valid JSON: a string has an unpaired surrogate (U+D800-U+DFFF)"


def parse_json(data: bytes | str, *, what: str = "request body") -> Any:
    """The JSON document in `data` (bytes are decoded as UTF-8), or MalformedBody naming the
    problem (see the module docstring). Never raises anything else, whatever `data` holds.
    `what` names the input in messages ("request body", "payload")."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")  # refuses encoded surrogates too
        except UnicodeDecodeError:
            raise _refused(what, "encoding", "is not valid JSON: not UTF-8 text") from None
    elif _has_surrogate(data):
        raise _refused(what, "encoding", _LONE_SURROGATE)
    else:
        text = data
    try:
        document = json.loads(text, parse_constant=_constant, parse_float=_float)
        if _LONG_INTEGER.search(text):  # rare: read again, checking every integer
            json.loads(text, parse_int=_int)
    except json.JSONDecodeError as error:
        raise _refused(
            what,
            "syntax",
            f"is not valid JSON (line {error.lineno}, column {error.colno})",
            line=error.lineno,
            column=error.colno,
        ) from None
    except (_BadNumber, ValueError):  # ValueError: an integer over 4300 digits
        raise _refused(what, "number", _BAD_NUMBER) from None
    except RecursionError:
        raise _too_deep(what) from None
    if text.count("[") + text.count("{") > MAX_NESTING_DEPTH and _depth(document) > MAX_NESTING_DEPTH:
        raise _too_deep(what)
    # A lone surrogate can only come from an escape; written out unescaped it shows.
    if _SURROGATE_ESCAPE.search(text) and _has_surrogate(json.dumps(document, ensure_ascii=False)):
        raise _refused(what, "encoding", _LONE_SURROGATE)
    return document
