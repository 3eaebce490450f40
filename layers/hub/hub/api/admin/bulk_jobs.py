"""Bulk jobs (issue 28, point 3): reprocess or cancel every message a filter matches, as a
durable job the pipeline worker runs page by page (hub.admin.bulk)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ConfigDict, Field, model_validator

from hub.admin.access import Role, TenantFrom, requires, tenant
from hub.admin.bulk import BulkAction, BulkFilter
from hub.admin.operations import QueueTab
from hub.admin.search import SearchKind
from hub.api.admin.common import ADMIN, BODY, Id, KeyListQuery, TenantQuery
from hub.api.admin.guard import principal as _principal
from hub.api.http import json_response, parse_body, parse_query, validated
from hub.api.openapi import OBJECT, answers, documented
from hub.domain.clock import Rfc3339Time
from hub.domain.model import HubModel
from hub.errors import CursorMismatch, NotFound, QueueUnavailable, ValidationFailed
from hub.wiring.admin import bulk_jobs

router = Router()

JobId = Annotated[str, Field(pattern=r"^bulk_[0-9a-z]{26}$")]


class JobFilter(HubModel):
    model_config = ConfigDict(extra="forbid")
    #: The queue tab whose messages the job acts on (ignored with `q`: a search's matches).
    tab: QueueTab = QueueTab.DEAD_LETTER
    integration_id: Id | None = None
    #: Only messages whose last failure had this class (`http_5xx`, `network`, `timeout`, ...).
    error_class: str | None = Field(default=None, pattern=r"^[a-z0-9_]{1,40}$")
    #: Inclusive lower bound of the last change (`all`: of the receipt); ISO 8601 with offset.
    since: Rfc3339Time | None = None
    #: Exclusive upper bound, like `since`.
    until: Rfc3339Time | None = None
    #: A search's value (GET /api/admin/messages?q=): its matches instead of a tab's.
    q: str | None = Field(default=None, min_length=1, max_length=255)
    by: SearchKind | None = None

    @model_validator(mode="after")
    def _consistent(self) -> JobFilter:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("since must be before until")
        if self.by is not None and self.q is None:
            raise ValueError("by needs q")
        return self


class NewBulkJob(HubModel):
    model_config = ConfigDict(extra="forbid")
    tenant_id: Id
    action: BulkAction
    filter: JobFilter = Field(default_factory=JobFilter)
    #: Reprocess also messages the destination already accepted (`sent`, `received_observed`);
    #: without it they are skipped as `already_delivered`.
    force: bool = False


class JobPath(HubModel):
    job_id: JobId


class BulkJobListQuery(KeyListQuery):
    tenant_id: Id


@router.post(
    "/api/admin/bulk-jobs",
    **answers(
        "Reprocess or cancel every message a filter matches (a durable job, paced)",
        ok={202: OBJECT},
        errors=(*ADMIN, *BODY, QueueUnavailable),
        tags=["bulk-jobs"],
    ),
)
@documented(body=NewBulkJob)
@requires(tenant(Role.OPERATOR, tenant_from=TenantFrom.BODY, what="message"))
def create_bulk_job() -> Response:
    request = parse_body(router.current_event, NewBulkJob)
    f = request.filter
    filters = BulkFilter(
        tab=f.tab,
        integration_id=f.integration_id,
        error_class=f.error_class,
        since=f.since,
        until=f.until,
        q=f.q,
        by=f.by.value if f.by else None,
    )
    job = bulk_jobs().create(request.tenant_id, request.action, filters, request.force, _principal())
    return json_response(202, job.view())


@router.get(
    "/api/admin/bulk-jobs",
    **answers(
        "A tenant's bulk jobs, newest first, cursor-paginated",
        ok={200: OBJECT},
        errors=(*ADMIN, ValidationFailed, CursorMismatch),
        tags=["bulk-jobs"],
    ),
)
@documented(query=BulkJobListQuery)
@requires(tenant(Role.VIEWER, tenant_from=TenantFrom.QUERY, what="bulk job"))
def list_bulk_jobs() -> Response:
    query = parse_query(router.current_event, BulkJobListQuery)
    jobs, next_cursor = bulk_jobs().list_jobs(query.tenant_id, _principal(), query.limit, query.cursor)
    return json_response(
        200, {"tenant_id": query.tenant_id, "items": [job.view() for job in jobs], "next_cursor": next_cursor}
    )


@router.get(
    "/api/admin/bulk-jobs/<job_id>",
    **answers(
        "A bulk job and its progress",
        ok={200: OBJECT},
        errors=(*ADMIN, NotFound, ValidationFailed),
        tags=["bulk-jobs"],
    ),
)
@documented(query=TenantQuery, path=JobPath)
@requires(tenant(Role.VIEWER, tenant_from=TenantFrom.QUERY, what="bulk job"))
def get_bulk_job(job_id: str) -> Response:
    path = validated(JobPath, {"job_id": job_id}, "path")
    query = parse_query(router.current_event, TenantQuery)
    return json_response(200, bulk_jobs().get(query.tenant_id, path.job_id, _principal()).view())


@router.post(
    "/api/admin/bulk-jobs/<job_id>/cancel",
    **answers(
        "Stop a bulk job before its next page (a finished one answers as it is)",
        ok={200: OBJECT},
        errors=(*ADMIN, NotFound, ValidationFailed),
        tags=["bulk-jobs"],
    ),
)
@documented(query=TenantQuery, path=JobPath)
@requires(tenant(Role.OPERATOR, tenant_from=TenantFrom.QUERY, what="bulk job"))
def cancel_bulk_job(job_id: str) -> Response:
    path = validated(JobPath, {"job_id": job_id}, "path")
    query = parse_query(router.current_event, TenantQuery)
    return json_response(200, bulk_jobs().cancel(query.tenant_id, path.job_id, _principal()).view())
