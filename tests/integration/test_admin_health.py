"""The admin Health view, GET /api/admin/health (issue 13), through the real AdminApiFunction on
moto: messages made failing by the real pipeline, metrics put into moto's CloudWatch as the
functions' EMF (or SQS) would put them, queues filled for real; tokens minted over the API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from hub.adapters.cloudwatch import CloudWatchMetricReader
from hub.adapters.dynamo.status_index import DynamoStatusIndex
from hub.adapters.sqs import SqsQueueGauges
from hub.admin.health import MetricQuery
from hub.domain.retry import RetryPolicy
from hub.domain.status import PipelineStatus
from hub.errors import MetricsUnavailable, QueueUnavailable
from tests.destinations import Answer
from tests.pipeline import configure, send, status

AUTO = RetryPolicy(retry_auto_enabled=True, retry_max=5)


def token(admin_api: Any, role: str, tenant_id: str | None) -> str:
    created = admin_api(
        "POST", "/api/admin/tokens", body={"label": role, "role": role, "tenant_id": tenant_id}
    )
    assert created.status == 201, created.body
    return str(created.body["token"])


def health(admin_api: Any, token: str | None = None, **query: str) -> Any:
    options: dict[str, Any] = {"query": query or None}
    if token is not None:
        options["token"] = token
    return admin_api("GET", "/api/admin/health", **options)


def put_emf(stack: Any, name: str, value: float, at: datetime | None = None, **dimensions: str) -> None:
    """What CloudWatch makes of a function's EMF document: the metric under Powertools'
    namespace with the `service` dimension and the document's own, at `at` (default: now)."""
    every = {"service": stack.env["POWERTOOLS_SERVICE_NAME"], **dimensions}
    boto3.client("cloudwatch").put_metric_data(
        Namespace=stack.env["POWERTOOLS_METRICS_NAMESPACE"],
        MetricData=[
            {
                "MetricName": name,
                "Dimensions": [{"Name": k, "Value": v} for k, v in every.items()],
                "Value": value,
                "Unit": "Count",
                "Timestamp": at or datetime.now(UTC),
            }
        ],
    )


def hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


