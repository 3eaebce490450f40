"""hubctl's kubectl grammar against an in-memory admin API (httpx.MockTransport): nouns and their
aliases, the old commands as aliases, the default tenant, every -o format, describe's timeline,
reprocess --force and already_delivered, find, bulk jobs, Idempotency-Key, connection errors
and the help of every command. The contract is docs/api-guide.md "Admin API" and /api/admin/... routes."""

from __future__ import annotations

import argparse
import io
import json
import re
import socket
import ssl
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from hubctl.client import AdminClient
from hubctl.main import Context, build_parser, run

TOKEN = "hub_adm_unit-test-token-000000000000000000000"
NO_PROFILES = {"HUBCTL_CONFIG": "/nonexistent/hubctl.toml"}


def error(status: int, code: str, message: str, **details: Any) -> httpx.Response:
    body: dict[str, Any] = {"code": code, "message": message}
    if details:
        body["details"] = details
    return httpx.Response(status, json={"error": body})


@dataclass
class Api:
    """Answers (method, path) with the next of its scripted answers (the last one repeats) and
    records every request; anything else is the API's 404 route_not_found."""

    answers: dict[tuple[str, str], deque[httpx.Response]] = field(default_factory=dict)
    requests: list[httpx.Request] = field(default_factory=list)

    def on(self, method: str, path: str, *answers: httpx.Response | dict[str, Any]) -> None:
        self.answers[(method, path)] = deque(
            a if isinstance(a, httpx.Response) else httpx.Response(200, json=a) for a in answers
        )

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        script = self.answers.get((request.method, request.url.path))
        if not script:
            return error(404, "route_not_found", f"no route {request.method} {request.url.path}")
        return script.popleft() if len(script) > 1 else script[0]

    def sent(self, index: int = 0) -> Any:
        content = self.requests[index].content
        return json.loads(content) if content else None


@dataclass
class Ran:
    code: int
    out: str
    err: str


def hubctl(api: Api, *argv: str, environ: dict[str, str] | None = None) -> Ran:
    out, err = io.StringIO(), io.StringIO()

    def context(args: argparse.Namespace) -> Context:
        return Context(
            args,
            lambda: AdminClient(
                "http://admin.test", TOKEN, transport=httpx.MockTransport(api), sleep=lambda _: None
            ),
            out=out,
            err=err,
            environ={**NO_PROFILES, **(environ or {})},
        )

    code = run(list(argv), context)
    return Ran(code, out.getvalue(), err.getvalue())


@pytest.fixture
def api() -> Api:
    return Api()


def page(*rows: dict[str, Any], cursor: str | None = None) -> dict[str, Any]:
    return {"items": list(rows), "next_cursor": cursor}


# --- nouns, aliases and the old commands ------------------------------------------------------

LISTINGS = [
    ("/api/admin/tenants", ["tenants", "tenant", "tnt", "TENANTS"]),
    ("/api/admin/tenants/t1/integrations", ["integrations", "integration", "int", "ints"]),
    ("/api/admin/tenants/t1/connections", ["connections", "connection", "conn", "conns"]),
    ("/api/admin/tenants/t1/api-keys", ["keys", "key", "apikeys", "api-keys"]),
    ("/api/admin/tenants/t1/subscriptions", ["subscriptions", "subscription", "sub", "subs"]),
    ("/api/admin/queue", ["messages", "message", "msg", "msgs"]),
    ("/api/admin/tokens", ["tokens", "token", "tok"]),
    ("/api/admin/bulk-jobs", ["bulk-jobs", "bulk-job", "jobs", "bj"]),
]


@pytest.mark.parametrize(("path", "noun"), [(path, noun) for path, nouns in LISTINGS for noun in nouns])
def test_get_lists_each_noun_by_any_of_its_names(api, path, noun):
    api.on("GET", path, page())

    ran = hubctl(api, "get", noun, "--tenant", "t1")

    assert ran.code == 0, ran.err
    assert [r.url.path for r in api.requests] == [path]
    assert ran.out.strip() == "(none)"


def test_an_unknown_noun_is_a_usage_error_listing_the_nouns(api, capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["get", "widgets"])

    assert exited.value.code == 2
    assert "unknown noun 'widgets'" in capsys.readouterr().err
    assert api.requests == []


