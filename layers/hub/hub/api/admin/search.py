"""Search (issue 28): a tenant's messages by an exact value, newest received first."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ConfigDict, Field

from hub.admin.access import Role, TenantFrom, requires, tenant
from hub.admin.search import SearchKind
from hub.api.admin.common import ADMIN, Id
from hub.api.http import json_response, parse_query
from hub.api.openapi import OBJECT, answers, documented
from hub.domain.model import HubModel
from hub.errors import CursorMismatch, ValidationFailed
from hub.wiring.admin import message_search

router = Router()


class SearchQuery(HubModel):
    model_config = ConfigDict(extra="forbid")
    tenant_id: Id
    #: The value looked for, exactly as stored (no trimming, no prefix or partial match): any
    #: text, as an external id may be.
    q: str = Field(min_length=1, max_length=255)
    #: What `q` is; `any` runs every lookup.
    by: SearchKind = SearchKind.ANY
    #: Only this integration's messages (a page may then come back short, with a cursor).
    integration_id: Id | None = None
    limit: int = Field(default=50, ge=1, le=100)
    #: From a previous page of the same search (another search's: 422).
    cursor: str | None = Field(default=None, max_length=4096)


@router.get(
    "/api/admin/messages",
    **answers(
        "Find a tenant's messages by an exact value, newest received first",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed, CursorMismatch),
        tags=["messages"],
        description=(
            "Viewer role. `by`: `message_id`, `external_id`, `idempotency_key` (found while the "
            "ingest's claim lives: the idempotency retention, 24 h), `correlation_id` (the "
            "partner's `x-correlation-id`; the gateway's request id only for a message without "
            "`external_id`), `business_key` (the message holding that key now, once its first "
            "step ran; a key of several fields as its values joined by `|`), or `any` (default: "
            "every lookup). Rows are the queue's, plus `matched_by`. Each lookup reads keys, "
            "never a scan; another tenant's message never shows."
        ),
    ),
)
@documented(query=SearchQuery)
@requires(tenant(Role.VIEWER, tenant_from=TenantFrom.QUERY))
def search_messages() -> Response:
    query = parse_query(router.current_event, SearchQuery)
    page = message_search().search(
        query.tenant_id,
        query.q,
        query.by,
        limit=query.limit,
        cursor=query.cursor,
        integration_id=query.integration_id,
    )
    return json_response(
        200,
        {
            "tenant_id": query.tenant_id,
            "q": query.q,
            "by": query.by.value,
            "items": page.rows,
            "next_cursor": page.next_cursor,
        },
    )
