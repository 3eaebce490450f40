"""Retention (issue 29) through the real handlers on moto, the table from template.yaml: a
tenant's own retention set by a platform admin over the admin API (and refused otherwise), the
platform's defaults from the template; the TTL (`expires_at`) each item gets; a message or a
payload past its retention that DynamoDB has not deleted yet is gone for every reader. Which
retentions a tenant may have: tests/unit/test_tenant_life.py and test_retention_rules.py."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import boto3
import pytest

from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from tests.events import http_event
from tests.integration.test_search_api import find, ids, receive
from tests.integration.test_status_callbacks import admin, report, world  # noqa: F401 (fixtures)
from tests.pipeline import configure, status

TENANTS = "/api/admin/tenants"


def _code(answer) -> str:
    assert set(answer.body) == {"error"}
    return str(answer.body["error"]["code"])


class TestTenantRetention:
    def test_a_tenant_without_its_own_shows_the_platforms_defaults(self, stack, tenancy, admin_api):
        shown = admin_api("GET", f"{TENANTS}/t1").body

        assert (shown["payload_retention_days"], shown["message_retention_days"]) == (None, None)
        assert shown["retention"] == {"payload_days": 7, "message_days": 30}

    def test_a_platform_admin_creates_and_changes_a_tenants_retention(self, stack, admin_api):
        created = admin_api(
            "POST",
            TENANTS,
            body={
                "tenant_id": "acme",
                "name": "ACME",
                "payload_retention_days": 2,
                "message_retention_days": 10,
            },
        )
        assert created.status == 201, created.body
        assert created.body["retention"] == {"payload_days": 2, "message_days": 10}

        # Only what is given changes; null goes back to the platform's default.
        longer = admin_api("PATCH", f"{TENANTS}/acme", body={"message_retention_days": 90})
        assert longer.status == 200, longer.body
        assert (longer.body["payload_retention_days"], longer.body["message_retention_days"]) == (2, 90)
        default = admin_api("PATCH", f"{TENANTS}/acme", body={"payload_retention_days": None})
        assert default.body["payload_retention_days"] is None
        assert default.body["retention"] == {"payload_days": 7, "message_days": 90}
        assert admin_api("GET", f"{TENANTS}/acme").body == default.body

        # What ingest reads (the configuration item) carries it too.
        stored = DynamoConfigRepository(stack.table).get_tenant("acme")
        assert stored is not None
        assert (stored.payload_retention_days, stored.message_retention_days) == (None, 90)

        # The audit entry shows before and after.
        entries = admin_api("GET", f"{TENANTS}/acme/audit").body["items"]
        assert entries[0]["action"] == "tenant.updated"
        assert entries[0]["before"]["payload_retention_days"] == 2
        assert entries[0]["after"]["payload_retention_days"] is None

    # The answer of a refused value on both routes; which values are refused:
    # tests/unit/test_tenant_life.py.
    @pytest.mark.parametrize(
        ("body", "field"),
        [({"payload_retention_days": 10, "message_retention_days": 5}, "payload_retention_days")],
    )
    def test_bad_values_are_refused_naming_the_field(self, stack, tenancy, admin_api, body, field):
        created = admin_api("POST", TENANTS, body={"tenant_id": "bad", "name": "Bad", **body})
        changed = admin_api("PATCH", f"{TENANTS}/t1", body=body)

        for answer in (created, changed):
            assert (answer.status, _code(answer)) == (400, "validation_error"), body
            assert field in {d["field"] for d in answer.body["error"]["details"]}
        assert admin_api("GET", f"{TENANTS}/bad").status == 404
        assert admin_api("GET", f"{TENANTS}/t1").body["retention"] == {"payload_days": 7, "message_days": 30}

    def test_only_a_platform_admin_sets_it(self, stack, tenancy, admin_api):
        tokens = {
            role: admin_api(
                "POST", "/api/admin/tokens", body={"label": role, "role": role, "tenant_id": "t1"}
            ).body["token"]
            for role in ("admin", "operator")
        }
        platform_operator = admin_api(
            "POST", "/api/admin/tokens", body={"label": "po", "role": "operator", "tenant_id": None}
        ).body["token"]

        for token in (tokens["admin"], tokens["operator"], platform_operator):
            answer = admin_api("PATCH", f"{TENANTS}/t1", token=token, body={"payload_retention_days": 1})
            assert (answer.status, _code(answer)) == (403, "forbidden")
        # The tenant's admin still renames it.
        assert admin_api("PATCH", f"{TENANTS}/t1", token=tokens["admin"], body={"name": "One"}).status == 200
        assert admin_api("GET", f"{TENANTS}/t1").body["payload_retention_days"] is None


DAY = 86_400


def _item(stack, pk: str, sk: str) -> dict[str, Any] | None:
    found = boto3.client("dynamodb").get_item(TableName=stack.table, Key={"PK": {"S": pk}, "SK": {"S": sk}})
    return found.get("Item")


def _ttl(item: dict[str, Any] | None) -> int:
    assert item is not None
    return int(item["expires_at"]["N"])


def _received(item: dict[str, Any]) -> int:
    return int(datetime.fromisoformat(item["received_at"]["S"]).timestamp())


class TestTtls:
    """What ingest, the worker and the partner API write: each item's `expires_at`."""

    def _send(self, ingest_api, tenancy, po: str = "PO-R1") -> str:
        # An external id and another partner correlation id: the message gets a correlation pointer.
        return receive(
            ingest_api, tenancy.key, {"po_number": po}, external_id=f"ext-{po}", correlation_id=f"corr-{po}"
        )

    def _check(self, stack, message_id: str, payload_days: int, message_days: int) -> int:
        message = _item(stack, f"MSG#{message_id}", "STATUS")
        assert message is not None
        received = _received(message)
        expires = _ttl(message)
        assert expires == received + message_days * DAY
        assert _ttl(_item(stack, f"MSG#{message_id}", "CORRELATION")) == expires
        fingerprint = message["fingerprint"]["S"]
        claim = _item(stack, f"FP#t1#int_erp#{fingerprint}", "CLAIM")
        assert claim is not None
        assert "payload_z" in claim
        assert _ttl(claim) == received + payload_days * DAY
        return expires

    def test_the_platforms_defaults_reach_the_items(self, stack, tenancy, ingest_api, worker, destination):
        configure(stack, tenancy, destination)
        message_id = self._send(ingest_api, tenancy)

        expires = self._check(stack, message_id, payload_days=7, message_days=30)

        worker()
        assert status(stack, message_id)["pipeline_status"] == "sent"
        # The business-key item (po_number) goes with the message holding the key.
        [key_item] = [i for i in stack.scan() if i["PK"]["S"].startswith("BK#")]
        assert key_item["message_id"]["S"] == message_id
        assert _ttl(key_item) == expires

    def test_a_tenants_own_retention_reaches_the_items(self, stack, tenancy, ingest_api, admin_api):
        changed = admin_api(
            "PATCH", f"{TENANTS}/t1", body={"payload_retention_days": 2, "message_retention_days": 10}
        )
        assert changed.status == 200, changed.body

        message_id = self._send(ingest_api, tenancy)

        self._check(stack, message_id, payload_days=2, message_days=10)
        # Another tenant keeps the platform's.
        other = receive(ingest_api, tenancy.other_key, {"po_number": "PO-T2"}, integration_id="int_other")
        message = _item(stack, f"MSG#{other}", "STATUS")
        assert message is not None
        assert _ttl(message) == _received(message) + 30 * DAY

    def test_a_status_callback_goes_no_later_than_its_message(
        self, stack, tenancy, request, ingest_api, admin_api
    ):
        tokens = request.getfixturevalue("world")
        admin_api("PATCH", f"{TENANTS}/t1", body={"message_retention_days": 10})
        short = receive(ingest_api, tenancy.key, {"po_number": "PO-CB1"})
        admin_api("PATCH", f"{TENANTS}/t1", body={"message_retention_days": 365})
        long = receive(ingest_api, tenancy.key, {"po_number": "PO-CB2"})

        for message_id in (short, long):
            assert report(ingest_api, message_id, tokens["con_a"], "delivered").status in (200, 202)

        def callback_ttl(message_id: str) -> tuple[int, int]:
            [record] = [
                i
                for i in stack.scan()
                if i["PK"]["S"] == f"MSG#{message_id}" and i["SK"]["S"].startswith("CALLBACK#")
            ]
            received = int(datetime.fromisoformat(record["received_at"]["S"]).timestamp())
            return _ttl(record), received

        kept, _ = callback_ttl(short)
        assert kept == _ttl(_item(stack, f"MSG#{short}", "STATUS"))  # 10 days < 90
        kept, received = callback_ttl(long)
        assert kept == received + 90 * DAY  # 90 days < 365


