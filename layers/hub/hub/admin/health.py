"""The admin page's Health view (issue 13): how the lanes, a tenant's integrations and the
platform's counters look right now, read in a bounded number of requests.

Three sources, each behind a port: the queues' attributes (depths), CloudWatch (the age of each
lane's oldest step message, and the counters the functions emit as EMF) and GSI1's status
partitions (a tenant's messages in retry_pending / error / dead_letter, by last change).

- `lanes` and `outbox` are platform-only: every tenant's messages share the lanes, so a tenant's
  token must not see them (nor infer other tenants' load from them).
- `counters` and `hourly` are platform-only too: the EMF metrics carry no tenant dimension (a
  custom metric per tenant would cost per tenant and month; docs/decisions/health-api.md).
- `integrations` is per tenant, from GSI1 only (never a scan): up to `max_pages` pages per
  status partition, `truncated` when that bound cut a listing short.

A queue or CloudWatch that cannot answer leaves its section null and names it in
`unavailable`: the rest of the page still shows. DynamoDB failing is a 503 like every route.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from pydantic import Field

from hub.admin.access import Principal, Role
from hub.domain.clock import utcnow
from hub.domain.failure import ErrorClass
from hub.domain.model import HubModel
from hub.domain.status import PipelineStatus
from hub.errors import ServiceUnavailable, ValidationFailed

#: "The last hour" of the counters and the integrations' figures.
WINDOW = timedelta(hours=1)
#: How many hours `hourly` covers (the current hour included).
HOURS = 24
#: AWS/SQS ApproximateAgeOfOldestMessage: Maximum over this span (SQS publishes every minute).
AGE_SPAN = timedelta(minutes=5)
#: GSI1 pages read per status partition before `truncated` (each up to PAGE_SIZE rows).
MAX_PAGES = 4
PAGE_SIZE = 500


# --- ports -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueDepth:
    """SQS ApproximateNumberOfMessages / ...NotVisible / ...Delayed."""

    visible: int
    in_flight: int
    delayed: int

    @property
    def total(self) -> int:
        return self.visible + self.in_flight + self.delayed


class QueueGauges(Protocol):
    def depth(self, queue_url: str) -> QueueDepth:
        """The queue's approximate depths; QueueUnavailable when SQS cannot answer."""
        ...


@dataclass(frozen=True)
class MetricQuery:
    """One metric with its exact dimension set (CloudWatch matches the whole set)."""

    id: str
    namespace: str
    name: str
    dimensions: tuple[tuple[str, str], ...]
    stat: str
    period_seconds: int


#: A query's datapoints: (period start, value), any order.
Series = list[tuple[datetime, float]]


class MetricReader(Protocol):
    def read(self, queries: Sequence[MetricQuery], start: datetime, end: datetime) -> dict[str, Series]:
        """Every query's datapoints in [start, end) (one GetMetricData); a query without data
        maps to an empty list. MetricsUnavailable when CloudWatch cannot answer."""
        ...


@dataclass(frozen=True)
class StatusRows:
    #: GSI1 rows: at least integration_id, updated_at, received_at.
    rows: list[dict[str, object]]
    #: The page bound stopped the read before the partition's end.
    truncated: bool


class StatusWindow(Protocol):
    def changed_since(
        self, tenant_id: str, status: PipelineStatus, since: datetime | None, max_pages: int
    ) -> StatusRows:
        """The tenant's messages in `status` whose last change is at or after `since` (None:
        all), oldest change first, at most `max_pages` Query pages."""
        ...


@dataclass(frozen=True)
class HealthLane:
    """A lane the page shows: its work queue, its DLQ, and the queue's name in AWS/SQS."""

    name: str
    work_queue_url: str
    dead_letter_queue_url: str

    @property
    def queue_name(self) -> str:
        return queue_name(self.work_queue_url)


def queue_name(queue_url: str) -> str:
    """The QueueName dimension of AWS/SQS metrics: the URL's last segment."""
    return queue_url.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class MetricNames:
    """Where the functions' EMF metrics land: Powertools' namespace and `service` dimension."""

    namespace: str
    service: str


# --- the answer ------------------------------------------------------------------------------


class QueueDepthView(HubModel):
    visible: int
    in_flight: int
    delayed: int


