"""Daily client-certificate expiry check (EventBridge Scheduler, 07:00 UTC): alerts each
certificate once per bucket (30, 14, 7, 1, 0 days) to Slack, and reports its days left."""

from __future__ import annotations

import hub.cold_start  # noqa: F401 - first: pauses the collector for the cold start

# isort: split
from typing import Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from hub.adapters.metrics import emits_dimensioned_metrics
from hub.logs import configure as configure_logging
from hub.logs import new_logger
from hub.observability import gc_after_first_invocation, traced
from hub.wiring.cert_expiry import cert_expiry_alerter, init

# Cold start: this function's settings, validated now (a missing or malformed variable fails
# the init, named, not the first request).
init()
logger = new_logger()
configure_logging(logger)
metrics = Metrics()


@gc_after_first_invocation
@logger.inject_lambda_context
@metrics.log_metrics
@emits_dimensioned_metrics
@traced
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    run = cert_expiry_alerter().run()
    return {"checked": run.checked, "alerted": [{"connection_id": c, "bucket": b} for c, b in run.alerted]}
