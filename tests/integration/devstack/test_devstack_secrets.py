"""The local stack provisions AWS::SecretsManager::Secret on moto: a Ref is the secret's ARN
(as in CloudFormation), a conditional secret that is off is not created, and a function's
`!If [Cond, !Ref Secret, ""]` resolves either way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devstack.functions import FunctionBuilder
from devstack.provision import Provisioner
from tests.aws import AWS_TEST_ENV, REGION

TEMPLATE: dict[str, Any] = {
    "Parameters": {"Url": {"Type": "String", "Default": "", "NoEcho": True}},
    "Conditions": {"HasUrl": {"Fn::Not": [{"Fn::Equals": [{"Ref": "Url"}, ""]}]}},
    "Resources": {
        "UrlSecret": {
            "Type": "AWS::SecretsManager::Secret",
            "Condition": "HasUrl",
            "Properties": {"Description": "a URL", "SecretString": {"Ref": "Url"}},
        },
        "Fn": {
            "Type": "AWS::Serverless::Function",
            "Properties": {
                "CodeUri": "functions/admin_api/",
                "Handler": "app.lambda_handler",
                "Runtime": "python3.12",
                "Environment": {
                    "Variables": {"URL_SECRET_ARN": {"Fn::If": ["HasUrl", {"Ref": "UrlSecret"}, ""]}}
                },
            },
        },
    },
}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    for name, value in AWS_TEST_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield {"secretsmanager": boto3.client("secretsmanager", region_name=REGION)}


def environment(clients: dict[str, Any], **overrides: str) -> dict[str, str]:
    provisioner = Provisioner(
        TEMPLATE, stack_name="s", region=REGION, parameter_overrides=overrides, clients=clients
    )
    provisioner.provision()
    model = FunctionBuilder(provisioner, Path(__file__).resolve().parents[3], function_urls={}).build()
    return dict(model.specs["Fn"].environment)


def test_a_secret_is_created_and_its_ref_is_its_arn(aws: dict[str, Any]) -> None:
    env = environment(aws, Url="https://hooks.example/secret-part")

    arn = env["URL_SECRET_ARN"]
    assert arn.startswith(f"arn:aws:secretsmanager:{REGION}:")
    value = aws["secretsmanager"].get_secret_value(SecretId=arn)
    assert (value["Name"], value["SecretString"]) == ("s-UrlSecret", "https://hooks.example/secret-part")


def test_an_empty_parameter_creates_no_secret_and_an_empty_arn(aws: dict[str, Any]) -> None:
    env = environment(aws)

    assert env["URL_SECRET_ARN"] == ""
    assert aws["secretsmanager"].list_secrets()["SecretList"] == []
