"""SQS event source mapping: poll a queue and invoke a function with batches.

Deletion follows Lambda: a successful batch is deleted, except the items the function
reports in ``batchItemFailures`` (only with ReportBatchItemFailures). A failed invocation
deletes nothing, so messages reappear after the visibility timeout and the queue's own
RedrivePolicy moves them to the dead-letter queue after maxReceiveCount receives.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devstack.event_filter import matches_any
from devstack.poller import Invoke, Poller

logger = logging.getLogger(__name__)


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
    """One polling thread for one queue → function mapping."""

    def __init__(
        self,
        config: SqsSourceConfig,
        sqs: Any,
        invoke: Invoke,
        region: str,
        *,
        poll_interval: float = 0.2,
        wait_seconds: int = 1,
    ) -> None:
        super().__init__(f"sqs:{config.function}", poll_interval)
        self.config = config
        self._sqs = sqs
        self._invoke = invoke
        self._region = region
        self._wait_seconds = wait_seconds

    def start(self) -> None:
        if self.config.enabled:
            super().start()

    def poll(self) -> bool:
        messages = self._receive_batch()
        if messages:
            self.process(messages)
        return bool(messages)

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
