"""Retries through the real worker handler (seed 000, scenarios B, C, D, E): classified failures,
durable one-time EventBridge Scheduler schedules targeting the pipeline queue."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from hub.adapters.dynamo.executions import DynamoExecutions
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.retry import RetryPolicy
from tests.destinations import Answer
from tests.pipeline import configure, expire_visibility, fire_all, run_with_retries, schedules, send, status

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
    assert schedule["Name"] == f"retry-{pending['execution_id']}-1"
    assert schedule["ScheduleExpression"].startswith("at(")
    assert schedule["ActionAfterCompletion"] == "DELETE"
    assert schedule["Target"]["Arn"] == stack.env["HUB_PIPELINE_QUEUE_ARN"]
    step = json.loads(schedule["Target"]["Input"])
    assert (step["step"], step["attempt"], step["message_id"]) == ("deliver", 1, message_id)
    assert "n" not in step  # slim: no payload
    # The execution stays open while the retry waits.
    assert DynamoExecutions(stack.table).live_execution(message_id) is not None

    assert fire_all(stack) == 1
    worker()

    final = status(stack, message_id)
    assert final["pipeline_status"] == "sent"
    assert [r.headers["idempotency-key"] for r in destination.requests] == [message_id, message_id]
    assert DynamoExecutions(stack.table).live_execution(message_id) is None


def test_scenario_c_exhausted_retries_end_in_dead_letter(stack, tenancy, ingest_api, worker, destination):
    configure(stack, tenancy, destination, retry_policy=AUTO)
    destination.script(Answer(503))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")

    run_with_retries(stack, worker)

    final = status(stack, message_id)
    assert final["pipeline_status"] == "dead_letter"
    assert final["retry_count"] == "2"
    assert len(destination.requests) == 3
    assert DynamoExecutions(stack.table).live_execution(message_id) is None


@pytest.mark.parametrize(
    ("policy", "ceilings"),
    [
        # A fixed ladder (seed 002, 6.1): exactly these waits.
        (RetryPolicy(retry_auto_enabled=True, retry_max=3, ladder_seconds=(30, 60, 120)), None),
        # Exponential backoff with full jitter: each wait within its growing ceiling.
        (RetryPolicy(retry_auto_enabled=True, retry_max=3), [30, 60, 120]),
    ],
)
def test_scenario_c_waits_grow_between_attempts(
    stack, tenancy, ingest_api, worker, destination, policy, ceilings
):
    configure(stack, tenancy, destination, retry_policy=policy)
    destination.script(Answer(503))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")
    waits = []

    worker()
    while pending := schedules(stack):
        record = status(stack, message_id)
        failed_at = datetime.fromisoformat(record["updated_at"])
        waits.append((datetime.fromisoformat(record["next_retry_at"]) - failed_at).total_seconds())
        # at() has whole seconds, rounded up: never before the decided time. A schedule is at
        # least a second ahead of its creation, which came before `seen` (a jittered wait near
        # zero on a loaded machine).
        seen = datetime.now(UTC)
        at = datetime.fromisoformat(pending[0]["ScheduleExpression"][3:-1] + "+00:00")
        decided = datetime.fromisoformat(record["next_retry_at"])
        assert timedelta(0) <= at - decided
        assert at - max(decided, seen + timedelta(seconds=1)) < timedelta(seconds=1)
        fire_all(stack)
        worker()

    if ceilings is None:
        assert waits == [30, 60, 120]  # counted from the failure's own time, exactly
    else:
        assert len(waits) == 3
        assert all(0 <= wait <= ceiling for wait, ceiling in zip(waits, ceilings, strict=True))
    assert status(stack, message_id)["pipeline_status"] == "dead_letter"
    assert len(destination.requests) == 4


def test_scenario_c_without_dead_letter_stays_error(stack, tenancy, ingest_api, worker, destination):
    configure(stack, tenancy, destination, retry_policy=AUTO.model_copy(update={"retry_dead_letter": False}))
    destination.script(Answer(503))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")
    run_with_retries(stack, worker)
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


def status_history(stack, message_id: str) -> list[str]:
    """Every pipeline_status the message's status record was written with, from the table's
    stream (one entry per write)."""
    streams = boto3.client("dynamodbstreams")
    arn = boto3.client("dynamodb").describe_table(TableName=stack.table)["Table"]["LatestStreamArn"]
    history = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        for record in streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]:
            image = record["dynamodb"].get("NewImage", {})
            if "lease_owner" in image:
                continue  # a step taking the message (its lease), not a status write
            if image.get("PK", {}).get("S") == f"MSG#{message_id}" and image["SK"]["S"] == "STATUS":
                history.append(image["pipeline_status"]["S"])
    return history


def test_a_failed_attempt_and_its_retry_decision_are_written_in_one_update(
    stack, tenancy, ingest_api, worker, destination
):
    configure(stack, tenancy, destination, retry_policy=AUTO)
    destination.script(Answer(503))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")

    run_with_retries(stack, worker)

    # No intermediate `error` write between an attempt and its decision.
    assert status_history(stack, message_id) == [
        "received",
        "retry_pending",
        "retry_pending",
        "dead_letter",
    ]
    assert status(stack, message_id)["last_retry_error_class"] == "http_5xx"
    assert "next_retry_at" not in status(stack, message_id)


def test_a_410_is_never_retried_and_flags_the_connection_as_gone(
    stack, tenancy, ingest_api, worker, destination
):
    configure(stack, tenancy, destination, retry_policy=AUTO)
    destination.script(Answer(410, '{"error": "endpoint retired"}'))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")

    worker()

    failed = status(stack, message_id)
    assert (failed["pipeline_status"], failed["last_retry_error_class"]) == ("error", "http_410")
    assert schedules(stack) == []
    config = DynamoConfigRepository(stack.table)
    integration = config.get_integration(tenancy.tenant_id, tenancy.integration_id)
    assert integration is not None
    assert integration.connection_gone_at is not None
    # Saving the connection again (the operator fixed it) clears the flag.
    config.put_integration(integration)
    refreshed = config.get_integration(tenancy.tenant_id, tenancy.integration_id)
    assert refreshed is not None
    assert refreshed.connection_gone_at is None


def test_an_uncertain_timeout_left_to_the_operator_is_marked_uncertain(
    stack, tenancy, ingest_api, worker, destination
):
    configure(stack, tenancy, destination, retry_policy=AUTO, read_timeout_seconds=0.3)
    destination.script(Answer(200, "{}", delay_seconds=1.0))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")

    worker()

    failed = status(stack, message_id)
    assert (failed["pipeline_status"], failed["last_retry_error_class"]) == ("error", "timeout")
    assert failed["uncertain"] is True


def emf_metrics(output: str) -> list[tuple[str, dict[str, str]]]:
    """(metric name, dimensions) of every data point in the EMF documents the handlers printed
    (a document carries a list of values per metric: one entry each)."""
    found = []
    for line in output.splitlines():
        if not line.startswith('{"_aws"'):
            continue
        document = json.loads(line)
        for directive in document["_aws"]["CloudWatchMetrics"]:
            dimensions = {name: document[name] for name in directive["Dimensions"][0]}
            for metric in directive["Metrics"]:
                values = document[metric["Name"]]
                found += [(metric["Name"], dimensions)] * (len(values) if isinstance(values, list) else 1)
    return found


def test_retries_and_dead_letters_are_counted_in_cloudwatch_metrics(
    stack, tenancy, ingest_api, worker, destination, capsys
):
    configure(stack, tenancy, destination, retry_policy=AUTO)
    destination.script(Answer(503))
    send(ingest_api, tenancy, {"n": 1}, "order")
    capsys.readouterr()

    run_with_retries(stack, worker)

    metrics = emf_metrics(capsys.readouterr().out)
    service = {"service": stack.env["POWERTOOLS_SERVICE_NAME"]}
    assert service == {"service": "integration-hub-dev"}
    assert metrics.count(("RetriesScheduled", {"error_class": "http_5xx", **service})) == 2
    # The alarm in template.yaml matches this exact name and dimension set.
    assert metrics.count(("DeadLettered", service)) == 1
    assert ("StepFailed", {"step": "deliver", **service}) in metrics
    assert ("StepDuration", {"step": "process", **service}) in metrics


def test_a_retry_whose_schedule_could_not_be_created_is_rescheduled_not_sent_early(
    stack, tenancy, ingest_api, worker, destination
):
    configure(stack, tenancy, destination, retry_policy=AUTO)
    destination.script(Answer(429, "{}", {"Retry-After": "3600"}), Answer(200))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")
    scheduler = boto3.client("scheduler")
    group = stack.env["HUB_SCHEDULE_GROUP"]
    scheduler.delete_schedule_group(Name=group)  # the scheduler refuses the create

    worker(settle=False, max_batches=3)

    assert status(stack, message_id)["pipeline_status"] == "retry_pending"
    assert len(destination.requests) == 1
    scheduler.create_schedule_group(Name=group)
    # SQS redelivers the deciding step: it re-creates the schedule and calls nobody.
    assert expire_visibility(stack.queue_url) == 1
    worker()
    [schedule] = schedules(stack)
    assert len(destination.requests) == 1
    pending = status(stack, message_id)
    assert schedule["Name"] == f"retry-{pending['execution_id']}-1"
    assert datetime.fromisoformat(pending["next_retry_at"]) >= datetime.now(UTC) + timedelta(seconds=3500)

    fire_all(stack)
    worker()

    assert status(stack, message_id)["pipeline_status"] == "sent"
    assert len(destination.requests) == 2
