"""The queue tabs' counts (issue 28): how many messages wait, are dead-lettered or failed now,
each counted up to a cap, for the page's tab labels and `hubctl`."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ConfigDict, Field

from hub.admin.access import Role, TenantFrom, requires, tenant
from hub.api.admin.common import ADMIN, Id
from hub.api.http import json_response, parse_query
from hub.api.openapi import answers, documented
from hub.domain.model import HubModel
from hub.errors import ValidationFailed
from hub.wiring.admin import operations

router = Router()


class QueueCountsQuery(HubModel):
    model_config = ConfigDict(extra="forbid")
    tenant_id: Id
    #: Count only this integration's messages.
    integration_id: Id | None = None


class TabCounts(HubModel):
    waiting: int
    dead_letter: int
    error: int


class QueueCountsAnswer(HubModel):
    tenant_id: str
    #: Messages in each status tab now (`all` has no count).
    counts: TabCounts
    #: A count equal to this means "this many or more".
    capped_at: int
    #: Tabs whose count is a lower bound: the cap was reached, or a filtered count stopped at its
    #: read bound (ten times the cap of index rows read).
    at_least: list[str] = Field(default_factory=list)


@router.get(
    "/api/admin/queue/counts",
    **answers(
        "How many messages each queue tab (waiting, dead_letter, error) holds now, up to a cap",
        ok={200: QueueCountsAnswer},
        errors=(*ADMIN, ValidationFailed),
        tags=["messages"],
        description=(
            "Viewer role. One counting Query (Select=COUNT) per tab's status partition of the "
            "index, never a scan; each count stops at `capped_at` (1000: then it means 1000 or "
            "more). `integration_id` counts only that integration's messages (a filter after the "
            "read, bounded at ten times the cap of rows read; a count cut short by it is named in "
            "`at_least`). The time filters of the queue do not apply: a count is of the tab now."
        ),
    ),
)
@documented(query=QueueCountsQuery)
@requires(tenant(Role.VIEWER, tenant_from=TenantFrom.QUERY))
def queue_counts() -> Response:
    query = parse_query(router.current_event, QueueCountsQuery)
    counted = operations().queue_counts(query.tenant_id, query.integration_id)
    return json_response(200, counted.view())
