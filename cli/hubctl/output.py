"""Output: aligned tables (and key: value blocks) for people, JSON for scripts."""

from __future__ import annotations

import json
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
