"""hubctl's commands against an in-memory admin API (httpx.MockTransport): the requests they
make, what they print, their exit status. The contract is /api/admin/... as docs/hubctl.md says."""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from hub.admin.connections import ConnectionSpec
from hub.domain.redaction import redact_credentials
from hub.domain.tenancy import Integration
from hubctl.client import AdminClient
from hubctl.main import Context, build_parser, run

TOKEN = "hub_admin_unit-test-token-000000000000000000"


def error(status: int, code: str, message: str, **details: Any) -> httpx.Response:
    body: dict[str, Any] = {"code": code, "message": message}
    if details:
        body["details"] = details
    return httpx.Response(status, json={"error": body})


def as_stored(collection: str, tenant: str, body: dict[str, Any]) -> dict[str, Any]:
    """What the real API keeps of a body and shows back: read by the model it validates with
    (defaults filled in, short forms expanded), as its views show it."""
    if collection == "connections":
        return ConnectionSpec.model_validate(body).model_dump(mode="json")
    return Integration.model_validate({**body, "tenant_id": tenant}).model_dump(mode="json")


@dataclass
class FakeAdminApi:
    """Tenants, connections and integrations as the contract describes them: versioned
    (ETag, If-Match -> 412), secrets masked in every view; records every request."""

    tenants: dict[str, dict[str, Any]] = field(default_factory=dict)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[httpx.Request] = field(default_factory=list)
    canned: dict[tuple[str, str], httpx.Response] = field(default_factory=dict)

    def view(self, path: str) -> httpx.Response:
        stored = self.resources[path]
        return httpx.Response(
            200, json=redact_credentials(stored), headers={"ETag": f'"{stored["version"]}"'}
        )

    def __call__(self, request: httpx.Request) -> httpx.Response:  # noqa: PLR0911 - a route table
        self.requests.append(request)
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        path, method = request.url.path, request.method
        if (method, path) in self.canned:
            return self.canned[(method, path)]
        body: Any = json.loads(request.content) if request.content else None
        parts = path.split("/")
        if path.startswith("/api/admin/tenants") and len(parts) == 5:
            tenant = parts[4]
            if method == "GET":
                if tenant not in self.tenants:
                    return error(404, "not_found", "tenant not found")
                return httpx.Response(200, json=self.tenants[tenant])
            if method == "PATCH":
                self.tenants[tenant].update(body)
                return httpx.Response(200, json=self.tenants[tenant])
        if path == "/api/admin/tenants" and method == "POST":
            self.tenants[body["tenant_id"]] = {**body, "state": "active"}
            return httpx.Response(201, json=self.tenants[body["tenant_id"]])
        if len(parts) == 6 and method == "POST":  # /api/admin/tenants/{t}/connections|integrations
            id_field = "connection_id" if parts[5] == "connections" else "integration_id"
            own = f"{path}/{body[id_field]}"
            self.resources[own] = {**as_stored(parts[5], parts[4], body), "tenant_id": parts[4], "version": 1}
            answer = self.view(own)
            return httpx.Response(201, content=answer.content, headers=answer.headers)
        if len(parts) == 7:
            if method == "GET":
                return self.view(path) if path in self.resources else error(404, "not_found", "not found")
            if method == "PUT":
                stored = self.resources[path]
                if request.headers.get("if-match") != f'"{stored["version"]}"':
                    return error(412, "precondition_failed", "stale", current_version=stored["version"])
                given = {**body, parts[5].removesuffix("s") + "_id": parts[6]}
                version = stored["version"] + 1
                self.resources[path] = {**as_stored(parts[5], parts[4], given), "version": version}
                return self.view(path)
        return error(404, "route_not_found", f"no route {method} {path}")


@dataclass
class Ran:
    code: int
    out: str
    err: str


def hubctl(api: FakeAdminApi, *argv: str, stdin: str = "", environ: dict[str, str] | None = None) -> Ran:
    out, err = io.StringIO(), io.StringIO()

    def context(args):
        return Context(
            args,
            lambda: AdminClient(
                "http://admin.test", TOKEN, transport=httpx.MockTransport(api), sleep=lambda _: None
            ),
            out=out,
            err=err,
            stdin=io.StringIO(stdin),
            # Never the profile file of the machine the tests run on.
            environ={"HUBCTL_CONFIG": "/nonexistent/hubctl.toml", **(environ or {})},
        )

    code = run(list(argv), context)
    return Ran(code, out.getvalue(), err.getvalue())


