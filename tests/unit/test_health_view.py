"""The Health view's use case (hub.admin.health) with in-memory ports: who sees which section,
how datapoints become the answer, and what a failing source leaves."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from hub.admin.access import Principal, Role
from hub.admin.health import (
    Health,
    HealthLane,
    MetricNames,
    MetricQuery,
    QueueDepth,
    Series,
    StatusRows,
)
from hub.domain.status import PipelineStatus
from hub.errors import MetricsUnavailable, NotFound, QueueUnavailable, ValidationFailed

NOW = datetime(2026, 12, 1, 10, 17, 30, tzinfo=UTC)
PLATFORM = Principal("tok_p", "platform", Role.VIEWER, None)
TENANT = Principal("tok_t", "tenant", Role.VIEWER, "t1")


class Gauges:
    def __init__(self, failing: bool = False) -> None:
        self.failing = failing
        self.asked: list[str] = []

    def depth(self, queue_url: str) -> QueueDepth:
        self.asked.append(queue_url)
        if self.failing:
            raise QueueUnavailable("down")
        return QueueDepth(visible=len(queue_url), in_flight=1, delayed=0)


class Metrics:
    def __init__(self, series: dict[str, Series] | None = None, failing: bool = False) -> None:
        self.series = series or {}
        self.failing = failing
        self.reads: list[tuple[Sequence[MetricQuery], datetime, datetime]] = []

    def read(self, queries: Sequence[MetricQuery], start: datetime, end: datetime) -> dict[str, Series]:
        self.reads.append((queries, start, end))
        if self.failing:
            raise MetricsUnavailable("down")
        return {query.id: self.series.get(query.id, []) for query in queries}


class Statuses:
    def __init__(self, rows: dict[PipelineStatus, list[dict[str, object]]], bound: int = 100) -> None:
        self.rows = rows
        self.bound = bound
        self.asked: list[tuple[PipelineStatus, datetime | None]] = []

    def changed_since(
        self, tenant_id: str, status: PipelineStatus, since: datetime | None, max_pages: int
    ) -> StatusRows:
        self.asked.append((status, since))
        rows = [
            r for r in self.rows.get(status, []) if since is None or str(r["updated_at"]) >= since.isoformat()
        ]
        return StatusRows(rows=rows[: self.bound], truncated=len(rows) > self.bound)


def row(
    integration_id: str, minutes_ago: float, received_minutes_ago: float | None = None
) -> dict[str, object]:
    received = NOW - timedelta(
        minutes=received_minutes_ago if received_minutes_ago is not None else minutes_ago
    )
    return {
        "integration_id": integration_id,
        "updated_at": (NOW - timedelta(minutes=minutes_ago)).isoformat(),
        "received_at": received.isoformat(),
    }


def build(
    metrics: Metrics | None = None, statuses: Statuses | None = None, gauges: Gauges | None = None
) -> Health:
    return Health(
        gauges=gauges or Gauges(),
        metrics=metrics or Metrics(),
        statuses=statuses or Statuses({}),
        names=MetricNames(namespace="Hub", service="hub-dev"),
        lanes=(HealthLane("pipeline", "https://q/pipe", "https://q/pipe-dlq"),),
        redrivable=frozenset({"pipeline"}),
        outbox_dlq_url="https://q/outbox-dlq",
        webhooks_queue_url="https://q/hooks",
        clock=lambda: NOW,
    )


class TestWhoSeesWhat:
    def test_a_tenant_token_reads_no_queue_and_no_metric(self) -> None:
        gauges, metrics = Gauges(), Metrics()

        answer = build(metrics=metrics, gauges=gauges).view(TENANT, "t1")

        assert (answer.lanes, answer.outbox, answer.counters, answer.hourly) == (None, None, None, None)
        assert answer.integrations is not None
        assert (gauges.asked, metrics.reads) == ([], [])

    def test_a_tenant_token_must_name_its_tenant_and_only_its_own(self) -> None:
        with pytest.raises(ValidationFailed):
            build().view(TENANT, None)
        with pytest.raises(NotFound):
            build().view(TENANT, "t2")

    def test_a_platform_token_without_a_tenant_gets_no_integrations_and_no_query(self) -> None:
        statuses = Statuses({})

        answer = build(statuses=statuses).view(PLATFORM, None)

        assert answer.integrations is None
        assert statuses.asked == []
        assert answer.lanes is not None


class TestMetrics:
    def test_one_read_for_the_24_hours_with_exact_dimension_sets(self) -> None:
        metrics = Metrics()

        build(metrics=metrics).view(PLATFORM, None)

        [(queries, start, end)] = metrics.reads
        assert (start, end) == (datetime(2026, 11, 30, 11, tzinfo=UTC), NOW + timedelta(minutes=1))
        by_id = {q.id: q for q in queries}
        assert by_id["sent"].dimensions == (("service", "hub-dev"), ("step", "deliver"))
        assert by_id["received"].dimensions == (("service", "hub-dev"),)
        assert by_id["age_0"].dimensions == (("QueueName", "pipe"),)
        assert by_id["age_0"].stat == "Maximum"

    def test_datapoints_become_counters_hourly_counts_and_ages(self) -> None:
        hour = NOW.replace(minute=0, second=0)
        metrics = Metrics(
            {
                "received": [(hour, 5), (hour - timedelta(hours=2), 7)],
                "retry_scheduled_http_5xx": [(hour, 2)],
                "retry_scheduled_timeout": [(hour, 1)],
                # 5-minute periods: the one holding NOW - 1 h counts, older ones do not.
                "duplicates_dropped": [(NOW - timedelta(minutes=62), 1), (NOW - timedelta(minutes=67), 10)],
                "age_0": [
                    (NOW - timedelta(minutes=3), 40),
                    (NOW - timedelta(minutes=1), 30),
                    (NOW - timedelta(minutes=9), 900),
                ],
            }
        )

        answer = build(metrics=metrics).view(PLATFORM, None)

        assert answer.hourly is not None
        assert answer.counters is not None
        assert answer.lanes is not None
        assert [(h.hour, h.received) for h in answer.hourly if h.received] == [
            (hour - timedelta(hours=2), 7),
            (hour, 5),
        ]
        assert answer.hourly[-1].retry_scheduled == 3
        assert answer.counters.duplicates_dropped == 1
        assert answer.lanes[0].oldest_message_age_seconds == 40  # the last 5 minutes only
        assert answer.lanes[0].dlq_depth == len("https://q/pipe-dlq") + 1

    def test_each_queue_is_read_once(self) -> None:
        gauges = Gauges()
        health = build(gauges=gauges)
        health.webhooks_queue_url = "https://q/pipe"  # a queue both a lane and the outbox show

        build_answer = health.view(PLATFORM, None)

        assert build_answer.outbox is not None
        assert sorted(gauges.asked) == ["https://q/outbox-dlq", "https://q/pipe", "https://q/pipe-dlq"]

    def test_a_read_is_reused_for_a_minute_within_the_hour(self) -> None:
        clock = [NOW]
        metrics = Metrics()
        health = build(metrics=metrics)
        health.clock = lambda: clock[0]

        for moment in (NOW, NOW + timedelta(seconds=59), NOW + timedelta(seconds=60)):
            clock[0] = moment
            health.view(PLATFORM, None)
        clock[0] = NOW.replace(minute=59, second=59)
        health.view(PLATFORM, None)
        health.metrics_cache = timedelta(hours=2)
        clock[0] = NOW.replace(hour=11, minute=0, second=1)  # a new hour: a new bucket to show
        health.view(PLATFORM, None)

        assert len(metrics.reads) == 4

    def test_a_failing_source_leaves_its_sections_null_and_names_it(self) -> None:
        no_metrics = build(metrics=Metrics(failing=True)).view(PLATFORM, None)
        no_queues = build(gauges=Gauges(failing=True)).view(PLATFORM, None)

        assert no_metrics.unavailable == ["metrics"]
        assert (no_metrics.counters, no_metrics.hourly) == (None, None)
        assert no_metrics.lanes is not None
        assert no_metrics.lanes[0].oldest_message_age_seconds is None
        assert no_queues.unavailable == ["queues"]
        assert (no_queues.lanes, no_queues.outbox) == (None, None)
        assert no_queues.hourly is not None


class TestIntegrations:
    def test_figures_per_integration_over_the_last_hour(self) -> None:
        statuses = Statuses(
            {
                PipelineStatus.RETRY_PENDING: [
                    row("a", 180, received_minutes_ago=300),
                    row("a", 10),
                    row("b", 5),
                ],
                PipelineStatus.ERROR: [row("a", 30)],
                PipelineStatus.DEAD_LETTER: [row("b", 50), row("b", 90)],
            }
        )

        answer = build(statuses=statuses).view(PLATFORM, "t1")

        assert answer.integrations is not None
        items = {i.integration_id: i for i in answer.integrations.items}
        assert (items["a"].retries, items["a"].waiting, items["a"].errors) == (1, 2, 1)
        assert items["a"].oldest_waiting_age_seconds == 300 * 60
        assert (items["b"].retries, items["b"].dead_lettered, items["b"].permanent_failures) == (1, 1, 1)
        assert answer.integrations.truncated is False
        # The oldest-first read of the waiting partition covered the window: no second read.
        assert [s for s, _ in statuses.asked] == [
            PipelineStatus.RETRY_PENDING,
            PipelineStatus.ERROR,
            PipelineStatus.DEAD_LETTER,
        ]

    def test_a_truncated_waiting_read_gets_the_windows_retries_by_a_key_condition(self) -> None:
        statuses = Statuses(
            {PipelineStatus.RETRY_PENDING: [row("a", 300), row("a", 200), row("a", 20), row("a", 10)]},
            bound=2,
        )

        answer = build(statuses=statuses).view(PLATFORM, "t1")

        assert answer.integrations is not None
        assert answer.integrations.truncated is True
        [a] = answer.integrations.items
        assert (a.waiting, a.retries) == (2, 2)
        assert statuses.asked[1] == (PipelineStatus.RETRY_PENDING, NOW - timedelta(hours=1))
