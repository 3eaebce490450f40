"""Retries through the real worker handler (seed 000, scenarios B, C, D, E): classified failures,
durable one-time EventBridge Scheduler schedules targeting the pipeline queue."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from hub.adapters.pipeline_store import DynamoPipelineStore
from hub.domain.retry import RetryPolicy
from tests.destinations import Answer
from tests.pipeline import configure, send, status


def schedules(stack) -> list[dict[str, Any]]:
    scheduler = boto3.client("scheduler")
    group = stack.env["HUB_SCHEDULE_GROUP"]
    names = [s["Name"] for s in scheduler.list_schedules(GroupName=group)["Schedules"]]
    return [scheduler.get_schedule(GroupName=group, Name=name) for name in names]


def fire_all(stack) -> int:
    """What EventBridge Scheduler does when a schedule is due (moto stores but never fires)."""
    fired = schedules(stack)
    for schedule in fired:
        boto3.client("sqs").send_message(QueueUrl=stack.queue_url, MessageBody=schedule["Target"]["Input"])
        boto3.client("scheduler").delete_schedule(GroupName=schedule["GroupName"], Name=schedule["Name"])
    return len(fired)


AUTO = RetryPolicy(retry_auto_enabled=True, retry_max=2)


def test_scenario_b_a_5xx_is_retried_on_a_durable_schedule_and_then_sent(
    stack, tenancy, ingest_api, worker, destination
):
    configure(stack, tenancy, destination, retry_policy=AUTO)
    destination.script(Answer(503, '{"error": "maintenance"}'), Answer(200))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")

    worker()

    pending = status(stack, message_id)
    assert pending["pipeline_status"] == "retry_pending"
    assert (pending["retry_count"], pending["last_retry_error_class"], pending["dest_status"]) == (
        "1",
        "http_5xx",
        "503",
    )
    [schedule] = schedules(stack)
    assert schedule["Name"] == f"retry-{message_id}-1"
    assert schedule["ScheduleExpression"].startswith("at(")
    assert schedule["ActionAfterCompletion"] == "DELETE"
    assert schedule["Target"]["Arn"] == stack.env["HUB_PIPELINE_QUEUE_ARN"]
    step = json.loads(schedule["Target"]["Input"])
    assert (step["step"], step["attempt"], step["message_id"]) == ("deliver", 1, message_id)
    assert "n" not in step  # slim: no payload
    # The execution stays open while the retry waits.
    assert DynamoPipelineStore(stack.table).live_execution(message_id, "ingest") is not None

    assert fire_all(stack) == 1
    worker()

    final = status(stack, message_id)
    assert final["pipeline_status"] == "sent"
    assert [r.headers["idempotency-key"] for r in destination.requests] == [message_id, message_id]
    assert DynamoPipelineStore(stack.table).live_execution(message_id, "ingest") is None


def test_scenario_c_exhausted_retries_end_in_dead_letter(stack, tenancy, ingest_api, worker, destination):
    configure(stack, tenancy, destination, retry_policy=AUTO)
    destination.script(Answer(503))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")

    worker()
    while fire_all(stack):
        worker()

    final = status(stack, message_id)
    assert final["pipeline_status"] == "dead_letter"
    assert final["retry_count"] == "2"
    assert len(destination.requests) == 3
    assert DynamoPipelineStore(stack.table).live_execution(message_id, "ingest") is None


def test_scenario_c_without_dead_letter_stays_error(stack, tenancy, ingest_api, worker, destination):
    configure(stack, tenancy, destination, retry_policy=AUTO.model_copy(update={"retry_dead_letter": False}))
    destination.script(Answer(503))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")
    worker()
    while fire_all(stack):
        worker()
    assert status(stack, message_id)["pipeline_status"] == "error"


def test_scenario_d_auto_retry_off_stays_in_error_for_the_user(
    stack, tenancy, ingest_api, worker, destination
):
    configure(stack, tenancy, destination, retry_policy=RetryPolicy())
    destination.script(Answer(503))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")

    worker()

    assert status(stack, message_id)["pipeline_status"] == "error"
    assert schedules(stack) == []


@pytest.mark.parametrize(
    ("answer", "options"), [(Answer(422, "{}"), {}), (Answer(200, "{}", delay_seconds=1.0), {})]
)
def test_scenario_e_4xx_and_uncertain_timeouts_are_not_retried(
    stack, tenancy, ingest_api, worker, destination, answer, options
):
    configure(stack, tenancy, destination, retry_policy=AUTO, read_timeout_seconds=0.3, **options)
    destination.script(answer)
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")

    worker()

    assert status(stack, message_id)["pipeline_status"] == "error"
    assert schedules(stack) == []


def test_an_uncertain_timeout_is_retried_when_the_destination_honours_idempotency_keys(
    stack, tenancy, ingest_api, worker, destination
):
    configure(
        stack, tenancy, destination, retry_policy=AUTO, read_timeout_seconds=0.3, idempotent_retries=True
    )
    destination.script(Answer(200, "{}", delay_seconds=1.0))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")

    worker()

    assert status(stack, message_id)["pipeline_status"] == "retry_pending"


def test_a_429_is_never_retried_before_its_retry_after(stack, tenancy, ingest_api, worker, destination):
    configure(stack, tenancy, destination, retry_policy=AUTO)
    destination.script(Answer(429, "{}", {"Retry-After": "900"}))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")
    before = datetime.now(UTC)

    worker()

    pending = status(stack, message_id)
    assert pending["last_retry_error_class"] == "http_429"
    next_retry_at = datetime.fromisoformat(pending["next_retry_at"])
    assert next_retry_at >= before + timedelta(seconds=899)
