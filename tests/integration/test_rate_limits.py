"""Rate limits (issue 14) through the real IngestApiFunction and AdminApiFunction handlers on
moto (stack from template.yaml): a tenant over its rate gets 429 with Retry-After and nothing is
stored; refused admin tokens from one address are cut off before any token is looked at."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import pytest

from hub import wiring
from hub.adapters.aws import best_effort_client, client
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.admin.token_guard import FailedTokenGuard
from hub.api.openapi import error_codes
from hub.domain.rate_limit import FailureWindow, Rate, TokenBuckets
from hub.domain.tenancy import Tenant
from hub.ingest.throttle import TenantThrottle
from hub.wiring import admin as admin_wiring
from hub.wiring import ingest as ingest_wiring
from tests.aws import LambdaContext, load_handler
from tests.events import admin_event, http_event
from tests.integration.conftest import ADMIN_TOKEN, HttpAnswer
from tests.integration.test_inbound_webhook import PAYLOAD, standard, webhooks  # noqa: F401 (a fixture)
from tests.integration.test_openapi import ADMIN, PARTNER, documents  # noqa: F401 (a fixture)
from tests.integration.test_receive_message import body, receive
from tests.integration.test_status_callbacks import admin, recorded, report, world  # noqa: F401 (fixtures)
from tests.pipeline import send


class Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@contextmanager
def aws_calls(*services: str) -> Iterator[list[str]]:
    """Every call the shared clients of `services` make meanwhile, as `service.Operation`."""
    calls: list[str] = []
    clients = [factory(service) for service in services for factory in (client, best_effort_client)]

    def note(event_name: str, **_: Any) -> None:
        calls.append(".".join(event_name.split(".")[1:3]))

    for each in clients:
        each.meta.events.register("before-call.*.*", note, unique_id="count-calls")
    try:
        yield calls
    finally:
        for each in clients:
            each.meta.events.unregister("before-call.*.*", unique_id="count-calls")


def built(thing: Any) -> Any:
    """A stand-in for a wiring factory (patched into its function's module, whose builders call
    it): cached like one."""
    return lru_cache(maxsize=1)(lambda: thing)


# --- partner API ------------------------------------------------------------------------------


@pytest.fixture
def clock(stack, monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The ingest function's buckets on a clock the test moves: 3 at once, then one per 2 s."""
    moved = Clock()
    throttle = TenantThrottle(Rate(per_second=0.5, burst=3), TokenBuckets(moved))
    monkeypatch.setattr(ingest_wiring, "tenant_throttle", built(throttle))
    wiring.reset()
    return moved


def order(tenancy, n: int, key: str = "default") -> dict[str, Any]:
    return receive(tenancy, body(tenancy, payload={"po_number": f"PO-{n}"}), key=key)


class TestTenantRate:
    def test_over_the_burst_is_429_with_retry_after_and_nothing_stored(
        self, stack, tenancy, clock, ingest_api
    ):
        answers = [ingest_api(order(tenancy, n)) for n in range(4)]

        assert [a.status for a in answers] == [202, 202, 202, 429]
        refused = answers[-1]
        assert refused.headers["Retry-After"] == "2"
        assert refused.body["error"]["code"] == "rate_limited"
        assert refused.body["error"]["details"]["retry_after_seconds"] == 2
        assert len(stack.message_items()) == 3
        assert len(stack.drain_queue()) == 3  # not even the first step was enqueued

    def test_another_tenant_is_not_affected(self, stack, tenancy, clock, ingest_api):
        for n in range(4):
            ingest_api(order(tenancy, n))

        other = {
            **body(tenancy, payload={"po_number": "PO-X"}),
            "integration_id": tenancy.other_integration_id,
        }
        assert ingest_api(receive(tenancy, other, key=tenancy.other_key)).status == 202

    def test_resending_after_retry_after_passes_and_stores_it_once(self, stack, tenancy, clock, ingest_api):
        for n in range(3):
            ingest_api(order(tenancy, n))
        refused = ingest_api(order(tenancy, 3))
        assert refused.status == 429

        clock.advance(int(refused.headers["Retry-After"]))
        again = ingest_api(order(tenancy, 3))

        assert again.status == 202
        assert ingest_api(order(tenancy, 4)).status == 429  # one token came back, no more
        assert len(stack.message_items()) == 4

    def test_message_status_reads_share_the_tenants_bucket(self, stack, tenancy, clock, ingest_api):
        created = ingest_api(order(tenancy, 1)).body["message_id"]
        path = {"message_id": created}
        reads = [
            ingest_api(
                http_event(
                    "get_message.json",
                    headers={"authorization": f"Bearer {tenancy.key}"},
                    path_parameters=path,
                )
            )
            for _ in range(3)
        ]

        assert [r.status for r in reads] == [200, 200, 429]
        assert reads[-1].headers["Retry-After"] == "2"

    def test_a_request_refused_before_storing_or_reading_spends_nothing(
        self, stack, tenancy, clock, ingest_api
    ):
        bad = [ingest_api(receive(tenancy, "{not json")) for _ in range(5)]
        assert {a.status for a in bad} == {400}

        assert [ingest_api(order(tenancy, n)).status for n in range(3)] == [202, 202, 202]

    def test_a_tenants_own_limit_comes_from_its_record(self, stack, tenancy, clock, ingest_api):
        DynamoConfigRepository(stack.table).put_tenant(
            Tenant(tenant_id="t1", name="T1", rate_limit=Rate(per_second=0.1, burst=1))
        )

        answers = [ingest_api(order(tenancy, n)) for n in range(2)]

        assert [a.status for a in answers] == [202, 429]
        assert answers[-1].headers["Retry-After"] == "10"


