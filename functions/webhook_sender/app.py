"""Webhook sender (SQS, the webhooks lane): delivers each job signed per Standard Webhooks, with
partial batch failures (a job that raises is received again, then lands in the lane's DLQ)."""

from __future__ import annotations

import hub.cold_start  # noqa: F401 - first: pauses the collector for the cold start

# isort: split
from typing import Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from hub.logs import configure as configure_logging
from hub.logs import new_logger
from hub.observability import gc_after_first_invocation, traced
from hub.outbox.webhooks import WebhookJob
from hub.wiring.webhooks import init, webhook_sender

# Cold start: this function's settings, validated now (a missing or malformed variable fails
# the init, named, not the first request).
init()
logger = new_logger()
configure_logging(logger)
metrics = Metrics()
processor = BatchProcessor(event_type=EventType.SQS)


def record_handler(record: SQSRecord) -> None:
    webhook_sender().deliver(WebhookJob.model_validate_json(record.body))


@gc_after_first_invocation
@logger.inject_lambda_context
@metrics.log_metrics
@traced
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
