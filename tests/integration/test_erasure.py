"""Erasure (issue 29) through the real handlers on moto, the table from template.yaml: one
message, or a tenant's messages by external id or business key, deleted with everything they
left (payload, claims, pointer, callbacks, business-key item); the audit entry names ids only;
a viewer is refused, another tenant's message is not found; an erased message is never delivered."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from hub.admin import erasure as erasure_rules
from hub.domain.retry import RetryPolicy
from tests.destinations import Answer
from tests.integration.test_search_api import receive
from tests.integration.test_status_callbacks import admin, report, world  # noqa: F401 (fixtures)
from tests.pipeline import configure, fire_all, status

TENANTS = "/api/admin/tenants"
AUTO = RetryPolicy(retry_auto_enabled=True, retry_max=5)


def _erase(admin_api, message_id: str, **options: Any):
    return admin_api("POST", f"/api/admin/messages/{message_id}/erase", **options)


def _erase_by(admin_api, tenant_id: str = "t1", **body: str):
    return admin_api("POST", f"{TENANTS}/{tenant_id}/erasures", body=body)


def _items_of(stack, message_id: str) -> list[tuple[str, str]]:
    """Every item that still names the message, by its key or its `message_id` attribute (audit
    entries aside)."""
    return [
        (item["PK"]["S"], item["SK"]["S"])
        for item in stack.scan()
        if not item["PK"]["S"].startswith("AUDIT#")
        and (
            message_id in item["PK"]["S"] + item["SK"]["S"]
            or item.get("message_id", {}).get("S") == message_id
        )
    ]


def _audit(admin_api, tenant_id: str = "t1") -> list[dict[str, Any]]:
    answer = admin_api("GET", f"{TENANTS}/{tenant_id}/audit")
    assert answer.status == 200, answer.body
    return list(answer.body["items"])


def _token(admin_api, role: str, tenant_id: str | None = "t1") -> str:
    created = admin_api(
        "POST", "/api/admin/tokens", body={"label": role, "role": role, "tenant_id": tenant_id}
    )
    assert created.status == 201, created.body
    return str(created.body["token"])


class TestOneMessage:
    def test_everything_the_message_left_goes_and_the_audit_names_its_id_only(
        self, stack, tenancy, request, ingest_api, worker, admin_api
    ):
        tokens = request.getfixturevalue("world")  # con_a delivers int_erp; its callback token
        message_id = receive(
            ingest_api,
            tenancy.key,
            {"po_number": "PO-GDPR", "cpf": "123.456.789-09"},
            external_id="cliente-4711",
            idempotency_key="idem-gdpr-1",
            correlation_id="corr-gdpr",
        )
        worker()
        assert status(stack, message_id)["pipeline_status"] == "sent"
        assert report(ingest_api, message_id, tokens["con_a"], "delivered").status == 202
        other = receive(ingest_api, tenancy.key, {"po_number": "PO-KEEP"}, external_id="someone-else")
        kinds = {(pk.split("#", 1)[0], sk.split("#", 1)[0]) for pk, sk in _items_of(stack, message_id)}
        assert kinds >= {("MSG", "STATUS"), ("MSG", "CORRELATION"), ("MSG", "CALLBACK"), ("FP", "CLAIM")}
        assert kinds >= {("IDEM", "CLAIM"), ("BK", "CURRENT")}

        erased = _erase(admin_api, message_id)

        assert (erased.status, erased.body) == (200, {"erased": [message_id], "more": False})
        assert _items_of(stack, message_id) == []
        assert _items_of(stack, other) != []  # another message is left alone
        assert admin_api("GET", f"/api/admin/messages/{message_id}").status == 404
        assert (
            admin_api("GET", "/api/admin/messages", query={"tenant_id": "t1", "q": "cliente-4711"}).body[
                "items"
            ]
            == []
        )
        [entry] = [e for e in _audit(admin_api) if e["action"] == "message.erased"]
        assert entry["target"] == {"message_id": message_id}
        assert entry["actor"]["token_id"] == "bootstrap-admin"
        shown = json.dumps(entry)
        for personal in ("cliente-4711", "PO-GDPR", "123.456.789-09", "idem-gdpr-1", "corr-gdpr"):
            assert personal not in shown
        # Again: nothing left to erase.
        assert _erase(admin_api, message_id).status == 404

    def test_a_resend_after_erasure_is_a_new_message(self, stack, tenancy, ingest_api, admin_api):
        first = receive(ingest_api, tenancy.key, {"po_number": "PO-AGAIN"}, idempotency_key="idem-again")
        assert _erase(admin_api, first).status == 200

        again = receive(ingest_api, tenancy.key, {"po_number": "PO-AGAIN"}, idempotency_key="idem-again")

        assert again != first  # its claims went with it: no answer names the erased message

    def test_an_idempotency_key_repeat_answers_the_first_erasure(self, stack, tenancy, ingest_api, admin_api):
        message_id = receive(ingest_api, tenancy.key, {"po_number": "PO-IDEM"})
        headers = {"idempotency-key": "erase-once"}

        first = _erase(admin_api, message_id, headers=headers)
        repeat = _erase(admin_api, message_id, headers=headers)

        assert (first.status, repeat.status, repeat.body) == (200, 200, first.body)
        assert repeat.headers["Idempotent-Replayed"] == "true"

    def test_a_viewer_is_refused_and_another_tenant_is_told_it_does_not_exist(
        self, stack, tenancy, ingest_api, admin_api
    ):
        message_id = receive(ingest_api, tenancy.key, {"po_number": "PO-ROLE"}, external_id="ext-role")
        viewer, platform_viewer = _token(admin_api, "viewer"), _token(admin_api, "viewer", None)
        other_operator = _token(admin_api, "operator", "t2")

        for token in (viewer, platform_viewer):
            refused = _erase(admin_api, message_id, token=token)
            assert (refused.status, refused.body["error"]["code"]) == (403, "forbidden")
            refused = admin_api(
                "POST", f"{TENANTS}/t1/erasures", token=token, body={"external_id": "ext-role"}
            )
            assert (refused.status, refused.body["error"]["code"]) == (403, "forbidden")
        hidden = _erase(admin_api, message_id, token=other_operator)
        missing = _erase(admin_api, "msg_00000000000000000000000000")
        assert hidden.status == missing.status == 404
        assert (hidden.body["error"]["code"], hidden.body["error"]["message"]) == (
            missing.body["error"]["code"],
            missing.body["error"]["message"],
        )
        elsewhere = admin_api(
            "POST", f"{TENANTS}/t1/erasures", token=other_operator, body={"external_id": "ext-role"}
        )
        assert elsewhere.status == 404
        # By t2's own erasure the value names none of its messages.
        assert admin_api(
            "POST", f"{TENANTS}/t2/erasures", token=other_operator, body={"external_id": "ext-role"}
        ).body == {"erased": [], "more": False}
        assert status(stack, message_id)["pipeline_status"] == "received"
        # The tenant's operator may.
        assert _erase(admin_api, message_id, token=_token(admin_api, "operator")).status == 200


class TestByValue:
    def test_every_message_of_an_external_id_goes_in_calls_of_at_most_the_batch(
        self, stack, tenancy, ingest_api, admin_api, monkeypatch
    ):
        monkeypatch.setattr(erasure_rules, "ERASE_BATCH", 2)
        theirs = [
            receive(ingest_api, tenancy.key, {"po_number": f"PO-EXT-{n}"}, external_id="pessoa-42")
            for n in range(3)
        ]
        other = receive(ingest_api, tenancy.key, {"po_number": "PO-EXT-X"}, external_id="pessoa-43")
        elsewhere = receive(
            ingest_api,
            tenancy.other_key,
            {"po_number": "PO-T2"},
            integration_id="int_other",
            external_id="pessoa-42",
        )

        first = _erase_by(admin_api, external_id="pessoa-42")
        second = _erase_by(admin_api, external_id="pessoa-42")
        third = _erase_by(admin_api, external_id="pessoa-42")

        assert (first.status, len(first.body["erased"]), first.body["more"]) == (200, 2, True)
        assert second.body["more"] is False
        assert sorted(first.body["erased"] + second.body["erased"]) == sorted(theirs)
        assert third.body == {"erased": [], "more": False}
        for message_id in theirs:
            assert _items_of(stack, message_id) == []
        assert _items_of(stack, other) != []
        assert _items_of(stack, elsewhere) != []  # another tenant's message of the same value
        entries = [e for e in _audit(admin_api) if e["action"] == "messages.erased"]
        assert len(entries) == 3
        assert all(e["target"] == {"tenant_id": "t1", "by": "external_id"} for e in entries)
        assert sorted(m for e in entries for m in e["after"]["message_ids"]) == sorted(theirs)
        assert "pessoa-42" not in json.dumps(entries)

    def test_the_message_holding_a_business_key_goes_with_its_key(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination)
        message_id = receive(ingest_api, tenancy.key, {"po_number": "PO-BK-1"})
        worker()
        assert [i for i in stack.scan() if i["PK"]["S"].startswith("BK#")] != []

        erased = _erase_by(admin_api, business_key="PO-BK-1")

        assert erased.body == {"erased": [message_id], "more": False}
        assert [i for i in stack.scan() if i["PK"]["S"].startswith("BK#")] == []
        assert _erase_by(admin_api, business_key="PO-BK-1").body == {"erased": [], "more": False}

    # The answer of a refused body; which bodies are refused: tests/unit/test_erasure_rules.py.
    @pytest.mark.parametrize("body", [{}])
    def test_one_value_is_needed(self, stack, tenancy, admin_api, body):
        answer = admin_api("POST", f"{TENANTS}/t1/erasures", body=body)

        assert (answer.status, answer.body["error"]["code"]) == (400, "validation_error")

    def test_an_unknown_tenant_is_404(self, stack, admin_api):
        answer = _erase_by(admin_api, tenant_id="nobody", external_id="x")

        assert (answer.status, answer.body["error"]["code"]) == (404, "not_found")


class TestNeverDelivered:
    def test_an_erased_message_whose_step_is_queued_is_never_sent(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination)
        message_id = receive(ingest_api, tenancy.key, {"po_number": "PO-NEVER"})

        assert _erase(admin_api, message_id).status == 200
        worker()  # the step finds no message: an orphan, dropped

        assert destination.requests == []
        assert _items_of(stack, message_id) == []  # nothing written back

    def test_an_erased_message_waiting_on_a_retry_is_never_sent_again(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination, retry_policy=AUTO)
        destination.script(Answer(503), Answer(200))
        message_id = receive(ingest_api, tenancy.key, {"po_number": "PO-RETRY"})
        worker()
        assert status(stack, message_id)["pipeline_status"] == "retry_pending"
        assert len(destination.requests) == 1

        assert _erase(admin_api, message_id).status == 200
        assert fire_all(stack) == 1
        worker()

        assert len(destination.requests) == 1
        assert _items_of(stack, message_id) == []
        assert (
            boto3.client("dynamodb")
            .get_item(TableName=stack.table, Key={"PK": {"S": f"MSG#{message_id}"}, "SK": {"S": "STATUS"}})
            .get("Item")
            is None
        )
