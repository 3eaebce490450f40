"""What SQS does for CloudWatch, locally: every minute, each queue's AWS/SQS metrics.

AWS publishes ``ApproximateNumberOfMessagesVisible`` / ``...NotVisible`` / ``...Delayed`` and
``ApproximateAgeOfOldestMessage`` per queue (dimension ``QueueName``) once a minute; alarms and
the admin Health view read them. moto publishes nothing, so this thread computes them from
moto's own queues (moto runs in this process) and puts them into moto's CloudWatch.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any

from devstack.poller import Poller

logger = logging.getLogger(__name__)


def queue_metrics(queue: Any, now_ms: int) -> dict[str, float]:
    """The AWS/SQS metrics of one moto queue: depths, and the age (seconds) of its oldest
    message that is not delayed (0 for an empty queue, as AWS reports it)."""
    messages = list(queue._messages)
    delayed = [m for m in messages if m.delayed]
    in_flight = [m for m in messages if not m.delayed and not m.visible]
    ready = [m for m in messages if not m.delayed]
    sent = [m.sent_timestamp for m in ready if m.sent_timestamp]
    return {
        "ApproximateNumberOfMessagesVisible": float(len(ready) - len(in_flight)),
        "ApproximateNumberOfMessagesNotVisible": float(len(in_flight)),
        "ApproximateNumberOfMessagesDelayed": float(len(delayed)),
        "ApproximateAgeOfOldestMessage": max(0.0, (now_ms - min(sent)) / 1000) if sent else 0.0,
    }


class SqsMetricsPublisher(Poller):
    """Puts every queue's AWS/SQS metrics into CloudWatch each `interval` seconds (the first
    time at start)."""

    def __init__(self, cloudwatch: Any, account_id: str, region: str, interval: float = 60.0) -> None:
        super().__init__("sqs-metrics", interval)
        self._cloudwatch = cloudwatch
        self._account_id = account_id
        self._region = region

    def poll(self) -> bool:
        self.publish()
        return False

    def publish(self) -> int:
        """One round; how many queues it published."""
        from moto.sqs.models import sqs_backends  # noqa: PLC0415 - moto is in-process here

        backend = sqs_backends[self._account_id][self._region]
        now_ms = int(time.time() * 1000)
        at = datetime.fromtimestamp(now_ms / 1000, UTC)
        published = 0
        for name, queue in list(backend.queues.items()):
            data = [
                {
                    "MetricName": metric,
                    "Dimensions": [{"Name": "QueueName", "Value": name}],
                    "Value": value,
                    "Unit": "Seconds" if metric == "ApproximateAgeOfOldestMessage" else "Count",
                    "Timestamp": at,
                }
                for metric, value in queue_metrics(queue, now_ms).items()
            ]
            self._cloudwatch.put_metric_data(Namespace="AWS/SQS", MetricData=data)
            published += 1
        return published