@pytest.fixture
def api() -> FakeAdminApi:
    return FakeAdminApi()


MANIFEST = """
kind: Tenant
tenant: tnt_acme
spec: {name: ACME}
---
kind: Connection
tenant: tnt_acme
id: conn_erp
spec:
  protocol: http
  url: ${ERP_URL}
  auth: {kind: bearer, token: "${ERP_TOKEN}"}
---
kind: Integration
tenant: tnt_acme
id: int_orders
spec:
  name: Orders
  connection_id: conn_erp
  message_types: {purchase_order: {duplicate_key_fields: [po_number]}}
"""
ENV = {"ERP_URL": "https://erp.example.com/orders", "ERP_TOKEN": "erp-secret-token"}


@pytest.fixture
def manifest(tmp_path: Path) -> str:
    path = tmp_path / "acme.yaml"
    path.write_text(MANIFEST)
    return str(path)


def test_apply_creates_then_says_unchanged_the_second_time(api, manifest):
    first = hubctl(api, "apply", "-f", manifest, environ=ENV)

    assert first.code == 0, first.err
    assert "+ Tenant tnt_acme (create)" in first.out
    assert "+ Connection tnt_acme/conn_erp (create)" in first.out
    assert '    auth.token: "***"' in first.out
    created = [(r.method, r.url.path) for r in api.requests if r.method != "GET"]
    assert created == [
        ("POST", "/api/admin/tenants"),
        ("POST", "/api/admin/tenants/tnt_acme/connections"),
        ("POST", "/api/admin/tenants/tnt_acme/integrations"),
    ]
    sent = json.loads(api.requests[3].content)
    assert sent["connection_id"] == "conn_erp"
    assert sent["auth"]["token"] == "erp-secret-token"  # the secret goes to the API, never to the screen
    api.requests.clear()

    again = hubctl(api, "apply", "-f", manifest, environ=ENV)

    assert again.code == 0
    assert again.out.splitlines() == [
        "= Tenant tnt_acme (unchanged)",
        "= Connection tnt_acme/conn_erp (unchanged)",
        "= Integration tnt_acme/int_orders (unchanged)",
    ]
    assert {r.method for r in api.requests} == {"GET"}
    assert "erp-secret-token" not in first.out + first.err + again.out + again.err


SHORT_FORMS = """
kind: Tenant
tenant: tnt_acme
spec: {name: ACME}
---
kind: Integration
tenant: tnt_acme
id: int_events
spec:
  name: Events
  message_types:
    order.created:
      mapping:
        output:
          number: {path: id, transforms: [trim, {name: to_decimal, places: 2}]}
    order.cancelled: {}
  inbound_webhook:
    verification: {scheme: standard_webhooks, secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}
    adapter:
      message_type_path: type
      known_types: [order.created, order.cancelled]
      data_path: data
"""


def test_short_forms_the_hub_expands_are_unchanged_on_the_second_apply(api, tmp_path):
    """The hub shows `trim` as {"name": "trim"} with its defaults, `{}` as a message type's
    defaults and a set of known types sorted: a file written briefly is still the same file."""
    path = tmp_path / "events.yaml"
    path.write_text(SHORT_FORMS)
    assert hubctl(api, "apply", "-f", str(path)).code == 0
    api.requests.clear()

    again = hubctl(api, "apply", "-f", str(path))

    assert again.code == 0, again.err
    assert again.out.splitlines() == [
        "= Tenant tnt_acme (unchanged)",
        "= Integration tnt_acme/int_events (unchanged)",
    ]
    assert {r.method for r in api.requests} == {"GET"}


def test_a_nested_field_taken_out_of_the_file_is_a_change(api, manifest, tmp_path):
    hubctl(api, "apply", "-f", manifest, environ=ENV)
    changed = tmp_path / "changed.yaml"
    changed.write_text(MANIFEST.replace("{duplicate_key_fields: [po_number]}", "{}"))

    ran = hubctl(api, "apply", "-f", str(changed), environ=ENV)

    assert ran.code == 0, ran.err
    assert 'message_types.purchase_order.duplicate_key_fields: ["po_number"] -> []' in ran.out