class LaneHealth(HubModel):
    #: The lane's name, as `POST /api/admin/dlq/{lane}/redrive` takes it (when it can be redriven).
    lane: str
    queue: QueueDepthView
    dlq_depth: int
    #: AWS/SQS ApproximateAgeOfOldestMessage, Maximum over the last 5 minutes; null: no datapoint.
    oldest_message_age_seconds: float | None
    #: Whether the admin API redrives this lane's DLQ.
    redrivable: bool


class OutboxHealth(HubModel):
    #: Stream batches the outbox publisher gave up on (its DLQ).
    publisher_dlq_depth: int
    #: Webhook jobs on the webhooks lane (visible, in flight and delayed); jobs waiting for a
    #: retry sit in EventBridge Scheduler and are not counted.
    pending_webhook_deliveries: int


class IntegrationHealth(HubModel):
    integration_id: str
    #: Messages that entered retry_pending in the window and still wait.
    retries: int
    #: error + dead_letter: messages that failed for good in the window and are still there.
    permanent_failures: int
    errors: int
    dead_lettered: int
    #: Messages waiting (retry_pending) now, whenever they started to.
    waiting: int
    #: Age (since received) of the oldest waiting message; null: none waits.
    oldest_waiting_age_seconds: float | None


class IntegrationsHealth(HubModel):
    tenant_id: str
    #: Integrations with something to show (a waiting or failed message); others are all zero.
    items: list[IntegrationHealth]
    #: A status partition held more than the bound read: the figures are lower bounds.
    truncated: bool


class Counters(HubModel):
    signature_failures: int
    duplicates_dropped: int


class HourlyCounts(HubModel):
    #: The hour's start (UTC).
    hour: datetime
    received: int
    sent: int
    retry_scheduled: int
    dead_lettered: int
    #: Failed delivery attempts (those retried, dead-lettered or ended in error).
    failed: int
    #: Messages of integrations in observability mode (not delivered).
    observed: int


class HealthAnswer(HubModel):
    generated_at: datetime
    window_seconds: int
    #: The tenant the `integrations` section is about (null: none asked).
    tenant_id: str | None
    lanes: list[LaneHealth] | None = Field(description="Platform tokens only.")
    outbox: OutboxHealth | None = Field(description="Platform tokens only.")
    integrations: IntegrationsHealth | None
    counters: Counters | None = Field(description="Platform tokens only (platform-wide).")
    hourly: list[HourlyCounts] | None = Field(description="Platform tokens only; 24 hours, oldest first.")
    #: Sections left null because their source did not answer: `queues`, `metrics`.
    unavailable: list[str]


# --- the use case ----------------------------------------------------------------------------

_HOURLY_SERIES = ("received", "sent", "retry_scheduled", "dead_lettered", "failed", "observed")