@pytest.mark.parametrize(
    ("argv", "path"),
    [
        (["get", "tenant", "t9"], "/api/admin/tenants/t9"),
        (["get", "tenant/t9"], "/api/admin/tenants/t9"),
        (["get", "int", "int_a", "--tenant", "t1"], "/api/admin/tenants/t1/integrations/int_a"),
        (["get", "conn/c1", "--tenant", "t1"], "/api/admin/tenants/t1/connections/c1"),
        (["get", "sub", "sub_1", "--tenant", "t1"], "/api/admin/tenants/t1/subscriptions/sub_1"),
        (["get", "msg", "msg_1"], "/api/admin/messages/msg_1"),
        (["get", "bulk-job", "bj_1", "--tenant", "t1"], "/api/admin/bulk-jobs/bj_1"),
    ],
)
def test_get_with_an_id_shows_that_one_as_a_row(api, argv, path):
    api.on("GET", path, {"tenant_id": "t9", "name": "Nine", "message_id": "msg_1", "job_id": "bj_1"})

    ran = hubctl(api, *argv)

    assert ran.code == 0, ran.err
    assert api.requests[0].url.path == path
    header, row = ran.out.splitlines()
    assert header == header.upper()
    assert row.split()[0] in ("t9", "msg_1", "bj_1", "-")


def test_get_a_key_by_id_reads_the_listing_page_by_page(api):
    api.on(
        "GET",
        "/api/admin/tenants/t1/api-keys",
        page({"key_id": "key_a"}, cursor="c2"),
        page({"key_id": "key_b", "label": "ERP", "state": "active"}),
    )

    found = hubctl(api, "get", "key", "key_b", "--tenant", "t1")
    missing = hubctl(api, "get", "key", "key_zz", "--tenant", "t1")

    assert found.code == 0, found.err
    assert found.out.splitlines()[1].split()[:3] == ["key_b", "-", "ERP"]
    assert api.requests[1].url.params["cursor"] == "c2"
    assert missing.code == 1
    assert missing.err.strip() == "error: not_found: no key key_zz in tenant t1"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["list", "tenants"], ["get", "tenants"]),
        (["list", "integrations", "--tenant", "t1"], ["get", "integrations", "--tenant", "t1"]),
        (["keys", "list", "--tenant", "t1"], ["get", "keys", "--tenant", "t1"]),
        (["tokens", "list", "--tenant", "t1"], ["get", "tokens", "--tenant", "t1"]),
        (["subscriptions", "list", "--tenant", "t1"], ["get", "subs", "--tenant", "t1"]),
        (
            ["messages", "list", "--tenant", "t1", "--tab", "dead_letter"],
            ["get", "messages", "--tenant", "t1", "--tab", "dead_letter"],
        ),
        (["messages", "show", "msg_1"], ["describe", "message", "msg_1"]),
        (["messages", "find", "PO-1", "--tenant", "t1"], ["find", "PO-1", "--tenant", "t1"]),
    ],
)
def test_the_old_commands_are_aliases_of_the_new_grammar(api, old, new):
    row = {"tenant_id": "t1", "key_id": "key_1", "token_id": "tok_1", "subscription_id": "sub_1"}
    message = {"message_id": "msg_1", "pipeline_status": "error", "timeline": []}
    for path in (
        "/api/admin/tenants",
        "/api/admin/tenants/t1/integrations",
        "/api/admin/tenants/t1/api-keys",
        "/api/admin/tokens",
        "/api/admin/tenants/t1/subscriptions",
        "/api/admin/queue",
        "/api/admin/messages",
    ):
        api.on("GET", path, page(row))
    api.on("GET", "/api/admin/messages/msg_1", message)

    before = hubctl(api, *old)
    after = hubctl(api, *new)

    assert (before.code, after.code) == (0, 0), before.err + after.err
    assert before.out == after.out
    half = len(api.requests) // 2
    assert [(r.method, str(r.url)) for r in api.requests[:half]] == [
        (r.method, str(r.url)) for r in api.requests[half:]
    ]


def test_get_messages_lists_every_tab_and_messages_list_the_error_tab(api):
    api.on("GET", "/api/admin/queue", page())

    hubctl(api, "get", "messages", "--tenant", "t1")
    hubctl(api, "messages", "list", "--tenant", "t1")

    assert [r.url.params["tab"] for r in api.requests] == ["all", "error"]


def test_message_options_with_another_noun_are_a_usage_error(api):
    ran = hubctl(api, "get", "tenants", "--tab", "error")

    assert ran.code == 2
    assert "--tab" in ran.err
    assert api.requests == []


# --- the default tenant -----------------------------------------------------------------------

PROFILE = """
default_profile = "local"

[profiles.local]
url = "http://127.0.0.1:3001"
token = "x"
tenant = "tnt_from_profile"

[profiles.other]
tenant = "tnt_other_profile"
token_env = "UNSET_VARIABLE"
"""


