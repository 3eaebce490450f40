"""Tenants through the real AdminApiFunction handler, and a disabled tenant seen by the real
IngestApiFunction handler: create, list with a cursor, read, update; disable -> its keys are 401
at ingest once the configuration cache reloads the tenant, its messages are still readable;
enable -> 202 again. The use case's rules (a generated id, what an update changes, the bodies
refused): tests/unit/test_tenant_life.py."""

from __future__ import annotations

import boto3
import pytest

from hub import wiring
from hub.adapters.dynamo.keys import tenant_key
from tests.events import http_event

TENANTS = "/api/admin/tenants"


@pytest.fixture
def no_cache(stack, monkeypatch):
    """Ingest reads every key and tenant afresh (as the e2e stack runs: HUB_CONFIG_CACHE_SECONDS=0)."""
    monkeypatch.setenv("HUB_CONFIG_CACHE_SECONDS", "0")
    wiring.reset()


def ingest(ingest_api, tenancy, po: str = "PO-1", key: str | None = None, integration_id: str | None = None):
    body = {
        "integration_id": integration_id or tenancy.integration_id,
        "message_type": "purchase_order",
        "payload": {"po_number": po},
    }
    headers: dict[str, str | None] = {
        "authorization": f"Bearer {key or tenancy.key}",
        "idempotency-key": None,
    }
    return ingest_api(http_event("receive_message.json", body=body, headers=headers))


def error_shape(answer) -> str:
    assert set(answer.body) == {"error"}
    assert {"code", "message"} <= set(answer.body["error"])
    return str(answer.body["error"]["code"])


class TestCreateReadList:
    def test_a_created_tenant_is_read_and_listed_with_the_observability_default(self, stack, admin_api):
        created = admin_api("POST", TENANTS, body={"tenant_id": "acme", "name": "ACME Ltda"})

        assert created.status == 201
        assert created.body["tenant_id"] == "acme"
        assert (created.body["name"], created.body["default_mode"], created.body["state"]) == (
            "ACME Ltda",
            "observability",
            "active",
        )
        assert created.body["created_at"].endswith("Z")
        assert created.body["disabled_at"] is None
        read = admin_api("GET", f"{TENANTS}/acme")
        assert (read.status, read.body) == (200, created.body)
        assert [t["tenant_id"] for t in admin_api("GET", TENANTS).body["items"]] == ["acme"]

    def test_an_existing_id_is_409_and_unchanged(self, stack, tenancy, admin_api):
        taken = admin_api("POST", TENANTS, body={"tenant_id": "t1", "name": "Someone else"})

        assert (taken.status, error_shape(taken)) == (409, "tenant_exists")
        assert taken.body["error"]["details"] == {"tenant_id": "t1"}
        assert admin_api("GET", f"{TENANTS}/t1").body["name"] == "T1"

    def test_the_listing_pages_by_tenant_id_with_a_cursor_and_includes_put_tenants(
        self, stack, tenancy, admin_api
    ):
        for tenant_id in ("c", "a", "b"):
            assert admin_api("POST", TENANTS, body={"tenant_id": tenant_id, "name": tenant_id}).status == 201

        first = admin_api("GET", TENANTS, query={"limit": "3"})
        second = admin_api("GET", TENANTS, query={"limit": "3", "cursor": first.body["next_cursor"]})

        assert [t["tenant_id"] for t in first.body["items"]] == ["a", "b", "c"]
        # t1 and t2 come from the fixture's put_tenant: written as the API writes them.
        assert [t["tenant_id"] for t in second.body["items"]] == ["t1", "t2"]
        assert second.body["next_cursor"] is None

    def test_a_tenant_written_by_hand_is_read_and_listed_after_its_first_change(self, stack, admin_api):
        boto3.client("dynamodb").put_item(
            TableName=stack.table,
            Item={
                **{k: {"S": v} for k, v in tenant_key("old").items()},
                "item_type": {"S": "tenant"},
                "tenant_id": {"S": "old"},
                "name": {"S": "Old"},
            },
        )

        read = admin_api("GET", f"{TENANTS}/old")
        assert (read.body["state"], read.body["default_mode"]) == ("active", "observability")
        assert admin_api("GET", TENANTS).body["items"] == []
        admin_api("PATCH", f"{TENANTS}/old", body={"name": "Old Co"})
        assert [t["name"] for t in admin_api("GET", TENANTS).body["items"]] == ["Old Co"]

    def test_a_cursor_not_from_this_listing_is_400(self, stack, admin_api):
        answer = admin_api("GET", TENANTS, query={"cursor": "eyJQSyI6IngifQ"})

        assert (answer.status, error_shape(answer)) == (400, "validation_error")


