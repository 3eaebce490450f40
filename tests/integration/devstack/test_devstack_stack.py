"""The local runtime end to end, on a fixture template that uses every supported feature.

One stack per module (ports all 0); every wait polls against a deadline.
"""

from __future__ import annotations

import base64
import http.client
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest

from devstack.lambda_runtime import InvocationError
from devstack.stack import LocalStack, running_stacks

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "devstack" / "template.yaml"
T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], timeout: float = 20.0, interval: float = 0.1) -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout}s")
        time.sleep(interval)


def request(
    base_url: str,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: list[tuple[str, str]] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    url = urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    try:
        connection.putrequest(method, path)
        for name, value in headers or []:
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(body or b"")))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(
        template_path=FIXTURE,
        project_root=FIXTURE.parent,
        aws_port=0,
        api_port=0,
        url_port=0,
        echo_port=0,
        stack_name="fx",
        poll_interval=0.1,
        scheduler_interval=0.2,
    ) as running:
        yield running


def records(stack: LocalStack, kind: str) -> dict[str, dict[str, Any]]:
    """What the fixture handlers recorded, by key."""
    items = stack.client("dynamodb").query(
        TableName=stack.resources["RecordTable"],
        KeyConditionExpression="PK = :kind",
        ExpressionAttributeValues={":kind": {"S": kind}},
    )["Items"]
    return {item["SK"]["S"]: json.loads(item["data"]["S"]) for item in items}


def records_including(stack: LocalStack, kind: str, keys: set[str]) -> dict[str, dict[str, Any]] | None:
    """The recorded items of ``kind`` once all ``keys`` are among them, else None."""
    seen = records(stack, kind)
    return seen if keys <= set(seen) else None


def ahead_of_every_firing(stack: LocalStack, step: timedelta) -> datetime:
    """A time to ``tick`` at, ``step`` past now and past every occurrence fired so far (the
    scheduler never fires an occurrence before one it fired, e.g. for another test)."""
    assert stack.scheduler is not None
    fired = [firing.scheduled_time for firing in stack.scheduler.fired]
    return max([datetime.now(UTC), *fired]) + step


# --- HTTP API ------------------------------------------------------------------------------


def test_http_api_builds_a_payload_v2_event(stack: LocalStack) -> None:
    status, headers, body = request(
        stack.api_url,
        "POST",
        "/items/abc%20d?x=1&x=2&flag=",
        body=b'{"hello": "world"}',
        headers=[
            ("Content-Type", "application/json"),
            ("X-Multi", "one"),
            ("X-Multi", "two"),
            ("Cookie", "session=s1; theme=dark"),
            ("User-Agent", "devstack-test"),
        ],
    )

    assert status == 200
    assert headers["x-fixture"] == "1"
    assert headers["apigw-requestid"]
    event = json.loads(body)["event"]
    assert event["version"] == "2.0"
    assert event["routeKey"] == "POST /items/{item_id}"
    assert event["rawPath"] == "/items/abc%20d"
    assert event["rawQueryString"] == "x=1&x=2&flag="
    assert event["queryStringParameters"] == {"x": "1,2", "flag": ""}
    assert event["pathParameters"] == {"item_id": "abc d"}
    assert event["cookies"] == ["session=s1", "theme=dark"]
    assert event["headers"]["x-multi"] == "one,two"
    assert event["headers"]["content-type"] == "application/json"
    assert "cookie" not in event["headers"]
    assert event["body"] == '{"hello": "world"}'
    assert event["isBase64Encoded"] is False
    context = event["requestContext"]
    assert context["routeKey"] == "POST /items/{item_id}"
    assert context["stage"] == "$default"
    assert context["accountId"] == "123456789012"
    assert context["apiId"] == stack.resources["ServerlessHttpApi"]
    assert context["http"] == {
        "method": "POST",
        "path": "/items/abc%20d",
        "protocol": "HTTP/1.1",
        "sourceIp": "127.0.0.1",
        "userAgent": "devstack-test",
    }
    assert context["requestId"] == headers["apigw-requestid"]
    assert abs(context["timeEpoch"] / 1000 - time.time()) < 60
    datetime.strptime(context["time"], "%d/%b/%Y:%H:%M:%S %z")


