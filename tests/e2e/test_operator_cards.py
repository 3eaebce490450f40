"""The backend of the operator page's sign-in and Integrations view (issue 13) on the local
stack, over HTTP to the admin Function URL: who a token is (`/api/admin/me`) and the demo
tenant's integration cards, whose badge follows a pause of the demo connection."""

from __future__ import annotations

import httpx
import pytest

from devstack.demo import DEMO_CONNECTION_ID, DEMO_INTEGRATION_ID, DEMO_TENANT_ID, DEMO_WEBHOOK_INTEGRATION_ID
from devstack.stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e-local-stack")]

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
