"""hubctl, run as a real process (the installed console script), against the local stack's admin
Function URL: the commands whose routes exist today (tenants, API keys, the queue and operator
actions, DLQ redrive, client certificates) and `apply` of a tenant."""

from __future__ import annotations

import uuid

import httpx
import pytest

from devstack.demo import (
    DEMO_ADMIN_TOKEN,
    DEMO_INTEGRATION_ID,
    DEMO_MESSAGE_TYPE,
    DEMO_TENANT_ID,
    demo_body,
    pointed_at,
)
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.retry import RetryPolicy
from hub.domain.tenancy import Destination, Integration, IntegrationMode, MessageTypeConfig
from tests.destinations import Answer, HttpDestination
from tests.hubctl_process import SCRIPT, Hubctl
from tests.pipeline import wait_for_status
from tests.pki import PFX_PASSWORD, build_pki

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e-hubctl")]


@pytest.fixture
def hubctl(local_stack, tmp_path) -> Hubctl:
    assert SCRIPT.is_file(), "make install installs the hubctl console script into .venv/bin"
    return Hubctl(local_stack.function_urls["AdminApiFunction"], DEMO_ADMIN_TOKEN, tmp_path)


@pytest.fixture
def destination():
    with HttpDestination() as server:
        yield server


def integration_to(local_stack, destination: HttpDestination, policy: RetryPolicy) -> str:
    """A fresh integration of the demo tenant (the integrations route is another piece's)."""
    integration_id = f"int_ctl_{uuid.uuid4().hex[:8]}"
    with pointed_at(local_stack):
        DynamoConfigRepository(local_stack.resources["HubTable"]).put_integration(
            Integration(
                integration_id=integration_id,
                tenant_id=DEMO_TENANT_ID,
                name=integration_id,
                mode=IntegrationMode.ORCHESTRATION,
                destination=Destination(url=destination.url),
                message_types={DEMO_MESSAGE_TYPE: MessageTypeConfig()},
                retry_policy=policy,
            )
        )
    return integration_id


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
    assert "state:" in revoked.stdout
    assert "revoked" in revoked.stdout
    assert post(local_stack, new_key).status_code == 401  # this stack keeps no configuration cache


def test_a_created_key_is_printed_once_with_a_warning(hubctl):
    ran = hubctl("keys", "create", "--tenant", DEMO_TENANT_ID)

    assert "key:" in ran.stdout
    assert "hub_" in ran.stdout
    assert "only time the key is shown" in ran.stderr


def test_messages_list_show_and_reprocess_an_error(hubctl, local_stack, destination):
    destination.script(Answer(400), Answer(200))
    integration_id = integration_to(local_stack, destination, RetryPolicy())
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
    integration_id = integration_to(local_stack, destination, policy)
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
    assert "pipeline_status:" in cancelled.stdout
    assert "cancelled" in cancelled.stdout
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
