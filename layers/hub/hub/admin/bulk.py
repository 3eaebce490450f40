"""Bulk actions as a durable job (issue 28, point 3): "reprocess (or cancel) every message
matching a filter".

The admin API stores a job item and puts its first page on the pipeline queue; the pipeline
worker runs one page per queue message (`BulkRunner`), beside the steps and the connection jobs:

- a page is claimed on the job item (its number must be the job's next, no live lease), so two
  copies of a page message never run it at once; a copy that finds the page done is dropped, one
  that finds it leased comes back when the lease ends (a run that died with it cannot strand it);
- each matching message is acted on through the operator's own moves (hub.admin.operations), as
  the job's creator, marked with the job's id in the same conditional update: a page run again
  after a crash finds its messages marked and counts them done without acting twice (a reprocess
  that was admitted but whose step was lost gets the step again: the step's sequence makes a
  second copy a no-op);
- reprocessed messages are paced: their first steps are SQS-delayed so that at most the release
  rate (`HUB_RELEASE_RATE_PER_SECOND`, 10/s) become visible per second, and the next page waits
  for this page's last second; the worker holds them on a paused connection or an open breaker
  as it holds any delivery;
- the page's counts are added and the next page's position written in one conditional update
  (after the next page's message is out); the last page completes the job;
- a cancel stops the job before its next page (a page in progress finishes its messages).

Cost: per matched message one GetItem, one UpdateItem and (reprocess) one SendMessage; per page
one Query (+ one BatchGetItem for `all` or a search), three job-item updates (claim, planned
matches, counts; a fourth ends the job) and two SendMessage (the next page, and the copy of this
one that reruns it if this run dies).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

from pydantic import ConfigDict, Field

from hub.admin.access import Principal, Role
from hub.admin.audit import Audit
from hub.admin.operations import Operations, QueueTab
from hub.admin.search import SearchKind, SearchPage
from hub.delivery.breaker import release_page_size, release_plan
from hub.domain.bulk_page import BulkPage
from hub.domain.clock import utcnow
from hub.domain.ids import new_id
from hub.domain.model import HubModel
from hub.errors import Conflict, HubError, NotFound, ValidationFailed
from hub.ports import QueueFilter, QueuePage

logger = logging.getLogger(__name__)

#: A page is leased this long: longer than a page takes (a copy finding it leased waits it out).
PAGE_LEASE = timedelta(seconds=120)
#: At most this many messages a page, whatever the rate (a page's calls stay far within the
#: lease and the worker's timeout, and its planned ids within the job item).
MAX_PAGE = 100
#: How long a finished job stays listed (the item's TTL).
JOB_RETENTION = timedelta(days=30)
_MAX_SQS_DELAY = 900


class BulkAction(StrEnum):
    REPROCESS = "reprocess"
    CANCEL = "cancel"


class BulkState(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"


class BulkFilter(HubModel):
    """Which messages: a queue tab's (or a search's), narrowed like the queue."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: `dead_letter`, `waiting`, `error` or `all` (every message of the tenant).
    tab: QueueTab = QueueTab.DEAD_LETTER
    integration_id: str | None = None
    #: Only messages whose last failure had this class (`http_5xx`, `network`, ...).
    error_class: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    #: A search (GET /api/admin/messages?q=&by=): its matches instead of a tab's.
    q: str | None = None
    by: str | None = None