@pytest.fixture
def profiles(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "config.toml"
    path.write_text(PROFILE)
    return {"HUBCTL_CONFIG": str(path)}


@pytest.mark.parametrize(
    ("argv", "environ", "tenant"),
    [
        ([], {"HUB_TENANT": "tnt_from_env"}, "tnt_from_env"),
        (["--tenant", "tnt_flag"], {"HUB_TENANT": "tnt_from_env"}, "tnt_flag"),
        (["-t", "tnt_flag"], {}, "tnt_flag"),
    ],
)
def test_the_tenant_comes_from_the_flag_else_hub_tenant(api, argv, environ, tenant):
    api.on("GET", f"/api/admin/tenants/{tenant}/integrations", page())

    after = hubctl(api, "get", "integrations", *argv, environ=environ)
    before = hubctl(api, *argv, "get", "integrations", environ=environ)  # the flag before the command

    assert (after.code, before.code) == (0, 0), after.err + before.err
    assert {r.url.path for r in api.requests} == {f"/api/admin/tenants/{tenant}/integrations"}


def test_the_tenant_comes_from_the_profile_and_a_named_profile_or_the_environment_wins(api, profiles):
    for tenant in ("tnt_from_profile", "tnt_other_profile", "tnt_from_env"):
        api.on("GET", f"/api/admin/tenants/{tenant}/connections", page())

    default = hubctl(api, "get", "conns", environ=profiles)
    env = hubctl(api, "get", "conns", environ={**profiles, "HUB_TENANT": "tnt_from_env"})
    # A named profile's tenant, though its token's variable is unset (only its tenant is read).
    named = hubctl(api, "--profile", "other", "get", "conns", environ={**profiles, "HUB_TENANT": "x"})

    assert (default.code, env.code, named.code) == (0, 0, 0), default.err + env.err + named.err
    assert [r.url.path.split("/")[4] for r in api.requests] == [
        "tnt_from_profile",
        "tnt_from_env",
        "tnt_other_profile",
    ]


def test_a_command_that_needs_a_tenant_and_has_none_exits_2_before_any_request(api):
    ran = hubctl(api, "get", "integrations")

    assert ran.code == 2
    assert ran.err.startswith("error: no tenant: pass --tenant TENANT_ID, set HUB_TENANT")
    assert api.requests == []


def test_tokens_and_audit_take_only_an_explicit_tenant(api):
    """Without --tenant they mean the platform: a default tenant would change what is created."""
    api.on("POST", "/api/admin/tokens", httpx.Response(201, json={"token_id": "tok_1", "token": "x"}))

    ran = hubctl(api, "tokens", "create", "--label", "ops", "--role", "viewer", environ={"HUB_TENANT": "t1"})

    assert ran.code == 0, ran.err
    assert api.sent()["tenant_id"] is None


# --- output formats ---------------------------------------------------------------------------

TENANTS = page(
    {"tenant_id": "tnt_a", "name": "ACME Comércio", "default_mode": "observability", "state": "active",
     "created_at": "2026-12-01T10:00:00Z", "version": 3},
    {"tenant_id": "tnt_b", "name": "yes", "default_mode": "orchestration", "state": "disabled",
     "created_at": "2026-12-02T10:00:00Z", "version": 1},
)  # fmt: skip


def test_json_prints_the_answer_as_it_came(api):
    api.on("GET", "/api/admin/tenants", TENANTS)

    ran = hubctl(api, "get", "tenants", "-o", "json")

    assert json.loads(ran.out) == TENANTS


def test_yaml_prints_the_answer_and_reads_back_the_same(api):
    api.on("GET", "/api/admin/tenants", TENANTS)

    ran = hubctl(api, "get", "tenants", "-o", "yaml")

    assert ran.code == 0, ran.err
    assert yaml.safe_load(ran.out) == TENANTS
    assert '  name: "yes"' in ran.out  # a string YAML would read as a boolean is quoted


def test_name_prints_kind_slash_id_one_per_line(api):
    api.on("GET", "/api/admin/tenants", TENANTS)
    api.on("GET", "/api/admin/queue", page({"message_id": "msg_1"}, {"message_id": "msg_2"}))

    tenants = hubctl(api, "get", "tenants", "-o", "name")
    messages = hubctl(api, "-o", "name", "get", "msgs", "--tenant", "t1")

    assert tenants.out.splitlines() == ["tenant/tnt_a", "tenant/tnt_b"]
    assert messages.out.splitlines() == ["message/msg_1", "message/msg_2"]


def test_a_name_as_printed_is_taken_back_as_an_id(api):
    api.on("GET", "/api/admin/messages/msg_1", {"message_id": "msg_1", "timeline": []})
    api.on("POST", "/api/admin/messages/msg_1/cancel-retry", {"message_id": "msg_1"})

    described = hubctl(api, "describe", "message/msg_1")
    cancelled = hubctl(api, "cancel", "message/msg_1")

    assert (described.code, cancelled.code) == (0, 0)
    assert [r.url.path for r in api.requests] == [
        "/api/admin/messages/msg_1",
        "/api/admin/messages/msg_1/cancel-retry",
    ]


def test_wide_adds_columns_and_table_shows_the_defaults(api):
    api.on("GET", "/api/admin/tenants", TENANTS)

    table = hubctl(api, "get", "tenants").out.splitlines()[0].split()
    wide = hubctl(api, "get", "tenants", "-o", "wide").out.splitlines()[0].split()

    assert table == ["TENANT_ID", "NAME", "DEFAULT_MODE", "STATE", "CREATED_AT"]
    assert wide == [*table, "UPDATED_AT", "PAYLOAD_RETENTION_DAYS", "MESSAGE_RETENTION_DAYS", "VERSION"]


def test_name_is_refused_where_a_secret_would_be_lost_or_nothing_has_a_name(api):
    key = hubctl(api, "keys", "create", "--tenant", "t1", "-o", "name")
    audit = hubctl(api, "audit", "-o", "name")

    assert (key.code, audit.code) == (2, 2)
    assert "shown only this once" in key.err
    assert "names no resource" in audit.err
    assert api.requests == []


def test_a_delivered_messages_old_error_class_is_not_shown_as_current(api):
    rows = page(
        {"message_id": "msg_sent", "pipeline_status": "sent", "last_retry_error_class": "http_5xx"},
        {"message_id": "msg_err", "pipeline_status": "error", "last_retry_error_class": "http_4xx"},
    )
    api.on("GET", "/api/admin/queue", rows)

    table = hubctl(api, "get", "messages", "--tenant", "t1").out
    as_json = json.loads(hubctl(api, "get", "messages", "--tenant", "t1", "-o", "json").out)

    assert "http_5xx" not in table
    assert "http_4xx" in table
    assert as_json == rows  # the document is the API's, unchanged


# --- describe message -------------------------------------------------------------------------

VIEW = {
    "message_id": "msg_1",
    "tenant_id": "t1",
    "integration_id": "int_erp",
    "message_type": "purchase_order",
    "external_id": "PO-4711",
    "pipeline_status": "sent",
    "dest_status": "200",
    "last_retry_error_class": "http_5xx",
    "retry_count": 1,
    "execution_id": "exe_2",
    "uncertain": False,
    "payload": {"po_number": "PO-4711"},
    "timeline": [
        {"at": "2026-12-01T10:00:00Z", "kind": "event", "title": "message.received (status received)",
         "event_id": "msg_1:1", "type": "message.received", "status": "received", "version": 1},
        {"at": "2026-12-01T10:00:01Z", "kind": "attempt",
         "title": "Delivery attempt 1: failure (http_5xx, 503)", "step": "deliver", "status": "failure",
         "duration_ms": 812, "detail": "upstream\n unavailable"},
        {"at": "2026-12-01T10:05:00Z", "kind": "audit", "title": "Reprocessed by an operator",
         "event": "message.reprocessed", "actor": "tok_ops", "execution_id": "exe_2"},
        {"at": "2026-12-01T10:05:01Z", "kind": "attempt", "title": "Delivery attempt 1: success (200)",
         "step": "sent", "status": "success", "duration_ms": 95},
    ],
    "timeline_complete": True,
}  # fmt: skip


def test_describe_message_prints_its_state_then_one_row_per_timeline_entry(api):
    api.on("GET", "/api/admin/messages/msg_1", VIEW)

    ran = hubctl(api, "describe", "message", "msg_1")

    assert ran.code == 0, ran.err
    lines = ran.out.splitlines()
    assert "pipeline_status: sent" in lines
    assert not any(line.startswith("last_retry_error_class") for line in lines)  # in its attempt's row
    start = lines.index("Timeline (oldest first):")
    assert lines[start + 1].split() == ["AT", "KIND", "WHAT", "DETAIL"]
    rows = lines[start + 2 : start + 6]
    assert [row.split()[:2] for row in rows] == [
        ["2026-12-01T10:00:00Z", "event"],
        ["2026-12-01T10:00:01Z", "attempt"],
        ["2026-12-01T10:05:00Z", "audit"],
        ["2026-12-01T10:05:01Z", "attempt"],
    ]
    assert rows[0].endswith("msg_1:1")
    assert rows[1].endswith("812 ms, upstream unavailable")
    assert rows[2].endswith("by tok_ops, execution exe_2")
    assert "PO-4711" not in "\n".join(rows)  # the payload only with -o json|yaml


def test_describe_message_as_yaml_is_the_whole_view(api):
    api.on("GET", "/api/admin/messages/msg_1", VIEW)

    ran = hubctl(api, "describe", "msg", "msg_1", "-o", "yaml")

    assert yaml.safe_load(ran.out) == VIEW


# --- reprocess and cancel ---------------------------------------------------------------------


def test_reprocess_prints_one_line_with_the_new_execution(api):
    api.on(
        "POST", "/api/edi-hub/reprocess-message", httpx.Response(202, json={"pipeline_status": "received"})
    )
    api.on("GET", "/api/admin/messages/msg_1", {"message_id": "msg_1", "execution_id": "exe_9"})

    ran = hubctl(api, "reprocess", "msg_1")

    assert ran.code == 0, ran.err
    assert ran.out == "message/msg_1 reprocessed (execution exe_9)\n"
    assert api.sent() == {"message_id": "msg_1"}


def test_reprocess_of_a_delivered_message_is_refused_with_a_hint_to_force(api):
    api.on(
        "POST",
        "/api/edi-hub/reprocess-message",
        error(
            409,
            "already_delivered",
            "the destination accepted it",
            message_id="msg_1",
            pipeline_status="sent",
        ),
    )

    ran = hubctl(api, "reprocess", "msg_1")

    assert ran.code == 1
    assert ran.out == ""
    err = ran.err.splitlines()
    assert err[0] == "error: already_delivered: the destination accepted it (HTTP 409)"
    assert err[-1] == (
        "hint: the destination already accepted message msg_1 (sent); "
        "to send it again anyway: hubctl reprocess msg_1 --force"
    )


@pytest.mark.parametrize(
    "argv", [["reprocess", "msg_1", "--force"], ["messages", "reprocess", "msg_1", "--force"]]
)
def test_force_is_sent_and_said(api, argv):
    api.on("POST", "/api/edi-hub/reprocess-message", httpx.Response(202, json={"execution_id": "exe_3"}))

    ran = hubctl(api, *argv)

    assert ran.code == 0, ran.err
    assert api.sent() == {"message_id": "msg_1", "force": True}
    assert ran.out == "message/msg_1 reprocessed with --force (execution exe_3)\n"
    assert len(api.requests) == 1  # the answer named the execution: nothing more read


def test_cancel_prints_one_line_and_json_the_document(api):
    moved = {"message_id": "msg_1", "pipeline_status": "cancelled", "queue_row": {"message_id": "msg_1"}}
    api.on("POST", "/api/admin/messages/msg_1/cancel-retry", moved)

    line = hubctl(api, "cancel", "msg_1")
    document = hubctl(api, "cancel", "msg_1", "-o", "json")

    assert line.out == "message/msg_1 cancelled (pipeline_status cancelled)\n"
    assert json.loads(document.out) == moved


# --- find -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["find", "PO-4711", "--by", "external_id", "--integration", "int_erp"],
        ["get", "messages", "--find", "PO-4711", "--by", "external_id", "--integration", "int_erp"],
        ["messages", "find", "PO-4711", "--by", "external_id", "--integration", "int_erp"],
    ],
)
def test_find_asks_the_search_and_shows_how_each_matched(api, argv):
    row = {"message_id": "msg_1", "matched_by": "external_id", "pipeline_status": "sent"}
    found = {"tenant_id": "t1", "q": "PO-4711", "by": "external_id", "items": [row], "next_cursor": None}
    api.on("GET", "/api/admin/messages", found)

    ran = hubctl(api, *argv, "--tenant", "t1")

    assert ran.code == 0, ran.err
    assert dict(api.requests[0].url.params) == {
        "tenant_id": "t1",
        "q": "PO-4711",
        "by": "external_id",
        "integration_id": "int_erp",
    }
    header, row = ran.out.splitlines()
    assert header.split()[:2] == ["MESSAGE_ID", "MATCHED_BY"]
    assert row.split()[:2] == ["msg_1", "external_id"]