class TestIntegrations:
    def test_a_tenants_waiting_and_failed_messages_per_integration(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        # Given one message of each: waiting for a retry, dead-lettered, in error
        configure(stack, tenancy, destination, retry_policy=AUTO)
        destination.script(Answer(503))
        waiting = send(ingest_api, tenancy, {"po_number": "PO-WAIT"})
        worker()
        configure(stack, tenancy, destination, retry_policy=AUTO.model_copy(update={"retry_max": 0}))
        destination.script(Answer(503))
        dead = send(ingest_api, tenancy, {"po_number": "PO-DEAD"})
        worker()
        configure(stack, tenancy, destination)  # auto retry off: a failure is an error
        destination.script(Answer(503))
        failed = send(ingest_api, tenancy, {"po_number": "PO-ERR"})
        worker()
        assert [status(stack, m)["pipeline_status"] for m in (waiting, dead, failed)] == [
            "retry_pending",
            "dead_letter",
            "error",
        ]

        # When the platform asks about tenant t1
        answer = health(admin_api, tenant_id="t1")

        # Then its integration shows each, and the oldest waiting message's age
        assert answer.status == 200, answer.body
        section = answer.body["integrations"]
        assert (section["tenant_id"], section["truncated"]) == ("t1", False)
        [erp] = section["items"]
        assert erp["integration_id"] == tenancy.integration_id
        assert {
            k: erp[k] for k in ("retries", "waiting", "errors", "dead_lettered", "permanent_failures")
        } == {
            "retries": 1,
            "waiting": 1,
            "errors": 1,
            "dead_lettered": 1,
            "permanent_failures": 2,
        }
        assert 0 <= erp["oldest_waiting_age_seconds"] < 60
        # Another tenant's integrations have nothing of t1's.
        assert health(admin_api, tenant_id="t2").body["integrations"]["items"] == []

    def test_the_window_is_a_key_condition_and_the_page_bound_is_reported(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        configure(stack, tenancy, destination)
        destination.script(Answer(503), Answer(503))
        send(ingest_api, tenancy, {"po_number": "PO-1"})
        send(ingest_api, tenancy, {"po_number": "PO-2"})
        worker()
        index = DynamoStatusIndex(stack.table)
        now = datetime.now(UTC)

        everything = index.changed_since("t1", PipelineStatus.ERROR, now - timedelta(hours=1), 4)
        later = index.changed_since("t1", PipelineStatus.ERROR, now + timedelta(seconds=1), 4)
        bounded = index.changed_since("t1", PipelineStatus.ERROR, None, 1, page_size=1)

        assert (len(everything.rows), everything.truncated) == (2, False)
        assert (later.rows, later.truncated) == ([], False)
        assert (len(bounded.rows), bounded.truncated) == (1, True)


class TestPlatform:
    def test_lanes_outbox_counters_and_hourly_counts(self, stack, tenancy, ingest_api, admin_api):
        # Given a step waiting on the pipeline lane, one in its DLQ, and the metrics of an hour
        # (all at one instant: a run that crosses an hour finds them in the hour they were sent)
        at = datetime.now(UTC)
        send(ingest_api, tenancy, {"po_number": "PO-Q"})
        sqs = boto3.client("sqs")
        sqs.send_message(QueueUrl=stack.dlq_url, MessageBody="{}")
        put_emf(stack, "MessagesReceived", 3, at)
        put_emf(stack, "StepSucceeded", 2, at, step="deliver")
        put_emf(stack, "StepSucceeded", 5, at, step="process")  # another step: not "sent"
        put_emf(stack, "RetriesScheduled", 2, at, error_class="http_5xx")
        put_emf(stack, "RetriesScheduled", 1, at, error_class="timeout")
        put_emf(stack, "DeadLettered", 1, at)
        put_emf(stack, "DuplicatesDropped", 4, at)
        put_emf(stack, "SignatureFailures", 1, at)
        put_emf(stack, "MessagesObserved", 6, at)
        pipeline_queue = stack.queue_url.rsplit("/", 1)[-1]
        boto3.client("cloudwatch").put_metric_data(
            Namespace="AWS/SQS",
            MetricData=[
                {
                    "MetricName": "ApproximateAgeOfOldestMessage",
                    "Dimensions": [{"Name": "QueueName", "Value": pipeline_queue}],
                    "Value": 42,
                    "Timestamp": datetime.now(UTC),
                }
            ],
        )

        answer = health(admin_api)

        assert answer.status == 200, answer.body
        body = answer.body
        assert body["unavailable"] == []
        assert body["integrations"] is None  # no tenant asked
        lanes = {lane["lane"]: lane for lane in body["lanes"]}
        assert set(lanes) == {"pipeline", "webhooks"}
        assert lanes["pipeline"]["queue"]["visible"] == 1
        assert lanes["pipeline"]["dlq_depth"] == 1
        assert lanes["pipeline"]["oldest_message_age_seconds"] == 42
        assert lanes["pipeline"]["redrivable"] is True
        assert lanes["webhooks"]["oldest_message_age_seconds"] is None  # no datapoint
        assert (lanes["webhooks"]["dlq_depth"], lanes["webhooks"]["redrivable"]) == (0, False)
        assert body["outbox"] == {"publisher_dlq_depth": 0, "pending_webhook_deliveries": 0}
        assert body["counters"] == {"signature_failures": 1, "duplicates_dropped": 4}
        assert len(body["hourly"]) == 24
        hours = [datetime.fromisoformat(hour["hour"]) for hour in body["hourly"]]
        assert hour_of(at) <= hours[-1] <= hour_of(datetime.now(UTC))  # the last is the answer's hour
        current = body["hourly"][hours.index(hour_of(at))]
        assert {k: v for k, v in current.items() if k != "hour"} == {
            "received": 3,
            "sent": 2,
            "retry_scheduled": 3,
            "dead_lettered": 1,
            "failed": 0,
            "observed": 6,
        }
        assert all(hour["received"] == 0 for hour in body["hourly"] if hour is not current)

    def test_another_services_metrics_are_not_counted(self, stack, admin_api):
        boto3.client("cloudwatch").put_metric_data(
            Namespace=stack.env["POWERTOOLS_METRICS_NAMESPACE"],
            MetricData=[
                {
                    "MetricName": "MessagesReceived",
                    "Dimensions": [{"Name": "service", "Value": "integration-hub-prod"}],
                    "Value": 9,
                }
            ],
        )

        assert health(admin_api).body["hourly"][-1]["received"] == 0


class TestAccess:
    def test_a_tenant_token_sees_only_its_tenant_and_no_lanes(self, stack, tenancy, admin_api):
        viewer = token(admin_api, "viewer", "t1")

        own = health(admin_api, viewer, tenant_id="t1")
        other = health(admin_api, viewer, tenant_id="t2")
        unnamed = health(admin_api, viewer)

        assert own.status == 200
        assert own.body["integrations"]["tenant_id"] == "t1"
        assert [own.body[k] for k in ("lanes", "outbox", "counters", "hourly")] == [None] * 4
        assert (other.status, other.body["error"]["code"]) == (404, "not_found")
        assert (unnamed.status, unnamed.body["error"]["code"]) == (400, "validation_error")

    def test_a_platform_viewer_reads_it_and_no_token_is_refused(self, stack, tenancy, admin_api):
        viewer = token(admin_api, "viewer", None)

        assert health(admin_api, viewer, tenant_id="t2").status == 200
        refused = admin_api("GET", "/api/admin/health", token=None)
        assert (refused.status, refused.body["error"]["code"]) == (401, "unauthorized")


class TestAdapters:
    """The adapters turn AWS errors into the hub's: the view then shows what still answers."""

    def test_cloudwatch_refusing_a_read_is_metrics_unavailable(self, stack):
        now = datetime.now(UTC)
        query = MetricQuery(
            "q", "AWS/SQS", "ApproximateAgeOfOldestMessage", (("QueueName", "q"),), "Maximum", 60
        )

        with pytest.raises(MetricsUnavailable):
            CloudWatchMetricReader().read([query], now, now - timedelta(minutes=1))  # end before start

    def test_a_missing_queue_is_queue_unavailable(self, stack):
        with pytest.raises(QueueUnavailable):
            SqsQueueGauges().depth(stack.queue_url + "-gone")
