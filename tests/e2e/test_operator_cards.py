"""The backend of the operator page's sign-in and Integrations view (issue 13) on the local
stack, over HTTP to the admin Function URL: who a token is (`/api/admin/me`) and the demo
tenant's integration cards, whose badge follows a pause of the demo connection."""

from __future__ import annotations

import uuid

import httpx
import pytest

from devstack.demo import DEMO_CONNECTION_ID, DEMO_INTEGRATION_ID, DEMO_TENANT_ID, DEMO_WEBHOOK_INTEGRATION_ID
from devstack.stack import LocalStack

pytestmark = pytest.mark.e2e

CARDS = f"/api/admin/tenants/{DEMO_TENANT_ID}/integration-cards"


def test_sign_in_then_the_cards_follow_a_pause(local_stack: LocalStack, admin: httpx.Client) -> None:
    me = admin.get("/api/admin/me")
    assert me.status_code == 200, me.text
    assert (me.json()["platform"], me.json()["can"]["pause"]) == (True, True)

    minted = admin.post(
        "/api/admin/tokens", json={"label": "e2e viewer", "role": "viewer", "tenant_id": DEMO_TENANT_ID}
    )
    assert minted.status_code == 201, minted.text
    viewer = {"Authorization": f"Bearer {minted.json()['token']}"}
    url = local_stack.function_urls["AdminApiFunction"]
    with httpx.Client(base_url=url, headers=viewer, timeout=30, trust_env=False) as page:
        who = page.get("/api/admin/me").json()
        assert (who["role"], who["tenant_id"]) == ("viewer", DEMO_TENANT_ID)
        assert not any(allowed for action, allowed in who["can"].items() if action not in ("view", "preview"))

        cards = {c["integration_id"]: c for c in page.get(CARDS).json()["items"]}
        assert {DEMO_INTEGRATION_ID, DEMO_WEBHOOK_INTEGRATION_ID} <= set(cards)
        assert cards[DEMO_INTEGRATION_ID]["badges"] == []

        assert (
            admin.post(
                f"/api/admin/connections/{DEMO_CONNECTION_ID}/pause", params={"tenant_id": DEMO_TENANT_ID}
            ).status_code
            == 200
        )
        try:
            paused = {c["integration_id"]: c for c in page.get(CARDS).json()["items"]}
            assert paused[DEMO_INTEGRATION_ID]["badges"] == [
                {"kind": "paused", "text": "Paused", "level": "warning"}
            ]
            # The viewer is offered no pause button, and a forged call is refused.
            forged = page.post(
                f"/api/admin/connections/{DEMO_CONNECTION_ID}/resume", params={"tenant_id": DEMO_TENANT_ID}
            )
            assert (forged.status_code, forged.json()["error"]["code"]) == (403, "forbidden")
        finally:
            assert (
                admin.post(
                    f"/api/admin/connections/{DEMO_CONNECTION_ID}/resume",
                    params={"tenant_id": DEMO_TENANT_ID},
                ).status_code
                == 200
            )


def test_a_second_tenant_owns_its_own_resources_under_the_demo_ids(
    local_stack: LocalStack, admin: httpx.Client
) -> None:
    """Issue 27, point 7, over HTTP: a new tenant creates a connection and an integration with the
    demo tenant's ids (201, not 409); pausing its connection leaves the demo's running, and the
    demo's are unchanged."""
    twin = f"tnt_twin_{uuid.uuid4().hex[:8]}"
    assert admin.post("/api/admin/tenants", json={"tenant_id": twin, "name": "Twin"}).status_code == 201
    before = admin.get(f"/api/admin/tenants/{DEMO_TENANT_ID}/connections/{DEMO_CONNECTION_ID}").json()

    connection = admin.post(
        f"/api/admin/tenants/{twin}/connections",
        json={"connection_id": DEMO_CONNECTION_ID, "url": "https://twin.example.com/in"},
    )
    integration = admin.post(
        f"/api/admin/tenants/{twin}/integrations",
        json={"integration_id": DEMO_INTEGRATION_ID, "name": "Twin", "connection_id": DEMO_CONNECTION_ID},
    )
    paused = admin.post(f"/api/admin/connections/{DEMO_CONNECTION_ID}/pause", params={"tenant_id": twin})

    assert (connection.status_code, connection.json()["tenant_id"]) == (201, twin), connection.text
    assert (integration.status_code, integration.json()["tenant_id"]) == (201, twin), integration.text
    assert (paused.status_code, paused.json()["paused"]) == (200, True)
    demo_state = admin.get(
        f"/api/admin/connections/{DEMO_CONNECTION_ID}/state", params={"tenant_id": DEMO_TENANT_ID}
    ).json()
    assert demo_state["paused"] is False
    after = admin.get(f"/api/admin/tenants/{DEMO_TENANT_ID}/connections/{DEMO_CONNECTION_ID}").json()
    assert after == before
