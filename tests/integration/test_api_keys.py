"""API keys through the real AdminApiFunction handler, used through the real IngestApiFunction
handler: create -> ingest 202, list without the secret, revoke -> 401 once the configuration
cache reloads the key, rotate -> both keys during the grace period, the old one 401 after it.
The grace a rotation may get, and which keys rotate: tests/unit/test_api_key_life.py."""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from hub import wiring
from hub.adapters.dynamo.keys import api_key_key
from hub.adapters.dynamo.table import format_ts
from hub.domain.tenancy import hash_api_key
from tests.events import http_event

KEYS = "/api/admin/tenants/{tenant}/api-keys"


@pytest.fixture
def no_cache(stack, monkeypatch):
    """Ingest reads every key afresh (as the e2e stack runs: HUB_CONFIG_CACHE_SECONDS=0)."""
    monkeypatch.setenv("HUB_CONFIG_CACHE_SECONDS", "0")
    wiring.reset()


def create(admin_api, tenant: str = "t1", **body):
    return admin_api("POST", KEYS.format(tenant=tenant), body=body)


def ingest(ingest_api, tenancy, key: str, po: str = "PO-1", integration_id: str | None = None):
    body = {
        "integration_id": integration_id or tenancy.integration_id,
        "message_type": "purchase_order",
        "payload": {"po_number": po},
    }
    headers: dict[str, str | None] = {"authorization": f"Bearer {key}", "idempotency-key": None}
    return ingest_api(http_event("receive_message.json", body=body, headers=headers))


def stored_item(stack, raw_key: str) -> dict:
    item = boto3.client("dynamodb").get_item(
        TableName=stack.table, Key={k: {"S": v} for k, v in api_key_key(hash_api_key(raw_key)).items()}
    )["Item"]
    return {name: next(iter(value.values())) for name, value in item.items()}


def error_shape(answer) -> str:
    assert set(answer.body) == {"error"}
    assert {"code", "message"} <= set(answer.body["error"])
    return str(answer.body["error"]["code"])


class TestCreateAndList:
    def test_a_created_key_ingests_and_is_listed_without_its_secret(
        self, stack, tenancy, admin_api, ingest_api, no_cache, capsys, caplog
    ):
        caplog.set_level(logging.DEBUG)
        created = create(admin_api, label="ERP prod")

        assert created.status == 201
        raw = created.body["key"]
        assert raw.startswith("hub_")
        assert created.body["prefix"] == raw[:12]
        assert created.body["integration_ids"] is None
        assert ingest(ingest_api, tenancy, raw).status == 202

        listed = admin_api("GET", KEYS.format(tenant="t1"))

        assert listed.status == 200
        [row] = listed.body["items"]
        assert row["key_id"] == created.body["key_id"]
        assert (row["label"], row["prefix"], row["state"]) == ("ERP prod", raw[:12], "active")
        assert row["last_used_day"] == datetime.now(UTC).date().isoformat()
        assert row["created_at"] == created.body["created_at"]
        item = stored_item(stack, raw)
        assert item["key_hash"] == hashlib.sha256(raw.encode()).hexdigest()
        everything = json.dumps(listed.body) + json.dumps(item) + json.dumps(stack.scan(), default=str)
        assert raw not in everything
        assert raw[12:] not in everything
        logs = capsys.readouterr()
        for text in (logs.out, logs.err, caplog.text):
            assert raw[12:] not in text

    def test_a_key_limited_to_an_integration_may_use_only_that_one(
        self, stack, tenancy, admin_api, ingest_api, no_cache
    ):
        created = create(admin_api, integration_ids=[tenancy.second_integration_id])

        assert created.body["integration_ids"] == [tenancy.second_integration_id]
        raw = created.body["key"]
        assert ingest(ingest_api, tenancy, raw, integration_id=tenancy.second_integration_id).status == 202
        assert ingest(ingest_api, tenancy, raw).status == 404

    def test_unknown_or_other_tenants_integrations_are_422_naming_them(self, stack, tenancy, admin_api):
        refused = create(
            admin_api, integration_ids=[tenancy.integration_id, tenancy.other_integration_id, "nope"]
        )

        assert (refused.status, error_shape(refused)) == (422, "unknown_integration")
        assert refused.body["error"]["details"] == {
            "field": "integration_ids",
            "unknown": sorted(["nope", tenancy.other_integration_id]),
        }
        assert admin_api("GET", KEYS.format(tenant="t1")).body["items"] == []

    def test_an_unknown_tenant_is_404(self, stack, tenancy, admin_api):
        for answer in (create(admin_api, tenant="t9"), admin_api("GET", KEYS.format(tenant="t9"))):
            assert (answer.status, error_shape(answer)) == (404, "not_found")

    def test_a_bad_body_is_400_naming_the_field(self, stack, tenancy, admin_api):
        refused = create(admin_api, label="x", integration_ids=[], extra=1)

        assert (refused.status, error_shape(refused)) == (400, "validation_error")
        assert {d["field"] for d in refused.body["error"]["details"]} == {"integration_ids", "extra"}

    def test_the_listing_is_newest_first_with_a_cursor_and_per_tenant(self, stack, tenancy, admin_api):
        made = [create(admin_api, label=f"k{n}").body["key_id"] for n in range(3)]
        create(admin_api, tenant="t2")

        first = admin_api("GET", KEYS.format(tenant="t1"), query={"limit": "2"})
        second = admin_api(
            "GET", KEYS.format(tenant="t1"), query={"limit": "2", "cursor": first.body["next_cursor"]}
        )
        foreign = admin_api(
            "GET", KEYS.format(tenant="t2"), query={"limit": "2", "cursor": first.body["next_cursor"]}
        )

        assert [r["key_id"] for r in first.body["items"] + second.body["items"]] == made[::-1]
        assert second.body["next_cursor"] is None
        assert (foreign.status, error_shape(foreign)) == (400, "validation_error")


