"""SQS adapter: the pipeline lane's work queue, the DLQ redrive, and queue depths."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from hub.adapters.aws import client
from hub.domain.message import StepMessage
from hub.errors import QueueUnavailable

if TYPE_CHECKING:
    from hub.admin.health import QueueDepth
    from hub.delivery.gate import ConnectionJob
    from hub.domain.bulk_page import BulkPage


class SqsStepQueue:
    """Publishes slim step messages. Ids ride in message attributes too, so a message can be
    traced on the queue (and in a DLQ) without parsing its body. Each carries its tenant as
    `MessageGroupId` (issue 30): on a standard queue that names the tenant for SQS fair queues,
    which serve quiet tenants' messages first while one tenant holds the workers."""

    def __init__(self, queue_url: str) -> None:
        self._url = queue_url

    def publish(self, step: StepMessage, delay_seconds: int = 0) -> None:
        self._send(
            step.tenant_id,
            step.model_dump_json(),
            (
                ("message_id", step.message_id),
                ("step", step.step.value),
                ("correlation_id", step.correlation_id),
            ),
            delay_seconds,
        )

    def publish_job(self, job: ConnectionJob, delay_seconds: int = 0) -> None:
        """A connection job (issue 12: release a page of held messages, probe an open breaker)."""
        self._send(
            job.tenant_id,
            job.model_dump_json(),
            (("connection_id", job.connection_id), ("step", f"job:{job.job.value}")),
            delay_seconds,
        )

    def publish_bulk_page(self, page: BulkPage, delay_seconds: int = 0) -> None:
        """One page of a bulk job (issue 28: reprocess or cancel the messages a filter matches)."""
        self._send(
            page.tenant_id,
            page.model_dump_json(),
            (("bulk_job", page.bulk_job), ("step", "job:bulk")),
            delay_seconds,
        )

    def _send(self, tenant_id: str, body: str, ids: tuple[tuple[str, str], ...], delay_seconds: int) -> None:
        attributes = {name: {"DataType": "String", "StringValue": value} for name, value in ids}
        _send_message(
            QueueUrl=self._url,
            MessageBody=body,
            MessageAttributes=attributes,
            MessageGroupId=tenant_id,
            DelaySeconds=max(0, min(delay_seconds, 900)),
        )


def _send_message(**request: Any) -> None:
    """One SendMessage to the pipeline queue; QueueUnavailable when SQS does not take it."""
    try:
        client("sqs").send_message(**request)
    except (BotoCoreError, ClientError) as exc:
        raise QueueUnavailable(
            "the pipeline queue is temporarily unavailable", details={"operation": "SendMessage"}
        ) from exc


class SqsDeadLetterMover:
    """Moves step messages from a DLQ back to its work queue (the DLQ redrive). Each batch is
    sent before it is deleted: a crash in between leaves a copy in both, and the worker's step
    guards drop the second run; nothing is lost."""

    def move(self, dead_letter_queue: str, work_queue: str, limit: int) -> int:
        sqs = client("sqs")
        moved = 0
        try:
            while moved < limit:
                batch = sqs.receive_message(
                    QueueUrl=dead_letter_queue,
                    MaxNumberOfMessages=min(10, limit - moved),
                    MessageAttributeNames=["All"],
                    MessageSystemAttributeNames=["MessageGroupId"],
                    VisibilityTimeout=60,
                    WaitTimeSeconds=1,
                ).get("Messages", [])
                if not batch:
                    return moved
                entries = [
                    {
                        "Id": str(index),
                        "MessageBody": message["Body"],
                        **(
                            {"MessageAttributes": message["MessageAttributes"]}
                            if message.get("MessageAttributes")
                            else {}
                        ),
                        # The tenant (fair queues, issue 30) goes back with the message.
                        **(
                            {"MessageGroupId": group}
                            if (group := message.get("Attributes", {}).get("MessageGroupId"))
                            else {}
                        ),
                    }
                    for index, message in enumerate(batch)
                ]
                sent = sqs.send_message_batch(QueueUrl=work_queue, Entries=entries)
                if sent.get("Failed"):
                    raise QueueUnavailable(
                        "the work queue refused part of a redrive batch; nothing of it was deleted",
                        details={"operation": "SendMessageBatch", "moved": moved},
                    )
                sqs.delete_message_batch(
                    QueueUrl=dead_letter_queue,
                    Entries=[
                        {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
                        for index, message in enumerate(batch)
                    ],
                )
                moved += len(batch)
        except (BotoCoreError, ClientError) as exc:
            raise QueueUnavailable(
                "the dead-letter queue is temporarily unavailable",
                details={"operation": "redrive", "moved": moved},
            ) from exc
        return moved


#: The depth attributes, one GetQueueAttributes per queue.
_DEPTH_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)


class SqsQueueGauges:
    """A queue's approximate depths (the admin Health view)."""

    def depth(self, queue_url: str) -> QueueDepth:
        # Imported here: the step queue's users (ingest, the worker) never load the admin side.
        from hub.admin.health import QueueDepth  # noqa: PLC0415

        try:
            attributes = client("sqs").get_queue_attributes(
                QueueUrl=queue_url, AttributeNames=list(_DEPTH_ATTRIBUTES)
            )["Attributes"]
        except (BotoCoreError, ClientError) as exc:
            raise QueueUnavailable(
                "a queue is temporarily unavailable", details={"operation": "GetQueueAttributes"}
            ) from exc
        visible, in_flight, delayed = (int(attributes.get(name, 0)) for name in _DEPTH_ATTRIBUTES)
        return QueueDepth(visible=visible, in_flight=in_flight, delayed=delayed)


class SqsRedelivery:
    """Sends a received pipeline-queue record back to its queue as it came: the same body,
    message attributes and message group, no delay (the worker's time guard,
    hub.pipeline.batch). The copy is a new message: visible at once, its receive count afresh."""

    def __init__(self, queue_url: str) -> None:
        self._url = queue_url

    def send_again(
        self, body: str, message_attributes: Mapping[str, Mapping[str, Any]], group_id: str | None
    ) -> None:
        """`message_attributes` as Lambda's SQS event carries them (`dataType`, `stringValue`,
        `binaryValue` in base64). Raises QueueUnavailable when SQS refuses the copy."""
        request: dict[str, Any] = {"QueueUrl": self._url, "MessageBody": body, "DelaySeconds": 0}
        attributes = {name: _send_form(value) for name, value in message_attributes.items()}
        if attributes:
            request["MessageAttributes"] = attributes
        if group_id:
            request["MessageGroupId"] = group_id
        _send_message(**request)


def _send_form(attribute: Mapping[str, Any]) -> dict[str, Any]:
    """A message attribute of a Lambda SQS record, in SendMessage's form (String and Number
    types carry a string value, Binary a base64 one)."""
    data_type = str(attribute["dataType"])
    if attribute.get("binaryValue") is not None:
        return {"DataType": data_type, "BinaryValue": base64.b64decode(attribute["binaryValue"])}
    return {"DataType": data_type, "StringValue": str(attribute.get("stringValue", ""))}
