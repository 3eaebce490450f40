"""Output: aligned tables (and key: value blocks) for people, JSON and YAML for scripts."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any


def cell(value: Any) -> str:
    """One value in a table cell: text as is, nothing as '-', the rest as compact JSON."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """Rows as an aligned table with an upper-case header; '(none)' when there are none."""
    if not rows:
        return "(none)"
    grid = [[c.upper() for c in columns]] + [[cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in grid) for i in range(len(columns))]
    return "\n".join(
        "  ".join(text.ljust(w) for text, w in zip(line, widths, strict=True)).rstrip() for line in grid
    )


def fields(document: dict[str, Any]) -> str:
    """One object as `key: value` lines; nested objects and lists as indented JSON."""
    width = max((len(str(k)) for k in document), default=0)
    lines = []
    for key, value in document.items():
        if isinstance(value, dict | list) and value:
            nested = json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False)
            lines.append(f"{str(key) + ':':<{width + 1}} " + nested.replace("\n", "\n  "))
        else:
            lines.append(f"{str(key) + ':':<{width + 1}} {cell(value)}")
    return "\n".join(lines)


def as_json(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2)


# --- YAML ------------------------------------------------------------------------------------
# A small emitter for JSON-shaped data (what the API answers), so `-o yaml` needs no package:
# block style, every string that YAML could read as something else (a number, a date, a
# boolean, null) or that holds anything but plain characters double-quoted. `yaml.safe_load`
# of its text gives the document back (tests/unit/hubctl/test_hubctl_yaml.py).

#: Strings written bare: words of letters, digits and `_ . / @ + -`, joined by single spaces or
#: by colons not followed by a space, starting with a letter, `_` or `/`.
_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./@+-]*(?:[ :][A-Za-z0-9_./@+-]+)*")
#: Bare words YAML 1.1 (PyYAML) or 1.2 reads as booleans or null.
_RESERVED = frozenset({"true", "false", "yes", "no", "on", "off", "y", "n", "null"})
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _printable(char: str) -> bool:
    """What a YAML stream may carry as it is (YAML 1.1 printable, less the line separators)."""
    code = ord(char)
    if code in (0x85, 0x2028, 0x2029, 0xFEFF):
        return False
    return (
        0x20 <= code <= 0x7E
        or 0xA0 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def _quoted(text: str) -> str:
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif _printable(char):
            out.append(char)
        elif ord(char) <= 0xFF:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


def yaml_scalar(value: Any) -> str:  # noqa: PLR0911 - one per kind of scalar
    """One JSON scalar as YAML."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        # YAML 1.1 reads a float only with a dot, and an exponent only with its sign.
        mantissa, _, exponent = text.partition("e")
        if "." not in mantissa:
            mantissa += ".0"
        return mantissa + (f"e{exponent if exponent[0] in '+-' else '+' + exponent}" if exponent else "")
    text = str(value)
    if _PLAIN.fullmatch(text) and text.lower() not in _RESERVED:
        return text
    return _quoted(text)


def _yaml_lines(value: Any) -> list[str]:
    if isinstance(value, dict):
        if not value:
            return ["{}"]
        lines = []
        for key, item in value.items():
            name = yaml_scalar(str(key))
            if isinstance(item, dict | list) and item:
                lines.append(f"{name}:")
                lines.extend("  " + line for line in _yaml_lines(item))
            else:
                lines.append(f"{name}: {_yaml_lines(item)[0]}")
        return lines
    if isinstance(value, list):
        if not value:
            return ["[]"]
        lines = []
        for item in value:
            block = _yaml_lines(item)
            lines.append("- " + block[0])
            lines.extend("  " + line for line in block[1:])
        return lines
    return [yaml_scalar(value)]


def as_yaml(document: Any) -> str:
    """A JSON-shaped document as block-style YAML (no trailing newline)."""
    return "\n".join(_yaml_lines(document))