@dataclass
class Health:
    gauges: QueueGauges
    metrics: MetricReader
    statuses: StatusWindow
    names: MetricNames
    lanes: Sequence[HealthLane]
    #: Lanes whose DLQ `POST /api/admin/dlq/{lane}/redrive` moves.
    redrivable: frozenset[str]
    outbox_dlq_url: str
    webhooks_queue_url: str
    clock: Callable[[], datetime] = utcnow
    max_pages: int = MAX_PAGES
    #: How long this instance reuses a metrics read: CloudWatch bills every metric read
    #: (~20 a read) and its datapoints are a minute apart anyway.
    metrics_cache: timedelta = timedelta(seconds=60)
    _cached: tuple[datetime, dict[str, Series]] | None = field(default=None, init=False, repr=False)

    def view(self, principal: Principal, tenant_id: str | None) -> HealthAnswer:
        """The Health view for `principal`: a tenant's token must name its tenant (it sees that
        tenant's integrations, nothing of the platform); a platform token sees the platform and,
        when it names one, a tenant's integrations. Another tenant's id is NotFound."""
        if tenant_id is None and not principal.platform:
            raise ValidationFailed(
                "a tenant's token must name its tenant",
                details=[{"field": "tenant_id", "problem": "required"}],
            )
        if tenant_id is not None:
            principal.require(Role.VIEWER, tenant_id, what="tenant")
        else:
            principal.require_platform(Role.VIEWER)
        now = self.clock()
        unavailable: list[str] = []
        lanes: list[LaneHealth] | None = None
        outbox: OutboxHealth | None = None
        counters: Counters | None = None
        hourly: list[HourlyCounts] | None = None
        if principal.platform:
            series = self._metrics(now, unavailable)
            try:
                depths = self._depths()
                lanes, outbox = self._lanes(depths, series, now), self._outbox(depths)
            except ServiceUnavailable:
                unavailable.append("queues")
            if series is not None:
                counters, hourly = _counters(series, now), _hourly(series, now)
        integrations = self._integrations(tenant_id, now) if tenant_id is not None else None
        return HealthAnswer(
            generated_at=now,
            window_seconds=int(WINDOW.total_seconds()),
            tenant_id=tenant_id,
            lanes=lanes,
            outbox=outbox,
            integrations=integrations,
            counters=counters,
            hourly=hourly,
            unavailable=unavailable,
        )

    # --- platform: queues and metrics --------------------------------------------------------

    def _metrics(self, now: datetime, unavailable: list[str]) -> dict[str, Series] | None:
        if self._cached is not None:
            read_at, series = self._cached
            if read_at <= now < read_at + self.metrics_cache and _hour_of(read_at) == _hour_of(now):
                return series
        start = _hour_of(now) - timedelta(hours=HOURS - 1)
        try:
            # The end a minute ahead: a datapoint of this very second is in (CloudWatch may
            # round EndTime down, moto does), and the future holds none.
            series = self.metrics.read(self.queries(), start, now + timedelta(minutes=1))
        except ServiceUnavailable:
            unavailable.append("metrics")
            return None
        self._cached = (now, series)
        return series

    def queries(self) -> list[MetricQuery]:
        """Every metric one page load reads, in one GetMetricData."""
        service = (("service", self.names.service),)

        def emf(query_id: str, name: str, period: int, *extra: tuple[str, str]) -> MetricQuery:
            return MetricQuery(query_id, self.names.namespace, name, (*service, *extra), "Sum", period)

        hour = 3600
        queries = [
            emf("received", "MessagesReceived", hour),
            emf("sent", "StepSucceeded", hour, ("step", "deliver")),
            emf("dead_lettered", "DeadLettered", hour),
            emf("failed", "StepFailed", hour, ("step", "deliver")),
            emf("observed", "MessagesObserved", hour),
            # RetriesScheduled carries the error class: one query per class, summed here.
            *(
                emf(
                    f"retry_scheduled_{error_class.value}",
                    "RetriesScheduled",
                    hour,
                    ("error_class", error_class.value),
                )
                for error_class in ErrorClass
            ),
            emf("signature_failures", "SignatureFailures", 300),
            emf("duplicates_dropped", "DuplicatesDropped", 300),
        ]
        for index, lane in enumerate(self.lanes):
            queries.append(
                MetricQuery(
                    f"age_{index}",
                    "AWS/SQS",
                    "ApproximateAgeOfOldestMessage",
                    (("QueueName", lane.queue_name),),
                    "Maximum",
                    60,
                )
            )
        return queries

    def _depths(self) -> dict[str, QueueDepth]:
        """Each queue the view shows, read once (GetQueueAttributes each)."""
        urls = [url for lane in self.lanes for url in (lane.work_queue_url, lane.dead_letter_queue_url)]
        urls += [self.outbox_dlq_url, self.webhooks_queue_url]
        return {url: self.gauges.depth(url) for url in dict.fromkeys(urls)}

    def _lanes(
        self, depths: Mapping[str, QueueDepth], series: dict[str, Series] | None, now: datetime
    ) -> list[LaneHealth]:
        lanes = []
        for index, lane in enumerate(self.lanes):
            depth = depths[lane.work_queue_url]
            dlq = depths[lane.dead_letter_queue_url]
            age = None
            if series is not None:
                recent = [value for at, value in series.get(f"age_{index}", []) if at >= now - AGE_SPAN]
                age = max(recent) if recent else None
            lanes.append(
                LaneHealth(
                    lane=lane.name,
                    queue=QueueDepthView(
                        visible=depth.visible, in_flight=depth.in_flight, delayed=depth.delayed
                    ),
                    dlq_depth=dlq.visible + dlq.in_flight + dlq.delayed,
                    oldest_message_age_seconds=age,
                    redrivable=lane.name in self.redrivable,
                )
            )
        return lanes

    def _outbox(self, depths: Mapping[str, QueueDepth]) -> OutboxHealth:
        return OutboxHealth(
            publisher_dlq_depth=depths[self.outbox_dlq_url].total,
            pending_webhook_deliveries=depths[self.webhooks_queue_url].total,
        )

    # --- a tenant: GSI1 ----------------------------------------------------------------------

    def _integrations(self, tenant_id: str, now: datetime) -> IntegrationsHealth:
        since = now - WINDOW
        waiting = self.statuses.changed_since(tenant_id, PipelineStatus.RETRY_PENDING, None, self.max_pages)
        truncated = waiting.truncated
        recent_waits = waiting
        if waiting.truncated:
            # The oldest-first read stopped early: the window's retries need their own read.
            recent_waits = self.statuses.changed_since(
                tenant_id, PipelineStatus.RETRY_PENDING, since, self.max_pages
            )
        errors = self.statuses.changed_since(tenant_id, PipelineStatus.ERROR, since, self.max_pages)
        dead = self.statuses.changed_since(tenant_id, PipelineStatus.DEAD_LETTER, since, self.max_pages)
        truncated = truncated or recent_waits.truncated or errors.truncated or dead.truncated
        figures: dict[str, _Figures] = {}

        def of(row: Mapping[str, object]) -> _Figures:
            integration_id = str(row.get("integration_id") or "")
            return figures.setdefault(integration_id, _Figures())

        for row in waiting.rows:
            mine = of(row)
            mine.waiting += 1
            received = _time(row.get("received_at")) or _time(row.get("updated_at"))
            if received is not None and (mine.oldest is None or received < mine.oldest):
                mine.oldest = received
        for row in recent_waits.rows:
            changed = _time(row.get("updated_at"))
            if changed is not None and changed >= since:
                of(row).retries += 1
        for row in errors.rows:
            of(row).errors += 1
        for row in dead.rows:
            of(row).dead_lettered += 1
        items = [
            IntegrationHealth(
                integration_id=integration_id,
                retries=f.retries,
                permanent_failures=f.errors + f.dead_lettered,
                errors=f.errors,
                dead_lettered=f.dead_lettered,
                waiting=f.waiting,
                oldest_waiting_age_seconds=max(0.0, (now - f.oldest).total_seconds()) if f.oldest else None,
            )
            for integration_id, f in sorted(figures.items())
        ]
        return IntegrationsHealth(tenant_id=tenant_id, items=items, truncated=truncated)