def _expire(stack, pk: str, sk: str = "STATUS") -> None:
    """As DynamoDB leaves an item whose TTL passed and that it has not deleted yet."""
    past = int(time.time()) - 60
    boto3.client("dynamodb").update_item(
        TableName=stack.table,
        Key={"PK": {"S": pk}, "SK": {"S": sk}},
        UpdateExpression="SET expires_at = :t",
        ExpressionAttributeValues={":t": {"N": str(past)}},
    )


class TestExpiredButNotDeleted:
    def test_a_message_past_its_retention_is_not_found_anywhere(
        self, stack, tenancy, request, ingest_api, admin_api
    ):
        tokens = request.getfixturevalue("world")
        message_id = receive(ingest_api, tenancy.key, {"po_number": "PO-OLD"}, external_id="ext-old")
        kept = receive(ingest_api, tenancy.key, {"po_number": "PO-NEW"}, external_id="ext-old")
        _expire(stack, f"MSG#{message_id}")

        partner = ingest_api(
            http_event(
                "get_message.json",
                headers={"x-api-key": tenancy.key},
                path_parameters={"message_id": message_id},
            )
        )
        assert (partner.status, _code(partner)) == (404, "not_found")
        view = admin_api("GET", f"/api/admin/messages/{message_id}")
        assert (view.status, _code(view)) == (404, "not_found")
        assert admin_api("GET", f"/api/admin/messages/{message_id}/callbacks").status == 404
        reprocess = admin_api("POST", "/api/edi-hub/reprocess-message", body={"message_id": message_id})
        assert reprocess.status == 404
        assert ids(find(admin_api, "ext-old")) == [kept]
        assert ids(find(admin_api, message_id)) == []
        # A status callback for it answers like a missing message.
        assert report(ingest_api, message_id, tokens["con_a"], "delivered").status == 401
        # Still there until DynamoDB's TTL deletes it.
        assert _item(stack, f"MSG#{message_id}", "STATUS") is not None

    def test_a_payload_past_its_retention_is_purged_for_the_view_and_the_worker(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination)
        message_id = receive(ingest_api, tenancy.key, {"po_number": "PO-PURGE", "cpf": "123.456.789-09"})
        fingerprint = status(stack, message_id)["fingerprint"]
        _expire(stack, f"FP#t1#int_erp#{fingerprint}", "CLAIM")

        view = admin_api("GET", f"/api/admin/messages/{message_id}")
        assert view.status == 200
        assert (view.body["payload_purged"], view.body["payload"], view.body["mapped"]) == (True, None, None)
        assert view.body["kept_until"].endswith("Z")

        worker()
        final = status(stack, message_id)
        assert (final["pipeline_status"], final["last_retry_error_class"]) == ("error", "payload_purged")
        assert destination.requests == []