def test_http_api_passes_binary_bodies_as_base64(stack: LocalStack) -> None:
    raw = bytes(range(256))
    status, _, body = request(
        stack.api_url, "POST", "/items/bin", body=raw, headers=[("Content-Type", "application/octet-stream")]
    )

    event = json.loads(body)["event"]
    assert status == 200
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == raw


def test_http_api_prefers_exact_routes_and_supports_greedy_any(stack: LocalStack) -> None:
    _, _, special = request(stack.api_url, "GET", "/items/special")
    _, _, greedy = request(stack.api_url, "DELETE", "/proxy/a/b/c")

    assert json.loads(special)["event"]["routeKey"] == "GET /items/special"
    greedy_event = json.loads(greedy)["event"]
    assert greedy_event["routeKey"] == "ANY /proxy/{proxy+}"
    assert greedy_event["pathParameters"] == {"proxy": "a/b/c"}


def test_http_api_maps_responses_like_api_gateway(stack: LocalStack) -> None:
    assert request(stack.api_url, "GET", "/nowhere")[::2] == (404, b'{"message": "Not Found"}')
    status, _, body = request(stack.api_url, "GET", "/proxy/boom")
    assert (status, json.loads(body)) == (500, {"message": "Internal Server Error"})
    status, headers, body = request(stack.api_url, "GET", "/proxy/plain")
    assert (status, headers["content-type"], json.loads(body)) == (200, "application/json", {"plain": True})
    status, headers, body = request(stack.api_url, "GET", "/proxy/binary")
    assert (status, body) == (201, b"\x00\x01\x02")
    assert headers["content-type"] == "application/octet-stream"


def test_http_api_keeps_connections_alive(stack: LocalStack) -> None:
    url = urlsplit(stack.api_url)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    try:
        connection.request("GET", "/items/one")
        first = connection.getresponse()
        first.read()
        socket_after_first = connection.sock
        connection.request("GET", "/items/two")
        second = connection.getresponse()
        second_body = json.loads(second.read())
        reused = connection.sock is socket_after_first
    finally:
        connection.close()

    assert first.status == second.status == 200
    assert socket_after_first is not None
    assert reused
    assert second_body["event"]["pathParameters"] == {"item_id": "two"}


def test_concurrent_requests_run_in_separate_instances(stack: LocalStack) -> None:
    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(lambda _: request(stack.api_url, "GET", "/proxy/sleep?s=1.0"), range(3)))

    pids = {json.loads(body)["pid"] for status, _, body in answers if status == 200}
    assert len(pids) >= 2


# --- functions ------------------------------------------------------------------------------


def test_function_environment_is_resolved_and_isolated(stack: LocalStack) -> None:
    _, _, body = request(stack.api_url, "GET", "/items/env")
    answer = json.loads(body)

    env = answer["env"]
    assert env["STAGE"] == "test"
    assert env["GLOBAL_ONLY"] == "from-globals"
    assert env["OVERRIDDEN"] == "from-function"
    assert env["COLOUR"] == "green"
    assert env["GREETING"] == "hello-test"
    assert env["WORK_QUEUE_NAME"] == "fx-WorkQueue"
    assert env["REGION_AND_ACCOUNT"] == "us-east-1/123456789012"
    assert env["FIRST_PART"] == "alpha"
    assert env["TOPIC_ARN"].startswith("arn:aws:sns:us-east-1:123456789012:")
    assert env["RECORD_TABLE"] == stack.resources["RecordTable"]
    assert env["AWS_LAMBDA_FUNCTION_NAME"] == "fx-ApiFunction"
    assert env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] == "256"
    assert env["AWS_ENDPOINT_URL"] == stack.aws_endpoint
    assert env["AWS_ACCOUNT_ID_ENDPOINT_MODE"] == "disabled"
    assert env["POWERTOOLS_TRACE_DISABLED"] == "true"
    assert env["PYTEST_CURRENT_TEST"] is None  # the test process's environment is not leaked
    context = answer["context"]
    assert context["function_name"] == "fx-ApiFunction"
    assert context["memory_limit_in_mb"] == 256
    assert context["invoked_function_arn"] == (
        "arn:aws:lambda:us-east-1:123456789012:function:fx-ApiFunction"
    )
    assert 0 < context["remaining_ms"] <= 5000
    assert answer["cwd"] == str(FIXTURE.parent / "functions" / "api")