@pytest.mark.usefixtures("webhooks")
def test_a_verified_webhook_over_the_tenants_rate_is_429_and_stored_never(stack, tenancy, clock, ingest_api):
    def delivery(n: int) -> dict[str, Any]:
        payload = {**PAYLOAD, "id": f"evt_{n}", "data": {"po_number": f"PO-W{n}"}}
        return standard(json.dumps(payload).encode(), msg_id=f"msg_delivery_{n}")

    answers = [ingest_api(delivery(n)) for n in range(4)]
    forged = ingest_api(standard(b'{"type": "order.created"}', secret="whsec_" + "A" * 32))

    assert [a.status for a in answers] == [202, 202, 202, 429]
    assert answers[-1].headers["Retry-After"] == "2"
    assert "t1" not in json.dumps(answers[-1].body)  # the sender does not learn the tenant
    assert len(stack.message_items()) == 3
    assert forged.status == 401  # the signature is checked first, whatever the rate


def test_a_platform_admin_sets_a_tenants_limit_and_the_tenants_admin_cannot(
    stack, tenancy, clock, ingest_api, admin_api
):
    tenant_admin = admin_api(
        "POST", "/api/admin/tokens", body={"label": "t1", "role": "admin", "tenant_id": "t1"}
    )
    own_token = tenant_admin.body["token"]
    limit = {"per_second": 0.25, "burst": 1}

    raised = admin_api("PATCH", "/api/admin/tenants/t1", token=own_token, body={"rate_limit": None})
    assert raised.status == 403
    assert admin_api("PATCH", "/api/admin/tenants/t1", token=own_token, body={"name": "T one"}).status == 200

    set_ = admin_api("PATCH", "/api/admin/tenants/t1", body={"rate_limit": limit})
    assert set_.status == 200
    assert set_.body["rate_limit"] == limit
    assert set_.body["name"] == "T one"  # nothing else changed
    answers = [ingest_api(order(tenancy, n)) for n in range(2)]
    assert [a.status for a in answers] == [202, 429]
    assert answers[-1].headers["Retry-After"] == "4"

    cleared = admin_api("PATCH", "/api/admin/tenants/t1", body={"rate_limit": None})
    assert cleared.status == 200
    assert cleared.body["rate_limit"] is None
    assert admin_api("GET", "/api/admin/tenants/t1").body["rate_limit"] is None