def test_apply_shows_the_diff_and_puts_with_if_match(api, manifest, tmp_path):
    hubctl(api, "apply", "-f", manifest, environ=ENV)
    changed = tmp_path / "changed.yaml"
    changed.write_text(MANIFEST.replace("[po_number]", "[po_number, supplier]"))
    api.requests.clear()

    ran = hubctl(api, "apply", "-f", str(changed), environ=ENV)

    assert ran.code == 0, ran.err
    assert "~ Integration tnt_acme/int_orders (update, version 1)" in ran.out
    assert (
        'message_types.purchase_order.duplicate_key_fields: ["po_number"] -> ["po_number", "supplier"]'
        in ran.out
    )
    assert "  updated (version 2)" in ran.out
    [put] = [r for r in api.requests if r.method == "PUT"]
    assert put.url.path == "/api/admin/tenants/tnt_acme/integrations/int_orders"
    assert put.headers["if-match"] == '"1"'


def test_dry_run_shows_the_plan_and_changes_nothing(api, manifest):
    ran = hubctl(api, "--output", "json", "apply", "-f", manifest, "--dry-run", environ=ENV)

    assert ran.code == 0
    assert {r.method for r in api.requests} == {"GET"}
    report = json.loads(ran.out)
    assert report["dry_run"] is True
    assert [r["action"] for r in report["resources"]] == ["create", "create", "create"]
    assert "erp-secret-token" not in ran.out


def test_resend_secrets_updates_a_resource_whose_only_change_may_be_a_secret(api, manifest):
    hubctl(api, "apply", "-f", manifest, environ=ENV)
    api.requests.clear()
    rotated = {**ENV, "ERP_TOKEN": "erp-new-token"}

    plain = hubctl(api, "apply", "-f", manifest, environ=rotated)
    forced = hubctl(api, "apply", "-f", manifest, "--resend-secrets", environ=rotated)

    assert "= Connection tnt_acme/conn_erp (unchanged)" in plain.out
    assert "(secrets re-sent)" in forced.out
    [put] = [r for r in api.requests if r.method == "PUT"]
    assert json.loads(put.content)["auth"]["token"] == "erp-new-token"
    assert "/connections/" in put.url.path  # the tenant and the integration hold no secret


def test_a_stale_write_prints_the_apis_error_and_exits_1(api, manifest, tmp_path):
    hubctl(api, "apply", "-f", manifest, environ=ENV)
    own = "/api/admin/tenants/tnt_acme/integrations/int_orders"
    api.canned[("PUT", own)] = error(412, "precondition_failed", "the integration changed", current_version=7)
    changed = tmp_path / "changed.yaml"
    changed.write_text(MANIFEST.replace("name: Orders", "name: Orders 2"))

    ran = hubctl(api, "apply", "-f", str(changed), environ=ENV)

    assert ran.code == 1
    assert "error: precondition_failed: the integration changed" in ran.err
    assert "run apply again" in ran.err
    assert '"current_version": 7' in ran.err


def test_a_file_problem_exits_2_before_any_request(api, tmp_path):
    ran = hubctl(api, "apply", "-f", str(tmp_path / "missing.yaml"))

    assert ran.code == 2
    assert "cannot read" in ran.err
    assert api.requests == []


def test_a_created_key_is_printed_once_with_a_warning(api):
    key = "hub_AbCdEfGh-the-key"
    api.canned[("POST", "/api/admin/tenants/tnt_acme/api-keys")] = httpx.Response(
        201, json={"key_id": "key_1", "key": key, "prefix": "hub_AbCdEfGh", "state": "active"}
    )

    ran = hubctl(api, "keys", "create", "--tenant", "tnt_acme", "--label", "ERP", "--integration", "int_a")

    assert ran.code == 0
    assert f"key:    {key}" in ran.out
    assert "only time the key is shown" in ran.err
    assert json.loads(api.requests[0].content) == {"label": "ERP", "integration_ids": ["int_a"]}


