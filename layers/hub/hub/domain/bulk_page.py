"""The pipeline-queue message that runs one page of an operator's bulk job (issue 28;
hub.admin.bulk runs it). Apart from the job's use case, so the worker parses its queue's
messages without importing the admin side (its cold start)."""

from __future__ import annotations

from pydantic import ConfigDict

from hub.domain.model import HubModel


class BulkPage(HubModel):
    """The pipeline-queue message that runs one page of a job."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bulk_job: str
    tenant_id: str
    page: int
    cursor: str | None = None


def parse_bulk_page(data: object) -> BulkPage | None:
    """The bulk page a pipeline-queue body (parsed JSON) carries; None for anything else."""
    if isinstance(data, dict) and "bulk_job" in data:
        return BulkPage.model_validate(data)
    return None
