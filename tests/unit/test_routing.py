"""Requests no route takes (issue 10, item 6): 404 route_not_found for an unknown path, 405
method_not_allowed with Allow for a known path, both in the one error shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response

from hub.api.http import install_error_handlers, json_response
from hub.api.routing import allowed_methods
from tests.events import load_event


def build_app() -> APIGatewayHttpResolver:
    """The partner API's routes (functions/ingest_api/app.py) on a bare resolver."""
    app = APIGatewayHttpResolver()
    install_error_handlers(app)

    @app.post("/api/edi-hub/receive-message")
    def _receive() -> Response:
        return json_response(202, {})

    @app.post("/api/webhook/<integration_id>")
    def _webhook(integration_id: str) -> Response:
        return json_response(202, {})

    @app.get("/api/edi-hub/messages/<message_id>")
    def _status(message_id: str) -> Response:
        return json_response(200, {})

    @app.put("/api/edi-hub/messages/<message_id>")
    def _replace(message_id: str) -> Response:
        return json_response(200, {})

    return app


def request(app: APIGatewayHttpResolver, method: str, path: str) -> dict[str, Any]:
    """What the $default route hands the function for `method path`."""
    event = load_event("receive_message.json")
    event["routeKey"] = event["requestContext"]["routeKey"] = "$default"
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event.pop("pathParameters", None)
    return app.resolve(event, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/api/edi-hub/receive-message", "POST"),
        ("PUT", "/api/webhook/int_a", "POST"),
        ("DELETE", "/api/edi-hub/messages/msg_1", "GET, PUT"),
        ("HEAD", "/api/edi-hub/messages/msg_1", "GET, PUT"),
        ("OPTIONS", "/api/edi-hub/receive-message", "POST"),
    ],
)
def test_a_known_path_with_another_method_is_405_with_allow(method, path, allow):
    answer = request(build_app(), method, path)

    assert answer["statusCode"] == 405
    assert answer["headers"]["Allow"] == allow
    assert json.loads(answer["body"]) == {
        "error": {
            "code": "method_not_allowed",
            "message": f"{method} is not allowed here",
            "details": {"allowed": allow.split(", ")},
        }
    }
    assert answer["headers"]["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/"),
        ("POST", "/api/edi-hub/nothing-here"),
        ("POST", "/api/webhook/"),
        ("POST", "/api/webhook/a/b"),
        ("GET", "/api/edi-hub/messages"),
    ],
)
def test_an_unknown_path_is_404_route_not_found(method, path):
    answer = request(build_app(), method, path)

    assert answer["statusCode"] == 404
    assert "Allow" not in answer["headers"]
    assert json.loads(answer["body"]) == {"error": {"code": "route_not_found", "message": "no such route"}}


def test_the_routes_of_a_path_are_read_from_the_resolver():
    # Fails if a Powertools release renames the route lists this reads.
    app = build_app()
    assert allowed_methods(app, "/api/webhook/x") == ("POST",)
    assert allowed_methods(app, "/api/edi-hub/messages/m") == ("GET", "PUT")
    assert allowed_methods(app, "/elsewhere") == ()
