"""Scenario A on the local stack: partner API -> SQS -> worker (its own process) -> the echo
destination, every resource from template.yaml."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from devstack.demo import demo_body

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e-pipeline")]


def wait_for_status(api: httpx.Client, message_id: str, wanted: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    seen: dict = {}
    while time.monotonic() < deadline:
        seen = api.get(f"/api/edi-hub/messages/{message_id}").json()
        if seen.get("pipeline_status") == wanted:
            return seen
        time.sleep(0.2)
    raise AssertionError(f"{message_id} stayed {seen.get('pipeline_status')!r}, never {wanted!r}")


def test_scenario_a_received_mapped_sent(api: httpx.Client, local_stack):
    body = demo_body()
    body["payload"] = {**body["payload"], "po_number": f"PO-{uuid.uuid4().hex[:8]}"}

    answer = api.post("/api/edi-hub/receive-message", json=body)
    assert answer.status_code == 202
    message_id = answer.json()["message_id"]

    final = wait_for_status(api, message_id, "sent")

    assert final["dest_status"] == "200"
    seen = [r for r in local_stack.echo.requests if r.headers.get("idempotency-key") == message_id]
    assert len(seen) == 1