class TestRevoke:
    def test_a_revoked_key_is_401_at_ingest_and_listed_revoked(
        self, stack, tenancy, admin_api, ingest_api, no_cache
    ):
        created = create(admin_api)
        raw, key_id = created.body["key"], created.body["key_id"]
        assert ingest(ingest_api, tenancy, raw).status == 202

        revoked = admin_api("POST", f"{KEYS.format(tenant='t1')}/{key_id}/revoke")
        again = admin_api("POST", f"{KEYS.format(tenant='t1')}/{key_id}/revoke")

        assert (revoked.status, revoked.body["state"]) == (200, "revoked")
        assert again.body == revoked.body
        refused = ingest(ingest_api, tenancy, raw, po="PO-2")
        assert (refused.status, error_shape(refused)) == (401, "unauthorized")
        [row] = admin_api("GET", KEYS.format(tenant="t1")).body["items"]
        assert row["state"] == "revoked"

    def test_a_warm_instance_accepts_a_revoked_key_until_its_cache_expires(
        self, stack, tenancy, admin_api, ingest_api
    ):
        # The template's HUB_CONFIG_CACHE_SECONDS (30 s): the key read by the first ingest stays
        # in this instance's memory, so the revocation applies once that entry expires.
        assert stack.env["HUB_CONFIG_CACHE_SECONDS"] == "30"
        created = create(admin_api)
        raw = created.body["key"]
        assert ingest(ingest_api, tenancy, raw).status == 202
        admin_api("POST", f"{KEYS.format(tenant='t1')}/{created.body['key_id']}/revoke")

        assert ingest(ingest_api, tenancy, raw, po="PO-2").status == 202
        wiring.config_repository()._keys.forget(hash_api_key(raw))  # the entry expired
        assert ingest(ingest_api, tenancy, raw, po="PO-3").status == 401

    def test_another_tenants_key_id_is_404(self, stack, tenancy, admin_api, ingest_api, no_cache):
        theirs = create(admin_api, tenant="t2").body

        for action in ("revoke", "rotate"):
            answer = admin_api("POST", f"{KEYS.format(tenant='t1')}/{theirs['key_id']}/{action}")
            assert (answer.status, error_shape(answer)) == (404, "not_found")
        assert stored_item(stack, theirs["key"])["active"] is True


