"""The queue tabs' counts, GET /api/admin/queue/counts (issue 28), and the rows' current error
class, through the real AdminApiFunction handler on moto: counting Queries of the status index
(no row read back, never a scan), the cap, the integration filter, the tenant's scope; a message
sent after a failed attempt shows no error class as current, its attempt keeps it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from hub.adapters.aws import client
from hub.adapters.dynamo.messages import record_item
from hub.domain.ids import new_id
from hub.domain.message import MessageRecord, PayloadFormat
from hub.domain.retry import RetryPolicy
from hub.domain.status import PipelineStatus
from tests.destinations import Answer
from tests.integration import test_queue_api as queue_api
from tests.integration.test_admin_health import token
from tests.pipeline import configure, fire_all, send, status

S = PipelineStatus
#: The queue API tests' fixture (every DynamoDB operation the hub's client makes) and helper.
dynamodb_calls, without_auth = queue_api.dynamodb_calls, queue_api.without_auth
START = datetime(2026, 11, 30, 8, tzinfo=UTC)


def written(stack: Any, statuses: list[tuple[PipelineStatus, str]], *, tenant_id: str = "t1") -> None:
    """Message items as ingest and the pipeline write them (record_item: GSI1 keys for a listed
    status), one per (status, integration), a second apart."""
    table = boto3.resource("dynamodb").Table(stack.table)
    with table.batch_writer() as batch:
        for i, (status, integration_id) in enumerate(statuses):
            moment = START + timedelta(seconds=i)
            record = MessageRecord(
                message_id=new_id("msg"),
                tenant_id=tenant_id,
                integration_id=integration_id,
                message_type="purchase_order",
                pipeline_status=status,
                received_at=moment,
                updated_at=moment,
                correlation_id="c",
                execution_id=new_id("exe"),
                fingerprint="f",
                payload_sha256="s",
                payload_bytes=2,
                payload_format=PayloadFormat.JSON,
                last_retry_error_class="http_5xx" if status is not S.RECEIVED else None,
                version=1,
            )
            item = {name: value for name, value in record_item(record).items() if value is not None}
            batch.put_item(Item={**item, "version": 1})


@pytest.fixture
def queries() -> Iterator[list[dict[str, Any]]]:
    """The parameters of every Query the hub's own DynamoDB client makes from here on."""
    seen: list[dict[str, Any]] = []

    def keep(params: dict[str, Any], **_: Any) -> None:
        seen.append(dict(params))

    dynamodb = client("dynamodb")
    dynamodb.meta.events.register("provide-client-params.dynamodb.Query", keep)
    yield seen
    dynamodb.meta.events.unregister("provide-client-params.dynamodb.Query", keep)


def counts(admin_api: Any, token: str | None = None, **query: str) -> Any:
    options: dict[str, Any] = {"query": {"tenant_id": "t1", **query}}
    if token is not None:
        options["token"] = token
    return admin_api("GET", "/api/admin/queue/counts", **options)


class TestCounts:
    def test_each_tab_counted_with_three_counting_queries_and_no_scan(
        self, stack, tenancy, admin_api, dynamodb_calls, queries
    ):
        written(
            stack,
            [(S.RETRY_PENDING, "int_erp")] * 3
            + [(S.DEAD_LETTER, "int_erp")] * 2
            + [(S.DEAD_LETTER, "int_wms")] * 4
            + [(S.ERROR, "int_wms")]
            + [(S.SENT, "int_erp")] * 5,
        )
        written(stack, [(S.DEAD_LETTER, "int_erp")] * 6, tenant_id="t2")
        counts(admin_api)  # the token's check is read once, then cached
        dynamodb_calls.clear()
        queries.clear()

        answer = counts(admin_api)
        calls = without_auth(dict(dynamodb_calls))
        filtered = counts(admin_api, integration_id="int_wms")

        assert answer.status == 200, answer.body
        assert answer.body == {
            "tenant_id": "t1",
            "counts": {"waiting": 3, "dead_letter": 6, "error": 1},
            "capped_at": 1000,
            "at_least": [],
        }
        assert calls == {"Query": 3}
        # Counting Queries of the three status partitions: no row comes back.
        assert [
            (q["IndexName"], q["Select"], q["ExpressionAttributeValues"][":pk"]["S"]) for q in queries[:3]
        ] == [
            ("GSI1", "COUNT", "TENANT#t1#STATUS#retry_pending"),
            ("GSI1", "COUNT", "TENANT#t1#STATUS#dead_letter"),
            ("GSI1", "COUNT", "TENANT#t1#STATUS#error"),
        ]
        assert all(q["Limit"] == 1000 and "FilterExpression" not in q for q in queries[:3])
        assert [q["FilterExpression"] for q in queries[3:]] == ["#integration = :integration"] * 3
        assert filtered.status == 200
        assert filtered.body["counts"] == {"waiting": 0, "dead_letter": 4, "error": 1}

    def test_a_tab_over_the_cap_is_the_cap_and_named_at_least(self, stack, tenancy, admin_api):
        written(stack, [(S.DEAD_LETTER, "int_erp")] * 1003 + [(S.ERROR, "int_erp")] * 2)

        answer = counts(admin_api)

        assert answer.status == 200
        assert answer.body["counts"] == {"waiting": 0, "dead_letter": 1000, "error": 2}
        assert answer.body["at_least"] == ["dead_letter"]
        assert answer.body["capped_at"] == 1000


