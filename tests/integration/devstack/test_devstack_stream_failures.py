"""A stream batch that keeps failing: retried MaximumRetryAttempts times, then Lambda's
on-failure invocation record goes to the destination queue and the shard moves on; with
BisectBatchOnFunctionError the failing record is isolated first (a real moto stream and queue,
polled by hand; the function is a stand-in that fails on chosen keys)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from devstack.destinations import Destinations
from devstack.lambda_runtime import InvocationResult
from devstack.stream_source import StreamPoller, StreamSourceConfig
from tests.aws import mocked_aws, streamed_table

FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:stream-fn"
ISO_SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@dataclass
class Aws:
    dynamodb: Any
    sqs: Any
    stream_arn: str
    queue_url: str
    queue_arn: str

    def put(self, *keys: str) -> None:
        for key in keys:
            self.dynamodb.put_item(TableName="t", Item={"PK": {"S": key}})

    def failure_records(self) -> list[dict[str, Any]]:
        messages = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get(
            "Messages", []
        )
        return [json.loads(message["Body"]) for message in messages]


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    with mocked_aws(monkeypatch):
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        table = streamed_table(dynamodb)
        sqs = boto3.client("sqs", region_name="us-east-1")
        queue_url = sqs.create_queue(QueueName="stream-failures")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        yield Aws(dynamodb, sqs, table["LatestStreamArn"], queue_url, queue_arn)


@dataclass
class Function:
    """Fails every batch holding a poison key (or, with partial responses, reports it)."""

    poison: set[str]
    partial: bool = False
    batches: list[list[str]] = field(default_factory=list)
    processed: list[str] = field(default_factory=list)

    def __call__(self, event: dict[str, Any]) -> InvocationResult:
        records = event["Records"]
        keys = [record["dynamodb"]["Keys"]["PK"]["S"] for record in records]
        self.batches.append(keys)
        request_id = f"req-{len(self.batches)}"
        bad = [record for record, key in zip(records, keys, strict=True) if key in self.poison]
        if bad and not self.partial:
            return InvocationResult(request_id, error={"errorType": "RuntimeError", "errorMessage": "poison"})
        first_bad = keys.index(next(iter(k for k in keys if k in self.poison))) if bad else len(keys)
        self.processed += keys[:first_bad]
        failures = [{"itemIdentifier": r["dynamodb"]["SequenceNumber"]} for r in records[first_bad:]]
        return InvocationResult(request_id, payload={"batchItemFailures": failures})


def poller(aws: Aws, function: Function, **options: Any) -> StreamPoller:
    config = StreamSourceConfig(
        function="StreamFunction",
        stream_arn=aws.stream_arn,
        on_failure_arn=aws.queue_arn,
        report_batch_item_failures=function.partial,
        **options,
    )
    streams = boto3.client("dynamodbstreams", region_name="us-east-1")
    source = StreamPoller(
        config,
        streams,
        function,
        "us-east-1",
        destinations=Destinations(aws.sqs, boto3.client("sns", region_name="us-east-1")),
        function_arn=FUNCTION_ARN,
    )
    source._discover_shards("TRIM_HORIZON")
    return source


def poll_until(source: StreamPoller, done: Any, rounds: int = 50) -> None:
    for _ in range(rounds):
        source.poll()
        if done():
            return
    pytest.fail("the stream source did not get there")


def test_an_always_failing_batch_goes_to_the_destination_after_its_retries_and_the_shard_moves_on(
    aws: Aws,
) -> None:
    function = Function(poison={"poison"})
    source = poller(aws, function, maximum_retry_attempts=2)
    aws.put("poison")

    poll_until(source, lambda: len(function.batches) == 3)
    (record,) = aws.failure_records()
    aws.put("after")
    poll_until(source, lambda: "after" in function.processed)

    assert function.batches == [["poison"]] * 3 + [["after"]]  # first try + MaximumRetryAttempts 2
    assert set(record) == {"requestContext", "responseContext", "version", "timestamp", "DDBStreamBatchInfo"}
    assert record["version"] == "1.0"
    assert record["timestamp"].endswith("Z")
    assert record["requestContext"] == {
        "requestId": "req-3",
        "functionArn": FUNCTION_ARN,
        "condition": "RetryAttemptsExhausted",
        "approximateInvokeCount": 3,
    }
    assert record["responseContext"] == {
        "statusCode": 200,
        "executedVersion": "$LATEST",
        "functionError": "Unhandled",
    }
    info = record["DDBStreamBatchInfo"]
    assert set(info) == {
        "shardId",
        "startSequenceNumber",
        "endSequenceNumber",
        "approximateArrivalOfFirstRecord",
        "approximateArrivalOfLastRecord",
        "batchSize",
        "streamArn",
    }
    assert info["shardId"] in source._shards
    assert info["startSequenceNumber"] == info["endSequenceNumber"]
    assert ISO_SECONDS.match(info["approximateArrivalOfFirstRecord"])
    assert info["approximateArrivalOfLastRecord"] == info["approximateArrivalOfFirstRecord"]
    assert (info["batchSize"], info["streamArn"]) == (1, aws.stream_arn)


def test_bisect_isolates_the_failing_record_and_only_it_reaches_the_destination(aws: Aws) -> None:
    function = Function(poison={"c"})
    source = poller(aws, function, maximum_retry_attempts=0, bisect_on_error=True)
    aws.put("a", "b", "c", "d")

    poll_until(source, lambda: "d" in function.processed)

    # Split in two on each function error (not a retry); the poison record alone then
    # exhausts its retries (none here) and the shard goes on with the rest.
    assert function.batches == [["a", "b", "c", "d"], ["a", "b"], ["c", "d"], ["c"], ["d"]]
    assert function.processed == ["a", "b", "d"]
    (record,) = aws.failure_records()
    assert record["DDBStreamBatchInfo"]["batchSize"] == 1
    assert record["requestContext"]["approximateInvokeCount"] == 1


def test_reported_item_failures_retry_from_the_first_failure_and_are_no_function_error(aws: Aws) -> None:
    function = Function(poison={"c"}, partial=True)
    source = poller(aws, function, maximum_retry_attempts=1)
    aws.put("a", "b", "c", "d")

    poll_until(source, lambda: len(function.batches) == 2)
    (record,) = aws.failure_records()

    assert function.batches == [["a", "b", "c", "d"], ["c", "d"]]
    assert function.processed == ["a", "b"]
    assert record["DDBStreamBatchInfo"]["batchSize"] == 2
    assert "functionError" not in record["responseContext"]
