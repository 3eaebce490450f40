"""Every example of docs/mapping.md runs as written: each `<!-- mapping-example: NAME -->` is
followed by three code blocks — the spec (JSON or YAML), the payload (JSON, or XML text) and what
the destination receives — and the real engine must turn the one into the other. The first is the
mapping of examples/json_to_json.yaml, and must stay the same as the file's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from hub.domain.mapping_spec import MappingSpec
from hub.mapping import apply_mapping
from hubctl.manifest import load

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "mapping.md"
_EXAMPLE = re.compile(r"<!-- mapping-example: ([\w-]+) -->")
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def examples() -> dict[str, list[tuple[str, str]]]:
    """Each example's three blocks, (language, text), by name."""
    text = DOC.read_text(encoding="utf-8")
    found = {}
    for marker in _EXAMPLE.finditer(text):
        blocks = [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text, marker.end())][:3]
        found[marker.group(1)] = blocks
    return found


def _exact_json(text: str) -> Any:
    """`text` as JSON with every number kept as written (19.90 is not 19.9)."""
    return json.loads(text, parse_float=lambda s: ("number", s), parse_int=lambda s: ("number", s))


def test_the_page_has_its_examples():
    assert {"shop_order", "defaults", "brazilian-numbers-and-dates", "json-to-xml", "xml-attributes"} <= set(
        examples()
    )


@pytest.mark.parametrize("name", sorted(examples()))
def test_each_example_maps_its_payload_to_the_output_shown(name: str):
    (spec_language, spec_text), (payload_language, payload_text), (output_language, output_text) = examples()[
        name
    ]
    spec = MappingSpec.model_validate(
        yaml.safe_load(spec_text) if spec_language == "yaml" else json.loads(spec_text)
    )
    payload: Any = json.loads(payload_text) if payload_language == "json" else payload_text

    mapped = apply_mapping(spec, payload)

    if output_language == "xml":
        assert mapped.content_type == "application/xml"
        assert mapped.body.decode() == output_text.strip()
    else:
        assert mapped.content_type == "application/json"
        assert _exact_json(mapped.body.decode()) == _exact_json(output_text)


def test_the_first_example_is_the_json_to_json_example_files_mapping():
    [(language, spec_text), (_, payload_text), _output] = examples()["shop_order"]
    path = ROOT / "examples" / "json_to_json.yaml"
    [integration] = [
        r
        for r in load(path, {"ACME_ERP_URL": "https://x.test", "ACME_ERP_TOKEN": "t"})
        if r.id == "int_acme_shop_orders"
    ]

    assert language == "yaml"
    assert yaml.safe_load(spec_text) == integration.spec["message_types"]["shop_order"]["mapping"]
    assert json.loads(payload_text) == json.loads((ROOT / "examples/payloads/shop_order.json").read_text())
