"""Pipeline worker (SQS): runs step messages with partial batch failures, under a time guard
that returns to the queue the records an invocation has no time left for (hub.pipeline.batch)."""

from __future__ import annotations

import hub.cold_start  # noqa: F401 - first: pauses the collector for the cold start

# isort: split
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from hub.adapters.metrics import emits_dimensioned_metrics
from hub.logs import configure as configure_logging
from hub.logs import new_logger
from hub.observability import gc_after_first_invocation, traced
from hub.pipeline.batch import QueuedRecord
from hub.wiring.worker import init, worker_batch

# Cold start: this function's settings, validated now (a missing or malformed variable fails
# the init, named, not the first request).
init()
logger = new_logger()
configure_logging(logger)
metrics = Metrics()
processor = BatchProcessor(event_type=EventType.SQS)


def queued(record: SQSRecord) -> QueuedRecord:
    attributes = record.attributes
    return QueuedRecord(
        body=record.body,
        receive_count=int(attributes.approximate_receive_count),
        sent_at=datetime.fromtimestamp(int(attributes.sent_timestamp) / 1000, UTC),
        message_attributes=record.raw_event.get("messageAttributes") or {},
        group_id=attributes.message_group_id,
    )


@gc_after_first_invocation
@logger.inject_lambda_context
@metrics.log_metrics
@emits_dimensioned_metrics
@traced
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    with worker_batch(context.get_remaining_time_in_millis) as batch:
        return process_partial_response(
            event=event,
            record_handler=lambda record: batch.run(queued(record)),
            processor=processor,
            context=context,
        )