def test_find_on_an_api_without_search_says_the_hub_is_older(api):
    ran = hubctl(api, "find", "PO-1", "--tenant", "t1")

    assert ran.code == 1
    assert "error: route_not_found:" in ran.err
    assert "hint: this admin API has no such route" in ran.err


# --- bulk jobs --------------------------------------------------------------------------------


def job(state: str = "running", **counts: Any) -> dict[str, Any]:
    return {
        "job_id": "bj_1",
        "tenant_id": "t1",
        "action": "reprocess",
        "filter": {"tab": "dead_letter", "integration_id": "int_erp"},
        "force": False,
        "state": state,
        "matched": 0,
        "done": 0,
        "skipped": 0,
        "failed": 0,
        "skipped_reasons": {},
        "failed_reasons": {},
        **counts,
    }


def test_bulk_reprocess_creates_a_job_from_the_filter_and_prints_one_line(api):
    api.on("POST", "/api/admin/bulk-jobs", httpx.Response(202, json=job(matched=12)))

    ran = hubctl(
        api, "bulk", "reprocess", "--tab", "dead_letter", "--integration", "int_erp",
        "--error-class", "http_5xx", "--since", "2026-12-01T09:00:00Z", "--until", "2026-12-01T10:00:00Z",
        "--find", "PO-4711", "--by", "business_key", "--tenant", "t1",
    )  # fmt: skip

    assert ran.code == 0, ran.err
    assert api.sent() == {
        "tenant_id": "t1",
        "action": "reprocess",
        "filter": {
            "tab": "dead_letter",
            "integration_id": "int_erp",
            "error_class": "http_5xx",
            "since": "2026-12-01T09:00:00Z",
            "until": "2026-12-01T10:00:00Z",
            "q": "PO-4711",
            "by": "business_key",
        },
        "force": False,
    }
    assert ran.out == (
        "bulk-job/bj_1 created: reprocess of dead_letter messages, integration int_erp, matched so far 12\n"
    )


