"""The request counter on a real local stack: boto3 calls through the embedded moto server are
counted by operation and caller, with DynamoDB capacity and SQS messages."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from devstack.demo import DEMO_ADMIN_TOKEN, parameter_overrides
from devstack.request_counter import INDEX_WRITE, STRONG_READ, WRITE, RequestCounter, RequestKey, index_specs
from devstack.stack import LocalStack
from tests.aws import local_stack_on_free_ports

CALLER = "counter-test"
ADMIN_CALLER = "admin-api"


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with local_stack_on_free_ports(
        stack_name="hub-counter",
        count_aws_requests=True,
        # The admin API opens to the demo token, and tags its calls (the Health view's cost).
        parameter_overrides=parameter_overrides(),
        env_overrides={
            "AdminApiFunction": {"AWS_SDK_UA_APP_ID": ADMIN_CALLER, "HUB_HEALTH_METRICS_CACHE_SECONDS": "0"}
        },
    ) as local:
        yield local


@pytest.fixture
def counter(stack: LocalStack) -> RequestCounter:
    assert stack.aws_requests is not None
    stack.aws_requests.reset()
    return stack.aws_requests


@pytest.fixture
def client(stack: LocalStack, monkeypatch: pytest.MonkeyPatch):
    """stack.client(...) tagged with an SDK app id, so this test's calls are told apart from the
    local runtime's own polling (which has none)."""
    monkeypatch.setenv("AWS_SDK_UA_APP_ID", CALLER)
    return stack.client


def test_dynamodb_calls_are_counted_with_capacity_and_index_writes(
    stack: LocalStack, counter: RequestCounter, client
) -> None:
    # Given the counter knows HubTable's GSI1
    table = stack.resources["HubTable"]
    dynamodb = client("dynamodb")
    counter.watch_indexes(table, index_specs(dynamodb.describe_table(TableName=table)["Table"]))
    item = {
        "PK": {"S": "MSG#counted"},
        "SK": {"S": "STATUS"},
        "GSI1PK": {"S": "TENANT#t#STATUS#received"},
        "GSI1SK": {"S": "2026-01-01T00:00:00Z#counted"},
        "pipeline_status": {"S": "received"},
    }
    # When one item is written, read back strongly, and written again under a failing condition
    dynamodb.put_item(TableName=table, Item=item)
    dynamodb.get_item(TableName=table, Key={"PK": item["PK"], "SK": item["SK"]}, ConsistentRead=True)
    with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException):
        dynamodb.put_item(TableName=table, Item=item, ConditionExpression="attribute_not_exists(PK)")
    # Then each request is counted under this caller, with what it costs
    snapshot = counter.snapshot()
    put = snapshot[RequestKey("dynamodb", "PutItem", CALLER)]
    get = snapshot[RequestKey("dynamodb", "GetItem", CALLER)]
    assert (put.requests, put.errors, put.items) == (2, 1, 2)
    assert put.capacity == {(WRITE, 1): 2, (INDEX_WRITE, 1): 2}
    assert (get.requests, get.strongly_consistent_items) == (1, 1)
    assert get.capacity == {(STRONG_READ, 1): 1}
    assert snapshot[RequestKey("dynamodb", "DescribeTable", CALLER)].requests == 1


def test_sqs_and_scheduler_calls_are_counted_by_operation(
    stack: LocalStack, counter: RequestCounter, client
) -> None:
    # Given the dead-letter queue, which no function polls
    sqs = client("sqs")
    queue = stack.resources["PipelineDLQ"]
    scheduler = client("scheduler")
    # When a message is sent and received, a second receive finds nothing, and a schedule is
    # created and deleted
    sqs.send_message(QueueUrl=queue, MessageBody='{"hello": "counter"}')
    received = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=0)
    assert len(received["Messages"]) == 1
    sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=0)
    group = stack.resources["HubScheduleGroup"]
    scheduler.create_schedule(
        Name="counted",
        GroupName=group,
        ScheduleExpression="at(2099-01-01T00:00:00)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": "arn:aws:sqs:us-east-1:123456789012:q", "RoleArn": "arn:aws:iam::123456789012:role/r"},
    )
    scheduler.get_schedule(Name="counted", GroupName=group)
    scheduler.delete_schedule(Name="counted", GroupName=group)
    # Then
    snapshot = counter.snapshot()
    assert snapshot[RequestKey("sqs", "SendMessage", CALLER)].messages == 1
    receive = snapshot[RequestKey("sqs", "ReceiveMessage", CALLER)]
    assert (receive.requests, receive.messages, receive.empty_receives) == (2, 1, 1)
    for operation in ("CreateSchedule", "GetSchedule", "DeleteSchedule"):
        assert snapshot[RequestKey("scheduler", operation, CALLER)].requests == 1


def test_the_local_runtime_polling_is_counted_apart(counter: RequestCounter) -> None:
    # The SQS event source mapping long-polls the pipeline queue without an app id.
    deadline = time.monotonic() + 60
    while counter.requests("sqs", "ReceiveMessage", caller="") == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert counter.requests("sqs", "ReceiveMessage", caller="") > 0
    assert counter.requests("sqs", "ReceiveMessage", caller=CALLER) == 0


def test_one_health_page_load_costs_a_fixed_number_of_aws_requests(
    stack: LocalStack, counter: RequestCounter
) -> None:
    """What docs/decisions/health-api.md says one Health view costs: for a platform token naming
    a tenant, one GetQueueAttributes per queue shown (5), one GetMetricData, one Query per GSI1
    status partition (3, one page each while a partition is small). The metrics read is cached
    per instance for a minute (HUB_HEALTH_METRICS_CACHE_SECONDS, 0 here): uncached cost."""
    url = stack.function_urls["AdminApiFunction"]
    headers = {"Authorization": f"Bearer {DEMO_ADMIN_TOKEN}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30, trust_env=False) as admin:
        assert admin.get("/api/admin/health").status_code == 200  # warm: token secret cached
        counter.reset()
        answer = admin.get("/api/admin/health", params={"tenant_id": "t1"})

    assert answer.status_code == 200, answer.text
    mine = {key: stats.requests for key, stats in counter.snapshot().items() if key.caller == ADMIN_CALLER}
    by_service: dict[str, int] = {}
    for key, requests in mine.items():
        by_service[key.service] = by_service.get(key.service, 0) + requests
    assert mine[RequestKey("sqs", "GetQueueAttributes", ADMIN_CALLER)] == 5
    assert mine[RequestKey("dynamodb", "Query", ADMIN_CALLER)] == 3
    assert by_service["monitoring"] == 1, mine
    assert sum(mine.values()) == 5 + 3 + 1, mine
