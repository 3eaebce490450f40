"""DynamoDB Streams event source mapping: read shards, filter, invoke in order.

Records are delivered per shard in sequence order. A failed batch is retried (bounded by
MaximumRetryAttempts, default 3 locally instead of Lambda's "until the record expires"; the
retry comes one poll interval later, where Lambda backs off up to a minute);
with ReportBatchItemFailures the retry resumes at the first reported sequence number, and with
BisectBatchOnFunctionError a batch the function failed is split in two and each half retried
on its own (splits do not count as retries, as in Lambda). A batch whose retries are exhausted
is discarded, the shard moves past it, and, when the mapping has ``DestinationConfig.OnFailure``,
Lambda's invocation record describing it (``requestContext.condition = RetryAttemptsExhausted``,
``DDBStreamBatchInfo`` with the shard and sequence range, no records) is sent to that SQS queue
or SNS topic.
Records dropped by FilterCriteria count as processed, as in Lambda. MaximumBatchingWindowInSeconds
is honoured: records are gathered from the first one waiting until the window ends or a batch
is full.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from devstack import stream_writes
from devstack.destinations import Destinations
from devstack.event_filter import matches_any
from devstack.lambda_runtime import InvocationResult
from devstack.poller import Invoke, Poller

logger = logging.getLogger(__name__)

#: How often a poller looks for shards created after it started.
SHARD_DISCOVERY_SECONDS = 10.0


@dataclass(frozen=True)
class StreamSourceConfig:
    """The resolved ``Type: DynamoDB`` event properties."""

    function: str
    stream_arn: str
    starting_position: str = "LATEST"
    batch_size: int = 100
    report_batch_item_failures: bool = False
    maximum_retry_attempts: int = 3
    enabled: bool = True
    filter_patterns: tuple[Mapping[str, Any], ...] = ()
    #: DestinationConfig.OnFailure.Destination: an SQS queue or SNS topic ARN.
    on_failure_arn: str | None = None
    #: MaximumBatchingWindowInSeconds: records are gathered this long (from the first one
    #: waiting) unless a full batch is there first, as Lambda does.
    batching_window_seconds: float = 0.0
    #: BisectBatchOnFunctionError.
    bisect_on_error: bool = False


def _jsonable(value: Any) -> Any:
    """Boto3 gives binary attributes as bytes; the Lambda event carries them as base64."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | set | tuple):
        return [_jsonable(item) for item in value]
    return value


def lambda_record(record: Mapping[str, Any], stream_arn: str, region: str) -> dict[str, Any]:
    """A ``get_records`` record in the shape Lambda puts in ``event["Records"]``."""
    dynamodb = dict(record.get("dynamodb", {}))
    created = dynamodb.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        dynamodb["ApproximateCreationDateTime"] = int(created.timestamp())
    shaped = {
        "eventID": record.get("eventID"),
        "eventName": record.get("eventName"),
        "eventVersion": record.get("eventVersion", "1.1"),
        "eventSource": "aws:dynamodb",
        "awsRegion": record.get("awsRegion", region),
        "dynamodb": _jsonable(dynamodb),
        "eventSourceARN": stream_arn,
    }
    if "userIdentity" in record:
        shaped["userIdentity"] = record["userIdentity"]
    return shaped


def resume_index(payload: Any, batch: list[dict[str, Any]]) -> int | None:
    """Index in ``batch`` to retry from, given a ReportBatchItemFailures response.

    Returns None when nothing failed, and 0 (retry everything) for a malformed response.
    """
    if not isinstance(payload, dict) or not payload.get("batchItemFailures"):
        return None
    positions = {record["dynamodb"].get("SequenceNumber"): i for i, record in enumerate(batch)}
    indexes = []
    for item in payload["batchItemFailures"]:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if identifier not in positions:
            return 0
        indexes.append(positions[identifier])
    return min(indexes)


def _arrival(record: Mapping[str, Any]) -> str | None:
    created = record["dynamodb"].get("ApproximateCreationDateTime")
    if not isinstance(created, int | float):
        return None
    return datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def failure_record(
    config: StreamSourceConfig,
    function_arn: str,
    shard_id: str,
    batch: list[dict[str, Any]],
    *,
    invocations: int,
    result: InvocationResult,
) -> dict[str, Any]:
    """The on-failure destination's message for a discarded batch: Lambda's invocation record
    for stream sources, which says where the batch was, not what it held."""
    return {
        "requestContext": {
            "requestId": result.request_id,
            "functionArn": function_arn,
            "condition": "RetryAttemptsExhausted",
            "approximateInvokeCount": invocations,
        },
        "responseContext": {
            "statusCode": 200,
            "executedVersion": "$LATEST",
            # A batch the function answered with batchItemFailures is no function error.
            **({} if result.ok else {"functionError": "Unhandled"}),
        },
        "version": "1.0",
        "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "DDBStreamBatchInfo": {
            "shardId": shard_id,
            "startSequenceNumber": batch[0]["dynamodb"].get("SequenceNumber"),
            "endSequenceNumber": batch[-1]["dynamodb"].get("SequenceNumber"),
            "approximateArrivalOfFirstRecord": _arrival(batch[0]),
            "approximateArrivalOfLastRecord": _arrival(batch[-1]),
            "batchSize": len(batch),
            "streamArn": config.stream_arn,
        },
    }


class _Shard:
    def __init__(self, shard_id: str, iterator: str | None) -> None:
        self.shard_id = shard_id
        self.iterator = iterator
        self.pending: list[dict[str, Any]] = []
        self.attempts = 0
        #: BisectBatchOnFunctionError: the size of the batch to send while a failed batch is
        #: worked through in halves (None: the mapping's BatchSize), and how many of that failed
        #: batch's records are still ahead.
        self.split_size: int | None = None
        self.split_remaining = 0
        #: When the oldest pending record was read (the batching window counts from it).
        self.pending_since = 0.0


