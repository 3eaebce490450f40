"""Scenario A on the local stack: partner API -> SQS -> worker (its own process) -> the echo
destination, every resource from template.yaml."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from devstack.demo import DEMO_INTEGRATION_ID, DEMO_TENANT_ID, demo_body, pointed_at
from hub.adapters.dynamodb import DynamoConfigRepository
from hub.domain.retry import RetryPolicy
from hub.domain.tenancy import Destination, Integration, IntegrationMode
from tests.destinations import Answer, HttpDestination

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


def test_scenario_b_a_503_is_retried_by_the_scheduler_and_then_sent(api: httpx.Client, local_stack):
    """The whole retry path on the local stack: the worker schedules a one-time EventBridge
    Scheduler schedule, the local runtime fires it into the pipeline queue, the retry is sent."""
    with HttpDestination() as destination, pointed_at(local_stack):
        destination.script(Answer(503, '{"error": "maintenance"}'), Answer(200))
        DynamoConfigRepository(local_stack.resources["HubTable"]).put_integration(
            Integration(
                integration_id=DEMO_INTEGRATION_ID,
                tenant_id=DEMO_TENANT_ID,
                name="retrying",
                mode=IntegrationMode.ORCHESTRATION,
                destination=Destination(url=destination.url),
                retry_policy=RetryPolicy(retry_auto_enabled=True, retry_max=3, ladder_seconds=(1,)),
            )
        )
        body = demo_body()
        body["payload"] = {**body["payload"], "po_number": f"PO-{uuid.uuid4().hex[:8]}"}
        message_id = api.post("/api/edi-hub/receive-message", json=body).json()["message_id"]

        final = wait_for_status(api, message_id, "sent")

        assert final["retry_count"] == 1
        assert final["last_retry_error_class"] == "http_5xx"
        assert [r.headers["idempotency-key"] for r in destination.requests] == [message_id, message_id]
