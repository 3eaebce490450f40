"""SAM function rules that need no provisioned stack."""

from __future__ import annotations

from typing import Any

import pytest

from devstack.functions import logging_environment, needs_implicit_http_api


def template(*events: dict[str, Any]) -> dict[str, Any]:
    return {
        "Resources": {
            "Api": {"Type": "AWS::Serverless::HttpApi"},
            "Fn": {
                "Type": "AWS::Serverless::Function",
                "Properties": {"Events": {f"E{i}": event for i, event in enumerate(events)}},
            },
        }
    }


@pytest.mark.parametrize(
    ("events", "implicit"),
    [
        ([{"Type": "HttpApi", "Properties": {"ApiId": {"Ref": "Api"}, "Path": "/a"}}], False),
        ([{"Type": "HttpApi", "Properties": {"Path": "/a"}}], True),
        ([{"Type": "HttpApi"}], True),
        (
            [
                {"Type": "HttpApi", "Properties": {"ApiId": {"Ref": "Api"}}},
                {"Type": "HttpApi", "Properties": {"Path": "/b"}},
            ],
            True,
        ),
        ([{"Type": "SQS", "Properties": {"Queue": "arn"}}], False),
        ([], False),
    ],
)
def test_implicit_http_api_only_for_an_http_api_event_without_api_id(
    events: list[dict[str, Any]], implicit: bool
) -> None:
    assert needs_implicit_http_api(template(*events)) is implicit


@pytest.mark.parametrize(
    ("logging_config", "environment"),
    [
        (
            {"LogFormat": "JSON", "ApplicationLogLevel": "DEBUG", "SystemLogLevel": "WARN", "LogGroup": "g"},
            {"AWS_LAMBDA_LOG_FORMAT": "JSON", "AWS_LAMBDA_LOG_LEVEL": "DEBUG"},
        ),
        ({"LogFormat": "JSON"}, {"AWS_LAMBDA_LOG_FORMAT": "JSON"}),
        ({"LogFormat": "Text", "LogGroup": "g"}, {"AWS_LAMBDA_LOG_FORMAT": "Text"}),
        ({"LogGroup": "g"}, {}),
        ({}, {}),
    ],
)
def test_the_logging_environment_is_what_lambda_sets_from_the_logging_config(
    logging_config: dict[str, Any], environment: dict[str, str]
) -> None:
    # A level only with the JSON format: Lambda refuses levels with Text.
    assert logging_environment(logging_config) == environment