class BulkJob(HubModel):
    model_config = ConfigDict(frozen=True)

    job_id: str
    tenant_id: str
    action: BulkAction
    filter: BulkFilter
    force: bool = False
    state: BulkState = BulkState.RUNNING
    created_at: datetime
    updated_at: datetime
    #: The creating token (the job acts as it, with its role, on its tenant).
    created_by: str
    created_label: str = ""
    created_role: Role = Role.OPERATOR
    matched: int = 0
    done: int = 0
    skipped: int = 0
    failed: int = 0
    skipped_reasons: dict[str, int] = Field(default_factory=dict)
    failed_reasons: dict[str, int] = Field(default_factory=dict)
    #: The next page to run, and the listing's cursor where it starts.
    page: int = 0
    cursor: str | None = None
    #: Epoch seconds: the page is being run until then.
    page_lease_until: int | None = None
    #: The page being run: the messages it matched and the cursor after it, written before the
    #: first is acted on, so a run after a crash acts on the same ones (acted-on messages have
    #: left the tab the listing reads).
    planned_page: int | None = None
    planned: list[str] | None = None
    planned_next: str | None = None

    def view(self) -> dict[str, Any]:
        """What the admin API and hubctl show."""
        return self.model_dump(
            mode="json",
            exclude={
                "cursor",
                "page_lease_until",
                "created_label",
                "created_role",
                "planned_page",
                "planned",
                "planned_next",
            },
        )

    def actor(self) -> Principal:
        """The job acts as the token that created it, limited to the job's tenant."""
        return Principal(self.created_by, self.created_label, self.created_role, self.tenant_id)


@dataclass(frozen=True)
class PageClaim:
    claimed: bool
    #: Held by another run until then (None: done or stopped).
    busy_until: datetime | None = None
    job: BulkJob | None = None
    #: The job is still at this earlier page and its run's lease ran out: take it over.
    behind: int | None = None


@dataclass
class PageCounts:
    matched: int = 0
    done: int = 0
    skipped: int = 0
    failed: int = 0
    skipped_reasons: Counter[str] = field(default_factory=Counter)
    failed_reasons: Counter[str] = field(default_factory=Counter)

    def skip(self, reason: str) -> None:
        self.matched += 1
        self.skipped += 1
        self.skipped_reasons[reason] += 1

    def fail(self, reason: str) -> None:
        self.matched += 1
        self.failed += 1
        self.failed_reasons[reason] += 1

    def did(self) -> None:
        self.matched += 1
        self.done += 1


class BulkJobStore(Protocol):
    def create(self, job: BulkJob) -> None: ...
    def delete(self, tenant_id: str, job_id: str) -> None: ...
    def get(self, tenant_id: str, job_id: str) -> BulkJob | None: ...
    def list_jobs(
        self, tenant_id: str, limit: int, cursor: str | None
    ) -> tuple[list[BulkJob], str | None]: ...
    def claim_page(
        self, tenant_id: str, job_id: str, page: int, now: datetime, lease: timedelta
    ) -> PageClaim: ...
    def finish_page(
        self,
        job: BulkJob,
        counts: PageCounts,
        next_cursor: str | None,
        now: datetime,
    ) -> None:
        """Adds `counts`, moves to the next page (or completes the job when `next_cursor` is
        None and it is still running); conditioned on the job still being at `job.page`."""
        ...

    def plan_page(self, job: BulkJob, message_ids: list[str], next_cursor: str | None) -> None:
        """Records the page's matches and the cursor after it (conditioned on the page)."""
        ...

    def fail(self, job: BulkJob, now: datetime) -> None: ...
    def cancel(self, tenant_id: str, job_id: str, now: datetime) -> BulkJob: ...


class PageQueue(Protocol):
    def publish_bulk_page(self, page: BulkPage, delay_seconds: int = 0) -> None: ...


class MessageFinder(Protocol):
    """The search (GET /api/admin/messages, hub.admin.search): a page of a lookup's matches."""

    def search(
        self,
        tenant_id: str,
        q: str,
        by: SearchKind = SearchKind.ANY,
        *,
        limit: int = 50,
        cursor: str | None = None,
        integration_id: str | None = None,
        include_expired: bool = False,
    ) -> SearchPage: ...


