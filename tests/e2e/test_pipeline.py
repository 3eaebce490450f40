"""Scenarios A, B and C on the local stack: partner API -> SQS -> worker (its own process) -> the
echo destination, retries on the scheduler, dead letters alerted to a local Slack receiver; every
resource from template.yaml."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from devstack.demo import DEMO_INTEGRATION_ID, DEMO_MESSAGE_TYPE, DEMO_TENANT_ID, pointed_at
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.retry import RetryPolicy
from hub.domain.tenancy import Destination, Integration, IntegrationMode, MessageTypeConfig
from tests.destinations import Answer, HttpDestination
from tests.pipeline import post, wait_for_status
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e


def test_scenario_a_received_mapped_sent(api: httpx.Client, local_stack):
    message_id = post(api, DEMO_INTEGRATION_ID)

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
                message_types={DEMO_MESSAGE_TYPE: MessageTypeConfig()},
                retry_policy=RetryPolicy(retry_auto_enabled=True, retry_max=3, ladder_seconds=(1,)),
            )
        )
        message_id = post(api, DEMO_INTEGRATION_ID)

        final = wait_for_status(api, message_id, "sent")

        assert final["retry_count"] == 1
        assert final["last_retry_error_class"] == "http_5xx"
        assert [r.headers["idempotency-key"] for r in destination.requests] == [message_id, message_id]


def test_scenario_c_exhausted_retries_dead_letter_and_slack_gets_one_grouped_alert(
    api: httpx.Client, local_stack, slack: HttpDestination
):
    """Retries on the scheduler until exhausted, `dead_letter`, the HubTable stream (filtered as
    the template says) to the alert notifier in its own process, one Slack post and one email."""
    with HttpDestination() as destination, pointed_at(local_stack):
        destination.script(Answer(503, '{"error": "maintenance"}'))
        DynamoConfigRepository(local_stack.resources["HubTable"]).put_integration(
            Integration(
                integration_id=DEMO_INTEGRATION_ID,
                tenant_id=DEMO_TENANT_ID,
                name="always down",
                mode=IntegrationMode.ORCHESTRATION,
                destination=Destination(url=destination.url),
                message_types={DEMO_MESSAGE_TYPE: MessageTypeConfig()},
                retry_policy=RetryPolicy(retry_auto_enabled=True, retry_max=2, ladder_seconds=(1,)),
            )
        )
        message_id = post(api, DEMO_INTEGRATION_ID)

        final = wait_for_status(api, message_id, "dead_letter")

        def alerts_for_it() -> list[str]:
            texts = [json.loads(r.body)["text"] for r in slack.requests]
            return [text for text in texts if f"on integration {DEMO_INTEGRATION_ID}" in text]

        (alert,) = wait_for(alerts_for_it, "the Slack alert of the dead letter")
        assert (final["retry_count"], final["last_retry_error_class"]) == (2, "http_5xx")
        assert len(destination.requests) == 3
        assert f"First message: {message_id} " in alert
        assert f"Tenant: {DEMO_TENANT_ID}" in alert
        assert "Error class: http_5xx" in alert
        assert f"tab=dead_letter&amp;tenant_id={DEMO_TENANT_ID}" in alert
        ses = local_stack.client("ses")
        wait_for(lambda: ses.get_send_quota()["SentLast24Hours"], "the alert email sent")
        time.sleep(1.0)  # time-based on purpose: a few more stream polls, still exactly one alert
        assert len(alerts_for_it()) == 1
        assert ses.get_send_quota()["SentLast24Hours"] == 1


def test_an_alarm_published_to_the_alert_topic_reaches_slack(local_stack, slack: HttpDestination):
    """CloudWatch alarms never evaluate on moto, so publish what one would: the topic's SNS event
    source invokes the notifier, which posts to Slack."""
    alarm = {
        "AlarmName": "hub-e2e-pipeline-dlq-not-empty",
        "NewStateValue": "ALARM",
        "NewStateReason": "Threshold Crossed: 1 datapoint [1.0] was greater than the threshold (0.0).",
        "StateChangeTime": "2024-05-01T13:05:22.150+0000",
        "Region": "US East (N. Virginia)",
    }

    local_stack.client("sns").publish(TopicArn=local_stack.resources["AlertTopic"], Message=json.dumps(alarm))

    def alarm_posts() -> list[str]:
        texts = [json.loads(r.body)["text"] for r in slack.requests]
        return [text for text in texts if "ALARM hub-e2e-pipeline-dlq-not-empty" in text]

    (text,) = wait_for(alarm_posts, "the alarm's Slack post")
    assert "Reason: Threshold Crossed" in text


def test_the_health_view_counts_a_received_message_from_the_functions_emf(
    api: httpx.Client, admin: httpx.Client, local_stack
):
    """Local = cloud (issue 13): the ingest function prints MessagesReceived as EMF, the local
    stack turns it into a CloudWatch metric as AWS does, and the admin API reads it back."""
    post(api, DEMO_INTEGRATION_ID)

    def health_view() -> dict:
        answer = admin.get("/api/admin/health", params={"tenant_id": DEMO_TENANT_ID})
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    health = wait_for(
        health_view,
        "MessagesReceived in the health view",
        until=lambda view: view["hourly"][-1]["received"] >= 1,
        interval=0.5,
    )

    assert health["unavailable"] == []
    assert {lane["lane"] for lane in health["lanes"]} == {"pipeline", "webhooks"}
    assert health["integrations"]["tenant_id"] == DEMO_TENANT_ID