def test_listings_are_tables_or_json_and_say_how_to_page_on(api):
    page = {"items": [{"key_id": "key_1", "prefix": "hub_x", "state": "active"}], "next_cursor": "abc"}
    api.canned[("GET", "/api/admin/tenants/tnt_acme/api-keys")] = httpx.Response(200, json=page)

    table = hubctl(api, "keys", "list", "--tenant", "tnt_acme", "--limit", "1")
    as_json = hubctl(api, "-o", "json", "keys", "list", "--tenant", "tnt_acme")

    assert table.out.splitlines()[0].split() == [
        "KEY_ID", "PREFIX", "LABEL", "STATE", "CREATED_AT", "LAST_USED_DAY", "EXPIRES_AT", "INTEGRATION_IDS"
    ]  # fmt: skip
    assert table.out.splitlines()[1].startswith("key_1")
    assert "more: add --cursor abc" in table.err
    assert json.loads(as_json.out) == page
    assert api.requests[0].url.params["limit"] == "1"


@pytest.mark.parametrize(
    ("argv", "method", "path", "body"),
    [
        (
            ["messages", "reprocess", "msg_1"],
            "POST",
            "/api/edi-hub/reprocess-message",
            {"message_id": "msg_1"},
        ),
        (["messages", "cancel", "msg_1"], "POST", "/api/admin/messages/msg_1/cancel-retry", None),
        (["messages", "show", "msg_1"], "GET", "/api/admin/messages/msg_1", None),
        (["dlq", "redrive", "pipeline"], "POST", "/api/admin/dlq/pipeline/redrive", None),
        (
            ["keys", "revoke", "key_1", "--tenant", "t"],
            "POST",
            "/api/admin/tenants/t/api-keys/key_1/revoke",
            None,
        ),
        (
            ["keys", "rotate", "key_1", "--tenant", "t", "--grace-hours", "2"],
            "POST",
            "/api/admin/tenants/t/api-keys/key_1/rotate",
            {"grace_hours": 2},
        ),
        (
            ["tokens", "create", "--label", "ops", "--role", "operator", "--tenant", "t"],
            "POST",
            "/api/admin/tokens",
            {"label": "ops", "role": "operator", "tenant_id": "t"},
        ),
        (["tokens", "revoke", "tok_1"], "POST", "/api/admin/tokens/tok_1/revoke", None),
        (
            ["get", "integration", "int_1", "--tenant", "t"],
            "GET",
            "/api/admin/tenants/t/integrations/int_1",
            None,
        ),
        (["get", "connection", "c1", "--tenant", "t"], "GET", "/api/admin/tenants/t/connections/c1", None),
        (["list", "connections", "--tenant", "t"], "GET", "/api/admin/tenants/t/connections", None),
        (["disable", "tenant", "t"], "POST", "/api/admin/tenants/t/disable", None),
        (["test", "c1", "--tenant", "t"], "POST", "/api/admin/tenants/t/connections/c1/test", None),
        (["audit", "--tenant", "t"], "GET", "/api/admin/tenants/t/audit", None),
        (["audit"], "GET", "/api/admin/audit", None),
        (
            ["connections", "callback-token", "c1", "--tenant", "t", "--grace-hours", "0"],
            "POST",
            "/api/admin/tenants/t/connections/c1/callback-token",
            {"grace_hours": 0},
        ),
        (
            ["connections", "callback-token", "c1", "--tenant", "t", "--show"],
            "GET",
            "/api/admin/tenants/t/connections/c1/callback-token",
            None,
        ),
        (
            ["connections", "callback-token", "c1", "--tenant", "t", "--revoke"],
            "DELETE",
            "/api/admin/tenants/t/connections/c1/callback-token",
            None,
        ),
        (["messages", "callbacks", "msg_1"], "GET", "/api/admin/messages/msg_1/callbacks", None),
    ],
)
def test_each_command_calls_its_contract_route(api, argv, method, path, body):
    api.canned[(method, path)] = httpx.Response(200, json={"ok": True, "items": []})

    ran = hubctl(api, *argv)

    assert ran.code == 0, ran.err
    request = api.requests[0]  # a reprocess then reads the message for its new execution's id
    assert (request.method, request.url.path) == (method, path)
    assert (json.loads(request.content) if request.content else None) == body