def test_bulk_cancel_creates_a_cancel_job_without_force(api):
    api.on("POST", "/api/admin/bulk-jobs", httpx.Response(202, json=job(action="cancel")))

    ran = hubctl(api, "bulk", "cancel", "--tab", "waiting", "--tenant", "t1")

    assert ran.code == 0, ran.err
    assert api.sent() == {"tenant_id": "t1", "action": "cancel", "filter": {"tab": "waiting"}}


def test_bulk_cancel_with_a_job_id_stops_that_job(api):
    api.on("POST", "/api/admin/bulk-jobs/bj_1/cancel", job("cancelling", matched=40, done=10))

    ran = hubctl(api, "bulk", "cancel", "bulk-job/bj_1", "--tenant", "t1")

    assert ran.code == 0, ran.err
    assert api.requests[0].url.params["tenant_id"] == "t1"
    assert ran.out == "bulk-job/bj_1 cancelling: matched 40, done 10, skipped 0, failed 0\n"


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["bulk", "reprocess"], "bulk reprocess needs --tab"),
        (["bulk", "cancel"], "or bulk cancel JOB_ID to stop a job"),
        (["bulk", "cancel", "bj_1", "--tab", "waiting"], "without filters"),
        (["bulk", "reprocess", "--tab", "all", "--by", "external_id"], "give --find too"),
        (["bulk", "get", "--wait"], "--wait follows one job"),
    ],
)
def test_bulk_usage_errors_send_nothing(api, argv, problem):
    ran = hubctl(api, *argv, "--tenant", "t1")

    assert ran.code == 2
    assert problem in ran.err
    assert api.requests == []


