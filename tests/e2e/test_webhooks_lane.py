"""Outbound webhooks on the local stack: the webhooks lane of template.yaml (WebhooksQueue, the
WebhookSenderFunction in its own process, its retry on the local EventBridge Scheduler) delivering
to a receiver on 127.0.0.1 that verifies with `standardwebhooks`."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest
from standardwebhooks import Webhook

from devstack.demo import DEMO_TENANT_ID
from hub.outbox.events import EventType, OutboxEvent
from hub.outbox.webhooks import WebhookJob
from tests.destinations import Answer, HttpDestination
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e


def test_the_webhooks_lane_delivers_signed_and_retries_on_the_scheduler_with_the_same_id(
    admin: httpx.Client, local_stack
) -> None:
    with HttpDestination() as receiver:
        receiver.script(Answer(status=503), Answer(status=200))
        created = admin.post(
            f"/api/admin/tenants/{DEMO_TENANT_ID}/subscriptions",
            json={"url": receiver.url, "event_types": ["message.*"]},
        )
        assert created.status_code == 201, created.text
        subscription = created.json()
        event = OutboxEvent(
            id="msg_01je2eoutboundwebhook0000:2",
            type=EventType.MESSAGE_SENT,
            tenant_id=DEMO_TENANT_ID,
            occurred_at=datetime.now(UTC),
            version=2,
            integration_id="int_demo_erp",
            message_id="msg_01je2eoutboundwebhook0000",
        )
        # What the outbox publisher's subscription sink puts on the lane.
        local_stack.client("sqs").send_message(
            QueueUrl=local_stack.resources["WebhooksQueue"],
            MessageBody=WebhookJob(
                subscription_id=subscription["subscription_id"], event=event
            ).model_dump_json(),
        )

        # The first attempt answers 503; the retry waits 5 s on the scheduler, then succeeds.
        wait_for(lambda: len(receiver.requests), "the retry at the receiver", until=lambda count: count >= 2)

        first, second = receiver.requests[:2]
        for request in (first, second):
            assert request.headers["webhook-id"] == event.id
            Webhook(subscription["secret"]).verify(request.body, request.headers)
        assert second.arrived - first.arrived >= 4