def test_the_default_comes_from_the_template_parameters(stack, tenancy, ingest_api, monkeypatch):
    """No injected clock: a rate so slow that no token comes back while the test runs."""
    monkeypatch.setenv("HUB_TENANT_RATE_PER_SECOND", "0.001")
    monkeypatch.setenv("HUB_TENANT_BURST", "2")
    wiring.reset()

    started = time.monotonic()
    answers = [ingest_api(order(tenancy, n)) for n in range(3)]
    elapsed = time.monotonic() - started

    assert [a.status for a in answers] == [202, 202, 429]
    # A token every 1,000 s: the wait is 1,000 s less what has refilled while the requests ran
    # (a loaded machine may take seconds over them).
    assert 999 - math.ceil(elapsed) <= int(answers[-1].headers["Retry-After"]) <= 1000
    assert stack.env["HUB_TENANT_RATE_PER_SECOND"] == "50"  # the template's default
    assert stack.env["HUB_TENANT_BURST"] == "100"


# --- admin API --------------------------------------------------------------------------------

GOOD_IP = "198.51.100.1"
BAD_IP = "203.0.113.66"


@pytest.fixture
def admin_clock(stack, monkeypatch: pytest.MonkeyPatch) -> Clock:
    moved = Clock()
    guard = FailedTokenGuard(FailureWindow(limit=10, window_seconds=60, clock=moved))
    monkeypatch.setattr(admin_wiring, "failed_token_guard", built(guard))
    return moved


@pytest.fixture
def admin_from(stack) -> Callable[..., HttpAnswer]:
    handler = load_handler("AdminApiFunction")

    def call(ip: str, token: str | None, path: str = "/api/admin/me") -> HttpAnswer:
        event = admin_event("GET", path, token=token)
        event["requestContext"]["http"]["sourceIp"] = ip
        answer = handler(event, LambdaContext())
        return HttpAnswer(answer["statusCode"], json.loads(answer["body"]), answer.get("headers", {}))

    return call


def guess(admin_from, ip: str, times: int) -> list[int]:
    return [admin_from(ip, f"hub_adm_guess-{n}").status for n in range(times)]


class TestFailedAdminTokens:
    def test_after_ten_refused_tokens_the_address_gets_429_without_any_lookup(self, admin_clock, admin_from):
        assert guess(admin_from, BAD_IP, 10) == [401] * 10

        with aws_calls("dynamodb", "secretsmanager") as calls:
            refused = admin_from(BAD_IP, "hub_adm_guess-11")

        assert refused.status == 429
        assert refused.body["error"]["code"] == "too_many_failed_tokens"
        assert refused.headers["Retry-After"] == "60"
        assert calls == []

    def test_a_refused_token_is_looked_up_before_the_limit(self, admin_clock, admin_from):
        """The counter above is not blind: a guess under the limit does read."""
        with aws_calls("dynamodb", "secretsmanager") as calls:
            assert admin_from(BAD_IP, "hub_adm_guess-1").status == 401
        assert calls == ["dynamodb.GetItem", "secrets-manager.GetSecretValue"]

    def test_another_address_is_not_affected(self, admin_clock, admin_from):
        guess(admin_from, BAD_IP, 10)

        assert admin_from(GOOD_IP, "hub_adm_guess-x").status == 401
        assert admin_from(GOOD_IP, ADMIN_TOKEN).status == 200

    def test_a_good_token_from_a_blocked_address_waits_too_until_the_window_passes(
        self, admin_clock, admin_from
    ):
        guess(admin_from, BAD_IP, 10)

        blocked = admin_from(BAD_IP, ADMIN_TOKEN)
        assert blocked.status == 429
        admin_clock.advance(int(blocked.headers["Retry-After"]))
        assert admin_from(BAD_IP, ADMIN_TOKEN).status == 200

    def test_ipv6_guesses_count_per_64_so_new_addresses_do_not_reset_the_count(self, admin_clock, admin_from):
        statuses = [admin_from(f"2001:db8:1:2::{n:x}", f"hub_adm_guess-{n}").status for n in range(10)]
        assert statuses == [401] * 10

        assert admin_from("2001:db8:1:2:ffff::1", "hub_adm_guess-next").status == 429
        assert admin_from("2001:db8:1:3::1", "hub_adm_guess-other-64").status == 401

    def test_a_forwarded_for_header_does_not_change_whose_address_counts(self, admin_clock, admin_from):
        guess(admin_from, BAD_IP, 10)

        event = admin_event("GET", "/api/admin/me", token=ADMIN_TOKEN)
        event["requestContext"]["http"]["sourceIp"] = BAD_IP
        event["headers"]["x-forwarded-for"] = GOOD_IP
        answer = load_handler("AdminApiFunction")(event, LambdaContext())
        assert answer["statusCode"] == 429

    def test_good_tokens_and_missing_ones_are_not_counted(self, admin_clock, admin_from):
        for _ in range(20):
            assert admin_from(BAD_IP, ADMIN_TOKEN).status == 200
            assert admin_from(BAD_IP, None).status == 401

        assert guess(admin_from, BAD_IP, 10) == [401] * 10
        assert admin_from(BAD_IP, ADMIN_TOKEN).status == 429

    def test_the_log_names_the_address_never_the_token(self, admin_clock, admin_from, caplog):
        with caplog.at_level(logging.INFO):
            admin_from(BAD_IP, "hub_adm_secret-guess")

        [refused] = [r for r in caplog.records if r.getMessage() == "admin token refused"]
        assert refused.__dict__["source_ip"] == BAD_IP
        assert refused.__dict__["failures"] == 1
        assert "secret-guess" not in caplog.text
        assert all("secret-guess" not in repr(r.__dict__) for r in caplog.records)


