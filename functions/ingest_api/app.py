"""Partner ingest API (API Gateway HTTP API): receive-message, inbound webhooks and message status."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from hub.api.http import (
    api_key,
    body_bytes,
    body_limit,
    correlation_id,
    install_error_handlers,
    json_response,
    parse_body,
    require_content_type,
)
from hub.config import settings
from hub.domain.idempotency import sanitize_idempotency_key
from hub.domain.media_type import JSON_ONLY
from hub.domain.message import InboundMessage
from hub.errors import HubError, SignatureInvalid
from hub.ingest.receive import ReceiveOutcome
from hub.logs import configure as configure_logging
from hub.observability import gc_after_first_invocation, traced
from hub.wiring import ingestor, webhook_receiver

logger = Logger()
configure_logging(logger)
metrics = Metrics()
app = APIGatewayHttpResolver()
app.use([body_limit(lambda: settings().max_body_bytes)])
install_error_handlers(app)


@app.post("/api/edi-hub/receive-message")
def receive_message() -> Response:
    event = app.current_event
    raw_key = api_key(event)
    try:
        require_content_type(event, JSON_ONLY)
        inbound = parse_body(event, InboundMessage)
        idempotency_key = sanitize_idempotency_key(event.headers.get("idempotency-key"))
    except HubError:
        ingestor().authenticate(raw_key)  # an unauthenticated caller learns nothing about fields
        raise
    outcome = ingestor().receive(
        raw_key=raw_key,
        inbound=inbound,
        idempotency_key=idempotency_key,
        correlation_id=correlation_id(event, event.request_context.request_id),
    )
    return _answer(outcome)


def _answer(outcome: ReceiveOutcome) -> Response:
    if outcome.deduplicated_by is None:
        metrics.add_metric(name="MessagesReceived", unit=MetricUnit.Count, value=1)
    else:
        metrics.add_metric(name="DuplicatesDropped", unit=MetricUnit.Count, value=1)
    return json_response(202 if outcome.created else 200, outcome.body())


@app.post("/api/webhook/<integration_id>")
def inbound_webhook(integration_id: str) -> Response:
    event = app.current_event
    try:
        outcome = webhook_receiver().receive(
            integration_id=integration_id,
            headers={name.lower(): value for name, value in event.headers.items()},
            body=body_bytes(event),
            correlation_id=correlation_id(event, event.request_context.request_id),
        )
    except SignatureInvalid:
        metrics.add_metric(name="SignatureFailures", unit=MetricUnit.Count, value=1)
        raise
    return _answer(outcome)


@app.get("/api/edi-hub/messages/<message_id>")
def get_message(message_id: str) -> Response:
    record = ingestor().status(api_key(app.current_event), message_id)
    return json_response(200, record.public_view())


@gc_after_first_invocation
@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
@traced
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
