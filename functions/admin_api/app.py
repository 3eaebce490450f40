"""Admin API (Lambda Function URL): operator actions on messages and queues."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field

from hub.admin.operations import QueueTab
from hub.api.http import (
    admin_actor,
    install_error_handlers,
    json_response,
    parse_body,
    parse_query,
    validated,
)
from hub.config import settings
from hub.logs import configure as configure_logging
from hub.wiring import operations

logger = Logger()
configure_logging(logger)
metrics = Metrics()
tracer = Tracer()
app = LambdaFunctionUrlResolver()
install_error_handlers(app)

MessageId = Annotated[str, Field(pattern=r"^msg_[0-9a-z]{26}$")]


class ReprocessRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message_id: MessageId


class IntegrationPath(BaseModel):
    integration_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


class QueueQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tenant_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
    tab: QueueTab
    limit: int = Field(default=50, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=2048)


def authenticated(app: LambdaFunctionUrlResolver, next_middleware: NextMiddleware) -> Response:
    app.append_context(actor=admin_actor(app.current_event, settings().admin_token_sha256))
    return next_middleware(app)


app.use([authenticated])


def _actor() -> str:
    return str(app.context["actor"])


@app.post("/api/edi-hub/reprocess-message")
def reprocess_message() -> Response:
    request = parse_body(app.current_event, ReprocessRequest)
    record = operations().reprocess(request.message_id, _actor())
    return json_response(202, record.public_view())


@app.post("/api/admin/messages/<message_id>/cancel-retry")
def cancel_retry(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    record = operations().cancel_retry(checked.message_id, _actor())
    return json_response(200, record.public_view())


@app.get("/api/admin/messages/<message_id>")
def message_view(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    return json_response(200, operations().message_view(checked.message_id))


@app.get("/api/admin/integrations/<integration_id>")
def integration_view(integration_id: str) -> Response:
    checked = validated(IntegrationPath, {"integration_id": integration_id}, "path")
    return json_response(200, operations().integration_view(checked.integration_id))


@app.get("/api/admin/queue")
def queue() -> Response:
    query = parse_query(app.current_event, QueueQuery)
    page = operations().queue(query.tenant_id, query.tab, query.limit, query.cursor)
    return json_response(
        200,
        {
            "tenant_id": query.tenant_id,
            "tab": query.tab.value,
            "items": page.rows,
            "next_cursor": page.next_cursor,
        },
    )


@app.post("/api/admin/dlq/<lane>/redrive")
def redrive(lane: str) -> Response:
    return json_response(200, {"lane": lane, "moved": operations().redrive(lane, _actor())})


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
