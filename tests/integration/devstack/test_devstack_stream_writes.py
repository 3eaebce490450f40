"""An idle stream poller of the local stack waits for moto's next stream write instead of
reading empty shards (devstack/stream_writes.py): a real moto stream, the poller's own thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devstack import stream_writes
from devstack.lambda_runtime import InvocationResult
from devstack.stream_source import StreamPoller, StreamSourceConfig
from tests.aws import mocked_aws, streamed_table

#: Longer than any test here may take: only a write (or stop) can end an idle wait.
NEVER = 600.0


class CountedStreams:
    """The streams client, counting GetRecords."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.reads = 0
        self._lock = threading.Lock()

    def get_records(self, **kwargs: Any) -> Any:
        with self._lock:
            self.reads += 1
        return self._client.get_records(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


@pytest.fixture
def stream(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    stream_writes.install()
    with mocked_aws(monkeypatch):
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        table = streamed_table(dynamodb)
        yield dynamodb, table["LatestStreamArn"]


def wait_until(done: Any, what: str) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def started(
    config: StreamSourceConfig, streams: CountedStreams, keys: list[str], **options: Any
) -> StreamPoller:
    """The poller of ``config`` on its own thread (every 0.01 s), its function keeping the keys."""

    def invoke(event: dict[str, Any]) -> InvocationResult:
        keys.extend(r["dynamodb"]["Keys"]["PK"]["S"] for r in event["Records"])
        return InvocationResult(request_id="r", payload=None)

    source = StreamPoller(config, streams, invoke, "us-east-1", poll_interval=0.01, **options)
    source.start()
    return source


def test_an_idle_poller_reads_again_only_when_a_record_is_written(stream: tuple[Any, str]) -> None:
    dynamodb, arn = stream
    streams = CountedStreams(boto3.client("dynamodbstreams", region_name="us-east-1"))
    keys: list[str] = []
    config = StreamSourceConfig(function="f", stream_arn=arn)
    source = started(config, streams, keys, writes_signalled=True, idle_ceiling=NEVER)
    try:
        wait_until(lambda: streams.reads >= 1, "the poller never read its shard")
        time.sleep(0.3)  # time-based on purpose: 30 poll intervals in which nothing is written
        idle_reads = streams.reads

        dynamodb.put_item(TableName="t", Item={"PK": {"S": "a"}})
        wait_until(lambda: keys == ["a"], "the write did not wake the poller")  # not its ceiling
    finally:
        source.stop()
        source.join(30)

    assert idle_reads == 1  # one read of the one shard, then a wait
    assert streams.reads > idle_reads
    assert not source._thread.is_alive()  # stop ends the wait at once, not after its ceiling


@pytest.mark.parametrize(
    ("window", "options", "reads_first"),
    [
        # Without the signal, the poller reads every poll interval, as Lambda does.
        (0.0, {}, 5),
        # A batch gathering in its window is read again each interval, not on the next write.
        (0.2, {"writes_signalled": True, "idle_ceiling": NEVER}, 1),
    ],
    ids=["unsignalled", "gathering"],
)
def test_one_write_reaches_the_function_with_no_second_write_to_wake_the_poller(
    stream: tuple[Any, str], window: float, options: dict[str, Any], reads_first: int
) -> None:
    dynamodb, arn = stream
    streams = CountedStreams(boto3.client("dynamodbstreams", region_name="us-east-1"))
    keys: list[str] = []
    config = StreamSourceConfig(function="f", stream_arn=arn, batching_window_seconds=window)
    source = started(config, streams, keys, **options)
    try:
        wait_until(lambda: streams.reads >= reads_first, "the poller did not read as often as it should")
        dynamodb.put_item(TableName="t", Item={"PK": {"S": "a"}})
        wait_until(lambda: keys == ["a"], "the record never reached the function")
    finally:
        source.stop()
        source.join(30)
