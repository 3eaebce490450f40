"""SQS adapter: the webhooks lane's work queue (issue 12)."""

from __future__ import annotations

from collections.abc import Sequence

from botocore.exceptions import BotoCoreError, ClientError

from hub.adapters.aws import client
from hub.errors import QueueUnavailable
from hub.outbox.webhooks import WebhookJob

#: SendMessageBatch's limit.
_BATCH = 10
#: Rounds for entries SQS refused in a batch (throttling) before giving up.
_ROUNDS = 3


class SqsWebhookQueue:
    """Puts webhook jobs on the webhooks queue, ten per SendMessageBatch. Ids ride in message
    attributes, so a job is traceable on the queue and in its DLQ without parsing its body."""

    def __init__(self, queue_url: str) -> None:
        self._url = queue_url

    def send(self, jobs: Sequence[WebhookJob]) -> None:
        """Every job, or QueueUnavailable (the caller's stream batch is then retried: the jobs
        sent meanwhile go out again with the same webhook-id, which receivers deduplicate)."""
        for start in range(0, len(jobs), _BATCH):
            self._send_batch(jobs[start : start + _BATCH])

    def _send_batch(self, jobs: Sequence[WebhookJob]) -> None:
        entries = {
            str(index): {
                "Id": str(index),
                "MessageBody": job.model_dump_json(exclude_none=True),
                # The event's tenant names it for SQS fair queues (issue 30).
                "MessageGroupId": job.event.tenant_id,
                "MessageAttributes": {
                    name: {"DataType": "String", "StringValue": value}
                    for name, value in (
                        ("subscription_id", job.subscription_id),
                        ("event_id", job.event.id),
                        ("event_type", job.event.type.value),
                    )
                },
            }
            for index, job in enumerate(jobs)
        }
        for _ in range(_ROUNDS):
            try:
                answer = client("sqs").send_message_batch(QueueUrl=self._url, Entries=list(entries.values()))
            except (BotoCoreError, ClientError) as exc:
                raise QueueUnavailable(
                    "the webhooks queue is temporarily unavailable", details={"operation": "SendMessageBatch"}
                ) from exc
            entries = {f["Id"]: entries[f["Id"]] for f in answer.get("Failed", [])}
            if not entries:
                return
        raise QueueUnavailable(
            "the webhooks queue refused part of a batch", details={"operation": "SendMessageBatch"}
        )
