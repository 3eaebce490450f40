"""A new tenant onboarded with hubctl alone (issue 11's e2e), on its own local stack whose
functions keep a short configuration cache: `hubctl apply -f examples/rest.yaml` on a stack that
has never seen the tenant, the same apply again (unchanged), `hubctl keys create`, then the
partner's request reaches `sent` at a real local destination with the connection's credentials;
revoke, rotate, preview, connection test, tokens, audit and deletes, each through the installed
console script; and the local stack's demo data, made by the admin use cases."""

from __future__ import annotations

import base64
import json
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack.demo import (
    DEMO_ADMIN_TOKEN,
    DEMO_CONNECTION_ID,
    DEMO_INTEGRATION_ID,
    DEMO_TENANT_ID,
    DEMO_WEBHOOK_INTEGRATION_ID,
    SEED_PRINCIPAL,
    parameter_overrides,
    seed,
)
from devstack.stack import LocalStack
from tests.aws import function_names, local_stack_on_free_ports
from tests.destinations import HttpDestination
from tests.hubctl_process import SCRIPT, Hubctl
from tests.pipeline import wait_for_status
from tests.pki import PFX_PASSWORD, build_pki

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TENANT, CONNECTION, INTEGRATION = "tnt_acme", "conn_acme_erp", "int_acme_orders"
#: The functions' configuration cache on this stack (the template's default is 30 s): short, so
#: a revocation is seen within it without a long wait, yet on, so the test is of the cache.
CACHE_SECONDS = 3
#: What a poll may take beyond the cache: requests of a loaded 2-core machine.
SLACK_SECONDS = 10
#: The connection's credential (a test value).
ERP_TOKEN = "acme-erp-bearer-" + "x" * 24


@pytest.fixture(scope="module")
def local_stack() -> Iterator[LocalStack]:
    """This module's own stack (the shared one keeps no cache), with the demo data."""
    cache = {name: {"HUB_CONFIG_CACHE_SECONDS": str(CACHE_SECONDS)} for name in function_names()}
    with local_stack_on_free_ports(
        stack_name="hub-onboarding", parameter_overrides=parameter_overrides(), env_overrides=cache
    ) as stack:
        seed(stack)
        yield stack


@pytest.fixture(scope="module")
def erp() -> Iterator[HttpDestination]:
    """The customer's ERP: answers 200 and records every request."""
    with HttpDestination() as server:
        yield server


@pytest.fixture(scope="module")
def hubctl(local_stack: LocalStack, erp: HttpDestination, tmp_path_factory) -> Hubctl:
    assert SCRIPT.is_file(), "make install installs the hubctl console script into .venv/bin"
    ctl = Hubctl(
        local_stack.function_urls["AdminApiFunction"], DEMO_ADMIN_TOKEN, tmp_path_factory.mktemp("hubctl")
    )
    ctl.env.update(ACME_ERP_URL=erp.url, ACME_ERP_TOKEN=ERP_TOKEN)
    return ctl


@pytest.fixture(scope="module")
def applied(hubctl: Hubctl) -> tuple[Any, Any, Any]:
    """examples/rest.yaml applied to a stack without its tenant, then applied again: (the
    tenant looked up before, the first apply, the second). Every test of the tenant needs it;
    it runs once, before the first of them."""
    before = hubctl("get", "tenant", TENANT, check=False)
    first = hubctl("apply", "-f", str(EXAMPLES / "rest.yaml"))
    second = hubctl("apply", "-f", str(EXAMPLES / "rest.yaml"))
    return before, first, second


