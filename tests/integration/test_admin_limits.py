"""The admin API's request body limit (413) and per-token rate limit (429 with Retry-After),
through the real admin handler on moto (issue 27), configured as the template sets them."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from hub import wiring
from tests.integration.conftest import HttpAnswer, Stack

LIMIT = 2048


@pytest.fixture
def limited(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small body limit, and 3 requests per token with (practically) no refill: no test here
    waits on time."""
    monkeypatch.setenv("HUB_ADMIN_MAX_BODY_BYTES", str(LIMIT))
    monkeypatch.setenv("HUB_ADMIN_TOKEN_RATE_PER_SECOND", "0.001")
    monkeypatch.setenv("HUB_ADMIN_TOKEN_BURST", "3")
    wiring.reset()


def _tenant_names(admin_api: Any) -> list[str]:
    listed = admin_api("GET", "/api/admin/tenants")
    assert listed.status == 200, listed.body
    return sorted(item["name"] for item in listed.body["items"])


def test_the_template_defaults_are_what_the_readme_says(stack: Stack) -> None:
    settings = wiring.settings()

    assert stack.env["HUB_ADMIN_MAX_BODY_BYTES"] == "1048576"
    assert (settings.admin_max_body_bytes, settings.admin_token_rate_per_second) == (1048576, 50)
    assert settings.admin_token_burst == 200


class TestBodyLimit:
    def test_a_body_over_the_limit_is_413_in_the_one_error_shape_and_nothing_is_done(
        self, limited: None, admin_api: Any
    ) -> None:
        answer = admin_api("POST", "/api/admin/tenants", body={"name": "x" * LIMIT})

        assert answer.status == 413
        assert answer.body == {
            "error": {
                "code": "payload_too_large",
                "message": f"request body is over {LIMIT} bytes",
                "details": {"limit_bytes": LIMIT},
            }
        }
        assert _tenant_names(admin_api) == []

    def test_a_body_at_the_limit_is_read(self, limited: None, admin_api: Any) -> None:
        padding = LIMIT - len('{"name": ""}')
        answer = admin_api("POST", "/api/admin/tenants", body={"name": "n" * 10 + " " * (padding - 10)})

        assert answer.status == 400  # read and validated: a name is at most 200 characters
        assert answer.body["error"]["code"] == "validation_error"

    def test_the_limit_comes_before_the_token_is_looked_at(self, limited: None, admin_api: Any) -> None:
        answer = admin_api("POST", "/api/admin/tenants", token=None, body={"name": "x" * LIMIT})

        assert (answer.status, answer.body["error"]["code"]) == (413, "payload_too_large")

    def test_a_base64_body_counts_decoded(self, limited: None, admin_api: Any, stack: Stack) -> None:
        from tests.aws import LambdaContext, load_handler  # noqa: PLC0415
        from tests.events import admin_event  # noqa: PLC0415

        handler = load_handler("AdminApiFunction")
        event = admin_event("POST", "/api/admin/tenants", token=None)
        under = b'{"name": "' + b"y" * (LIMIT - 20) + b'"}'
        event["body"], event["isBase64Encoded"] = base64.b64encode(under).decode(), True

        answer = handler(event, LambdaContext())

        assert answer["statusCode"] == 401  # not 413: its encoded form is over, its bytes are not


class TestTokenRateLimit:
    def test_a_token_over_its_rate_gets_429_with_retry_after_and_nothing_is_done(
        self, limited: None, admin_api: Any
    ) -> None:
        statuses = [admin_api("GET", "/api/admin/me").status for _ in range(3)]

        refused = admin_api("POST", "/api/admin/tenants", body={"name": "Refused"})

        assert statuses == [200, 200, 200]
        assert refused.status == 429
        assert refused.body["error"]["code"] == "rate_limited"
        assert set(refused.body["error"]) == {"code", "message", "details"}
        assert int(refused.headers["Retry-After"]) >= 1
        assert refused.body["error"]["details"]["retry_after_seconds"] == int(refused.headers["Retry-After"])
        assert refused.body["error"]["details"]["limit"] == {
            "per_second": 0.001,
            "burst": 3,
            "scope": "instance",
        }

    def test_one_tokens_exhaustion_does_not_limit_another_token(self, limited: None, admin_api: Any) -> None:
        created = admin_api(
            "POST", "/api/admin/tokens", body={"label": "other", "role": "admin", "tenant_id": None}
        )  # the bootstrap token's 1st request
        other = created.body["token"]
        assert admin_api("GET", "/api/admin/me").status == 200  # 2nd
        assert admin_api("GET", "/api/admin/me").status == 200  # 3rd: its bucket is empty now
        assert admin_api("GET", "/api/admin/me").status == 429

        answers: list[HttpAnswer] = [admin_api("GET", "/api/admin/me", token=other) for _ in range(3)]

        assert [a.status for a in answers] == [200, 200, 200]
        assert answers[0].body["token_id"] == created.body["token_id"]
        assert admin_api("GET", "/api/admin/me", token=other).status == 429
        assert admin_api("GET", "/api/admin/me").status == 429  # the first one is still limited

    def test_refused_tokens_are_not_counted_against_any_token(self, limited: None, admin_api: Any) -> None:
        for _ in range(5):
            assert admin_api("GET", "/api/admin/me", token="hub_admin_unknown").status == 401

        assert [admin_api("GET", "/api/admin/me").status for _ in range(3)] == [200, 200, 200]
