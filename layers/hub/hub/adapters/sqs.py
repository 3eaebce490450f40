"""SQS adapter: the pipeline lane's work queue."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from hub.adapters.aws import client
from hub.domain.message import StepMessage
from hub.errors import QueueUnavailable


class SqsStepQueue:
    """Publishes slim step messages. Ids ride in message attributes too, so a message can be
    traced on the queue (and in a DLQ) without parsing its body."""

    def __init__(self, queue_url: str) -> None:
        self._url = queue_url

    def publish(self, step: StepMessage, delay_seconds: int = 0) -> None:
        attributes = {
            name: {"DataType": "String", "StringValue": value}
            for name, value in (
                ("message_id", step.message_id),
                ("step", step.step.value),
                ("correlation_id", step.correlation_id),
            )
        }
        try:
            client("sqs").send_message(
                QueueUrl=self._url,
                MessageBody=step.model_dump_json(),
                MessageAttributes=attributes,
                DelaySeconds=max(0, min(delay_seconds, 900)),
            )
        except (BotoCoreError, ClientError) as exc:
            raise QueueUnavailable(
                "the pipeline queue is temporarily unavailable", details={"operation": "SendMessage"}
            ) from exc
