"""Properties of the mapping engine (hub.mapping.engine) and its transforms on arbitrary input:
whatever the payload (a JSON object, JSON text, XML text or any text) and whatever spec, the
outcome is a mapped body or a MappingError (class syntax), never another exception."""

from __future__ import annotations

import json
from typing import Any
from xml.sax.saxutils import escape

from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from hub.domain.failure import ErrorClass
from hub.domain.mapping_transforms import TransformFailed
from hub.mapping import MappingError, MappingSpec, apply_mapping, passthrough
from hub.mapping.engine import JSON, XML

KEYS = ["a", "b", "n", "items", "DATUM"]
PATHS = [
    "a",
    "b",
    "a.b",
    "items",
    "items[0]",
    "items[*].n",
    "items[?n > `1`] | [0].n",
    "r.a",
    "r.items.n",
    "length(a)",
    "to_number(a)",
    "to_string(a)",
    "join(',', items)",
    "sum(items)",
    "max_by(items, &n).n",
    "keys(a)",
    "a || b",
    "@",
    "`null`",
]
TRANSFORMS: list[Any] = [
    "upper",
    "lower",
    "trim",
    "to_string",
    "to_int",
    {"name": "to_int", "decimal_separator": ","},
    {"name": "to_decimal", "places": 2},
    {"name": "to_decimal", "places": 18, "rounding": "half_even", "decimal_separator": ","},
    {"name": "number_format", "decimal_separator": ",", "thousands_separator": "."},
    {"name": "number_format", "places": 0},
    {"name": "date_format", "from": "%Y%m%d", "to": "%d/%m/%Y"},
    {"name": "date_format", "to": "%Y-%m-%dT%H:%M:%S%z"},
    {"name": "default_if_empty", "value": "none"},
]

# Values partners send, numbers and dates in text included; text kept short (long numbers: below).
numeric_text = st.from_regex(r"\s?[+-]?\d{1,3}([.,]\d{3}){0,3}([.,]\d{1,4})?-?\s?", fullmatch=True)
date_text = st.from_regex(
    r"\d{8}|\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?([+-]\d{2}:\d{2}|Z)?)?", fullmatch=True
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | numeric_text
    | date_text
)
values = st.recursive(
    scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(KEYS), kids, max_size=4),
    max_leaves=12,
)
documents = st.dictionaries(st.sampled_from([*KEYS, "r"]), values, max_size=5)


def _xml(name: str, value: Any) -> str:
    if isinstance(value, dict):
        return f"<{name}>{''.join(_xml(k, v) for k, v in value.items())}</{name}>"
    if isinstance(value, list):
        return "".join(_xml(name, item) for item in value)
    return f"<{name}>{escape('' if value is None else str(value))}</{name}>"


payloads = (
    documents
    | documents.map(json.dumps)
    | documents.map(lambda doc: _xml("r", doc))
    | st.text(max_size=80)
    | st.text(max_size=80).map(lambda text: "<" + text)
)

path_rules = st.fixed_dictionaries(
    {
        "path": st.sampled_from(PATHS),
        "transforms": st.lists(st.sampled_from(TRANSFORMS), max_size=3),
        "required": st.booleans(),
    },
    optional={"default": st.none() | st.integers() | st.text(max_size=5)},
)
rules = st.recursive(
    path_rules
    | st.fixed_dictionaries({"const": st.none() | st.booleans() | st.integers() | st.text(max_size=5)}),
    lambda kids: (
        st.fixed_dictionaries(
            {
                "each": st.sampled_from(PATHS),
                "template": st.dictionaries(st.sampled_from(["v", "w"]), kids, min_size=1, max_size=3),
                "required": st.booleans(),
            }
        )
        | st.dictionaries(st.sampled_from(["p", "q"]), kids, min_size=1, max_size=2)
        | st.lists(kids, min_size=1, max_size=2)
    ),
    max_leaves=6,
)
specs = st.builds(
    lambda output, xml: MappingSpec.model_validate(
        {"output": output, **({"output_format": "xml", "xml_root": "out"} if xml else {})}
    ),
    st.dictionaries(st.sampled_from(["x", "y", "z", "w"]), rules, min_size=1, max_size=4),
    st.booleans(),
)


def _map(spec: MappingSpec, payload: dict[str, Any] | str) -> None:
    refused: MappingError | None = None
    try:
        result = apply_mapping(spec, payload)
    except MappingError as error:  # anything else fails the test
        refused = error
    if refused is not None:
        assert refused.error_class is ErrorClass.SYNTAX  # never retried
        assert refused.http_status == 422
        return
    assert isinstance(result.body, bytes)
    if spec.output_format == "xml":
        assert result.content_type == XML
        assert result.body.startswith(b"<")
    else:
        assert result.content_type == JSON
        assert isinstance(json.loads(result.body), dict)  # the body is JSON of an object


@settings(derandomize=True, deadline=None, max_examples=200)
@given(spec=specs, payload=payloads)
def test_any_payload_maps_or_fails_with_a_mapping_error(
    spec: MappingSpec, payload: dict[str, Any] | str
) -> None:
    _map(spec, payload)


@settings(derandomize=True, deadline=None, max_examples=200)
@given(transform=st.sampled_from(TRANSFORMS), value=values)
def test_each_transform_converts_or_fails_with_transform_failed(transform: Any, value: Any) -> None:
    spec = MappingSpec.model_validate({"output": {"x": {"path": "a", "transforms": [transform]}}})
    (rule,) = spec.output.values()
    (compiled,) = rule.transforms  # type: ignore[union-attr]
    try:
        converted = compiled.apply(value)
    except TransformFailed:
        return
    if value is None and compiled.name != "default_if_empty":
        assert converted is None  # nothing found stays nothing
    _map(spec, {"a": value})


@settings(derandomize=True, deadline=None, max_examples=100)
@given(payload=payloads)
def test_passthrough_never_fails(payload: dict[str, Any] | str) -> None:
    out = passthrough(payload)
    if isinstance(payload, str):
        assert out.body == payload.encode()
    else:
        assert json.loads(out.body) == payload


@settings(derandomize=True, deadline=None, max_examples=20, phases=(Phase.explicit, Phase.generate))
@given(digits=st.integers(1, 6000), xml=st.booleans())
@example(digits=5000, xml=False)
def test_long_numeric_text_maps_or_fails_with_a_mapping_error(digits: int, xml: bool) -> None:
    """Found by this property: over 4,300 digits, to_int made an int Python cannot write."""
    spec = MappingSpec.model_validate(
        {
            "output": {"x": {"path": "a", "transforms": ["to_int"]}},
            **({"output_format": "xml", "xml_root": "out"} if xml else {}),
        }
    )
    _map(spec, {"a": "9" * digits})
