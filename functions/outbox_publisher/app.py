"""Outbox publisher: the hub table's stream (filtered to message status records and event
items) -> outbound webhook subscriptions and the EventBridge bus (hub.outbox.publisher)."""

from __future__ import annotations

import hub.cold_start  # noqa: F401 - first: pauses the collector for the cold start

# isort: split
from typing import Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from hub.logs import configure as configure_logging
from hub.logs import new_logger
from hub.observability import gc_after_first_invocation, traced
from hub.wiring.outbox import init, outbox_publisher

# Cold start: this function's settings, validated now (a missing or malformed variable fails
# the init, named, not the first request).
init()
logger = new_logger()
configure_logging(logger)
metrics = Metrics()


@gc_after_first_invocation
@logger.inject_lambda_context
@metrics.log_metrics
@traced
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    report = outbox_publisher().publish(event.get("Records") or [])
    metrics.add_metric(name="OutboxEventsPublished", unit=MetricUnit.Count, value=report.events)
    if report.failed_sequences:
        metrics.add_metric(name="OutboxBatchesRetried", unit=MetricUnit.Count, value=1)
    return {"batchItemFailures": [{"itemIdentifier": s} for s in report.failed_sequences]}
