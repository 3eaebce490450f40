"""Failures on the local stack (seed 000, scenarios D, E, G and uncertain timeouts): the real
worker against a real destination server, retries fired by the local EventBridge Scheduler,
operator actions through the admin API's Function URL."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta

import boto3
import pytest

from devstack.demo import DEMO_INTEGRATION_ID, DEMO_TENANT_ID, pointed_at
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.retry import RetryPolicy
from tests.destinations import Answer, HttpDestination
from tests.pipeline import AUTO, integration, post, wait_for_status

pytestmark = pytest.mark.e2e


@pytest.fixture
def destination():
    with HttpDestination() as server:
        yield server


def retry_schedules(local_stack, message_id: str) -> list[str]:
    """Names of the retry schedules waiting for `message_id`."""
    group = local_stack.resources["HubScheduleGroup"]
    with pointed_at(local_stack):
        scheduler = boto3.client("scheduler")
        names = [s["Name"] for s in scheduler.list_schedules(GroupName=group)["Schedules"]]
        targets = {n: scheduler.get_schedule(GroupName=group, Name=n)["Target"]["Input"] for n in names}
    return [name for name, step in targets.items() if json.loads(step)["message_id"] == message_id]


def test_scenario_d_auto_retry_off_stays_in_error_until_the_operator_reprocesses(
    api, admin, local_stack, destination
):
    destination.script(Answer(503), Answer(200))
    message_id = post(api, integration(local_stack, destination.url, RetryPolicy()))

    failed = wait_for_status(api, message_id, "error")
    assert failed["last_retry_error_class"] == "http_5xx"
    assert retry_schedules(local_stack, message_id) == []

    answer = admin.post("/api/edi-hub/reprocess-message", json={"message_id": message_id})

    assert answer.status_code == 202, answer.text
    assert wait_for_status(api, message_id, "sent")["dest_status"] == "200"
    assert [r.headers["idempotency-key"] for r in destination.requests] == [message_id, message_id]


def test_scenario_e_a_4xx_is_never_retried_even_with_auto_retry_on(api, local_stack, destination):
    destination.script(Answer(400, '{"error": "invalid cnpj"}'))
    message_id = post(api, integration(local_stack, destination.url, AUTO))

    failed = wait_for_status(api, message_id, "error")

    assert (failed["last_retry_error_class"], failed["dest_status"]) == ("http_4xx", "400")
    assert failed["retry_count"] == 0
    time.sleep(1.5)  # time-based on purpose: longer than the ladder, a retry would have come
    assert len(destination.requests) == 1
    assert retry_schedules(local_stack, message_id) == []


def test_scenario_e_a_401_is_retried(api, local_stack, destination):
    destination.script(Answer(401), Answer(200))
    message_id = post(api, integration(local_stack, destination.url, AUTO))

    final = wait_for_status(api, message_id, "sent")

    assert (final["retry_count"], final["last_retry_error_class"]) == (1, "http_401")


def test_scenario_e_a_429_waits_at_least_its_retry_after(api, admin, local_stack, destination):
    destination.script(Answer(429, "{}", {"Retry-After": "7"}), Answer(200))
    message_id = post(api, integration(local_stack, destination.url, AUTO))

    pending = wait_for_status(api, message_id, "retry_pending")

    failed_at = datetime.fromisoformat(pending["updated_at"])
    assert datetime.fromisoformat(pending["next_retry_at"]) >= failed_at + timedelta(seconds=7)
    time.sleep(3)  # time-based on purpose: past the 1 s ladder, well before the Retry-After
    assert len(destination.requests) == 1  # the 1 s ladder did not win over Retry-After
    final = wait_for_status(api, message_id, "sent")
    assert final["retry_count"] == 1
    assert len(destination.requests) == 2


def test_scenario_g_cancel_while_waiting_stops_the_retries(api, admin, local_stack, destination):
    destination.script(Answer(503))
    slow = AUTO.model_copy(update={"ladder_seconds": (4,)})
    message_id = post(api, integration(local_stack, destination.url, slow))
    wait_for_status(api, message_id, "retry_pending")
    [name] = retry_schedules(local_stack, message_id)
    assert name.startswith("retry-exe_")

    answer = admin.post(f"/api/admin/messages/{message_id}/cancel-retry")

    assert answer.status_code == 200, answer.text
    assert answer.json()["pipeline_status"] == "cancelled"
    assert retry_schedules(local_stack, message_id) == []
    time.sleep(5)  # time-based on purpose: past the retry's time, nothing may come
    cancelled = wait_for_status(api, message_id, "cancelled")
    assert cancelled["next_retry_at"] is None
    assert len(destination.requests) == 1
    waiting = admin.get("/api/admin/queue", params={"tenant_id": DEMO_TENANT_ID, "tab": "waiting"}).json()
    assert message_id not in [row["message_id"] for row in waiting["items"]]


@pytest.mark.parametrize("idempotent_retries", [False, True])
def test_a_timeout_is_retried_only_when_the_destination_honours_idempotency_keys(
    api, local_stack, destination, idempotent_retries
):
    destination.script(Answer(200, "{}", delay_seconds=1.5), Answer(200))
    message_id = post(
        api,
        integration(
            local_stack,
            destination.url,
            AUTO,
            read_timeout_seconds=0.5,
            idempotent_retries=idempotent_retries,
        ),
    )

    if idempotent_retries:
        final = wait_for_status(api, message_id, "sent")
        assert (final["retry_count"], final["last_retry_error_class"]) == (1, "timeout")
    else:
        final = wait_for_status(api, message_id, "error")
        assert (final["last_retry_error_class"], final["uncertain"]) == ("timeout", True)
        time.sleep(1.5)  # time-based on purpose: past the ladder, no retry may come
        assert len(destination.requests) == 1


def test_the_demo_integration_is_untouched(api, local_stack):
    with pointed_at(local_stack):
        demo = DynamoConfigRepository(local_stack.resources["HubTable"]).get_integration(
            DEMO_TENANT_ID, DEMO_INTEGRATION_ID
        )
    assert demo is not None
    assert demo.retry_policy == RetryPolicy()


def test_the_all_tab_and_the_timeline_over_the_local_stack(api, admin, local_stack, destination):
    """Issue 13 on the stack built from template.yaml (GSI2 included): a retried then sent
    message is in the `all` tab of its integration, with its current row, and its detail has a
    timeline whose events the outbox would publish, oldest first."""
    destination.script(Answer(503), Answer(200))
    integration_id = integration(local_stack, destination.url, AUTO)
    message_id = post(api, integration_id)
    wait_for_status(api, message_id, "sent")

    page = admin.get(
        "/api/admin/queue",
        params={"tenant_id": DEMO_TENANT_ID, "tab": "all", "integration_id": integration_id},
    )

    assert page.status_code == 200, page.text
    [row] = page.json()["items"]
    assert (row["message_id"], row["pipeline_status"], row["retry_count"]) == (message_id, "sent", 1)
    detail = admin.get(f"/api/admin/messages/{message_id}").json()
    events = [e["type"] for e in detail["timeline"] if e["kind"] == "event"]
    assert events == ["message.received", "message.retry_scheduled", "message.sent"]
    assert [e["kind"] for e in detail["timeline"]].count("attempt") == 2
    assert [e["at"] for e in detail["timeline"]] == sorted(e["at"] for e in detail["timeline"])