def test_bulk_wait_polls_until_the_job_ends_and_prints_progress_on_stderr(api):
    api.on("POST", "/api/admin/bulk-jobs", httpx.Response(202, json=job(force=True)))
    api.on(
        "GET",
        "/api/admin/bulk-jobs/bj_1",
        job(matched=500, done=100),
        job(matched=500, done=100),
        job(matched=500, done=400, skipped=1, skipped_reasons={"cancelled": 1}),
        job("completed", matched=500, done=499, skipped=1, skipped_reasons={"cancelled": 1}),
    )

    ran = hubctl(api, "bulk", "reprocess", "--tab", "dead_letter", "--force", "--wait", "--interval", "0",
                 "--tenant", "t1")  # fmt: skip

    assert ran.code == 0, ran.err
    assert api.sent()["force"] is True
    assert [r.method for r in api.requests] == ["POST", "GET", "GET", "GET", "GET"]
    assert ran.err.splitlines() == [
        "bulk-job/bj_1 created: reprocess of dead_letter messages, integration int_erp, with --force",
        "bulk-job/bj_1 running: matched 0, done 0, skipped 0, failed 0",
        "bulk-job/bj_1 running: matched 500, done 100, skipped 0, failed 0",  # once: it did not move
        "bulk-job/bj_1 running: matched 500, done 400, skipped 1 (cancelled 1), failed 0",
    ]
    assert ran.out == "bulk-job/bj_1 completed: matched 500, done 499, skipped 1 (cancelled 1), failed 0\n"


@pytest.mark.parametrize(
    "last",
    [
        job("completed", matched=3, done=2, failed=1, failed_reasons={"queue_unavailable": 1}),
        job("failed"),
        job("cancelled", matched=3, done=1),
    ],
)
def test_bulk_wait_exits_1_unless_every_message_was_done_or_skipped(api, last):
    api.on("GET", "/api/admin/bulk-jobs/bj_1", last)

    ran = hubctl(api, "bulk", "get", "bj_1", "--wait", "--interval", "0", "--tenant", "t1")
    as_json = hubctl(api, "bulk", "get", "bj_1", "--wait", "--interval", "0", "--tenant", "t1", "-o", "json")

    assert (ran.code, as_json.code) == (1, 1)
    assert ran.out.startswith(f"bulk-job/bj_1 {last['state']}: ")
    assert json.loads(as_json.out) == last


def test_bulk_wait_gives_up_after_its_timeout_with_the_command_to_follow_it(api):
    api.on("GET", "/api/admin/bulk-jobs/bj_1", job())

    ran = hubctl(
        api, "bulk", "get", "bj_1", "--wait", "--interval", "0", "--timeout", "0.01", "--tenant", "t1"
    )

    assert ran.code == 1
    assert "follow it with: hubctl bulk get bj_1 --wait" in ran.err


