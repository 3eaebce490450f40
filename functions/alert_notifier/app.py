"""Alert notifier: dead letters (HubTable stream, filtered to records entering `dead_letter`)
and CloudWatch alarm notifications (AlertTopic, SNS) become grouped Slack and email alerts."""

from __future__ import annotations

import hub.cold_start  # noqa: F401 - first: pauses the collector for the cold start

# isort: split
from typing import Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes import DynamoDBStreamEvent, SNSEvent
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from hub.alerts.notifier import AlertOutcome
from hub.logs import configure as configure_logging
from hub.logs import new_logger
from hub.observability import gc_after_first_invocation, traced
from hub.wiring.alerts import alert_notifier, init

# Cold start: this function's settings, validated now (a missing or malformed variable fails
# the init, named, not the first request).
init()
logger = new_logger()
configure_logging(logger)
metrics = Metrics()
processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


def _count(outcome: AlertOutcome) -> None:
    metrics.add_metric(name=f"Alert_{outcome.value}", unit=MetricUnit.Count, value=1)


def _sequence(record: DynamoDBRecord) -> str:
    return (record.dynamodb.sequence_number if record.dynamodb else None) or ""


def _image(record: DynamoDBRecord) -> tuple[str, dict[str, Any]]:
    return _sequence(record), record.dynamodb.new_image if record.dynamodb else {}


@gc_after_first_invocation
@logger.inject_lambda_context
@metrics.log_metrics
@traced
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> Any:
    records = event.get("Records") or []
    if records and records[0].get("EventSource") == "aws:sns":
        for notification in SNSEvent(event).records:  # one per invocation; raising retries it
            _count(alert_notifier().notify_alarm(notification.sns.message, notification.sns.message_id))
        return {}
    batch = alert_notifier().dead_letter_batch([_image(r) for r in DynamoDBStreamEvent(event).records])

    def record_handler(record: DynamoDBRecord) -> None:
        _count(batch.handle(_sequence(record)))

    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