@dataclass
class _Figures:
    retries: int = 0
    errors: int = 0
    dead_lettered: int = 0
    waiting: int = 0
    oldest: datetime | None = None


def _hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _time(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return None


def _total(series: Series, since: datetime) -> int:
    return int(sum(value for at, value in series if at >= since))


def _counters(series: dict[str, Series], now: datetime) -> Counters:
    # 5-minute periods: "the last hour" starts at the period boundary at or before now - 1 h.
    since = now - WINDOW
    since = since.replace(minute=since.minute - since.minute % 5, second=0, microsecond=0)
    return Counters(
        signature_failures=_total(series.get("signature_failures", []), since),
        duplicates_dropped=_total(series.get("duplicates_dropped", []), since),
    )


def _hourly(series: dict[str, Series], now: datetime) -> list[HourlyCounts]:
    first = _hour_of(now) - timedelta(hours=HOURS - 1)
    hours = [first + timedelta(hours=offset) for offset in range(HOURS)]
    counts: dict[str, dict[datetime, float]] = {name: {} for name in _HOURLY_SERIES}
    for query_id, points in series.items():
        name = "retry_scheduled" if query_id.startswith("retry_scheduled_") else query_id
        if name not in counts:
            continue
        for at, value in points:
            bucket = _hour_of(at)
            counts[name][bucket] = counts[name].get(bucket, 0.0) + value
    return [
        HourlyCounts.model_validate(
            {"hour": hour, **{name: int(counts[name].get(hour, 0.0)) for name in _HOURLY_SERIES}}
        )
        for hour in hours
    ]