def test_bulk_get_lists_the_jobs_and_shows_one(api):
    api.on("GET", "/api/admin/bulk-jobs", page(job("completed", matched=2, done=2)))
    api.on("GET", "/api/admin/bulk-jobs/bj_1", job(matched=9, done=3))

    listed = hubctl(api, "bulk", "get", "--tenant", "t1")
    one = hubctl(api, "bulk", "get", "bj_1", "--tenant", "t1")

    assert listed.out.splitlines()[1].split()[:7] == ["bj_1", "reprocess", "completed", "2", "2", "0", "0"]
    assert one.out == (
        "bulk-job/bj_1 running: reprocess of dead_letter messages, integration int_erp; "
        "matched 9, done 3, skipped 0, failed 0\n"
    )


# --- Idempotency-Key and retries --------------------------------------------------------------

UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_every_mutating_call_sends_a_fresh_idempotency_key_and_reads_send_none(api):
    api.on("POST", "/api/edi-hub/reprocess-message", httpx.Response(202, json={"execution_id": "exe_1"}))
    api.on("GET", "/api/admin/tenants", page())
    api.on("DELETE", "/api/admin/tenants/t1/connections/c1", httpx.Response(204))

    hubctl(api, "reprocess", "msg_1")
    hubctl(api, "reprocess", "msg_1")
    hubctl(api, "delete", "connection", "c1", "--tenant", "t1")
    hubctl(api, "get", "tenants")

    keys = [r.headers.get("idempotency-key") for r in api.requests]
    assert all(UUID4.fullmatch(key or "") for key in keys[:3]), keys
    assert len(set(keys[:3])) == 3  # one per action
    assert keys[3] is None


@pytest.mark.parametrize(
    "refusal",
    [
        httpx.Response(503, json={"error": {"code": "queue_unavailable", "message": "try again"}}),
        httpx.Response(502, text="Bad Gateway"),
        error(409, "idempotency_key_in_use", "the first request with this key is still running"),
        httpx.Response(
            429, json={"error": {"code": "rate_limited", "message": "slow"}}, headers={"Retry-After": "1"}
        ),
    ],
)
def test_a_retried_action_sends_the_same_key_again(api, refusal):
    api.on("POST", "/api/edi-hub/reprocess-message", refusal, httpx.Response(202, json={"execution_id": "e"}))

    ran = hubctl(api, "reprocess", "msg_1")

    assert ran.code == 0, ran.err
    first, second = (r.headers["idempotency-key"] for r in api.requests)
    assert first == second


def test_an_answer_that_cannot_be_retried_is_not(api):
    api.on("POST", "/api/edi-hub/reprocess-message", error(409, "execution_in_flight", "wait"))

    ran = hubctl(api, "reprocess", "msg_1")

    assert ran.code == 1
    assert len(api.requests) == 1


def test_retries_stop_after_the_last_delay_with_the_apis_answer(api):
    api.on("POST", "/api/edi-hub/reprocess-message", error(503, "queue_unavailable", "down"))

    ran = hubctl(api, "reprocess", "msg_1")

    assert ran.code == 1
    assert len(api.requests) == 3  # the first and two retries, every one with the same key
    assert len({r.headers["idempotency-key"] for r in api.requests}) == 1
    assert "error: queue_unavailable: down (HTTP 503)" in ran.err


# --- connection errors ------------------------------------------------------------------------


def unreachable(exc: Exception) -> Ran:
    def fail(request: httpx.Request) -> httpx.Response:
        raise exc

    out, err = io.StringIO(), io.StringIO()
    code = run(
        ["get", "tenants"],
        lambda args: Context(
            args,
            lambda: AdminClient("https://admin.example.test", TOKEN, httpx.MockTransport(fail)),
            out=out,
            err=err,
            environ=dict(NO_PROFILES),
        ),
    )
    return Ran(code, out.getvalue(), err.getvalue())


def _raised(exc: Exception, cause: BaseException) -> Exception:
    exc.__cause__ = cause
    return exc


@pytest.mark.parametrize(
    ("exc", "cause"),
    [
        (_raised(httpx.ConnectError("x"), ConnectionRefusedError(111, "Connection refused")),
         "connection refused"),
        (_raised(httpx.ConnectError("x"), socket.gaierror(-2, "Name or service not known")),
         "DNS: the host name does not resolve (Name or service not known)"),
        (httpx.ConnectTimeout("x"), "timeout: no connection within 10 s"),
        (_raised(httpx.ConnectError("x"), ssl.SSLError(1, "WRONG_VERSION_NUMBER")), "TLS handshake failed"),
    ],
)  # fmt: skip
def test_an_unreachable_api_names_the_url_and_the_cause_and_exits_3(exc, cause):
    ran = unreachable(exc)

    assert ran.code == 3
    assert ran.err.startswith(
        "error: cannot reach the admin API at https://admin.example.test/api/admin/tenants: "
    )
    assert cause in ran.err


def test_a_url_without_a_scheme_is_a_configuration_error(api):
    out, err = io.StringIO(), io.StringIO()
    code = run(
        ["get", "tenants"],
        lambda args: Context(
            args, lambda: AdminClient("127.0.0.1:3001", TOKEN), out=out, err=err, environ={}
        ),
    )

    assert code == 2
    assert "must start with http:// or https://" in err.getvalue()