def test_messages_list_asks_the_queue_for_the_tab(api):
    api.canned[("GET", "/api/admin/queue")] = httpx.Response(200, json={"items": [], "next_cursor": None})

    ran = hubctl(api, "messages", "list", "--tenant", "tnt_demo", "--tab", "dead_letter")

    assert ran.code == 0
    assert dict(api.requests[0].url.params) == {"tenant_id": "tnt_demo", "tab": "dead_letter"}
    assert ran.out.strip() == "(none)"


def test_delete_sends_if_match_when_a_version_is_given(api):
    path = "/api/admin/tenants/t/connections/c1"
    api.canned[("DELETE", path)] = httpx.Response(204)

    ran = hubctl(api, "delete", "connection", "c1", "--tenant", "t", "--if-version", "4")

    assert ran.code == 0
    assert api.requests[0].headers["if-match"] == '"4"'


def test_a_certificate_upload_reads_the_password_from_stdin_never_from_a_flag(api, tmp_path):
    pfx = tmp_path / "a1.pfx"
    pfx.write_bytes(b"\x30\x82pfx-bytes")
    path = "/api/admin/connections/conn_sefaz/certificate"
    api.canned[("POST", path)] = httpx.Response(201, json={"connection_id": "conn_sefaz", "level": "ok"})

    ran = hubctl(
        api, "certificates", "upload", "conn_sefaz", "--tenant", "t", "--pfx", str(pfx), "--password-stdin",
        stdin="pfx-pass\n",
    )  # fmt: skip

    assert ran.code == 0, ran.err
    sent = json.loads(api.requests[0].content)
    assert sent == {
        "tenant_id": "t",
        "pkcs12_base64": base64.b64encode(b"\x30\x82pfx-bytes").decode(),
        "password": "pfx-pass",
    }
    assert "pfx-pass" not in ran.out + ran.err
    with pytest.raises(SystemExit):  # no such flag: a password never goes on the command line
        build_parser().parse_args(
            ["certificates", "upload", "c", "--tenant", "t", "--pfx", "f", "--password", "x"]
        )


def test_a_failed_preview_prints_the_mapping_error_and_exits_1(api, tmp_path):
    payload = tmp_path / "idoc.xml"
    payload.write_text("<ORDERS05/>")
    path = "/api/admin/tenants/t/integrations/int_1/message-types/sap_orders05/preview"
    answer = {"ok": False, "error": {"code": "mapping_error", "message": "required field missing"}}
    api.canned[("POST", path)] = httpx.Response(200, json=answer)

    ran = hubctl(api, "preview", "int_1", "sap_orders05", "--tenant", "t", "--payload", str(payload))

    assert ran.code == 1
    assert json.loads(api.requests[0].content) == {"payload": "<ORDERS05/>"}
    assert "mapping failed: mapping_error: required field missing" in ran.out


def test_a_preview_sends_a_json_payload_as_json_and_prints_the_body(api, tmp_path):
    payload = tmp_path / "po.json"
    payload.write_text('{"po_number": "PO-1"}')
    path = "/api/admin/tenants/t/integrations/int_1/message-types/po/preview"
    answer = {
        "ok": True,
        "content_type": "application/json",
        "body": {"number": "PO-1"},
        "duplicate_key": None,
    }
    api.canned[("POST", path)] = httpx.Response(200, json=answer)

    ran = hubctl(api, "preview", "int_1", "po", "--tenant", "t", "--payload", str(payload))

    assert ran.code == 0
    assert json.loads(api.requests[0].content) == {"payload": {"po_number": "PO-1"}}
    assert '"number": "PO-1"' in ran.out


def test_an_api_error_prints_its_code_and_message_and_exits_1(api):
    api.canned[("POST", "/api/admin/tenants/t/api-keys/key_1/rotate")] = error(
        409, "api_key_not_active", "only an active key rotates"
    )

    ran = hubctl(api, "keys", "rotate", "key_1", "--tenant", "t")

    assert ran.code == 1
    assert ran.err.strip() == "error: api_key_not_active: only an active key rotates (HTTP 409)"
    assert ran.out == ""


def test_an_answer_not_in_the_hubs_shape_is_still_an_error(api):
    api.canned[("GET", "/api/admin/tenants")] = httpx.Response(502, text="Bad Gateway")

    ran = hubctl(api, "list", "tenants")

    assert ran.code == 1
    assert "error: http_error: Bad Gateway (HTTP 502)" in ran.err


