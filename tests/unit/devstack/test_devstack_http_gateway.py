"""API Gateway payload 2.0 event building, route choice and response mapping."""

from __future__ import annotations

import pytest

from devstack.http_gateway import (
    HttpRequest,
    Route,
    RouteTable,
    build_event,
    is_text_content,
    map_response,
)


def test_routes_are_chosen_by_specificity() -> None:
    table = RouteTable(
        [
            Route.create("ANY", "$default", "Fallback"),
            Route.create("ANY", "/items/{proxy+}", "Greedy"),
            Route.create("GET", "/items/{id}", "ById"),
            Route.create("ANY", "/items/{id}", "AnyById"),
            Route.create("GET", "/items/special", "Exact"),
        ]
    )

    def chosen(method: str, path: str) -> str | None:
        found = table.match(method, path)
        return found[0].function if found else None

    assert chosen("GET", "/items/special") == "Exact"
    assert chosen("GET", "/items/7") == "ById"
    assert chosen("PUT", "/items/7") == "AnyById"
    assert chosen("GET", "/items/7/parts") == "Greedy"
    assert chosen("GET", "/other") == "Fallback"
    assert RouteTable([Route.create("GET", "/a", "A")]).match("POST", "/a") is None


def test_event_omits_absent_parts_like_api_gateway() -> None:
    request = HttpRequest("GET", "/x", [("Host", "api.example.com:3000")], b"", "10.0.0.1")

    event = build_event(
        request,
        route_key="GET /x",
        path_parameters={},
        account_id="1",
        api_id="abc",
        request_id="r-1",
        now=1_700_000_000.5,
    )

    assert "body" not in event
    assert "cookies" not in event
    assert "queryStringParameters" not in event
    assert "pathParameters" not in event
    assert event["isBase64Encoded"] is False
    assert event["requestContext"]["domainName"] == "api.example.com"
    assert event["requestContext"]["domainPrefix"] == "api"
    assert event["requestContext"]["time"] == "14/Nov/2023:22:13:20 +0000"
    assert event["requestContext"]["timeEpoch"] == 1_700_000_000_500
    assert event["headers"]["x-forwarded-for"] == "10.0.0.1"


def test_invalid_utf8_text_is_passed_as_base64() -> None:
    request = HttpRequest("POST", "/x", [("Content-Type", "text/plain")], b"\xff\xfe", "1.1.1.1")

    event = build_event(
        request, route_key="$default", path_parameters=None, account_id="1", api_id="a", request_id="r"
    )

    assert event["isBase64Encoded"] is True
    assert event["body"] == "//4="


@pytest.mark.parametrize(
    ("content_type", "text"),
    [
        (None, True),
        ("text/csv", True),
        ("application/json; charset=utf-8", True),
        ("application/vnd.api+json", True),
        ("application/soap+xml", True),
        ("application/x-www-form-urlencoded", True),
        ("application/pdf", False),
        ("image/png", False),
    ],
)
def test_text_content_types(content_type: str | None, text: bool) -> None:
    assert is_text_content(content_type) is text


def test_responses_without_status_code_become_json_200() -> None:
    assert map_response({"a": 1}).body == b'{"a": 1}'
    assert map_response("hello").body == b"hello"
    assert map_response([1]).status == 200


def test_structured_responses_keep_status_headers_and_cookies() -> None:
    response = map_response({"statusCode": 404, "headers": {"X-A": "1"}, "body": "gone", "cookies": ["c=1"]})

    assert response.status == 404
    assert ("x-a", "1") in response.headers
    assert ("set-cookie", "c=1") in response.headers
    assert ("content-type", "application/json") in response.headers
    assert response.body == b"gone"
    with pytest.raises(ValueError, match="string"):
        map_response({"statusCode": 200, "body": {"not": "a string"}})
