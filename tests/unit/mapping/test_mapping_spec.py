import json

import pytest
from pydantic import ValidationError

from hub.domain.mapping_spec import ConstRule, EachRule, PathRule
from hub.domain.mapping_transforms import DateFormat, Trim
from hub.mapping import MappingSpec

SPEC = {
    "output": {
        "number": {"path": "po.number", "transforms": ["trim", {"name": "upper"}]},
        "issued": {
            "path": "po.date",
            "transforms": [{"name": "date_format", "from": "%Y%m%d", "to": "%Y-%m-%d"}],
            "required": False,
        },
        "currency": {"path": "po.currency", "default": None},
        "source": {"const": "sap"},
        "lines": {"each": "po.items", "template": {"sku": {"path": "sku"}}},
        "tags": [{"const": "a"}, {"path": "tag", "required": False}],
    }
}


def test_a_spec_is_built_from_json_into_typed_rules():
    spec = MappingSpec.model_validate(SPEC)
    out = spec.output
    assert isinstance(out["number"], PathRule)
    assert isinstance(out["number"].transforms[0], Trim)
    assert isinstance(out["issued"], PathRule)
    assert isinstance(out["issued"].transforms[0], DateFormat)
    assert isinstance(out["source"], ConstRule)
    assert isinstance(out["lines"], EachRule)
    assert isinstance(out["tags"], list)
    assert spec.output_format == "json"


def test_a_spec_survives_a_json_round_trip_with_unset_defaults_still_unset():
    spec = MappingSpec.model_validate(SPEC)
    stored = json.loads(json.dumps(spec.model_dump(mode="json")))
    again = MappingSpec.model_validate(stored)

    assert again.model_dump(mode="json") == stored
    assert stored["output"]["issued"]["transforms"][0]["from"] == "%Y%m%d"
    assert "default" not in stored["output"]["number"]
    assert stored["output"]["currency"]["default"] is None
    number, currency = again.output["number"], again.output["currency"]
    assert isinstance(number, PathRule)
    assert isinstance(currency, PathRule)
    assert not number.has_default
    assert currency.has_default


def test_output_fields_may_be_called_path_const_or_each():
    spec = MappingSpec.model_validate(
        {"output": {"path": {"x": {"path": "a"}}, "const": {"y": {"const": 1}}, "each": [{"const": 2}]}}
    )
    assert isinstance(spec.output["path"], dict)
    assert isinstance(spec.output["const"], dict)
    assert isinstance(spec.output["each"], list)


def test_specs_are_frozen():
    spec = MappingSpec.model_validate(SPEC)
    with pytest.raises(ValidationError):
        spec.output_format = "xml"


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        ({"a": {"path": "po.[number"}}, "invalid JMESPath expression"),
        ({"a": {"path": "upper(po.number)"}}, "unknown JMESPath function 'upper'"),
        ({"a": {"path": "length(a, b)"}}, "takes 1 argument(s), got 2"),
        ({"a": {"each": "items[", "template": {"x": {"const": 1}}}}, "invalid JMESPath expression"),
        ({"a": {"path": "x", "transforms": ["capitalize"]}}, "does not match any of the expected tags"),
        (
            {"a": {"path": "x", "transforms": [{"name": "to_decimal", "places": 40}]}},
            "less than or equal to 18",
        ),
        ({"a": {"path": "x", "requred": False}}, "Extra inputs are not permitted"),
        ({"a": {"path": 3}}, "valid string"),
        ({"a": "po.number"}, "expected a rule"),
        ({"a": {"const": [1, 2]}}, "expected a rule"),
        ({"a": {"each": "items"}}, "template"),
    ],
)
def test_bad_specs_are_rejected_when_built(output, problem):
    with pytest.raises(ValidationError) as raised:
        MappingSpec.model_validate({"output": output})
    assert problem in str(raised.value)


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"output_format": "xml"}, "needs xml_root"),
        ({"output_format": "xml", "xml_root": "1root"}, "needs xml_root"),
        ({"output_format": "xml", "xml_root": "ns:root"}, "needs xml_root"),
        ({"xml_root": "r"}, "apply only to output_format 'xml'"),
        ({"output_format": "xml", "xml_root": "r", "xml_namespace": " "}, "must not be blank"),
        ({"output_format": "soap"}, "'json' or 'xml'"),
        ({"output_format": "xml", "xml_root": "r", "output": {"a b": {"const": 1}}}, "'a b' is not a valid"),
        (
            {"output_format": "xml", "xml_root": "r", "output": {"x": [{"@1": {"const": 1}}]}},
            "'x[0].@1' is not a valid",
        ),
        (
            {"output_format": "xml", "xml_root": "r", "output": {"@a": {"p": {"const": 1}}}},
            "must be a path or const rule",
        ),
    ],
)
def test_bad_xml_settings_are_rejected_when_built(spec, problem):
    with pytest.raises(ValidationError) as raised:
        MappingSpec.model_validate({"output": {"a": {"const": 1}}} | spec)
    assert problem in str(raised.value)
