"""SQS fair queues (issue 30) on moto: every message the hub puts on a lane names its tenant in
`MessageGroupId`, and the local stack's standard queues serve quiet tenants first while one
tenant is noisy (devstack.fair_queues; its rules are unit-tested in tests/unit/devstack)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from devstack import fair_queues
from hub.adapters.scheduler import EventBridgeRetryScheduler
from hub.adapters.sqs import SqsDeadLetterMover, SqsStepQueue
from hub.adapters.webhook_queue import SqsWebhookQueue
from hub.domain.ids import new_id
from hub.domain.message import PipelineStep, StepMessage
from hub.outbox.events import EventType, OutboxEvent
from hub.outbox.webhooks import WebhookJob
from hub.wiring import retry_scheduler


def receive(queue_url: str, count: int = 10) -> list[dict]:
    return (
        boto3.client("sqs")
        .receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=count, MessageSystemAttributeNames=["MessageGroupId"]
        )
        .get("Messages", [])
    )


def send(queue_url: str, tenant: str | None, count: int) -> None:
    sqs = boto3.client("sqs")
    for index in range(count):
        extra = {"MessageGroupId": tenant} if tenant else {}
        sqs.send_message(QueueUrl=queue_url, MessageBody=f"{tenant}-{index}", **extra)


def groups(batch: list[dict]) -> list[str | None]:
    return [message.get("Attributes", {}).get("MessageGroupId") for message in batch]


@pytest.fixture
def queue_url(stack) -> str:
    return boto3.client("sqs").create_queue(QueueName=f"fair-{new_id('q')[-8:]}")["QueueUrl"]


@pytest.fixture
def fairness_off() -> Iterator[None]:
    fair_queues.enabled = False
    try:
        yield
    finally:
        fair_queues.enabled = True


def share(queue_url: str) -> fair_queues.FairShare:
    """The local queue's fairness state (what moto's queue object carries)."""
    from moto.core import DEFAULT_ACCOUNT_ID  # noqa: PLC0415
    from moto.sqs.models import sqs_backends  # noqa: PLC0415

    queue = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].get_queue(queue_url.rsplit("/", 1)[-1])
    state: fair_queues.FairShare = queue.__dict__["_hub_fair_share"]
    return state


def step(tenant: str) -> StepMessage:
    return StepMessage(
        message_id=new_id("msg"),
        tenant_id=tenant,
        integration_id="int_erp",
        step=PipelineStep.PROCESS,
        execution_id="exe_x",
        correlation_id="c",
        publish_id=new_id("pub"),
    )


class TestLocalFairQueue:
    def test_a_quiet_tenants_messages_come_before_a_noisy_tenants_backlog(self, queue_url):
        # Given tenant A holding 40 messages in flight with 20 more waiting
        send(queue_url, "A", 60)
        in_flight = [m for _ in range(4) for m in receive(queue_url)]
        assert groups(in_flight) == ["A"] * 40
        # When tenant B sends three after them
        send(queue_url, "B", 3)

        # Then the next receive serves B first, then fills up with A's
        assert groups(receive(queue_url)) == ["B"] * 3 + ["A"] * 7

    def test_with_nothing_in_flight_the_queue_keeps_its_order(self, queue_url):
        send(queue_url, "A", 20)
        send(queue_url, "B", 3)

        assert groups(receive(queue_url)) == ["A"] * 10

    def test_a_tenant_that_had_the_consumers_time_waits_behind_one_that_had_none(self, queue_url):
        # Processing-time share: A's ten messages took all the consumers' time (deleted since)
        send(queue_url, "A", 20)
        sqs = boto3.client("sqs")
        for message in receive(queue_url):
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        send(queue_url, "B", 3)

        assert groups(receive(queue_url)) == ["B"] * 3 + ["A"] * 7
        assert share(queue_url).in_flight() == {"A": 7, "B": 3}  # the deleted ones left the count

    def test_messages_without_a_group_are_each_a_tenant_of_their_own(self, queue_url):
        send(queue_url, "A", 60)
        for _ in range(4):
            receive(queue_url)
        send(queue_url, None, 2)

        assert groups(receive(queue_url)) == [None, None] + ["A"] * 8

    def test_switched_off_the_queue_keeps_motos_order(self, queue_url, fairness_off):
        send(queue_url, "A", 60)
        for _ in range(4):
            receive(queue_url)
        send(queue_url, "B", 3)

        assert groups(receive(queue_url)) == ["A"] * 10


class TestEveryLaneNamesTheTenant:
    def test_steps_jobs_and_redriven_steps_carry_their_tenant(self, stack):
        SqsStepQueue(stack.queue_url).publish(step("t_one"))
        (published,) = receive(stack.queue_url)
        assert groups([published]) == ["t_one"]
        sqs = boto3.client("sqs")
        sqs.send_message(QueueUrl=stack.dlq_url, MessageBody=published["Body"], MessageGroupId="t_one")
        sqs.delete_message(QueueUrl=stack.queue_url, ReceiptHandle=published["ReceiptHandle"])

        assert SqsDeadLetterMover().move(stack.dlq_url, stack.queue_url, 10) == 1
        assert groups(receive(stack.queue_url)) == ["t_one"]

    def test_webhook_jobs_carry_their_events_tenant(self, stack, queue_url):
        event = OutboxEvent(
            id="msg_1:2",
            type=EventType.MESSAGE_SENT,
            tenant_id="t_two",
            occurred_at=datetime.now(UTC),
        )
        SqsWebhookQueue(queue_url).send([WebhookJob(subscription_id="sub_1", event=event)])

        assert groups(receive(queue_url)) == ["t_two"]

    def test_a_scheduled_retry_names_its_tenant_to_the_scheduler(self, stack):
        scheduler = retry_scheduler()
        assert isinstance(scheduler, EventBridgeRetryScheduler)
        scheduler.schedule(step("t_three"), datetime.now(UTC) + timedelta(minutes=5), "retry-fair-1")

        target = boto3.client("scheduler").get_schedule(
            Name="retry-fair-1", GroupName=stack.env["HUB_SCHEDULE_GROUP"]
        )["Target"]
        assert target["SqsParameters"] == {"MessageGroupId": "t_three"}
