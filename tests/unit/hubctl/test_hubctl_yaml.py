"""`-o yaml` without PyYAML: hubctl's own emitter for JSON-shaped data. What it writes reads back
(with PyYAML's safe loader, the reader most tools use) as the same document."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hubctl.output import as_yaml, yaml_scalar

JSON_SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@given(JSON)
@settings(max_examples=300, deadline=None)
def test_any_json_document_reads_back_the_same(document: Any) -> None:
    assert yaml.safe_load(as_yaml(document)) == document


@pytest.mark.parametrize(
    "text",
    [
        "yes", "No", "on", "OFF", "y", "n", "null", "~", "true", "False",  # booleans and null to YAML 1.1
        "2026-12-01", "2026-12-01T10:00:00Z", "12:30", "1_000", "0x1F", "0o17", "1e3", ".5", "-1",
        "", " padded", "padded ", "a: b", "a #b", "- item", "? key", "[x]", "{x}", "*alias", "&anchor",
        "!tag", "%dir", "@at", "`tick`", "'single'", '"double"', "line\nbreak", "tab\there",
        "ACME Comércio", "nul\x00", "del\x7f", "nel\x85", "sep\u2028", "bom\ufeff", "emoji 😀",
    ],
)  # fmt: skip
def test_strings_yaml_would_read_as_something_else_are_quoted_and_read_back(text):
    written = yaml_scalar(text)

    assert written.startswith('"')
    assert yaml.safe_load(f"v: {written}") == {"v": text}


@pytest.mark.parametrize(
    "text", ["tnt_acme", "msg_01JABCDEF", "http://127.0.0.1:3001/api", "message.sent", "ACME Ltda", "a-b_c/d"]
)
def test_plain_words_stay_bare(text):
    assert yaml_scalar(text) == text
    assert yaml.safe_load(f"v: {text}") == {"v": text}


def test_a_document_is_block_style_and_empty_collections_are_flow():
    document = {
        "tenant_id": "tnt_acme",
        "counts": {"waiting": 3, "dead_letter": 0},
        "items": [{"message_id": "msg_1", "tags": []}, {"message_id": "msg_2", "meta": {}}],
        "ok": True,
        "next_cursor": None,
        "ratio": 1e-7,
    }

    assert as_yaml(document).splitlines() == [
        "tenant_id: tnt_acme",
        "counts:",
        "  waiting: 3",
        "  dead_letter: 0",
        "items:",
        "  - message_id: msg_1",
        "    tags: []",
        "  - message_id: msg_2",
        "    meta: {}",
        "ok: true",
        "next_cursor: null",
        "ratio: 1.0e-07",
    ]
    assert yaml.safe_load(as_yaml(document)) == document


def test_scalars_and_lists_at_the_top():
    assert as_yaml([1, "two", [3]]) == "- 1\n- two\n- - 3"
    assert as_yaml("text") == "text"
    assert as_yaml([]) == "[]"
