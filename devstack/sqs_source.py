"""SQS event source mapping: poll a queue and invoke a function with batches.

Deletion follows Lambda: a successful batch is deleted, except the items the function
reports in ``batchItemFailures`` (only with ReportBatchItemFailures). A failed invocation
deletes nothing, so messages reappear after the visibility timeout and the queue's own
RedrivePolicy moves them to the dead-letter queue after maxReceiveCount receives.

Concurrency follows Lambda's SQS pollers: a mapping starts with 5 batches in flight at once and,
while batches keep coming back full, adds one more every ``scale_interval`` seconds (Lambda: up
to 300 a minute), up to ``ScalingConfig.MaximumConcurrency`` when set; the stack also caps it at
the function's reserved concurrency and its local instance pool. Once receives come back empty
it drops back, one at a time, to where it started.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from devstack.event_filter import matches_any
from devstack.poller import Invoke, Poller

logger = logging.getLogger(__name__)

#: Lambda starts every SQS event source mapping with five concurrent batches.
STARTING_CONCURRENCY = 5


@dataclass(frozen=True)
class SqsSourceConfig:
    """The resolved ``Type: SQS`` event properties."""

    function: str
    queue_arn: str
    queue_url: str
    batch_size: int = 10
    batching_window_seconds: float = 0.0
    report_batch_item_failures: bool = False
    enabled: bool = True
    filter_patterns: tuple[Mapping[str, Any], ...] = ()
    #: ScalingConfig.MaximumConcurrency (2-1000 on AWS); None: no limit of the mapping's own.
    maximum_concurrency: int | None = None


class Concurrency:
    """How many batches of one mapping may be in flight, scaled like Lambda's SQS pollers.

    Starts at ``start`` (at most ``cap``); ``acquire`` grows the limit by one per
    ``scale_interval`` while the caller reports a backlog and every slot is taken, and
    ``idle`` shrinks it by one per interval, never below the start.
    """

    def __init__(self, start: int, cap: int, scale_interval: float) -> None:
        self.cap = max(1, cap)
        self.floor = max(1, min(start, self.cap))
        self.limit = self.floor
        self.in_flight = 0
        #: The most batches seen in flight at once (tests and the log read it).
        self.peak = 0
        self._scale_interval = scale_interval
        self._changed = time.monotonic()
        self._condition = threading.Condition()

    def acquire(self, stop: threading.Event, backlog: bool) -> bool:
        """Takes a slot, waiting while all are busy; False when ``stop`` is set first."""
        with self._condition:
            while self.in_flight >= self.limit:
                now = time.monotonic()
                can_grow = backlog and self.limit < self.cap
                if can_grow and now - self._changed >= self._scale_interval:
                    self.limit += 1
                    self._changed = now
                    logger.debug("sqs concurrency up to %d", self.limit)
                    continue
                if stop.is_set():
                    return False
                wait = self._changed + self._scale_interval - now if can_grow else 0.2
                self._condition.wait(min(max(wait, 0.01), 0.2))
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            return True

    def release(self) -> None:
        with self._condition:
            self.in_flight -= 1
            self._condition.notify_all()

    def idle(self) -> None:
        """A receive came back empty: one slot fewer, once per interval, down to the start."""
        with self._condition:
            now = time.monotonic()
            if self.limit > self.floor and now - self._changed >= self._scale_interval:
                self.limit -= 1
                self._changed = now


def lambda_record(message: Mapping[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """One SQS message in the shape Lambda puts in ``event["Records"]``."""
    attributes = {key: str(value) for key, value in message.get("Attributes", {}).items()}
    message_attributes = {}
    for name, attribute in message.get("MessageAttributes", {}).items():
        shaped: dict[str, Any] = {
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": attribute["DataType"],
        }
        if "StringValue" in attribute:
            shaped["stringValue"] = attribute["StringValue"]
        if "BinaryValue" in attribute:
            shaped["binaryValue"] = base64.b64encode(attribute["BinaryValue"]).decode("ascii")
        message_attributes[name] = shaped
    record = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": attributes,
        "messageAttributes": message_attributes,
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def failed_message_ids(payload: Any, batch_ids: set[str]) -> set[str] | None:
    """Message ids to keep from a ReportBatchItemFailures response.

    Returns None when the response is malformed (Lambda then treats the whole batch as
    failed): an item without an identifier or with an identifier not in the batch.
    """
    if not isinstance(payload, dict) or not payload.get("batchItemFailures"):
        return set()
    failures = set()
    for item in payload["batchItemFailures"]:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not identifier or identifier not in batch_ids:
            return None
        failures.add(str(identifier))
    return failures


def _filter_view(record: Mapping[str, Any]) -> dict[str, Any]:
    """Lambda filters SQS on the body parsed as JSON when it is JSON, else as a string."""
    view = dict(record)
    with contextlib.suppress(TypeError, ValueError):
        view["body"] = json.loads(record["body"])
    return view


class SqsPoller(Poller):
    """One queue → function mapping: a receiving thread that hands each batch to a worker
    thread while a concurrency slot is free (see ``Concurrency``)."""

    def __init__(
        self,
        config: SqsSourceConfig,
        sqs: Any,
        invoke: Invoke,
        region: str,
        *,
        poll_interval: float = 0.2,
        wait_seconds: int = 1,
        starting_concurrency: int = STARTING_CONCURRENCY,
        concurrency_cap: int | None = None,
        scale_interval: float = 0.5,
    ) -> None:
        super().__init__(f"sqs:{config.function}", poll_interval)
        self.config = config
        self._sqs = sqs
        self._invoke = invoke
        self._region = region
        self._wait_seconds = wait_seconds
        caps = [cap for cap in (config.maximum_concurrency, concurrency_cap) if cap is not None]
        cap = min(caps) if caps else max(starting_concurrency, 1)
        self.concurrency = Concurrency(starting_concurrency, cap, scale_interval)
        self._executor = ThreadPoolExecutor(
            max_workers=self.concurrency.cap, thread_name_prefix=f"sqs-batch:{config.function}"
        )
        self._backlog = False
        self._paused = threading.Event()
        self._receiving = threading.Lock()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No batch is received inside the block (Lambda: the mapping disabled for a moment);
        on entry a receive under way has finished, batches in flight run on. Messages sent inside
        wait on the queue and the first receive after the block takes them together (tests
        that need several messages in one batch)."""
        self._paused.set()
        with self._receiving:  # wait out a receive (long poll) already under way
            pass
        try:
            yield
        finally:
            self._paused.clear()

    def start(self) -> None:
        if self.config.enabled:
            super().start()

    def stop(self) -> None:
        super().stop()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def poll(self) -> bool:
        if not self.concurrency.acquire(self._stop, self._backlog):
            return False
        try:
            with self._receiving:
                messages = [] if self._paused.is_set() else self._receive_batch()
        except BaseException:
            self.concurrency.release()
            raise
        if not messages:
            self.concurrency.release()
            self.concurrency.idle()
            self._backlog = False
            return False
        self._backlog = len(messages) >= self.config.batch_size
        try:
            self._executor.submit(self._run_batch, messages)
        except RuntimeError:  # shut down: the stack is stopping; the messages come back
            self.concurrency.release()
            return False
        return True

    def _run_batch(self, messages: list[dict[str, Any]]) -> None:
        try:
            self.process(messages)
        except Exception:
            if not self._stop.is_set():
                logger.exception("sqs:%s: a batch failed to process", self.config.function)
        finally:
            self.concurrency.release()

    def _receive_batch(self) -> list[dict[str, Any]]:
        """Up to BatchSize messages, gathering for the batching window when it is set."""
        config = self.config
        deadline = time.monotonic() + config.batching_window_seconds
        batch: list[dict[str, Any]] = []
        while len(batch) < config.batch_size and not self._stop.is_set():
            response = self._sqs.receive_message(
                QueueUrl=config.queue_url,
                MaxNumberOfMessages=min(config.batch_size - len(batch), 10),
                WaitTimeSeconds=0 if batch else self._wait_seconds,
                AttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            received = response.get("Messages", [])
            batch.extend(received)
            if not received or time.monotonic() >= deadline:
                break
        return batch

    def process(self, messages: list[dict[str, Any]]) -> None:
        """Filter, invoke and delete one received batch."""
        config = self.config
        records = [lambda_record(message, config.queue_arn, self._region) for message in messages]
        matching = []
        dropped = []
        for record in records:
            if matches_any(config.filter_patterns, _filter_view(record)):
                matching.append(record)
            else:
                dropped.append(record)  # Lambda deletes messages its filter drops
        self._delete(dropped)
        if not matching:
            return
        result = self._invoke({"Records": matching})
        if not result.ok:
            logger.info(
                "%s failed a batch of %d; messages return after the visibility timeout",
                config.function,
                len(matching),
            )
            return
        keep: set[str] | None = set()
        if config.report_batch_item_failures:
            keep = failed_message_ids(result.payload, {r["messageId"] for r in matching})
        if keep is None:
            logger.warning("%s returned malformed batchItemFailures; batch kept", config.function)
            return
        self._delete([record for record in matching if record["messageId"] not in keep])

    def _delete(self, records: list[dict[str, Any]]) -> None:
        for start in range(0, len(records), 10):
            chunk = records[start : start + 10]
            self._sqs.delete_message_batch(
                QueueUrl=self.config.queue_url,
                Entries=[
                    {"Id": str(index), "ReceiptHandle": record["receiptHandle"]}
                    for index, record in enumerate(chunk)
                ],
            )
