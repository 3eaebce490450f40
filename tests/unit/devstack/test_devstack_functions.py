"""SAM function rules that need no provisioned stack."""

from __future__ import annotations

from typing import Any

import pytest

from devstack.functions import needs_implicit_http_api


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