def partner(local_stack: LocalStack, key: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.Client(base_url=local_stack.api_url, headers=headers, timeout=30, trust_env=False)


def purchase_order() -> dict[str, Any]:
    """The example payload with its own business key (the integration rejects a repeated one)."""
    payload = json.loads((EXAMPLES / "payloads/purchase_order.json").read_text())
    po_number = f"PO-{uuid.uuid4().hex[:8]}"
    return {
        "integration_id": INTEGRATION,
        "message_type": "purchase_order",
        "external_id": po_number,
        "payload": {**payload, "po_number": po_number},
    }


def receive(client: httpx.Client) -> httpx.Response:
    return client.post("/api/edi-hub/receive-message", json=purchase_order())


def new_key(hubctl: Hubctl, label: str) -> dict[str, Any]:
    argv = ("keys", "create", "--tenant", TENANT, "--label", label, "--integration", INTEGRATION)
    created: dict[str, Any] = hubctl.json(*argv)
    return created


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens once it is closed


def test_apply_to_a_new_tenant_then_unchanged_then_a_key_and_the_partners_first_message_is_sent(
    applied, hubctl, local_stack, erp
):
    before, first, second = applied

    assert before.returncode == 1
    assert "error: not_found:" in before.stderr
    assert "+ Tenant tnt_acme (create)" in first.stdout
    assert "+ Connection tnt_acme/conn_acme_erp (create)" in first.stdout
    assert "+ Integration tnt_acme/int_acme_orders (create)" in first.stdout
    assert '    auth.token: "***"' in first.stdout
    assert ERP_TOKEN not in first.stdout + first.stderr
    assert second.stdout.splitlines() == [
        "= Tenant tnt_acme (unchanged)",
        "= Connection tnt_acme/conn_acme_erp (unchanged)",
        "= Integration tnt_acme/int_acme_orders (unchanged)",
    ]

    key = new_key(hubctl, "ACME ERP")["key"]
    with partner(local_stack, key) as client:
        answer = receive(client)
        assert answer.status_code == 202, answer.text
        message_id = answer.json()["message_id"]
        final = wait_for_status(client, message_id, "sent")

    assert final["dest_status"] == "200"
    [delivered] = [r for r in erp.requests if r.headers.get("idempotency-key") == message_id]
    assert (delivered.method, delivered.path) == ("POST", "/orders")
    assert delivered.headers["authorization"] == f"Bearer {ERP_TOKEN}"  # the connection's credential
    assert delivered.headers["x-source"] == "integration-hub"  # and its headers
    assert json.loads(delivered.body)["lines"] == [{"sku": "A-1", "qty": 2}]


def test_a_revoked_key_is_refused_within_the_configuration_cache(applied, hubctl, local_stack):
    created = new_key(hubctl, "to revoke")
    with partner(local_stack, created["key"]) as client:
        assert receive(client).status_code == 202  # now cached by the instance that took it

        revoked = hubctl.json("keys", "revoke", created["key_id"], "--tenant", TENANT)
        assert revoked["state"] == "revoked"
        # Time-based on purpose: the refusal must come within the cache's time (and some slack).
        since = time.monotonic()
        deadline = since + CACHE_SECONDS + SLACK_SECONDS
        while (status := receive(client).status_code) != 401 and time.monotonic() < deadline:
            time.sleep(0.2)

    assert status == 401
    assert time.monotonic() - since <= CACHE_SECONDS + SLACK_SECONDS


def test_a_rotated_key_and_its_successor_both_work_during_the_grace_period(applied, hubctl, local_stack):
    old = new_key(hubctl, "to rotate")

    rotated = hubctl.json("keys", "rotate", old["key_id"], "--tenant", TENANT, "--grace-hours", "2")
    listed = {row["key_id"]: row for row in hubctl.json("keys", "list", "--tenant", TENANT)["items"]}

    assert rotated["previous"]["state"] == "rotating"
    assert listed[old["key_id"]]["state"] == "rotating"
    assert listed[rotated["key_id"]]["rotated_from"] == old["key_id"]
    # Past the cache too: the old key's item, reloaded, still says it works until its end.
    time.sleep(CACHE_SECONDS + 0.5)  # time-based on purpose: the cache's time
    with partner(local_stack, old["key"]) as before, partner(local_stack, rotated["key"]) as after:
        assert (receive(before).status_code, receive(after).status_code) == (202, 202)


def test_the_sap_idoc_example_applies_twice_unchanged_and_previews_its_mapped_body(applied, hubctl, erp):
    hubctl.env.update(WMS_URL=erp.url, WMS_CLIENT_SECRET="wms-client-secret-value")
    sap = str(EXAMPLES / "sap_idoc_to_rest.yaml")
    hubctl("apply", "-f", sap)
    again = hubctl("apply", "-f", sap)
    sample = str(EXAMPLES / "payloads/orders05.xml")

    argv = ("preview", "int_sap_orders", "sap_orders05", "--tenant", TENANT, "--payload")
    preview = hubctl.json(*argv, sample)
    shown = hubctl(*argv, sample)
    broken = hubctl(
        *argv, "-",
        stdin="<ORDERS05><IDOC><E1EDK01><BELNR>1</BELNR></E1EDK01></IDOC></ORDERS05>",
        check=False,
    )  # fmt: skip

    assert again.stdout.splitlines() == [
        "= Tenant tnt_acme (unchanged)",  # the file holds its tenant (rest.yaml's, alike)
        "= Connection tnt_acme/conn_acme_wms (unchanged)",
        "= Integration tnt_acme/int_sap_orders (unchanged)",
    ]
    assert preview["ok"] is True
    assert preview["content_type"] == "application/json"
    order = json.loads(preview["body"])["order"]
    assert order["number"] == "4500001234"
    assert order["delivery_date"] == "2024-01-31"
    assert [(line["sku"], line["line"]) for line in order["lines"]] == [("MAT-001", 10), ("MAT-002", 20)]
    assert shown.stdout.startswith("ok: content_type application/json\n")
    assert '"number":"4500001234"' in shown.stdout
    assert broken.returncode == 1
    assert broken.stdout.startswith("mapping failed: ")


def test_the_connection_test_is_ok_against_a_live_server_and_names_the_error_class_of_a_closed_port(
    applied, hubctl, tmp_path
):
    live = hubctl.json("test", CONNECTION, "--tenant", TENANT)
    closed = tmp_path / "closed.yaml"
    closed.write_text(
        f"kind: Connection\ntenant: {TENANT}\nid: conn_acme_closed\n"
        f"spec:\n  protocol: http\n  url: http://127.0.0.1:{closed_port()}/orders\n"
    )
    hubctl("apply", "-f", str(closed))

    refused = hubctl("test", "conn_acme_closed", "--tenant", TENANT, check=False)
    as_json = hubctl("-o", "json", "test", "conn_acme_closed", "--tenant", TENANT, check=False)

    assert (live["ok"], live["error_class"], live["dest_status"]) == (True, None, "200")
    assert refused.returncode == 1
    assert "ok:          no" in refused.stdout
    error_class = json.loads(as_json.stdout)["error_class"]
    assert error_class
    assert f"error_class: {error_class}" in refused.stdout


def test_tokens_create_list_revoke_and_the_audit_log(applied, hubctl, local_stack, tmp_path):
    # Its own key: xdist may run this module's tests apart, each part on a stack of its own.
    new_key(hubctl, "audited key")
    created = hubctl.json(
        "tokens", "create", "--label", "acme viewer", "--role", "viewer", "--tenant", TENANT
    )
    viewer = Hubctl(local_stack.function_urls["AdminApiFunction"], created["token"], tmp_path)

    listed = hubctl.json("tokens", "list", "--tenant", TENANT)["items"]
    reads = viewer("list", "integrations", "--tenant", TENANT)
    writes = viewer("keys", "create", "--tenant", TENANT, check=False)
    elsewhere = viewer("get", "tenant", DEMO_TENANT_ID, check=False)
    revoked = hubctl.json("tokens", "revoke", created["token_id"])
    after = viewer("list", "integrations", "--tenant", TENANT, check=False)
    audit = hubctl.json("audit", "--tenant", TENANT, "--limit", "100")["items"]
    table = hubctl("audit", "--tenant", TENANT, "--limit", "100").stdout

    assert created["token"] not in json.dumps(listed)
    assert [t["token_id"] for t in listed if t["label"] == "acme viewer"] == [created["token_id"]]
    assert INTEGRATION in reads.stdout
    assert (writes.returncode, writes.stderr.split(":")[:2]) == (1, ["error", " forbidden"])
    assert (elsewhere.returncode, "error: not_found:" in elsewhere.stderr) == (1, True)
    assert revoked["state"] == "revoked"
    assert after.returncode == 1
    assert "(HTTP 401)" in after.stderr
    actions = [entry["action"] for entry in audit]
    for action in (
        "tenant.created",
        "connection.created",
        "integration.created",
        "api_key.created",
        "admin_token.created",
        "admin_token.revoked",
    ):
        assert action in actions, (len(actions), actions)
    assert actions.index("admin_token.revoked") < actions.index("tenant.created")  # newest first
    assert {entry["actor"]["label"] for entry in audit} == {"bootstrap admin token"}
    assert table.splitlines()[0].split() == ["AT", "ACTOR", "ACTION", "TARGET"]
    assert created["token"] not in table + json.dumps(audit)
    assert ERP_TOKEN not in table + json.dumps(audit)


def test_deletes_are_refused_while_in_use_then_done(applied, hubctl, tmp_path, local_stack):
    spare = tmp_path / "spare.yaml"
    spare.write_text(
        f"kind: Connection\ntenant: {TENANT}\nid: conn_acme_spare\n"
        "spec:\n  protocol: http\n  url: https://spare.example.test/orders\n"
        "---\n"
        f"kind: Integration\ntenant: {TENANT}\nid: int_acme_spare\n"
        "spec:\n  name: spare\n  connection_id: conn_acme_spare\n"
        "  message_types: {purchase_order: {}}\n"
    )
    hubctl("apply", "-f", str(spare))
    key = new_key(hubctl, "recent traffic")["key"]
    with partner(local_stack, key) as client:
        assert receive(client).status_code == 202

    connection_in_use = hubctl("delete", "connection", "conn_acme_spare", "--tenant", TENANT, check=False)
    integration_in_use = hubctl("delete", "integration", INTEGRATION, "--tenant", TENANT, check=False)
    integration = hubctl("delete", "integration", "int_acme_spare", "--tenant", TENANT)
    connection = hubctl("delete", "connection", "conn_acme_spare", "--tenant", TENANT)
    gone = hubctl("get", "connection", "conn_acme_spare", "--tenant", TENANT, check=False)

    assert connection_in_use.returncode == 1
    assert "error: connection_in_use:" in connection_in_use.stderr
    assert "(HTTP 409)" in connection_in_use.stderr
    assert "int_acme_spare" in connection_in_use.stderr  # details name the integration using it
    assert integration_in_use.returncode == 1  # it received a message a moment ago
    assert "error: integration_in_use:" in integration_in_use.stderr
    assert integration.stdout == "integration/int_acme_spare deleted (tenant tnt_acme)\n"
    assert connection.stdout == "connection/conn_acme_spare deleted (tenant tnt_acme)\n"
    assert gone.returncode == 1
    assert "(HTTP 404)" in gone.stderr


def test_the_demo_data_is_the_admin_apis_own_made_by_the_seed_principal_and_seeding_again_changes_nothing(
    hubctl, local_stack
):
    integration = hubctl.json("get", "integration", DEMO_INTEGRATION_ID, "--tenant", DEMO_TENANT_ID)
    webhooks = hubctl.json("get", "integration", DEMO_WEBHOOK_INTEGRATION_ID, "--tenant", DEMO_TENANT_ID)
    connection = hubctl.json("get", "connection", DEMO_CONNECTION_ID, "--tenant", DEMO_TENANT_ID)
    audit = hubctl.json("audit", "--tenant", DEMO_TENANT_ID, "--limit", "100")["items"]

    seed(local_stack)  # as a restart of a stack that kept its state would
    audit_again = hubctl.json("audit", "--tenant", DEMO_TENANT_ID, "--limit", "100")["items"]
    again = hubctl.json("get", "integration", DEMO_INTEGRATION_ID, "--tenant", DEMO_TENANT_ID)

    assert (integration["connection_id"], integration["destination"], integration["version"]) == (
        DEMO_CONNECTION_ID,
        None,
        1,
    )
    assert webhooks["connection_id"] == DEMO_CONNECTION_ID
    assert "whsec_" not in json.dumps(webhooks)  # the webhook secret is write-only
    assert (connection["url"], connection["version"]) == (local_stack.echo_url, 1)
    assert sorted(entry["action"] for entry in audit) == [
        "api_key.created",
        "connection.created",
        "integration.created",
        "integration.created",
        "tenant.created",
    ]
    assert {(e["actor"]["token_id"], e["actor"]["label"]) for e in audit} == {
        (SEED_PRINCIPAL.token_id, SEED_PRINCIPAL.label)
    }
    assert audit_again == audit
    assert again["version"] == 1


def test_every_file_in_examples_applies_then_applies_again_unchanged(applied, hubctl, erp):
    """The examples a newcomer copies are what the hub accepts end to end: each file through
    `hubctl apply` on the real admin API (egress check, secret binding, tenant-scoped ids), after
    rest.yaml made their tenant, then again, unchanged. The SEFAZ connection carries its A1
    certificate from the environment, as its file says (tests/e2e/test_examples.py runs each
    file's header as written on a hub without the tenant)."""
    hubctl.env.update(
        WMS_URL=erp.url,
        WMS_CLIENT_SECRET="wms-client-secret-value",
        ACME_HOOK_URL=f"{erp.url}/hub-events",
        SHOP_WEBHOOK_SECRET="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        SEFAZ_PFX_BASE64=base64.b64encode(build_pki().client_pfx).decode(),
        SEFAZ_PFX_PASSWORD=PFX_PASSWORD.decode(),
    )
    files = sorted(EXAMPLES.glob("*.yaml"))

    first = {path.name: hubctl("apply", "-f", str(path), check=False) for path in files}
    second = {path.name: hubctl("apply", "-f", str(path), check=False) for path in files}

    assert {"rest.yaml", "sap_idoc_to_rest.yaml", "sefaz_nfe_status.yaml", "signed_webhook.yaml"} <= set(
        first
    )
    for name, done in first.items():
        assert done.returncode == 0, (name, done.stdout, done.stderr)
    for name, again in second.items():
        lines = again.stdout.splitlines()
        assert again.returncode == 0, (name, again.stdout, again.stderr)
        assert lines, name
        assert all(line.endswith("(unchanged)") for line in lines), (name, lines)