class TestRotate:
    def test_both_keys_work_during_the_grace_period_and_the_old_one_is_401_after(
        self, stack, tenancy, admin_api, ingest_api, no_cache
    ):
        old = create(admin_api, label="ERP", integration_ids=[tenancy.integration_id]).body
        before = datetime.now(UTC)

        rotated = admin_api("POST", f"{KEYS.format(tenant='t1')}/{old['key_id']}/rotate")

        assert rotated.status == 201
        new = rotated.body
        assert new["key"] != old["key"]
        assert (new["label"], new["integration_ids"], new["rotated_from"]) == (
            "ERP",
            [tenancy.integration_id],
            old["key_id"],
        )
        ends = datetime.fromisoformat(new["previous"]["expires_at"])
        assert before + timedelta(hours=24) <= ends <= datetime.now(UTC) + timedelta(hours=24)
        assert ingest(ingest_api, tenancy, old["key"], po="PO-OLD").status == 202
        assert ingest(ingest_api, tenancy, new["key"], po="PO-NEW").status == 202
        states = {r["key_id"]: r["state"] for r in admin_api("GET", KEYS.format(tenant="t1")).body["items"]}
        assert states == {old["key_id"]: "rotating", new["key_id"]: "active"}

        # Time travel: the grace period is over (the stored end moved into the past).
        boto3.client("dynamodb").update_item(
            TableName=stack.table,
            Key={k: {"S": v} for k, v in api_key_key(hash_api_key(old["key"])).items()},
            UpdateExpression="SET grace_until = :t",
            ExpressionAttributeValues={":t": {"S": format_ts(datetime.now(UTC) - timedelta(seconds=1))}},
        )

        expired = ingest(ingest_api, tenancy, old["key"], po="PO-OLD-2")
        assert (expired.status, error_shape(expired)) == (401, "unauthorized")
        assert ingest(ingest_api, tenancy, new["key"], po="PO-NEW-2").status == 202
        states = {r["key_id"]: r["state"] for r in admin_api("GET", KEYS.format(tenant="t1")).body["items"]}
        assert states == {old["key_id"]: "revoked", new["key_id"]: "active"}


class TestAuth:
    def test_every_route_needs_the_admin_token(self, stack, tenancy, admin_api):
        key_id = create(admin_api).body["key_id"]
        base = KEYS.format(tenant="t1")
        for method, path in (
            ("POST", base),
            ("GET", base),
            ("POST", f"{base}/{key_id}/revoke"),
            ("POST", f"{base}/{key_id}/rotate"),
        ):
            for token in (None, "hub_admin_wrong"):
                answer = admin_api(method, path, token=token)
                assert (answer.status, error_shape(answer)) == (401, "unauthorized")
        assert admin_api("GET", base).body["items"][0]["state"] == "active"

    def test_a_malformed_key_id_is_400(self, stack, tenancy, admin_api):
        answer = admin_api("POST", f"{KEYS.format(tenant='t1')}/not-a-key/revoke")
        assert (answer.status, error_shape(answer)) == (400, "validation_error")


class TestLastUsedDay:
    """Recorded by ingest at most once per key and day per warm instance, never failing it."""

    @staticmethod
    def updates_of_api_keys(calls: list[str]):
        def count(params, **_):
            if params.get("Key", {}).get("PK", {}).get("S", "").startswith("APIKEY#"):
                calls.append("UpdateItem")

        return count

    def test_one_write_a_day_not_one_per_ingest(self, stack, tenancy, admin_api, ingest_api, no_cache):
        from hub.adapters.aws import best_effort_client, client  # noqa: PLC0415

        raw = create(admin_api).body["key"]
        calls: list[str] = []
        for dynamodb in (client("dynamodb"), best_effort_client("dynamodb")):
            dynamodb.meta.events.register(
                "provide-client-params.dynamodb.UpdateItem", self.updates_of_api_keys(calls)
            )

        for n in range(4):
            assert ingest(ingest_api, tenancy, raw, po=f"PO-{n}").status == 202

        assert calls == ["UpdateItem"]
        assert stored_item(stack, raw)["last_used_day"] == datetime.now(UTC).date().isoformat()

    def test_a_failing_write_never_fails_the_ingest(self, stack, tenancy, admin_api, ingest_api, no_cache):
        from botocore.exceptions import EndpointConnectionError  # noqa: PLC0415

        from hub.adapters.aws import best_effort_client  # noqa: PLC0415

        raw = create(admin_api).body["key"]

        def unreachable(**_):
            raise EndpointConnectionError(endpoint_url="https://dynamodb.example")

        best_effort_client("dynamodb").meta.events.register("before-call.dynamodb.UpdateItem", unreachable)

        assert ingest(ingest_api, tenancy, raw).status == 202
        assert "last_used_day" not in stored_item(stack, raw)
