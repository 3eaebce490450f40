"""hub.admin.bulk.BulkJobStore on the hub table: one item per job (`BULKJOB#<tenant>#<job>` /
`JOB`), listed per tenant through GSI1 (`TENANT#<tenant>#BULKJOBS` / `<job_id>`, newest first).

A page is claimed with one conditional update (the job's next page, running, no live lease) and
finished with one (counts added, next position, lease removed; conditioned on the page), so a
page's counts are added once whatever copies of its queue message run."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import index_page, items_of
from hub.adapters.dynamo.table import ConditionFailed, Table, Update, epoch, format_ts
from hub.admin.bulk import JOB_RETENTION, BulkJob, BulkState, PageClaim, PageCounts
from hub.errors import NotFound

_SK = "JOB"


def job_item(job: BulkJob) -> dict[str, Any]:
    data = job.model_dump(mode="json", exclude_none=True, exclude={"filter"})
    return {
        **keys.bulk_job_key(job.tenant_id, job.job_id),
        **keys.bulk_job_index_keys(job.tenant_id, job.job_id),
        **data,
        # The filter as JSON text: its optional fields stay absent, never empty strings.
        "filter_json": job.filter.model_dump_json(exclude_none=True),
        "expires_at": epoch(job.created_at + JOB_RETENTION),
    }


def job_from(item: dict[str, Any]) -> BulkJob:
    data = {
        k: v
        for k, v in item.items()
        if k not in {"PK", "SK", "GSI1PK", "GSI1SK", "expires_at", "filter_json"}
    }
    for name in ("matched", "done", "skipped", "failed", "page", "page_lease_until", "planned_page"):
        if name not in data:
            continue
        data[name] = int(data[name])
    for name in ("skipped_reasons", "failed_reasons"):
        data[name] = {k: int(v) for k, v in (data.get(name) or {}).items()}
    return BulkJob.model_validate({**data, "filter": json.loads(item["filter_json"])})


class DynamoBulkJobs:
    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "bulk job storage")

    def create(self, job: BulkJob) -> None:
        self._table.put(job_item(job), "attribute_not_exists(PK)")

    def delete(self, tenant_id: str, job_id: str) -> None:
        self._table.delete(keys.bulk_job_key(tenant_id, job_id))

    def get(self, tenant_id: str, job_id: str) -> BulkJob | None:
        item = self._table.get(keys.bulk_job_key(tenant_id, job_id))
        return job_from(item) if item else None

    def list_jobs(self, tenant_id: str, limit: int, cursor: str | None) -> tuple[list[BulkJob], str | None]:
        partition = keys.bulk_job_partition(tenant_id)
        rows, next_cursor = index_page(
            self._table, partition, limit, cursor, lambda key: key["PK"].startswith(f"BULKJOB#{tenant_id}#")
        )
        return [job_from(item) for item in items_of(self._table, rows, _SK)], next_cursor

    def claim_page(
        self, tenant_id: str, job_id: str, page: int, now: datetime, lease: timedelta
    ) -> PageClaim:
        update = Update().set(page_lease_until=epoch(now + lease))
        lease_name = update.name("page_lease_until")
        update.where(f"{update.name('page')} = {update.value(page)}")
        update.where(f"{update.name('state')} = {update.value(BulkState.RUNNING.value)}")
        update.where(f"attribute_not_exists({lease_name}) OR {lease_name} < {update.value(epoch(now))}")
        try:
            return PageClaim(
                claimed=True, job=job_from(self._table.update(keys.bulk_job_key(tenant_id, job_id), update))
            )
        except ConditionFailed as failed:
            old = failed.old
            if not old or old.get("state") != BulkState.RUNNING.value:
                return PageClaim(claimed=False)
            at = int(old.get("page", 0))
            if at > page:
                return PageClaim(claimed=False)  # this page is done: a duplicate message
            until = int(old.get("page_lease_until") or 0)
            if at < page:
                # The previous page's run sent this one but has not recorded its end: wait a
                # little while it runs; once its lease has run out, it died: take its page over.
                if until < epoch(now):
                    return PageClaim(claimed=False, behind=at)
                until = min(until, epoch(now) + 5)
            return PageClaim(claimed=False, busy_until=datetime.fromtimestamp(until, tz=now.tzinfo))

    def finish_page(self, job: BulkJob, counts: PageCounts, next_cursor: str | None, now: datetime) -> None:
        update = Update().set(page=job.page + 1, updated_at=format_ts(now))
        update.remove("page_lease_until", "planned_page", "planned", "planned_next")
        if next_cursor is None:
            update.remove("cursor")
        else:
            update.set(cursor=next_cursor)
        for name in ("matched", "done", "skipped", "failed"):
            amount = getattr(counts, name)
            if amount:
                update.add(name, amount)
        for field, reasons in (
            ("skipped_reasons", counts.skipped_reasons),
            ("failed_reasons", counts.failed_reasons),
        ):
            for reason, amount in (reasons or {}).items():
                path = f"{update.name(field)}.{update.name(reason)}"
                update.set_expression(
                    f"{path} = if_not_exists({path}, {update.value(0)}) + {update.value(amount)}"
                )
        update.where(f"{update.name('page')} = {update.value(job.page)}")
        key = keys.bulk_job_key(job.tenant_id, job.job_id)
        try:
            after = self._table.update(key, update)
        except ConditionFailed:
            return  # another copy of this page recorded it first
        if next_cursor is None and after.get("state") == BulkState.RUNNING.value:
            self._end(key, BulkState.COMPLETED, now)

    def plan_page(self, job: BulkJob, message_ids: list[str], next_cursor: str | None) -> None:
        update = Update().set(planned_page=job.page, planned=message_ids)
        if next_cursor is None:
            update.remove("planned_next")
        else:
            update.set(planned_next=next_cursor)
        update.where(f"{update.name('page')} = {update.value(job.page)}")
        try:
            self._table.update(keys.bulk_job_key(job.tenant_id, job.job_id), update)
        except ConditionFailed:
            return  # the page was finished meanwhile (a lease that ran out): its finish is a no-op

    def fail(self, job: BulkJob, now: datetime) -> None:
        self._end(keys.bulk_job_key(job.tenant_id, job.job_id), BulkState.FAILED, now)

    def cancel(self, tenant_id: str, job_id: str, now: datetime) -> BulkJob:
        key = keys.bulk_job_key(tenant_id, job_id)
        after = self._end(key, BulkState.CANCELLED, now)
        if after is None:
            item = self._table.get(key)
            if item is None:
                raise NotFound("bulk job not found", details={"job_id": job_id})
            return job_from(item)
        return job_from(after)

    def _end(self, key: keys.Key, state: BulkState, now: datetime) -> dict[str, Any] | None:
        """Moves a running job to `state`; None when it was no longer running."""
        update = Update().set(state=state.value, updated_at=format_ts(now))
        update.where(f"{update.name('state')} = {update.value(BulkState.RUNNING.value)}")
        try:
            return self._table.update(key, update)
        except ConditionFailed:
            return None