def test_direct_invoke_reuses_warm_instances(stack: LocalStack) -> None:
    first = stack.invoke("SlowFunction", {"sleep": 0})
    second = stack.invoke("SlowFunction", {"sleep": 0})

    assert first["pid"] == second["pid"]


def test_timeout_kills_the_instance_and_the_next_call_cold_starts(stack: LocalStack) -> None:
    before = stack.invoke("SlowFunction", {"sleep": 0})["pid"]

    with pytest.raises(InvocationError) as failure:
        stack.invoke("SlowFunction", {"sleep": 5})
    after = stack.invoke("SlowFunction", {"sleep": 0})["pid"]

    assert failure.value.error_type == "Sandbox.Timedout"
    assert after != before


def test_function_url_sends_a_default_route_event(stack: LocalStack) -> None:
    status, headers, body = request(stack.function_urls["UrlFunction"], "GET", "/any/path?a=b")

    event = json.loads(body)
    assert status == 200
    assert headers["x-amzn-requestid"]
    assert event["routeKey"] == "$default"
    assert event["rawPath"] == "/any/path"
    assert event["queryStringParameters"] == {"a": "b"}
    assert "pathParameters" not in event
    assert event["requestContext"]["accountId"] == "anonymous"
    assert event["requestContext"]["http"]["method"] == "GET"
    assert stack.outputs["UrlFunctionEndpoint"] == stack.function_urls["UrlFunction"] + "/"


# --- event sources ----------------------------------------------------------------------------


def test_sqs_partial_batch_failure_deletes_the_rest_and_dead_letters_the_failure(
    stack: LocalStack,
) -> None:
    sqs = stack.client("sqs")
    for body in ("job-1", "job-2", "poison-1"):
        sqs.send_message(
            QueueUrl=stack.resources["WorkQueue"],
            MessageBody=body,
            MessageAttributes={"kind": {"DataType": "String", "StringValue": "t"}},
        )

    done = wait_for(lambda: records_including(stack, "sqs", {"job-1", "job-2"}))
    dead = wait_for(
        lambda: sqs.receive_message(
            QueueUrl=stack.resources["WorkDLQ"], MessageAttributeNames=["All"], AttributeNames=["All"]
        ).get("Messages"),
        timeout=30,
    )

    assert [message["Body"] for message in dead] == ["poison-1"]
    assert int(dead[0]["Attributes"]["ApproximateReceiveCount"]) >= 2
    record = done["job-1"]
    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"] == stack.attributes[("WorkQueue", "Arn")]
    assert record["messageAttributes"]["kind"] == {
        "stringValue": "t",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "String",
    }
    assert set(record["attributes"]) >= {
        "ApproximateReceiveCount",
        "SentTimestamp",
        "ApproximateFirstReceiveTimestamp",
    }
    assert record["md5OfBody"]
    attributes = sqs.get_queue_attributes(QueueUrl=stack.resources["WorkQueue"], AttributeNames=["All"])[
        "Attributes"
    ]
    assert attributes["ApproximateNumberOfMessages"] == "0"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"