class BulkJobs:
    """The admin API's side: create, show, list, cancel."""

    def __init__(
        self,
        store: BulkJobStore,
        queue: PageQueue,
        *,
        audit: Audit | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._store = store
        self._queue = queue
        self._audit = audit or Audit(None)
        self._clock = clock

    def create(
        self, tenant_id: str, action: BulkAction, filters: BulkFilter, force: bool, actor: Principal
    ) -> BulkJob:
        actor.require(Role.OPERATOR, tenant_id, what="message")
        if filters.by is not None and filters.q is None:
            raise ValidationFailed(
                "filter.by needs filter.q", details=[{"field": "filter.by", "problem": "needs_q"}]
            )
        now = self._clock()
        job = BulkJob(
            job_id=new_id("bulk"),
            tenant_id=tenant_id,
            action=action,
            filter=filters,
            force=force,
            created_at=now,
            updated_at=now,
            created_by=actor.token_id,
            created_label=actor.label,
            created_role=actor.role,
        )
        self._store.create(job)
        try:
            self._queue.publish_bulk_page(BulkPage(bulk_job=job.job_id, tenant_id=tenant_id, page=0))
        except HubError:
            # Not started: no job is left behind, and the caller may send the request again.
            self._store.delete(tenant_id, job.job_id)
            raise
        self._audit.record(
            actor,
            tenant_id,
            "bulk_job.created",
            {"job_id": job.job_id},
            now,
            after={
                "action": action.value,
                "filter": filters.model_dump(mode="json", exclude_none=True),
                "force": force,
            },
        )
        logger.info(
            "bulk job created", extra={"job_id": job.job_id, "tenant_id": tenant_id, "action": action.value}
        )
        return job

    def get(self, tenant_id: str, job_id: str, principal: Principal) -> BulkJob:
        principal.require(Role.VIEWER, tenant_id, what="bulk job")
        job = self._store.get(tenant_id, job_id)
        if job is None:
            raise NotFound("bulk job not found", details={"job_id": job_id})
        return job

    def list_jobs(
        self, tenant_id: str, principal: Principal, limit: int, cursor: str | None
    ) -> tuple[list[BulkJob], str | None]:
        principal.require(Role.VIEWER, tenant_id, what="bulk job")
        return self._store.list_jobs(tenant_id, limit, cursor)

    def cancel(self, tenant_id: str, job_id: str, actor: Principal) -> BulkJob:
        """Stops the job before its next page; a repeat (or a finished job) answers it as is."""
        actor.require(Role.OPERATOR, tenant_id, what="bulk job")
        job = self.get(tenant_id, job_id, actor)
        if job.state is not BulkState.RUNNING:
            return job
        now = self._clock()
        cancelled = self._store.cancel(tenant_id, job_id, now)
        if cancelled.state is BulkState.CANCELLED and job.state is BulkState.RUNNING:
            self._audit.record(actor, tenant_id, "bulk_job.cancelled", {"job_id": job_id}, now)
        return cancelled


class BulkRunner:
    """The pipeline worker's side: runs one page of a job per queue message."""

    def __init__(
        self,
        store: BulkJobStore,
        operations: Operations,
        queue: PageQueue,
        *,
        finder: MessageFinder | None = None,
        rate_per_second: int = 10,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._store = store
        self._operations = operations
        self._queue = queue
        self._finder = finder
        self._rate = max(1, rate_per_second)
        self._clock = clock

    def run(self, message: BulkPage, *, last_attempt: bool = False) -> str:
        """Runs the page once; what it did (for the log). Raises on an outage (SQS redelivers
        the page message; a page run twice acts on each message once) - unless this is the page
        message's `last_attempt` before its DLQ: then what still fails is counted failed and the
        job goes on."""
        ids = {"job_id": message.bulk_job, "tenant_id": message.tenant_id, "page": message.page}
        now = self._clock()
        claim = self._store.claim_page(message.tenant_id, message.bulk_job, message.page, now, PAGE_LEASE)
        if claim.behind is not None:
            # The page before this one was claimed and its run died (its lease ran out before it
            # recorded its end): this message takes it over, then runs as itself again.
            logger.info("bulk page taken over from a run that died", extra={**ids, "behind": claim.behind})
            return self.run(message.model_copy(update={"page": claim.behind}), last_attempt=last_attempt)
        if claim.busy_until is not None:
            wait = int((claim.busy_until - now).total_seconds()) + 1
            self._queue.publish_bulk_page(message, delay_seconds=min(max(wait, 1), _MAX_SQS_DELAY))
            logger.info("bulk page busy: delayed until its lease ends", extra=ids)
            return "busy"
        if not claim.claimed or claim.job is None:
            logger.info("bulk page not run (done, cancelled or gone)", extra=ids)
            return "dropped"
        job = claim.job
        # A copy that comes back once the lease has run out: if this run dies, the copy runs the
        # page again (after a crash SQS would return this message only after the queue's
        # visibility timeout, 21 minutes); when the page is done, the copy is dropped.
        self._queue.publish_bulk_page(message, delay_seconds=int(PAGE_LEASE.total_seconds()) + 1)
        if job.planned_page == job.page and job.planned is not None:
            matched, next_cursor = job.planned, job.planned_next  # a run after a crash
        else:
            try:
                matched, next_cursor = self._matches(job)
            except ValidationFailed as invalid:  # a cursor or filter no longer valid: the job ends
                logger.warning("bulk job filter refused", extra={**ids, "code": invalid.code})
                self._store.fail(job, now)
                return "failed"
            self._store.plan_page(job, matched, next_cursor)
        counts = PageCounts()
        plan = release_plan(len(matched), self._rate)
        for message_id, delay in zip(matched, plan.delays, strict=True):
            self._act(job, message_id, counts, delay, last_attempt=last_attempt)
        if next_cursor is not None:
            later = BulkPage(
                bulk_job=job.job_id, tenant_id=job.tenant_id, page=job.page + 1, cursor=next_cursor
            )
            self._queue.publish_bulk_page(later, delay_seconds=min(plan.next_page_delay, _MAX_SQS_DELAY))
        self._store.finish_page(job, counts, next_cursor, self._clock())
        logger.info(
            "bulk page run",
            extra={
                **ids,
                "matched": counts.matched,
                "done": counts.done,
                "skipped": counts.skipped,
                "failed": counts.failed,
            },
        )
        return "run"

    def _matches(self, job: BulkJob) -> tuple[list[str], str | None]:
        size = min(release_page_size(self._rate), MAX_PAGE)
        f = job.filter
        if f.q is not None:
            if self._finder is None:
                raise ValidationFailed("search is not available", details=[{"field": "filter.q"}])
            page: QueuePage | SearchPage = self._finder.search(
                job.tenant_id,
                f.q,
                SearchKind(f.by) if f.by else SearchKind.ANY,
                limit=size,
                cursor=job.cursor,
                integration_id=f.integration_id,
            )
        else:
            filters = QueueFilter(integration_id=f.integration_id, since=f.since, until=f.until)
            page = self._operations.queue(job.tenant_id, f.tab, size, job.cursor, filters)
        matched = [str(row["message_id"]) for row in page.rows if _narrowed(f, row, searched=f.q is not None)]
        return matched, page.next_cursor

    def _act(
        self, job: BulkJob, message_id: str, counts: PageCounts, delay: int, *, last_attempt: bool
    ) -> None:
        try:
            if job.action is BulkAction.REPROCESS:
                self._operations.reprocess(
                    message_id, job.actor(), force=job.force, bulk_job=job.job_id, delay_seconds=delay
                )
            else:
                self._operations.cancel_retry(message_id, job.actor(), bulk_job=job.job_id)
        except HubError as refused:
            if refused.code == "already_acted":
                counts.did()  # this job's earlier run of the page acted on it
            elif isinstance(refused, Conflict | NotFound):
                counts.skip(refused.code)  # the message is not in a state the action takes
            elif refused.http_status < 500 or last_attempt:
                counts.fail(refused.code)  # this message cannot be acted on; the others can
                logger.warning("bulk job could not act on a message", extra={"code": refused.code})
            else:
                raise  # an outage: the page runs again (each message still once)
            return
        counts.did()


def _narrowed(f: BulkFilter, row: Mapping[str, Any], *, searched: bool) -> bool:
    """Whether a listed row passes the filter's parts the listing did not apply: the last
    failure's class; for a search's rows also the tab's status and the receipt's time range."""
    if f.error_class is not None and row.get("last_retry_error_class") != f.error_class:
        return False
    if not searched:
        return True
    status = f.tab.status
    if status is not None and row.get("pipeline_status") != status.value:
        return False
    if f.since is None and f.until is None:
        return True
    received = datetime.fromisoformat(str(row["received_at"]).replace("Z", "+00:00"))
    if f.since is not None and received < f.since:
        return False
    return not (f.until is not None and received >= f.until)
