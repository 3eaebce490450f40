"""The local stream event source gathers records for MaximumBatchingWindowInSeconds, as Lambda
does, unless a full batch is there first (a real moto stream, polled by hand)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devstack.lambda_runtime import InvocationResult
from devstack.stream_source import StreamPoller, StreamSourceConfig
from tests.aws import mocked_aws, streamed_table


@pytest.fixture
def stream(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    with mocked_aws(monkeypatch):
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        table = streamed_table(dynamodb)
        yield dynamodb, table["LatestStreamArn"]


def poller(arn: str, window: float, batches: list[list[str]], batch_size: int = 10) -> StreamPoller:
    def invoke(event: dict[str, Any]) -> InvocationResult:
        batches.append([r["dynamodb"]["Keys"]["PK"]["S"] for r in event["Records"]])
        return InvocationResult(request_id="r", payload=None)

    config = StreamSourceConfig(
        function="f", stream_arn=arn, batch_size=batch_size, batching_window_seconds=window
    )
    streams = boto3.client("dynamodbstreams", region_name="us-east-1")
    source = StreamPoller(config, streams, invoke, "us-east-1")
    source._discover_shards("TRIM_HORIZON")
    return source


def test_records_wait_for_the_window_then_go_in_one_batch(stream: tuple[Any, str]) -> None:
    dynamodb, arn = stream
    batches: list[list[str]] = []
    source = poller(arn, 0.5, batches)
    dynamodb.put_item(TableName="t", Item={"PK": {"S": "a"}})

    source.poll()
    dynamodb.put_item(TableName="t", Item={"PK": {"S": "b"}})
    source.poll()
    assert batches == []

    time.sleep(0.6)
    source.poll()
    assert batches == [["a", "b"]]


def test_a_full_batch_goes_at_once_and_no_window_means_no_wait(stream: tuple[Any, str]) -> None:
    dynamodb, arn = stream
    full: list[list[str]] = []
    immediate: list[list[str]] = []
    windowed, unwindowed = poller(arn, 60, full, batch_size=2), poller(arn, 0, immediate, batch_size=2)
    for key in ("a", "b"):
        dynamodb.put_item(TableName="t", Item={"PK": {"S": key}})

    windowed.poll()
    unwindowed.poll()

    assert full == [["a", "b"]]
    assert immediate == [["a", "b"]]