def test_dynamodb_stream_delivers_only_records_matching_the_filter(stack: LocalStack) -> None:
    dynamodb = stack.client("dynamodb")
    table = stack.resources["SourceTable"]

    dynamodb.put_item(TableName=table, Item={"PK": {"S": "t"}, "SK": {"S": "OUTBOX#1"}})
    dynamodb.put_item(TableName=table, Item={"PK": {"S": "t"}, "SK": {"S": "OTHER#1"}})
    dynamodb.put_item(
        TableName=table, Item={"PK": {"S": "t"}, "SK": {"S": "OUTBOX#1"}, "changed": {"BOOL": True}}
    )  # a MODIFY
    dynamodb.put_item(TableName=table, Item={"PK": {"S": "t"}, "SK": {"S": "OUTBOX#2"}})
    # Stream order: once OUTBOX#2 arrived, everything before it has been filtered.
    seen = wait_for(lambda: records_including(stack, "stream", {"OUTBOX#2"}))

    assert set(seen) == {"OUTBOX#1", "OUTBOX#2"}
    record = seen["OUTBOX#1"]
    assert record["eventName"] == "INSERT"
    assert "changed" not in record["dynamodb"]["NewImage"]
    assert record["eventSource"] == "aws:dynamodb"
    assert record["eventSourceARN"] == stack.attributes[("SourceTable", "StreamArn")]
    assert record["dynamodb"]["Keys"] == {"PK": {"S": "t"}, "SK": {"S": "OUTBOX#1"}}
    assert record["dynamodb"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    assert isinstance(record["dynamodb"]["ApproximateCreationDateTime"], int)


def test_the_stacks_activity_counts_its_event_sources_work_and_not_its_callers_requests(
    stack: LocalStack,
) -> None:
    """The progress marker of the tests' waits (tests/waiting.py): an SQS batch moves it, an HTTP
    request or a direct invoke (what a polling test itself does) moves only the request counts."""
    assert stack in running_stacks()
    events, requests = stack.invocations("event"), stack.invocations("request")

    assert request(stack.api_url, "GET", "/items/counted")[0] == 200
    assert stack.invoke_result("ApiFunction", {"rawPath": "/plain"}).ok

    assert stack.invocations("request")["ApiFunction"] == requests["ApiFunction"] + 2
    assert stack.invocations("event")["ApiFunction"] == events["ApiFunction"]
    before = stack.activity()
    stack.client("sqs").send_message(QueueUrl=stack.resources["WorkQueue"], MessageBody="job-counted")
    wait_for(lambda: records_including(stack, "sqs", {"job-counted"}))
    wait_for(lambda: stack.invocations("event")["WorkerFunction"] > events["WorkerFunction"])

    assert stack.activity() >= before + 2  # its start and its end
    assert stack.invocations()["WorkerFunction"] == sum(
        stack.invocations(trigger)["WorkerFunction"] for trigger in ("event", "request")
    )


# --- schedules --------------------------------------------------------------------------------


def test_schedule_v2_event_creates_a_schedule_that_invokes_the_function(stack: LocalStack) -> None:
    scheduler = stack.client("scheduler")
    schedule = scheduler.get_schedule(Name=stack.resources["ScheduledFunctionEveryFiveMinutes"])
    assert schedule["ScheduleExpression"] == "cron(0/5 * * * ? *)"
    assert schedule["Target"]["Arn"] == stack.attributes[("ScheduledFunction", "Arn")]
    assert stack.scheduler is not None

    firings = stack.scheduler.tick(ahead_of_every_firing(stack, timedelta(minutes=6)))

    assert stack.resources["ScheduledFunctionEveryFiveMinutes"] in [f.schedule for f in firings]
    seen = wait_for(lambda: records(stack, "schedule"))
    # A real five-minute boundary while the module runs fires it too: count is not fixed.
    assert {event["source"] for event in seen.values()} == {"cron"}


def test_scheduler_schedule_resource_sends_its_input_to_the_queue(stack: LocalStack) -> None:
    assert stack.scheduler is not None
    fired_for = ahead_of_every_firing(stack, timedelta(seconds=61))

    firings = stack.scheduler.tick(fired_for)

    assert [f.schedule for f in firings if f.group == "fx-group"] == ["fx-TickSchedule"]
    messages = wait_for(
        lambda: (
            stack.client("sqs")
            .receive_message(QueueUrl=stack.resources["ScheduledQueue"], WaitTimeSeconds=1)
            .get("Messages")
        )
    )
    tick = json.loads(messages[0]["Body"])["tick"]
    assert tick.endswith("Z")
    assert tick != "<aws.scheduler.scheduled-time>"
    assert stack.scheduler.tick(fired_for) == []  # the same occurrence never fires twice


def test_one_time_schedule_created_at_runtime_fires_once_and_is_deleted(
    stack: LocalStack,
) -> None:
    scheduler = stack.client("scheduler")
    sqs = stack.client("sqs")
    queue_url = stack.resources["ScheduledQueue"]
    sqs.purge_queue(QueueUrl=queue_url)
    when = (datetime.now(UTC) + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S")
    scheduler.create_schedule(
        Name="retry-once",
        GroupName=stack.resources["FixtureScheduleGroup"],
        ScheduleExpression=f"at({when})",
        FlexibleTimeWindow={"Mode": "OFF"},
        ActionAfterCompletion="DELETE",
        Target={
            "Arn": stack.attributes[("ScheduledQueue", "Arn")],
            "RoleArn": "arn:aws:iam::123456789012:role/scheduler",
            "Input": '{"retry": "msg-1"}',
        },
    )

    messages = wait_for(
        lambda: sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1).get("Messages"), timeout=15
    )
    assert [json.loads(message["Body"]) for message in messages] == [{"retry": "msg-1"}]

    def deleted() -> bool:
        try:
            scheduler.get_schedule(Name="retry-once", GroupName=stack.resources["FixtureScheduleGroup"])
        except scheduler.exceptions.ResourceNotFoundException:
            return True
        return False

    assert wait_for(deleted, timeout=10)
    assert stack.scheduler is not None
    assert len([f for f in stack.scheduler.fired if f.schedule == "retry-once"]) == 1


def test_echo_destination_answers_with_a_digest(stack: LocalStack) -> None:
    assert stack.echo is not None
    echo = urlsplit(stack.echo_url)

    status, _, body = request(
        stack.echo_url,
        "POST",
        echo.path,
        body=b"payload",
        headers=[("Content-Type", "text/plain"), ("Idempotency-Key", "k-1")],
    )

    answer = json.loads(body)
    assert status == 200
    assert answer == {
        "method": "POST",
        "path": "/echo",
        "headers": {"content-type": "text/plain", "idempotency-key": "k-1"},
        "sha256": "239f59ed55e737c77147cf55ad0c1b030b6d7ee748a7426952f9b852d5a935e5",
        "length": 7,
    }
    assert stack.echo.requests[-1].sha256 == answer["sha256"]
    assert request(stack.echo_url, "PUT", "/status/503", body=b"x")[0] == 503


def test_a_stream_batch_that_keeps_failing_reaches_the_on_failure_destination(stack: LocalStack) -> None:
    dynamodb, sqs = stack.client("dynamodb"), stack.client("sqs")
    table = stack.resources["SourceTable"]
    queue_url = stack.resources["StreamFailureQueue"]  # a queue's Ref is its URL

    dynamodb.put_item(TableName=table, Item={"PK": {"S": "p"}, "SK": {"S": "OUTBOX#poison"}})

    def failure() -> dict[str, Any] | None:
        got = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1).get("Messages", [])
        return json.loads(got[0]["Body"]) if got else None

    record = wait_for(failure)
    assert record["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 2  # the first try + MaximumRetryAttempts 1
    assert record["requestContext"]["functionArn"] == stack.attributes[("StreamFunction", "Arn")]
    assert record["responseContext"]["functionError"] == "Unhandled"
    info = record["DDBStreamBatchInfo"]
    assert info["streamArn"] == stack.attributes[("SourceTable", "StreamArn")]
    assert info["batchSize"] == 1
    assert info["startSequenceNumber"] == info["endSequenceNumber"]
    # The shard moved on: a later record is delivered.
    dynamodb.put_item(TableName=table, Item={"PK": {"S": "p"}, "SK": {"S": "OUTBOX#after-poison"}})
    assert wait_for(lambda: records_including(stack, "stream", {"OUTBOX#after-poison"}))
