"""CloudFormation short-form tags and intrinsic function resolution."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devstack.cfn import (
    NO_VALUE,
    Resolver,
    TemplateError,
    UnresolvedReference,
    load_template,
    referenced_names,
)
from devstack.functions import merge_globals
from devstack.provision import Provisioner, resolve_parameters, topological_order

TEMPLATE = """
Parameters:
  Stage: {Type: String, Default: dev}
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
  NotProd: !Not [!Condition IsProd]
Mappings:
  Sizes: {dev: {Memory: 256}, prod: {Memory: 1024}}
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt Dlq.Arn
      Tags: [!GetAtt [Dlq, QueueName]]
  Dlq:
    Type: AWS::SQS::Queue
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Name: !Sub "${AWS::StackName}-${Stage}-${Queue.QueueName}"
      Listed: !Sub ["${Prefix}/${Queue}", {Prefix: !Ref Stage}]
      Joined: !Join [",", [a, !Ref Stage]]
      Picked: !Select [1, !Split ["/", "x/y/z"]]
      Memory: !FindInMap [Sizes, !Ref Stage, Memory]
      Chosen: !If [IsProd, big, small]
      Optional: !If [NotProd, !Ref AWS::NoValue, present]
      Escaped: !Sub "${!Literal}-${AWS::Region}-${AWS::AccountId}-${AWS::URLSuffix}"
"""


@pytest.fixture
def template(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "template.yaml"
    path.write_text(TEMPLATE)
    return load_template(path)


def resolver(template: dict[str, Any], **overrides: str) -> Resolver:
    return Resolver(
        region="eu-west-1",
        stack_name="stk",
        parameters=resolve_parameters(template["Parameters"], overrides),
        refs={"Queue": "https://queue-url", "Dlq": "https://dlq-url"},
        attributes={
            ("Dlq", "Arn"): "arn:dlq",
            ("Dlq", "QueueName"): "stk-Dlq",
            ("Queue", "QueueName"): "stk-Queue",
        },
        mappings=template["Mappings"],
        conditions=template["Conditions"],
    )


def test_short_form_tags_load_as_long_form(template: dict[str, Any]) -> None:
    queue = template["Resources"]["Queue"]["Properties"]

    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": ["Dlq", "Arn"]}
    assert queue["Tags"] == [{"Fn::GetAtt": ["Dlq", "QueueName"]}]


def test_intrinsics_resolve(template: dict[str, Any]) -> None:
    props = resolver(template).resolve(template["Resources"]["Fn"]["Properties"])

    assert props == {
        "Name": "stk-dev-stk-Queue",
        "Listed": "dev/https://queue-url",
        "Joined": "a,dev",
        "Picked": "y",
        "Memory": 256,
        "Chosen": "small",
        "Escaped": "${Literal}-eu-west-1-123456789012-amazonaws.com",
    }


def test_conditions_follow_parameter_overrides(template: dict[str, Any]) -> None:
    props = resolver(template, Stage="prod").resolve(template["Resources"]["Fn"]["Properties"])

    assert (props["Chosen"], props["Optional"], props["Memory"]) == ("big", "present", 1024)


def test_unknown_references_raise(template: dict[str, Any]) -> None:
    with pytest.raises(UnresolvedReference):
        resolver(template).resolve({"Ref": "Nope"})
    with pytest.raises(UnresolvedReference):
        resolver(template).resolve({"Fn::GetAtt": ["Dlq", "Nope"]})
    with pytest.raises(TemplateError):
        resolver(template).resolve({"Fn::ImportValue": "x"})


def test_no_value_is_dropped_from_lists_and_maps(template: dict[str, Any]) -> None:
    value = resolver(template).resolve({"a": [1, {"Ref": "AWS::NoValue"}], "b": {"Ref": "AWS::NoValue"}})

    assert value == {"a": [1]}
    assert NO_VALUE is not None


def test_dependencies_order_resources_before_their_users(template: dict[str, Any]) -> None:
    resources = template["Resources"]

    assert referenced_names(resources["Fn"]["Properties"]) >= {"Stage", "Queue"}
    assert topological_order(resources, {}) == ["Dlq", "Queue", "Fn"]
    with pytest.raises(TemplateError, match="cycle"):
        topological_order(
            {"A": {"Properties": {"x": {"Ref": "B"}}}, "B": {"Properties": {"x": {"Ref": "A"}}}}, {}
        )


def test_parameters_use_defaults_overrides_and_allowed_values() -> None:
    declared = {
        "Stage": {"Default": "dev", "AllowedValues": ["dev", "prod"]},
        "Size": {"Type": "Number", "Default": 5},
    }

    assert resolve_parameters(declared, {}) == {"Stage": "dev", "Size": "5"}
    assert resolve_parameters(declared, {"Size": 7})["Size"] == "7"
    with pytest.raises(TemplateError):
        resolve_parameters(declared, {"Stage": "qa"})
    with pytest.raises(TemplateError):
        resolve_parameters(declared, {"Unknown": "x"})


def test_sam_globals_merge_maps_add_lists_and_override_scalars() -> None:
    merged = merge_globals(
        {"Timeout": 10, "Layers": [{"Ref": "Shared"}], "Environment": {"Variables": {"A": "g", "B": "g"}}},
        {"Timeout": 3, "Layers": ["arn:extra"], "Environment": {"Variables": {"B": "f"}}},
    )

    assert merged == {
        "Timeout": 3,
        "Layers": [{"Ref": "Shared"}, "arn:extra"],
        "Environment": {"Variables": {"A": "g", "B": "f"}},
    }


def test_template_rules_refuse_parameters_as_cloudformation_does() -> None:
    template = {
        "Parameters": {"To": {"Type": "String", "Default": ""}, "From": {"Type": "String", "Default": ""}},
        "Rules": {
            "ToNeedsFrom": {
                "Assertions": [
                    {
                        "Assert": {
                            "Fn::Or": [
                                {"Fn::Equals": [{"Ref": "To"}, ""]},
                                {"Fn::Not": [{"Fn::Equals": [{"Ref": "From"}, ""]}]},
                            ]
                        },
                        "AssertDescription": "To needs From.",
                    }
                ]
            },
            "OnlyInProd": {
                "RuleCondition": {"Fn::Equals": [{"Ref": "From"}, "prod@example.com"]},
                "Assertions": [{"Assert": {"Fn::Equals": [{"Ref": "To"}, "never"]}}],
            },
        },
        "Resources": {},
    }

    def provisioner(**overrides: str) -> Provisioner:
        return Provisioner(
            template, stack_name="s", region="us-east-1", parameter_overrides=overrides, clients={}
        )

    provisioner()
    provisioner(To="a@example.com", From="b@example.com")
    with pytest.raises(TemplateError, match="rule ToNeedsFrom: To needs From"):
        provisioner(To="a@example.com")
    with pytest.raises(TemplateError, match="rule OnlyInProd: an assertion does not hold"):
        provisioner(To="a@example.com", From="prod@example.com")


def test_a_template_is_parsed_once_per_version_and_each_caller_gets_its_own_copy(tmp_path: Path) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(TEMPLATE)
    first = load_template(path)
    first["Resources"].clear()  # a caller changing its copy

    second = load_template(path)
    assert second["Resources"]  # untouched by the first caller
    assert second == load_template(path)

    path.write_text(TEMPLATE.replace("Memory: !FindInMap", "MemoryChanged: !FindInMap"))
    changed = json.dumps(load_template(path))
    assert "MemoryChanged" in changed