class StreamPoller(Poller):
    """Polls every shard of one stream for one function, in a single thread."""

    def __init__(
        self,
        config: StreamSourceConfig,
        streams: Any,
        invoke: Invoke,
        region: str,
        *,
        poll_interval: float = 0.2,
        destinations: Destinations | None = None,
        function_arn: str | None = None,
        writes_signalled: bool = False,
        idle_ceiling: float = stream_writes.IDLE_CEILING,
    ) -> None:
        """``writes_signalled``: the stream is in this process's moto, with
        ``stream_writes.install()`` done: an idle poller waits for a write (at most
        ``idle_ceiling`` seconds) instead of polling."""
        super().__init__(f"ddb-stream:{config.function}", poll_interval)
        self.config = config
        self._destinations = destinations
        self._function_arn = function_arn or config.function
        self._streams = streams
        self._invoke = invoke
        self._region = region
        self._shards: dict[str, _Shard] = {}
        self._signalled = writes_signalled
        self._idle_ceiling = idle_ceiling
        self._writes_seen = 0
        self._discovered_at = 0.0

    def start(self) -> None:
        """Take shard iterators now (so LATEST means "from stack start"), then poll."""
        if not self.config.enabled:
            return
        self._discover_shards(self.config.starting_position)
        super().start()

    def _discover_shards(self, position: str) -> None:
        self._discovered_at = time.monotonic()
        description = self._streams.describe_stream(StreamArn=self.config.stream_arn)
        for shard in description["StreamDescription"].get("Shards", []):
            shard_id = shard["ShardId"]
            if shard_id in self._shards:
                continue
            iterator = self._streams.get_shard_iterator(
                StreamArn=self.config.stream_arn,
                ShardId=shard_id,
                ShardIteratorType=position,
            )["ShardIterator"]
            self._shards[shard_id] = _Shard(shard_id, iterator)

    def poll(self) -> bool:
        self._writes_seen = stream_writes.count()
        if time.monotonic() - self._discovered_at >= SHARD_DISCOVERY_SECONDS:
            self._discover_shards("TRIM_HORIZON")  # shards created after start
        busy = False
        for shard in list(self._shards.values()):
            busy = self._poll_shard(shard) or busy
        return busy

    def idle(self) -> None:
        """Nothing pending on any shard: wait for the next stream write (at most the idle
        ceiling). Records gathering in a batching window, or a batch to
        retry, wait one poll interval as before."""
        if self._signalled and not any(shard.pending for shard in self._shards.values()):
            stream_writes.wait_after(self._writes_seen, self._stop, self._idle_ceiling)
        else:
            super().idle()

    def stop(self) -> None:
        super().stop()
        if self._signalled:
            stream_writes.wake()

    def _poll_shard(self, shard: _Shard) -> bool:
        """Fetch and process one batch of a shard; True when it succeeded with records."""
        config = self.config
        if len(shard.pending) < config.batch_size and shard.iterator:
            response = self._streams.get_records(
                ShardIterator=shard.iterator, Limit=min(config.batch_size, 1000)
            )
            shard.iterator = response.get("NextShardIterator")
            for raw in response.get("Records", []):
                record = lambda_record(raw, config.stream_arn, self._region)
                if matches_any(config.filter_patterns, record):
                    if not shard.pending:
                        shard.pending_since = time.monotonic()
                    shard.pending.append(record)
        if not shard.pending:
            return False
        gathering = time.monotonic() - shard.pending_since < config.batching_window_seconds
        if gathering and len(shard.pending) < config.batch_size and not shard.attempts:
            return False
        batch = shard.pending[: shard.split_size or config.batch_size]
        result = self._invoke({"Records": batch})
        failed = batch
        if result.ok:
            failed_from = resume_index(result.payload, batch) if config.report_batch_item_failures else None
            if failed_from is None:
                self._done(shard, len(batch))
                shard.attempts = 0
                return True
            self._done(shard, failed_from)
            failed = batch[failed_from:]
        elif config.bisect_on_error and len(batch) > 1:
            # Split in two and retry the first half; splitting is not a retry.
            if shard.split_size is None:
                shard.split_remaining = len(batch)
            shard.split_size = (len(batch) + 1) // 2
            shard.attempts = 0
            return True
        shard.attempts += 1
        if shard.attempts > config.maximum_retry_attempts:
            logger.warning(
                "%s: dropping a batch of %d stream records after %d retries",
                config.function,
                len(failed),
                config.maximum_retry_attempts,
            )
            self._send_failure(shard.shard_id, failed, shard.attempts, result)
            self._done(shard, len(failed))
            shard.attempts = 0
        return False  # back off one poll interval before the retry

    @staticmethod
    def _done(shard: _Shard, count: int) -> None:
        """The shard moves past its first ``count`` pending records."""
        del shard.pending[:count]
        if shard.split_size is not None:
            shard.split_remaining -= count
            if shard.split_remaining <= 0:
                shard.split_size, shard.split_remaining = None, 0

    def _send_failure(
        self, shard_id: str, batch: list[dict[str, Any]], invocations: int, result: InvocationResult
    ) -> None:
        arn = self.config.on_failure_arn
        if not arn or not batch:
            return
        if self._destinations is None:
            logger.warning("%s: no destinations; the failure record is dropped", self.config.function)
            return
        record = failure_record(
            self.config, self._function_arn, shard_id, batch, invocations=invocations, result=result
        )
        self._destinations.send(arn, record, source=self.config.function)