class TestUpdate:
    def test_an_unknown_tenant_is_404_on_every_route(self, stack, admin_api):
        for method, path, body in (
            ("GET", f"{TENANTS}/nope", None),
            ("PATCH", f"{TENANTS}/nope", {"name": "x"}),
            ("POST", f"{TENANTS}/nope/disable", None),
            ("POST", f"{TENANTS}/nope/enable", None),
        ):
            answer = admin_api(method, path, body=body)
            assert (answer.status, error_shape(answer)) == (404, "not_found"), path
        assert admin_api("GET", TENANTS).body["items"] == []  # the update created nothing

    def test_a_malformed_tenant_id_in_the_path_is_400(self, stack, admin_api):
        answer = admin_api("GET", f"{TENANTS}/-bad")

        assert (answer.status, error_shape(answer)) == (400, "validation_error")

    def test_every_route_needs_the_admin_token(self, stack, tenancy, admin_api):
        routes = (
            ("POST", TENANTS, {"tenant_id": "new", "name": "x"}),
            ("GET", TENANTS, None),
            ("GET", f"{TENANTS}/t1", None),
            ("PATCH", f"{TENANTS}/t1", {"name": "x"}),
            ("POST", f"{TENANTS}/t1/disable", None),
            ("POST", f"{TENANTS}/t1/enable", None),
        )
        for method, path, body in routes:
            for token in (None, "not-the-admin-token"):
                answer = admin_api(method, path, token=token, body=body)
                assert (answer.status, error_shape(answer)) == (401, "unauthorized"), (method, path)
        tenant = admin_api("GET", f"{TENANTS}/t1").body
        assert (tenant["name"], tenant["state"]) == ("T1", "active")
        assert admin_api("GET", f"{TENANTS}/new").status == 404


class TestDisable:
    def test_a_disabled_tenants_key_is_401_its_messages_kept_and_enable_restores_it(
        self, stack, tenancy, admin_api, ingest_api, no_cache
    ):
        before = ingest(ingest_api, tenancy, po="PO-1")
        assert before.status == 202
        message_id = before.body["message_id"]

        disabled = admin_api("POST", f"{TENANTS}/t1/disable")
        again = admin_api("POST", f"{TENANTS}/t1/disable")

        assert (disabled.status, disabled.body["state"]) == (200, "disabled")
        assert disabled.body["disabled_at"] is not None
        assert again.body == disabled.body  # idempotent: the first disabled_at stays
        refused = ingest(ingest_api, tenancy, po="PO-2")
        assert (refused.status, error_shape(refused)) == (401, "unauthorized")
        assert refused.body["error"]["message"] == "this tenant is disabled"
        status = ingest_api(
            http_event(
                "get_message.json",
                headers={"x-api-key": tenancy.key},
                path_parameters={"message_id": message_id},
            )
        )
        assert (status.status, error_shape(status)) == (401, "unauthorized")
        # Another tenant is not affected; the disabled one's message is still there for operators.
        other = ingest(
            ingest_api, tenancy, key=tenancy.other_key, integration_id=tenancy.other_integration_id
        )
        assert other.status == 202
        view = admin_api("GET", f"/api/admin/messages/{message_id}")
        assert (view.status, view.body["message_id"]) == (200, message_id)
        assert [t["state"] for t in admin_api("GET", TENANTS).body["items"]] == ["disabled", "active"]

        enabled = admin_api("POST", f"{TENANTS}/t1/enable")

        assert (enabled.status, enabled.body["state"], enabled.body["disabled_at"]) == (200, "active", None)
        assert ingest(ingest_api, tenancy, po="PO-3").status == 202

    def test_a_warm_instance_refuses_a_disabled_tenant_when_its_cache_reloads(
        self, stack, tenancy, admin_api, ingest_api, monkeypatch
    ):
        monkeypatch.setenv("HUB_CONFIG_CACHE_SECONDS", "30")
        wiring.reset()
        assert ingest(ingest_api, tenancy, po="PO-1").status == 202

        admin_api("POST", f"{TENANTS}/t1/disable")

        # Cached for HUB_CONFIG_CACHE_SECONDS, like a revoked key: this instance still accepts.
        assert ingest(ingest_api, tenancy, po="PO-2").status == 202
        wiring.reset()  # a new instance (or the TTL passed): the disable applies
        assert ingest(ingest_api, tenancy, po="PO-3").status == 401
