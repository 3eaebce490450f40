"""hubctl, run as a real process (the installed console script), against the local stack's admin
Function URL: the commands whose routes exist today (tenants, API keys, the queue and operator
actions, DLQ redrive, client certificates), `apply` of a tenant, and the kubectl grammar (nouns
and their aliases, the default tenant, -o formats, describe's timeline, reprocess --force, find
and bulk jobs)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
import yaml

from devstack.demo import (
    DEMO_ADMIN_TOKEN,
    DEMO_INTEGRATION_ID,
    DEMO_TENANT_ID,
    demo_body,
)
from hub.domain.retry import RetryPolicy
from tests.destinations import Answer, HttpDestination
from tests.hubctl_process import SCRIPT, Hubctl
from tests.pipeline import integration, wait_for_status
from tests.pki import PFX_PASSWORD, build_pki
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def hubctl(local_stack, tmp_path) -> Hubctl:
    assert SCRIPT.is_file(), "make install installs the hubctl console script into .venv/bin"
    return Hubctl(local_stack.function_urls["AdminApiFunction"], DEMO_ADMIN_TOKEN, tmp_path)


@pytest.fixture
def destination():
    with HttpDestination() as server:
        yield server


def post(local_stack, key: str, integration_id: str = DEMO_INTEGRATION_ID) -> httpx.Response:
    body = {**demo_body(), "integration_id": integration_id}
    body["payload"] = {**body["payload"], "po_number": f"PO-{uuid.uuid4().hex[:8]}"}
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.post(
        f"{local_stack.api_url}/api/edi-hub/receive-message",
        json=body,
        headers=headers,
        timeout=30,
        trust_env=False,
    )


def test_tenants_list_and_get(hubctl):
    listed = hubctl("list", "tenants")
    shown = hubctl.json("get", "tenant", DEMO_TENANT_ID)

    assert listed.stdout.splitlines()[0].split() == [
        "TENANT_ID",
        "NAME",
        "DEFAULT_MODE",
        "STATE",
        "CREATED_AT",
    ]
    assert any(line.startswith(DEMO_TENANT_ID) for line in listed.stdout.splitlines())
    assert shown["tenant_id"] == DEMO_TENANT_ID
    assert shown["state"] == "active"


def test_an_unknown_tenant_prints_the_apis_error_and_exits_1(hubctl):
    ran = hubctl("get", "tenant", "tnt_nobody_here", check=False)

    assert ran.returncode == 1
    assert ran.stderr.startswith("error: not_found: ")
    assert "(HTTP 404)" in ran.stderr


def test_apply_creates_a_tenant_then_changes_nothing_then_updates_it(hubctl, tmp_path):
    tenant = f"tnt_ctl_{uuid.uuid4().hex[:8]}"
    manifest = tmp_path / "tenant.yaml"
    manifest.write_text(f"kind: Tenant\ntenant: {tenant}\nspec:\n  name: ${{TENANT_NAME}}\n")
    hubctl.env["TENANT_NAME"] = "ACME Ltda"

    dry = hubctl("apply", "-f", str(manifest), "--dry-run")
    assert hubctl("get", "tenant", tenant, check=False).returncode == 1  # the dry run created nothing
    created = hubctl("apply", "-f", str(manifest))
    again = hubctl("apply", "-f", str(manifest))
    hubctl.env["TENANT_NAME"] = "ACME Comercio Ltda"
    changed = hubctl("apply", "-f", str(manifest))

    assert f"+ Tenant {tenant} (create)" in dry.stdout
    assert "dry run: nothing was changed" in dry.stdout
    assert f"+ Tenant {tenant} (create)" in created.stdout
    assert again.stdout.strip() == f"= Tenant {tenant} (unchanged)"
    assert 'name: "ACME Ltda" -> "ACME Comercio Ltda"' in changed.stdout
    assert hubctl.json("get", "tenant", tenant)["name"] == "ACME Comercio Ltda"


def test_keys_create_list_rotate_and_revoke(hubctl, local_stack):
    created = hubctl.json("keys", "create", "--tenant", DEMO_TENANT_ID, "--label", "hubctl e2e",
                          "--integration", DEMO_INTEGRATION_ID)  # fmt: skip
    key, key_id = created["key"], created["key_id"]
    assert post(local_stack, key).status_code == 202

    listed = hubctl("keys", "list", "--tenant", DEMO_TENANT_ID, "--limit", "100").stdout
    assert key_id in listed
    assert key not in listed

    rotated = hubctl.json("keys", "rotate", key_id, "--tenant", DEMO_TENANT_ID, "--grace-hours", "1")
    new_key, new_id = rotated["key"], rotated["key_id"]
    assert rotated["previous"]["state"] == "rotating"
    assert post(local_stack, key).status_code == 202  # the old key, within its grace period
    assert post(local_stack, new_key).status_code == 202

    revoked = hubctl("keys", "revoke", new_id, "--tenant", DEMO_TENANT_ID)
    assert revoked.stdout == f"key/{new_id} revoked (state revoked)\n"
    assert post(local_stack, new_key).status_code == 401  # this stack keeps no configuration cache


def test_a_created_key_is_printed_once_with_a_warning(hubctl):
    ran = hubctl("keys", "create", "--tenant", DEMO_TENANT_ID)

    assert "key:" in ran.stdout
    assert "hub_" in ran.stdout
    assert "only time the key is shown" in ran.stderr


def test_messages_list_show_and_reprocess_an_error(hubctl, local_stack, destination):
    destination.script(Answer(400), Answer(200))
    integration_id = integration(local_stack, destination.url, RetryPolicy())
    answer = post(local_stack, "hub_demo_local-only-key-0000000000000000000000", integration_id)
    message_id = answer.json()["message_id"]
    partner = httpx.Client(
        base_url=local_stack.api_url,
        headers={"Authorization": "Bearer hub_demo_local-only-key-0000000000000000000000"},
        trust_env=False,
    )
    wait_for_status(partner, message_id, "error")

    tab = hubctl("messages", "list", "--tenant", DEMO_TENANT_ID, "--tab", "error", "--limit", "100")
    shown = hubctl.json("messages", "show", message_id)
    reprocessed = hubctl.json("messages", "reprocess", message_id)

    assert message_id in tab.stdout
    assert tab.stdout.splitlines()[0].split()[:4] == [
        "MESSAGE_ID",
        "INTEGRATION_ID",
        "MESSAGE_TYPE",
        "PIPELINE_STATUS",
    ]
    assert shown["message_id"] == message_id
    assert shown["pipeline_status"] == "error"
    assert shown["log"]
    assert reprocessed["pipeline_status"] == "received"
    assert wait_for_status(partner, message_id, "sent")["pipeline_status"] == "sent"


def test_messages_cancel_a_waiting_retry(hubctl, local_stack, destination):
    destination.script(Answer(503))
    policy = RetryPolicy(retry_auto_enabled=True, retry_max=3, ladder_seconds=(30,))
    integration_id = integration(local_stack, destination.url, policy)
    key = "hub_demo_local-only-key-0000000000000000000000"
    message_id = post(local_stack, key, integration_id).json()["message_id"]
    partner = httpx.Client(
        base_url=local_stack.api_url, headers={"Authorization": f"Bearer {key}"}, trust_env=False
    )
    wait_for_status(partner, message_id, "retry_pending")

    waiting = hubctl.json(
        "messages", "list", "--tenant", DEMO_TENANT_ID, "--tab", "waiting", "--limit", "100"
    )
    cancelled = hubctl("messages", "cancel", message_id)
    again = hubctl("messages", "cancel", message_id)

    assert message_id in [row["message_id"] for row in waiting["items"]]
    assert cancelled.stdout == f"message/{message_id} cancelled (pipeline_status cancelled)\n"
    assert again.returncode == 0  # cancelling a cancelled message answers it again
    not_cancellable = hubctl("messages", "cancel", "msg_" + "0" * 26, check=False)
    assert not_cancellable.returncode == 1
    assert "error: not_found:" in not_cancellable.stderr


def test_dlq_redrive(hubctl):
    moved = hubctl.json("dlq", "redrive", "pipeline")
    unknown = hubctl("dlq", "redrive", "nolane", check=False)

    assert moved == {"lane": "pipeline", "moved": 0}
    assert unknown.returncode == 1
    assert "error: not_found:" in unknown.stderr


def test_certificates_upload_with_the_password_on_stdin_then_show(hubctl, tmp_path):
    pfx = tmp_path / "a1.pfx"
    pfx.write_bytes(build_pki().client_pfx)
    connection = f"conn_ctl_{uuid.uuid4().hex[:8]}"

    upload = (
        "certificates",
        "upload",
        connection,
        "--tenant",
        DEMO_TENANT_ID,
        "--pfx",
        str(pfx),
        "--password-stdin",
    )

    uploaded = hubctl.json(*upload, stdin=PFX_PASSWORD.decode() + "\n")
    shown = hubctl.json("certificates", "show", connection, "--tenant", DEMO_TENANT_ID)
    wrong = hubctl(*upload, stdin="wrong\n", check=False)

    assert uploaded["connection_id"] == connection
    assert uploaded["subject"] == shown["subject"]
    assert "Hub Test Client" in shown["subject"]
    assert isinstance(shown["cert_expires_in_days"], int)
    assert wrong.returncode == 1
    assert "error: certificate_password_invalid:" in wrong.stderr


# --- the kubectl grammar (issue 28, point 6) --------------------------------------------------

DEMO_KEY = "hub_demo_local-only-key-0000000000000000000000"


def partner_client(local_stack) -> httpx.Client:
    return httpx.Client(
        base_url=local_stack.api_url, headers={"Authorization": f"Bearer {DEMO_KEY}"}, trust_env=False
    )


def delivered(local_stack, integration_id: str = DEMO_INTEGRATION_ID) -> str:
    """A new message of the demo tenant, delivered (`sent`): its id."""
    message_id = post(local_stack, DEMO_KEY, integration_id).json()["message_id"]
    with partner_client(local_stack) as partner:
        wait_for_status(partner, message_id, "sent")
    return str(message_id)


def test_nouns_by_any_name_and_the_old_spellings_print_the_same(hubctl):
    hubctl.env["HUB_TENANT"] = DEMO_TENANT_ID

    tenants = [hubctl("get", noun).stdout for noun in ("tenants", "tenant", "tnt")]
    integrations = [hubctl("get", noun).stdout for noun in ("integrations", "int")]
    old_integrations = hubctl("list", "integrations", "--tenant", DEMO_TENANT_ID).stdout
    keys, old_keys = (
        hubctl("get", "keys", "--limit", "100").stdout,
        hubctl("keys", "list", "--limit", "100").stdout,
    )
    one = hubctl("get", "int", DEMO_INTEGRATION_ID).stdout.splitlines()
    named = hubctl("get", "conns", "-o", "name").stdout.splitlines()

    assert tenants[0] == tenants[1] == tenants[2]
    assert DEMO_TENANT_ID in tenants[0]
    assert integrations[0] == integrations[1] == old_integrations
    assert DEMO_INTEGRATION_ID in integrations[0]
    assert keys == old_keys
    assert one[0].split()[:2] == ["INTEGRATION_ID", "NAME"]
    assert one[1].startswith(DEMO_INTEGRATION_ID)
    assert "connection/conn_demo_echo" in named


def test_the_default_tenant_comes_from_a_profile_and_its_absence_is_exit_2(hubctl, tmp_path):
    missing = hubctl("get", "integrations", check=False)
    profile = tmp_path / "profiles.toml"
    profile.write_text(f'default_profile = "ops"\n\n[profiles.ops]\ntenant = "{DEMO_TENANT_ID}"\n')
    hubctl.env["HUBCTL_CONFIG"] = str(profile)

    listed = hubctl.json("get", "integrations")

    assert missing.returncode == 2
    assert "error: no tenant: pass --tenant" in missing.stderr
    assert DEMO_INTEGRATION_ID in [row["integration_id"] for row in listed["items"]]
    assert listed == hubctl.json("get", "integrations", "--tenant", DEMO_TENANT_ID)


def test_yaml_reads_back_as_the_json_and_name_prints_kind_slash_id(hubctl):
    as_json = hubctl.json("get", "tenant", DEMO_TENANT_ID)
    as_yaml = yaml.safe_load(hubctl("get", "tenant", DEMO_TENANT_ID, "-o", "yaml").stdout)
    names = hubctl("get", "tenants", "-o", "name").stdout.splitlines()

    assert as_yaml == as_json
    assert f"tenant/{DEMO_TENANT_ID}" in names
    assert all(name.startswith("tenant/") for name in names)


def test_describe_message_prints_its_timeline_one_row_per_entry(hubctl, local_stack):
    message_id = delivered(local_stack)

    text = hubctl("describe", "message", message_id).stdout
    by_name = hubctl("describe", f"message/{message_id}").stdout
    view = hubctl.json("describe", "msg", message_id)

    lines = text.splitlines()
    assert f"message_id:      {message_id}" in lines
    start = lines.index("Timeline (oldest first):")
    assert lines[start + 1].split() == ["AT", "KIND", "WHAT", "DETAIL"]
    rows = lines[start + 2 : start + 2 + len(view["timeline"])]
    assert [row.split()[0] for row in rows] == [entry["at"] for entry in view["timeline"]]
    assert [row.split()[1] for row in rows] == [entry["kind"] for entry in view["timeline"]]
    assert any("message.sent (status sent)" in row for row in rows)
    assert any(row.split()[1] == "attempt" and "Delivery attempt 1" in row for row in rows)
    assert by_name == text


def test_an_action_prints_one_line(hubctl, local_stack, destination):
    destination.script(Answer(400), Answer(200))
    integration_id = integration(local_stack, destination.url, RetryPolicy())
    message_id = post(local_stack, DEMO_KEY, integration_id).json()["message_id"]
    with partner_client(local_stack) as partner:
        wait_for_status(partner, message_id, "error")

        ran = hubctl("reprocess", message_id)

        wait_for_status(partner, message_id, "sent")
    assert ran.stdout.startswith(f"message/{message_id} reprocessed (execution exe_")
    assert len(ran.stdout.splitlines()) == 1


def test_reprocess_twice_the_second_is_refused_already_delivered_then_force_sends_it(
    hubctl, local_stack, destination
):
    destination.script(Answer(400), Answer(200))
    integration_id = integration(local_stack, destination.url, RetryPolicy())
    message_id = post(local_stack, DEMO_KEY, integration_id).json()["message_id"]
    with partner_client(local_stack) as partner:
        wait_for_status(partner, message_id, "error")
        first = hubctl("reprocess", message_id)
        wait_for_status(partner, message_id, "sent")

        second = hubctl("reprocess", message_id, check=False)
        sends_before_force = len(destination.requests)
        forced = hubctl("reprocess", message_id, "--force")
        wait_for(
            lambda: len(destination.requests),
            "the forced send",
            until=lambda sends: sends > sends_before_force,
        )
        wait_for_status(partner, message_id, "sent")

    assert first.returncode == 0
    assert second.returncode == 1
    assert second.stderr.startswith("error: already_delivered: ")
    assert "(HTTP 409)" in second.stderr
    assert f"hint: the destination already accepted message {message_id}" in second.stderr
    assert f"hubctl reprocess {message_id} --force" in second.stderr
    assert sends_before_force == 2  # the refusal sent nothing
    assert forced.stdout.startswith(f"message/{message_id} reprocessed with --force (execution exe_")
    assert len(destination.requests) == 3


def test_find_a_message_by_its_external_id(hubctl, local_stack):
    body = {**demo_body(), "external_id": f"PO-{uuid.uuid4().hex[:10]}"}
    answer = httpx.post(
        f"{local_stack.api_url}/api/edi-hub/receive-message",
        json=body,
        headers={"Authorization": f"Bearer {DEMO_KEY}"},
        timeout=30,
        trust_env=False,
    )
    message_id = answer.json()["message_id"]
    hubctl.env["HUB_TENANT"] = DEMO_TENANT_ID

    found = hubctl.json("find", body["external_id"])
    by_get = hubctl("get", "messages", "--find", body["external_id"], "--by", "external_id").stdout
    names = hubctl("find", body["external_id"], "-o", "name").stdout
    nothing = hubctl("find", f"PO-none-{uuid.uuid4().hex}")

    assert [(row["message_id"], row["matched_by"]) for row in found["items"]] == [(message_id, "external_id")]
    assert by_get.splitlines()[1].split()[:2] == [message_id, "external_id"]
    assert names == f"message/{message_id}\n"
    assert nothing.stdout.strip() == "(none)"


def test_bulk_reprocess_of_the_error_tab_waits_until_each_message_is_delivered(
    hubctl, local_stack, destination
):
    destination.script(Answer(400))
    integration_id = integration(local_stack, destination.url, RetryPolicy())
    with partner_client(local_stack) as partner:
        ids = [post(local_stack, DEMO_KEY, integration_id).json()["message_id"] for _ in range(3)]
        for message_id in ids:
            wait_for_status(partner, message_id, "error")
        destination.script(Answer(200))

        # --timeout: hubctl's own bound, there for a hung run only.
        ran = hubctl(
            "bulk", "reprocess", "--tab", "error", "--integration", integration_id,
            "--tenant", DEMO_TENANT_ID, "--wait", "--interval", "0.5", "--timeout", "900",
        )  # fmt: skip

        for message_id in ids:
            wait_for_status(partner, message_id, "sent")
    job_id = ran.stdout.split()[0].removeprefix("bulk-job/")
    job: dict[str, Any] = hubctl.json("bulk", "get", job_id, "--tenant", DEMO_TENANT_ID)
    listed = hubctl("bulk", "get", "--tenant", DEMO_TENANT_ID, "-o", "name").stdout.splitlines()

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"bulk-job/{job_id} completed: matched 3, done 3, skipped 0, failed 0")
    assert (
        f"bulk-job/{job_id} created: reprocess of error messages, integration {integration_id}" in ran.stderr
    )
    assert (job["state"], job["matched"], job["done"]) == ("completed", 3, 3)
    assert f"bulk-job/{job_id}" in listed
    assert len(destination.requests) == 6  # each message delivered once after its failure


def test_bulk_cancel_of_the_waiting_tab(hubctl, local_stack, destination):
    destination.script(Answer(503))
    policy = RetryPolicy(retry_auto_enabled=True, retry_max=3, ladder_seconds=(300,))
    integration_id = integration(local_stack, destination.url, policy)
    with partner_client(local_stack) as partner:
        message_id = post(local_stack, DEMO_KEY, integration_id).json()["message_id"]
        wait_for_status(partner, message_id, "retry_pending")

        created = hubctl.json(
            "bulk", "cancel", "--tab", "waiting", "--integration", integration_id, "--tenant", DEMO_TENANT_ID
        )
        waited = hubctl(
            "bulk", "get", created["job_id"], "--wait", "--interval", "0.5", "--tenant", DEMO_TENANT_ID
        )
        wait_for_status(partner, message_id, "cancelled")

    assert created["action"] == "cancel"
    assert waited.returncode == 0, waited.stderr
    assert waited.stdout.startswith(f"bulk-job/{created['job_id']} completed: matched 1, done 1")
