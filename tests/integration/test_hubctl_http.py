"""hubctl as a real process against real local servers on 127.0.0.1: what it sends (a fresh
Idempotency-Key per action, the same one on its automatic retry) and what it says when the admin
API cannot be reached (the URL and the cause: refused, DNS, TLS)."""

from __future__ import annotations

import json
import socket
import uuid

import pytest

from tests.destinations import Answer, HttpDestination
from tests.hubctl_process import SCRIPT, Hubctl
from tests.pki import build_pki

TOKEN = "hub_adm_process-test-token-0000000000000000000"


def base_of(server: HttpDestination) -> str:
    return server.url.removesuffix("/orders")


def error_body(code: str, message: str) -> str:
    return json.dumps({"error": {"code": code, "message": message}})


@pytest.fixture
def admin():
    with HttpDestination() as server:
        yield server


@pytest.fixture
def hubctl_at(tmp_path):
    assert SCRIPT.is_file(), "make install installs the hubctl console script into .venv/bin"
    return lambda url: Hubctl(url, TOKEN, tmp_path)


def test_each_action_sends_a_fresh_idempotency_key_and_its_retry_sends_the_same(admin, hubctl_at):
    admin.script(
        Answer(503, error_body("queue_unavailable", "the pipeline queue is unavailable")),
        Answer(202, json.dumps({"message_id": "msg_1", "execution_id": "exe_1"})),
        Answer(202, json.dumps({"message_id": "msg_1", "execution_id": "exe_2"})),
        Answer(200, json.dumps({"items": [], "next_cursor": None})),
    )
    hubctl = hubctl_at(base_of(admin))

    first = hubctl("reprocess", "msg_1")
    second = hubctl("messages", "reprocess", "msg_1")
    listed = hubctl("get", "tenants")

    assert first.stdout == "message/msg_1 reprocessed (execution exe_1)\n"
    assert "HTTP 503; retrying in 1 s (same Idempotency-Key)" in first.stderr
    assert second.stdout == "message/msg_1 reprocessed (execution exe_2)\n"
    assert listed.stdout.strip() == "(none)"
    keys = [request.headers.get("idempotency-key") for request in admin.requests]
    assert [request.method for request in admin.requests] == ["POST", "POST", "POST", "GET"]
    assert keys[0] == keys[1]  # the retry of one action
    assert keys[2] != keys[0]  # another action
    assert uuid.UUID(keys[0]).version == uuid.UUID(keys[2]).version == 4
    assert keys[3] is None  # a read changes nothing
    assert json.loads(admin.requests[0].body) == {"message_id": "msg_1"}


def test_a_refused_connection_names_the_url_and_the_cause_and_exits_3(hubctl_at):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port now.

    ran = hubctl_at(f"http://127.0.0.1:{port}")("get", "tenants", check=False)

    assert ran.returncode == 3
    assert ran.stderr.startswith(
        f"error: cannot reach the admin API at http://127.0.0.1:{port}/api/admin/tenants: connection refused"
    )


def test_an_unknown_host_is_a_dns_error_naming_the_url(hubctl_at):
    ran = hubctl_at("http://hubctl-test.invalid")("get", "tenants", check=False)  # RFC 6761: never resolves

    assert ran.returncode == 3
    assert "cannot reach the admin API at http://hubctl-test.invalid/api/admin/tenants: DNS:" in ran.stderr


def test_an_untrusted_certificate_is_a_tls_error_naming_the_url(hubctl_at, tmp_path):
    with HttpDestination(tls=build_pki().server_context(tmp_path)) as server:
        url = base_of(server)
        ran = hubctl_at(url)("get", "tenants", check=False)

    assert ran.returncode == 3
    assert f"cannot reach the admin API at {url}/api/admin/tenants: TLS handshake failed" in ran.stderr
    assert "not trusted" in ran.stderr
    assert server.requests == []  # nothing was sent over an unverified connection
