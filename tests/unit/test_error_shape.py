"""The one error shape (issue 10, "Also"): every 4xx and 5xx the hub itself answers is
`{"error": {"code", "message", "details"?}}` with a JSON content type. What API Gateway answers
on its own (413 over 10 MB, 429, a failed invocation) is listed in docs/api-guide.md."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response

from hub.api.http import error_response, install_error_handlers
from hub.domain.mapping_errors import MappingTooLarge
from hub.domain.rate_limit import Rate
from hub.errors import ClaimTaken, ConfigurationError, HubError, MessagePending, MethodNotAllowed, RateLimited
from hub.ingest.throttle import TenantRateLimited
from tests.events import http_event


def every_error_class(base: type[HubError] = HubError) -> list[type[HubError]]:
    found: list[type[HubError]] = []
    for cls in base.__subclasses__():
        found += [cls, *every_error_class(cls)]
    return found


def instance(cls: type[HubError]) -> HubError:
    if issubclass(cls, MethodNotAllowed):
        return cls("no", allowed=("POST",))
    if issubclass(cls, ClaimTaken):
        return cls("lost", claims=())
    if issubclass(cls, TenantRateLimited):
        return cls("t1", Rate(per_second=1, burst=1), 1.5)
    if issubclass(cls, RateLimited | MessagePending):
        return cls("slow down", retry_after_seconds=3)
    if issubclass(cls, MappingTooLarge):
        return cls("too large", limit="body_bytes", maximum=262144, field="po", expression="[@,@]")
    return cls("something went wrong")


def assert_one_shape(status: int, headers: Mapping[str, Any], body: str) -> dict[str, Any]:
    assert 400 <= status <= 599
    assert headers["Content-Type"] == "application/json"
    document = json.loads(body)
    assert list(document) == ["error"]
    assert set(document["error"]) <= {"code", "message", "details"}
    assert isinstance(document["error"]["code"], str)
    assert isinstance(document["error"]["message"], str)
    return dict(document["error"])


@pytest.mark.parametrize("cls", every_error_class(), ids=lambda cls: cls.__name__)
def test_every_hub_error_renders_in_the_one_shape(cls: type[HubError]):
    error = instance(cls)
    response = error_response(error)

    assert response.status_code == cls.http_status
    assert isinstance(response.body, str)
    shown = assert_one_shape(response.status_code, response.headers, response.body)
    assert shown["code"] == cls.code
    for name, value in error.headers().items():
        assert response.headers[name] == value


@pytest.mark.parametrize(
    "raised",
    [
        RuntimeError("boom with cpf 123.456.789-00"),
        RecursionError(),
        ConfigurationError("HUB_TABLE_NAME is unset"),
    ],
    ids=["unexpected", "recursion", "misconfigured"],
)
def test_failures_of_our_own_are_a_bare_500_in_the_one_shape(raised: Exception):
    app = APIGatewayHttpResolver()
    install_error_handlers(app)

    @app.post("/api/edi-hub/receive-message")
    def _fail() -> Response:
        raise raised

    answer = app.resolve(http_event("receive_message.json"), None)  # type: ignore[arg-type]

    assert answer["statusCode"] == 500
    shown = assert_one_shape(answer["statusCode"], answer["headers"], answer["body"])
    assert shown == {"code": "internal_error", "message": "internal error; it is safe to resend the request"}
