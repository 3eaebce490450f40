"""Delivery-status callbacks (issue 12, pattern 5) over HTTP on the local stack: the admin mints
the demo connection's callback token, the demo message is delivered to the echo destination, and
the destination's confirmations arrive out of order and concurrently on the partner API."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from devstack.demo import DEMO_ADMIN_TOKEN, DEMO_CONNECTION_ID, DEMO_TENANT_ID, demo_body
from tests.pipeline import wait_for_status

pytestmark = pytest.mark.e2e

TOKEN_PATH = f"/api/admin/tenants/{DEMO_TENANT_ID}/connections/{DEMO_CONNECTION_ID}/callback-token"


@pytest.fixture(scope="module")
def callback_token(local_stack) -> str:
    """The demo connection's callback token, minted over the admin API (module scope: one mint)."""
    headers = {"Authorization": f"Bearer {DEMO_ADMIN_TOKEN}"}
    url = local_stack.function_urls["AdminApiFunction"]
    with httpx.Client(base_url=url, headers=headers, timeout=30, trust_env=False) as admin:
        minted = admin.post(TOKEN_PATH)
    assert minted.status_code == 201, minted.text
    return str(minted.json()["token"])


def delivered_message(api: httpx.Client) -> str:
    body = demo_body()
    body["payload"] = {**body["payload"], "po_number": f"PO-{uuid.uuid4().hex[:8]}"}
    answer = api.post("/api/edi-hub/receive-message", json=body)
    assert answer.status_code == 202, answer.text
    message_id = str(answer.json()["message_id"])
    wait_for_status(api, message_id, "sent")
    return message_id


def callback(local_stack, message_id: str, token: str | None, body: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=local_stack.api_url, timeout=30, trust_env=False) as client:
        return client.post(f"/api/edi-hub/status-callback/{message_id}", json=body, headers=headers)


def test_callbacks_out_of_order_end_at_read_and_are_all_in_the_message_log(
    api: httpx.Client, admin: httpx.Client, local_stack, callback_token
):
    message_id = delivered_message(api)

    answers = [
        callback(local_stack, message_id, callback_token, {"status": s, "external_ref": f"ref-{s}"})
        for s in ("read", "delivered", "accepted")
    ]

    assert [a.status_code for a in answers] == [202, 200, 200]
    assert {a.json()["delivery_status"] for a in answers} == {"read"}
    view = api.get(f"/api/edi-hub/messages/{message_id}").json()
    assert (view["pipeline_status"], view["delivery_status"]) == ("sent", "read")
    assert view["delivery_status_at"] is not None
    detail = admin.get(f"/api/admin/messages/{message_id}").json()
    assert [c["status"] for c in detail["callbacks"]] == ["accepted", "delivered", "read"]
    assert [c["external_ref"] for c in detail["callbacks"]] == ["ref-accepted", "ref-delivered", "ref-read"]


def test_concurrent_callbacks_over_http_end_at_the_highest_rank(
    api: httpx.Client, admin: httpx.Client, local_stack, callback_token
):
    message_id = delivered_message(api)
    statuses = ["delivered", "accepted", "read", "accepted", "delivered"] * 4

    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(
            pool.map(lambda s: callback(local_stack, message_id, callback_token, {"status": s}), statuses)
        )

    assert {a.status_code for a in answers} <= {200, 202}
    assert 1 <= sum(a.status_code == 202 for a in answers) <= 3
    assert api.get(f"/api/edi-hub/messages/{message_id}").json()["delivery_status"] == "read"
    listed = admin.get(f"/api/admin/messages/{message_id}/callbacks", params={"limit": 100}).json()
    assert len(listed["items"]) == len(statuses)


def test_a_wrong_token_is_401_and_a_bad_body_400(api: httpx.Client, local_stack, callback_token):
    message_id = delivered_message(api)

    wrong = callback(local_stack, message_id, "hub_cb_wrong", {"status": "read"})
    missing = callback(local_stack, message_id, None, {"status": "read"})
    bad = callback(local_stack, message_id, callback_token, {"status": "seen"})

    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "unauthorized")
    assert missing.status_code == 401
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "validation_error")
    assert bad.json()["error"]["details"][0]["field"] == "status"
    assert api.get(f"/api/edi-hub/messages/{message_id}").json()["delivery_status"] is None
