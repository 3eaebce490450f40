"""Pipeline worker (SQS): runs step messages with partial batch failures."""

from __future__ import annotations

import hub.cold_start  # noqa: F401 - first: pauses the collector for the cold start

# isort: split
import json
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from hub.adapters.metrics import emits_dimensioned_metrics
from hub.config import settings
from hub.delivery.gate import parse_job
from hub.domain.bulk_page import parse_bulk_page
from hub.domain.message import StepMessage
from hub.logs import configure as configure_logging
from hub.logs import new_logger
from hub.observability import gc_after_first_invocation, traced
from hub.wiring import bulk_runner, pipeline_worker, releaser

logger = new_logger()
configure_logging(logger)
metrics = Metrics()
processor = BatchProcessor(event_type=EventType.SQS)


def record_handler(record: SQSRecord) -> None:
    body = json.loads(record.body)
    last = int(record.attributes.approximate_receive_count) >= settings().pipeline_max_receives
    page = parse_bulk_page(body)
    if page is not None:  # a page of an operator's bulk job (issue 28)
        bulk_runner().run(page, last_attempt=last)
        return
    job = parse_job(body)
    if job is not None:  # a connection job (issue 12: release held messages, probe)
        releaser().run(job)
        return
    step = StepMessage.model_validate_json(record.body)
    sent_at = datetime.fromtimestamp(int(record.attributes.sent_timestamp) / 1000, UTC)
    pipeline_worker().run(step, sent_at, last_delivery=last)


@gc_after_first_invocation
@logger.inject_lambda_context
@metrics.log_metrics
@emits_dimensioned_metrics
@traced
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