class TestAccess:
    def test_a_tenant_viewer_counts_its_own_tenant_only(self, stack, tenancy, admin_api):
        viewer = token(admin_api, "viewer", "t1")

        own = counts(admin_api, viewer)
        other = counts(admin_api, viewer, tenant_id="t2")
        unnamed = admin_api("GET", "/api/admin/queue/counts", token=viewer)
        unknown = counts(admin_api, viewer, tab="waiting")
        refused = admin_api("GET", "/api/admin/queue/counts", token=None, query={"tenant_id": "t1"})

        assert own.status == 200
        assert (other.status, other.body["error"]["code"]) == (404, "not_found")
        assert (unnamed.status, unnamed.body["error"]["code"]) == (400, "validation_error")
        assert (unknown.status, unknown.body["error"]["code"]) == (400, "validation_error")
        assert (refused.status, refused.body["error"]["code"]) == (401, "unauthorized")


class TestMessageView:
    def test_a_message_sent_after_a_failed_attempt_shows_no_current_error_class(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination, retry_policy=RetryPolicy(retry_auto_enabled=True, retry_max=5))
        destination.script(Answer(503), Answer(200))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-CUR"})
        worker()  # attempt 1: 503 -> retry_pending
        waiting = admin_api("GET", "/api/admin/queue", query={"tenant_id": "t1", "tab": "waiting"})
        assert fire_all(stack) == 1
        worker()  # attempt 2: 200 -> sent

        [row] = admin_api("GET", "/api/admin/queue", query={"tenant_id": "t1", "tab": "all"}).body["items"]
        view = admin_api("GET", f"/api/admin/messages/{message_id}").body
        stored = status(stack, message_id)

        # While it waited, the class was its current state.
        assert [(r["message_id"], r["last_retry_error_class"]) for r in waiting.body["items"]] == [
            (message_id, "http_5xx")
        ]
        assert (row["pipeline_status"], row["last_retry_error_class"]) == ("sent", None)
        assert (view["pipeline_status"], view["last_retry_error_class"]) == ("sent", None)
        # The attempt that had it keeps it; each attempt says its number, its answer's class and
        # what it sent that identifies it.
        attempts = [e for e in view["timeline"] if e["kind"] == "attempt"]
        assert [
            (a["number"], a["answer_class"], a.get("error_class"), a["dest_status"]) for a in attempts
        ] == [
            (1, "http_5xx", "http_5xx", "503"),
            (2, "accepted", None, "200"),
        ]
        assert all(isinstance(a["duration_ms"], int) for a in attempts)
        host = destination.url.split("//", 1)[1].split("/", 1)[0]
        assert attempts[0]["request"] == {
            "protocol": "http",
            "method": "POST",
            "host": host,
            "connection_id": None,
            "idempotency_key": message_id,
            # What the destination really got.
            "correlation_id": destination.requests[0].headers["x-correlation-id"],
        }
        assert [r.headers["idempotency-key"] for r in destination.requests] == [message_id] * 2
        # The item keeps it (the partner API's `last_retry_error_class` is the last failure's).
        assert stored["last_retry_error_class"] == "http_5xx"
