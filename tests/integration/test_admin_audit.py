"""The audit log through the real admin handler on moto: every mutating call leaves one entry
(who, what, when, redacted before/after) in its tenant's log or the platform's, listed newest
first by cursor; no key, token, certificate or password is ever in it."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.destinations import Answer
from tests.integration.conftest import ADMIN_TOKEN, Stack, Tenancy
from tests.pipeline import configure, send, status
from tests.pki import PFX_PASSWORD, Pki

BOOTSTRAP_ACTOR = {"token_id": "bootstrap-admin", "label": "bootstrap admin token"}


def log(admin_api: Any, tenant_id: str | None = None, **query: str) -> list[dict[str, Any]]:
    path = f"/api/admin/tenants/{tenant_id}/audit" if tenant_id else "/api/admin/audit"
    answer = admin_api("GET", path, query=query or None)
    assert answer.status == 200, answer.body
    return list(answer.body["items"])


def test_every_mutating_call_is_logged_newest_first_without_a_secret(
    stack: Stack, tenancy: Tenancy, admin_api: Any, pki: Pki
) -> None:
    answers: list[dict[str, Any]] = []

    def call(method: str, path: str, **options: Any) -> dict[str, Any]:
        answer = admin_api(method, path, **options)
        assert answer.status in (200, 201), (path, answer.body)
        answers.append(answer.body)
        return answer.body

    call("POST", "/api/admin/tenants", body={"tenant_id": "acme", "name": "ACME"})
    token = call(
        "POST", "/api/admin/tokens", body={"label": "acme admin", "role": "admin", "tenant_id": "acme"}
    )
    as_acme = {"token": token["token"]}
    call("PATCH", "/api/admin/tenants/acme", body={"name": "ACME Corp"}, **as_acme)
    key = call("POST", "/api/admin/tenants/acme/api-keys", body={"label": "erp"}, **as_acme)
    rotated = call("POST", f"/api/admin/tenants/acme/api-keys/{key['key_id']}/rotate", **as_acme)
    call("POST", f"/api/admin/tenants/acme/api-keys/{rotated['key_id']}/revoke", **as_acme)
    pfx = base64.b64encode(pki.client_pfx).decode()
    call(
        "POST",
        "/api/admin/connections/conn_acme/certificate",
        body={"tenant_id": "acme", "pkcs12_base64": pfx, "password": PFX_PASSWORD.decode()},
        **as_acme,
    )
    call("POST", "/api/admin/tenants/acme/disable")
    call("POST", "/api/admin/tenants/acme/enable")
    call("POST", f"/api/admin/tokens/{token['token_id']}/revoke")

    entries = log(admin_api, "acme")

    assert [e["action"] for e in entries] == [
        "admin_token.revoked",
        "tenant.enabled",
        "tenant.disabled",
        "certificate.uploaded",
        "api_key.revoked",
        "api_key.rotated",
        "api_key.created",
        "tenant.updated",
        "admin_token.created",
        "tenant.created",
    ]
    by_action = {e["action"]: e for e in entries}
    acme_actor = {"token_id": token["token_id"], "label": "acme admin"}
    assert by_action["tenant.updated"]["actor"] == acme_actor
    assert by_action["tenant.created"]["actor"] == BOOTSTRAP_ACTOR
    assert by_action["tenant.updated"]["before"]["name"] == "ACME"
    assert by_action["tenant.updated"]["after"]["name"] == "ACME Corp"
    assert by_action["api_key.created"]["target"] == {"key_id": key["key_id"]}
    assert by_action["certificate.uploaded"]["after"]["subject"]
    assert by_action["admin_token.revoked"]["after"]["state"] == "revoked"
    assert all(e["entry_id"].startswith("aud_") and e["at"].endswith("Z") for e in entries)
    # No secret in the table nor in any answer of the audit routes.
    stored = json.dumps(stack.scan(), default=repr)
    shown = json.dumps(entries)
    for secret in (key["key"], rotated["key"], token["token"], pfx, PFX_PASSWORD.decode(), ADMIN_TOKEN):
        assert secret not in stored
        assert secret not in shown
    # Another tenant's log is apart.
    assert log(admin_api, "t1") == []


def test_operator_actions_are_logged_and_keep_a_short_event_on_the_message(
    stack: Stack, tenancy: Tenancy, admin_api: Any, ingest_api: Any, worker: Any, destination: Any
) -> None:
    configure(stack, tenancy, destination)
    destination.script(Answer(503), Answer(503))
    message_id = send(ingest_api, tenancy, {"po_number": "PO-AUDIT"})
    worker()
    assert status(stack, message_id)["pipeline_status"] == "error"
    operator = admin_api(
        "POST", "/api/admin/tokens", body={"label": "night shift", "role": "operator", "tenant_id": "t1"}
    )
    as_operator = {"token": operator.body["token"]}

    assert (
        admin_api(
            "POST", "/api/edi-hub/reprocess-message", body={"message_id": message_id}, **as_operator
        ).status
        == 202
    )
    worker()
    assert admin_api("POST", "/api/admin/dlq/pipeline/redrive").status == 200

    (reprocessed,) = [e for e in log(admin_api, "t1") if e["action"] == "message.reprocessed"]
    assert reprocessed["actor"] == {"token_id": operator.body["token_id"], "label": "night shift"}
    assert reprocessed["target"]["message_id"] == message_id
    assert (reprocessed["before"]["pipeline_status"], reprocessed["after"]["pipeline_status"]) == (
        "error",
        "received",
    )
    view = admin_api("GET", f"/api/admin/messages/{message_id}", **as_operator).body
    events = [e for e in view["log"] if e.get("event") == "message.reprocessed"]
    assert [e["actor"] for e in events] == [operator.body["token_id"]]
    (redriven,) = log(admin_api)[:1]
    assert (redriven["action"], redriven["target"], redriven["after"]) == (
        "dlq.redriven",
        {"lane": "pipeline"},
        {"moved": 0},
    )


def test_the_log_pages_by_cursor_and_a_cursor_stays_in_its_tenant(
    stack: Stack, tenancy: Tenancy, admin_api: Any
) -> None:
    for name in ("a", "b", "c"):
        assert admin_api("PATCH", "/api/admin/tenants/t1", body={"name": name}).status == 200
    admin_api("PATCH", "/api/admin/tenants/t2", body={"name": "z"})

    first = admin_api("GET", "/api/admin/tenants/t1/audit", query={"limit": "2"}).body
    second = admin_api(
        "GET", "/api/admin/tenants/t1/audit", query={"limit": "2", "cursor": first["next_cursor"]}
    ).body

    names = [e["after"]["name"] for e in first["items"] + second["items"]]
    assert names == ["c", "b", "a"]
    assert second["next_cursor"] is None
    elsewhere = admin_api("GET", "/api/admin/tenants/t2/audit", query={"cursor": first["next_cursor"]})
    assert (elsewhere.status, elsewhere.body["error"]["details"][0]["field"]) == (400, "cursor")
    missing = admin_api("GET", "/api/admin/tenants/t9/audit")
    assert missing.status == 404
