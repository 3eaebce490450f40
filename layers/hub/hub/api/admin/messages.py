"""Messages and queues: reprocess, cancel a retry, a message and its callbacks, an integration's
operational view, the queue tabs, DLQ redrive."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ConfigDict, Field, model_validator

from hub.admin.access import Role, TenantFrom, by_use_case, platform, requires, tenant
from hub.admin.operations import (
    AlreadyDelivered,
    DeliveryInProgress,
    ExecutionInFlight,
    NotCancellable,
    QueueTab,
)
from hub.api.admin.common import (
    ADMIN,
    BODY,
    MESSAGE,
    Id,
    IntegrationPath,
    KeyListQuery,
    ReprocessBody,
    ReprocessRequest,
    TenantQuery,
)
from hub.api.admin.guard import principal as _principal
from hub.api.http import json_response, parse_body, parse_query, validated
from hub.api.openapi import OBJECT, answers, documented
from hub.domain.clock import Rfc3339Time
from hub.domain.message import MessageRecord
from hub.domain.model import HubModel
from hub.errors import CursorMismatch, InvalidTransition, QueueUnavailable, ValidationFailed
from hub.ports import QueueFilter
from hub.wiring.admin import operations

router = Router()


class QueueQuery(HubModel):
    model_config = ConfigDict(extra="forbid")
    tenant_id: Id
    #: `all`: every message, newest received first; the others: one status, newest change first.
    tab: QueueTab
    limit: int = Field(default=50, ge=1, le=100)
    #: From a previous page of the same tab and filters (another combination's: 422).
    cursor: str | None = Field(default=None, max_length=2048)
    #: Only this integration's messages (a page may then come back short, with a cursor).
    integration_id: Id | None = None
    #: Inclusive lower bound of the last change (`all`: of the receipt); ISO 8601 with offset.
    since: Rfc3339Time | None = None
    #: Exclusive upper bound, like `since`.
    until: Rfc3339Time | None = None

    @model_validator(mode="after")
    def _ordered(self) -> QueueQuery:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("since must be before until")
        return self

    def filters(self) -> QueueFilter:
        return QueueFilter(integration_id=self.integration_id, since=self.since, until=self.until)


@router.post(
    "/api/edi-hub/reprocess-message",
    **answers(
        "Reprocess a message (a new execution)",
        ok={202: OBJECT},
        errors=(
            *ADMIN,
            *BODY,
            *MESSAGE,
            ExecutionInFlight,
            AlreadyDelivered,
            InvalidTransition,
            QueueUnavailable,
        ),
        tags=["messages"],
    ),
)
@documented(body=ReprocessBody)
@requires(by_use_case(Role.OPERATOR, what="message"))
def reprocess_message() -> Response:
    request = parse_body(router.current_event, ReprocessBody)
    record = operations().reprocess(request.message_id, _principal(), force=request.force)
    return json_response(202, _moved(record))


@router.post(
    "/api/admin/messages/<message_id>/cancel-retry",
    **answers(
        "Cancel a message's pending retry",
        ok={200: OBJECT},
        errors=(*ADMIN, *MESSAGE, NotCancellable, DeliveryInProgress, InvalidTransition),
        tags=["messages"],
    ),
)
@documented(path=ReprocessRequest)
@requires(by_use_case(Role.OPERATOR, what="message"))
def cancel_retry(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    record = operations().cancel_retry(checked.message_id, _principal())
    return json_response(200, _moved(record))


def _moved(record: MessageRecord) -> dict[str, Any]:
    """A moved message: its public view, the execution it is in now (a reprocess's new one) and,
    as `queue_row`, its row exactly as the queue tabs show it (the page replaces the row in
    place)."""
    return {
        **record.public_view(),
        "execution_id": record.execution_id,
        "queue_row": operations().queue_row(record),
    }


@router.get(
    "/api/admin/messages/<message_id>",
    **answers(
        "A message, as operators see it",
        ok={200: OBJECT},
        errors=(*ADMIN, *MESSAGE),
        tags=["messages"],
    ),
)
@documented(path=ReprocessRequest)
@requires(by_use_case(Role.VIEWER, what="message"))
def message_view(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    return json_response(200, operations().message_view(checked.message_id, _principal()))


@router.get(
    "/api/admin/integrations/<integration_id>",
    **answers(
        "An integration's operational view (of the `tenant_id` query's tenant)",
        ok={200: OBJECT},
        errors=(*ADMIN, *MESSAGE),
        tags=["messages"],
    ),
)
@documented(query=TenantQuery, path=IntegrationPath)
@requires(tenant(Role.VIEWER, tenant_from=TenantFrom.QUERY, what="integration"))
def integration_view(integration_id: str) -> Response:
    checked = validated(IntegrationPath, {"integration_id": integration_id}, "path")
    query = parse_query(router.current_event, TenantQuery)
    return json_response(
        200, operations().integration_view(query.tenant_id, checked.integration_id, _principal())
    )


@router.get(
    "/api/admin/queue",
    **answers(
        "A tenant's queue tab (error, waiting, dead_letter, all), filtered, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed, CursorMismatch),
        tags=["messages"],
    ),
)
@documented(query=QueueQuery)
@requires(tenant(Role.VIEWER, tenant_from=TenantFrom.QUERY))
def queue() -> Response:
    query = parse_query(router.current_event, QueueQuery)
    page = operations().queue(query.tenant_id, query.tab, query.limit, query.cursor, query.filters())
    return json_response(
        200,
        {
            "tenant_id": query.tenant_id,
            "tab": query.tab.value,
            "items": page.rows,
            "next_cursor": page.next_cursor,
        },
    )


@router.post(
    "/api/admin/dlq/<lane>/redrive",
    **answers(
        "Move a dead-letter lane's step messages back to the pipeline (platform)",
        ok={200: OBJECT},
        errors=(*ADMIN, QueueUnavailable),
        tags=["messages"],
    ),
)
@requires(platform(Role.OPERATOR))
def redrive(lane: str) -> Response:
    return json_response(200, {"lane": lane, "moved": operations().redrive(lane, _principal())})


@router.get(
    "/api/admin/messages/<message_id>/callbacks",
    **answers(
        "A message's status callbacks as received, newest first, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, *MESSAGE),
        tags=["messages"],
    ),
)
@documented(path=ReprocessRequest, query=KeyListQuery)
@requires(by_use_case(Role.VIEWER, what="message"))
def message_callbacks(message_id: str) -> Response:
    checked = validated(ReprocessRequest, {"message_id": message_id}, "path")
    query = parse_query(router.current_event, KeyListQuery)
    page = operations().message_callbacks(checked.message_id, _principal(), query.limit, query.cursor)
    return json_response(200, page)