def test_an_unreachable_api_exits_3():
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    err = io.StringIO()
    code = run(
        ["list", "tenants"],
        lambda args: Context(
            args, lambda: AdminClient("http://x", TOKEN, httpx.MockTransport(refuse)), err=err
        ),
    )

    assert code == 3
    assert "cannot reach the admin API" in err.getvalue()


def test_usage_errors_exit_2():
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["messages", "list", "--tenant", "t", "--tab", "sent"])
    assert exited.value.code == 2


def test_the_token_is_never_printed_even_when_given_as_a_flag(api):
    api.canned[("GET", "/api/admin/tenants")] = error(401, "unauthorized", "bad token")

    ran = hubctl(api, "--token", TOKEN, "list", "tenants")

    assert ran.code == 1
    assert TOKEN not in ran.out + ran.err


def test_the_output_format_may_follow_the_command(api):
    api.canned[("GET", "/api/admin/tenants")] = httpx.Response(200, json={"items": [], "next_cursor": None})

    after = hubctl(api, "list", "tenants", "-o", "json")
    before = hubctl(api, "-o", "json", "list", "tenants")
    default = hubctl(api, "list", "tenants")

    assert json.loads(after.out) == json.loads(before.out) == {"items": [], "next_cursor": None}
    assert default.out.strip() == "(none)"


def test_without_password_stdin_the_password_is_prompted_for(api, tmp_path, monkeypatch):
    pfx = tmp_path / "a1.pfx"
    pfx.write_bytes(b"pfx")
    prompts: list[str] = []
    monkeypatch.setattr("getpass.getpass", lambda prompt: prompts.append(prompt) or "typed-pass")
    api.canned[("POST", "/api/admin/connections/c1/certificate")] = httpx.Response(201, json={"level": "ok"})

    ran = hubctl(api, "certificates", "upload", "c1", "--tenant", "t", "--pfx", str(pfx), stdin="not-this\n")

    assert ran.code == 0, ran.err
    assert prompts == ["PFX password: "]
    assert json.loads(api.requests[0].content)["password"] == "typed-pass"


def test_a_minted_callback_token_is_printed_once_with_a_warning(api):
    token = "hub_cb_AbCdEfGh-the-token"
    api.canned[("POST", "/api/admin/tenants/t/connections/c1/callback-token")] = httpx.Response(
        201, json={"connection_id": "c1", "token_id": "cbt_1", "token": token, "prefix": "hub_cb_AbCdEfGh"}
    )

    ran = hubctl(api, "connections", "callback-token", "c1", "--tenant", "t")

    assert ran.code == 0
    assert token in ran.out
    assert "only time the callback token is shown" in ran.err
    assert json.loads(api.requests[0].content) == {}


@pytest.mark.parametrize(
    ("command", "method", "suffix"),
    [("pause", "POST", "pause"), ("resume", "POST", "resume"), ("state", "GET", "state")],
)
def test_pause_resume_and_state_of_a_connection(api, command, method, suffix):
    state = {"connection_id": "erp", "tenant_id": "t", "paused": command == "pause", "circuit": "closed"}
    api.canned[(method, f"/api/admin/connections/erp/{suffix}")] = httpx.Response(200, json=state)

    ran = hubctl(api, command, "erp", "--tenant", "t")

    assert ran.code == 0, ran.err
    assert (api.requests[0].method, api.requests[0].url.path) == (
        method,
        f"/api/admin/connections/erp/{suffix}",
    )
    # Connection ids are unique within a tenant only: the tenant goes along.
    assert api.requests[0].url.params["tenant_id"] == "t"
    # An action says what it did in one line; the state is shown as its fields.
    shown = {"pause": "connection/erp paused", "resume": "connection/erp resumed", "state": "paused:"}
    assert shown[command] in ran.out
    assert "erp" in ran.out


def test_a_viewer_pausing_gets_the_apis_error_and_exit_1(api):
    api.canned[("POST", "/api/admin/connections/erp/pause")] = error(
        403, "forbidden", "needs the operator role"
    )

    ran = hubctl(api, "pause", "erp", "--tenant", "t")

    assert ran.code == 1
    assert "forbidden" in ran.err