# --- help -------------------------------------------------------------------------------------


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(" ".join(path) or "hubctl", parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _parsers(sub, (*path, name))
    return found


def test_every_command_has_help_a_description_and_an_example():
    parsers = _parsers(build_parser())

    assert len(parsers) > 50
    for name, parser in parsers:
        assert parser.description, name
        assert parser.epilog, name
        assert "  hubctl " in parser.epilog, name
        assert "hubctl" in parser.format_help(), name
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            assert all(choice.help for choice in action._choices_actions)


def test_top_level_help_lists_the_grammar_and_the_nouns():
    text = build_parser().format_help()

    for line in (
        "hubctl get NOUN [ID]",
        "hubctl describe NOUN ID",
        "hubctl find VALUE",
        "hubctl bulk reprocess",
        "tenant|tenants|tnt",
        "-o table (default) | wide | json | yaml | name",
        "HUB_TENANT",
    ):
        assert line in text


# --- the documents' examples ------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[3]


def documented_commands(path: Path) -> list[str]:
    """Every `hubctl ...` command of a document's sh code blocks (continuation lines joined,
    what a pipe or a redirection adds cut off)."""
    import shlex  # noqa: PLC0415

    commands, block = [], False
    for line in path.read_text(encoding="utf-8").replace("\\\n", " ").splitlines():
        if line.startswith("```"):
            block = line.strip() == "```sh"
            continue
        if block and line.lstrip().startswith("hubctl "):
            words = shlex.split(line, comments=True)
            cut = next((i for i, word in enumerate(words) if word in ("|", "<", ">")), len(words))
            commands.append(" ".join(shlex.quote(word) for word in words[1:cut]))
    return commands


#: Every document that may show hubctl commands: the README, CONTRIBUTING.md and docs/*.md.
DOCUMENTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_documents_show_hubctl_commands():
    shown = [c for doc in DOCUMENTS for c in documented_commands(doc)]

    assert len(shown) >= 90
    assert "apply -f examples/json_to_json.yaml" in documented_commands(ROOT / "README.md")


@pytest.mark.parametrize("command", [c for doc in DOCUMENTS for c in documented_commands(doc)])
def test_every_documented_command_parses(command):
    import shlex  # noqa: PLC0415

    build_parser().parse_args(shlex.split(command))  # argparse exits 2 on anything it refuses


# --- erase (issue 29) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ("erase", "message", "msg_1"),
        ("erase", "message/msg_1"),
        ("erase", "msg", "msg_1"),
        ("erase", "msg_1"),
    ],
)
def test_erase_names_one_message_as_the_other_verbs_do(api, argv):
    api.on("POST", "/api/admin/messages/msg_1/erase", {"erased": ["msg_1"], "more": False})

    ran = hubctl(api, *argv)

    assert ran.code == 0, ran.err
    assert [(r.method, r.url.path) for r in api.requests] == [("POST", "/api/admin/messages/msg_1/erase")]
    assert "Idempotency-Key" in api.requests[0].headers
    assert ran.out.strip() == "message/msg_1 erased (its payload, callbacks and the message)"


def test_erase_by_external_id_calls_again_while_there_are_more(api):
    api.on(
        "POST",
        "/api/admin/tenants/t1/erasures",
        {"erased": ["msg_1", "msg_2"], "more": True},
        {"erased": ["msg_3"], "more": False},
    )

    ran = hubctl(api, "erase", "--external-id", "cliente-4711", "--tenant", "t1", "-o", "name")

    assert ran.code == 0, ran.err
    assert [api.sent(n) for n in range(2)] == [{"external_id": "cliente-4711"}] * 2
    # Each call a fresh key: the second one must erase the next messages, not replay the first.
    assert api.requests[0].headers["Idempotency-Key"] != api.requests[1].headers["Idempotency-Key"]
    assert ran.out.splitlines() == ["message/msg_1", "message/msg_2", "message/msg_3"]


def test_erase_by_business_key_says_how_many(api):
    api.on("POST", "/api/admin/tenants/t1/erasures", {"erased": [], "more": False})

    ran = hubctl(api, "erase", "--business-key", "PO-4711", "--tenant", "t1")

    assert ran.code == 0, ran.err
    assert api.sent() == {"business_key": "PO-4711"}
    assert ran.out.splitlines()[0] == "erased 0 message(s) of tenant t1 by business_key"


@pytest.mark.parametrize(
    "argv",
    [
        ("erase",),
        ("erase", "message"),
        ("erase", "msg_1", "--external-id", "x"),
        ("erase", "integration", "int_1"),
        ("erase", "message/msg_1", "msg_2"),
    ],
)
def test_erase_needs_exactly_one_target(api, argv):
    ran = hubctl(api, *argv, "--tenant", "t1")

    assert ran.code == 2
    assert api.requests == []
