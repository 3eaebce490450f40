"""The Health view's backend."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ConfigDict

from hub.admin.access import Role, by_use_case, requires
from hub.admin.health import HealthAnswer
from hub.api.admin.common import ADMIN, Id
from hub.api.admin.guard import principal as _principal
from hub.api.http import json_response, parse_query
from hub.api.openapi import answers, documented
from hub.domain.model import HubModel
from hub.errors import ValidationFailed
from hub.wiring.admin import health

router = Router()


class HealthQuery(HubModel):
    model_config = ConfigDict(extra="forbid")
    #: The tenant whose integrations to show; required with a tenant's token.
    tenant_id: Id | None = None


@router.get(
    "/api/admin/health",
    **answers(
        "Lanes, outbox, per-integration failures and the hub's counters (the Health view)",
        ok={200: HealthAnswer},
        errors=(*ADMIN, ValidationFailed),
        tags=["health"],
        description=(
            "Viewer role. A platform token sees every lane (work queue depths, DLQ depth, age of "
            "the oldest step message), the outbox, the hub's counters and 24 hourly counts; with "
            "`tenant_id`, also that tenant's integrations over the last hour. A tenant's token must "
            "give its own `tenant_id` and sees only its integrations (lanes, outbox, counters and "
            "hourly are null). A section whose source did not answer is null and named in "
            "`unavailable`."
        ),
    ),
)
@documented(query=HealthQuery)
@requires(by_use_case(Role.VIEWER, what="tenant"))
def health_view() -> Response:
    query = parse_query(router.current_event, HealthQuery)
    answer = health().view(_principal(), query.tenant_id)
    return json_response(200, answer.model_dump(mode="json"))