def test_status_callbacks_spend_the_tenants_bucket_and_a_429_records_nothing(request, tenancy, ingest_api):
    # Connections and their callback tokens first (test_status_callbacks' fixtures), then the clock.
    token = request.getfixturevalue("world")["con_a"]
    admin_calls = request.getfixturevalue("admin")
    clock = request.getfixturevalue("clock")
    message_id = send(ingest_api, tenancy, {"po_number": "PO-CB"})  # one of the 3 tokens

    answers = [report(ingest_api, message_id, token, step) for step in ("accepted", "delivered", "read")]

    assert [a.status for a in answers] == [202, 202, 429]
    assert answers[-1].headers["Retry-After"] == "2"
    assert [row["status"] for row in recorded(admin_calls, message_id)] == ["delivered", "accepted"]
    clock.advance(2)
    assert report(ingest_api, message_id, token, "read").status == 202


THROTTLED_PARTNER_ROUTES = {
    ("post", "/api/edi-hub/receive-message"),
    ("post", "/api/webhook/{tenant_id}/{integration_id}"),
    ("get", "/api/edi-hub/messages/{message_id}"),
    ("post", "/api/edi-hub/status-callback/{message_id}"),
}


def test_both_openapi_documents_list_429_with_retry_after(request):
    published = request.getfixturevalue("documents")

    def operations(document: dict[str, Any]) -> Iterator[tuple[tuple[str, str], dict[str, Any]]]:
        for path, methods in document["paths"].items():
            for method, operation in methods.items():
                yield (method, path), operation

    partner_429 = {
        route: error_codes(op["responses"]["429"])
        for route, op in operations(published[PARTNER])
        if "429" in op["responses"]
    }
    assert partner_429 == {route: ["rate_limited"] for route in THROTTLED_PARTNER_ROUTES}
    admin_ops = dict(operations(published[ADMIN]))
    assert admin_ops
    for route, op in admin_ops.items():
        assert "too_many_failed_tokens" in error_codes(op["responses"]["429"]), route
    for document in published.values():
        for _, op in operations(document):
            if "429" in op["responses"]:
                assert "Retry-After" in op["responses"]["429"]["headers"]


@pytest.mark.parametrize("per_second", [2.2622898987697223e-278, 0.0009, 0])
def test_a_rate_below_one_request_per_1000_seconds_is_refused_not_a_500(stack, admin_api, per_second):
    """Found by fuzzing (issue 15): a positive float DynamoDB cannot hold (below 1e-130) got
    through validation and failed the write (decimal.Underflow, 500). The floor, 0.001, is one
    request per 1,000 s."""
    body = {"tenant_id": "t9", "name": "T9", "rate_limit": {"per_second": per_second, "burst": 1}}

    refused = admin_api("POST", "/api/admin/tenants", body=body)

    assert (refused.status, refused.body["error"]["code"]) == (400, "validation_error")
    assert admin_api("GET", "/api/admin/tenants/t9").status == 404
    slowest = {**body, "rate_limit": {"per_second": 0.001, "burst": 1}}
    assert admin_api("POST", "/api/admin/tenants", body=slowest).status == 201
