"""The queue API behind the admin page's Queue tab and message detail (issue 13), through the
real AdminApiFunction handler on moto: the `all` tab (GSI2), the integration and time filters,
cursors bound to their filters, the request count of a page (no scans, whatever the tenant's
size), the message timeline, and the rows reprocess / cancel answer with."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from hub import wiring
from hub.adapters.aws import client
from hub.adapters.dynamo.messages import record_item
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.ids import new_id
from hub.domain.message import MessageRecord, PayloadFormat
from hub.domain.retry import RetryPolicy
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import Integration, IntegrationMode, MessageTypeConfig
from hub.outbox.events import EventType, events_of_record
from tests.destinations import Answer
from tests.integration import test_status_callbacks as callbacks
from tests.outbox import StreamReader
from tests.pipeline import configure, fire_all, send, status

AUTO = RetryPolicy(retry_auto_enabled=True, retry_max=5)
#: The status-callback tests' fixtures: connections with callback tokens, and their admin caller.
world, admin, report = callbacks.world, callbacks.admin, callbacks.report
ROW_FIELDS = {
    "message_id",
    "integration_id",
    "message_type",
    "external_id",
    "pipeline_status",
    "received_at",
    "updated_at",
    "retry_count",
    "next_retry_at",
    "last_retry_error_class",
    "dest_status",
    "uncertain",
}


def queue(admin_api, **query: str):
    return admin_api("GET", "/api/admin/queue", query={"tenant_id": "t1", **query})


def every_page(admin_api, **query: str) -> tuple[list[dict[str, Any]], int]:
    """The rows of every page (following next_cursor with the same query) and the page count."""
    rows: list[dict[str, Any]] = []
    cursor, pages = None, 0
    while True:
        answer = queue(admin_api, **query, **({"cursor": cursor} if cursor else {}))
        assert answer.status == 200, answer.body
        pages += 1
        rows += answer.body["items"]
        cursor = answer.body["next_cursor"]
        if cursor is None:
            return rows, pages


def at(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def seeded(stack, n: int, *, start: datetime, tenant_id: str = "t1") -> list[MessageRecord]:
    """`n` message items written as ingest writes them (record_item: GSI2 keys, GSI1 keys for a
    listed status), one second apart, alternating integrations and statuses. Written straight
    to the table: the ingest path is tested elsewhere, here only how many the listing reads."""
    statuses = (PipelineStatus.SENT, PipelineStatus.ERROR, PipelineStatus.RETRY_PENDING)
    records = []
    table = boto3.resource("dynamodb").Table(stack.table)
    with table.batch_writer() as batch:
        for i in range(n):
            moment = start + timedelta(seconds=i)
            record = MessageRecord(
                message_id=new_id("msg"),
                tenant_id=tenant_id,
                integration_id="int_erp" if i % 2 == 0 else "int_erp_2",
                message_type="purchase_order",
                pipeline_status=statuses[i % 3],
                received_at=moment,
                updated_at=moment,
                correlation_id="c",
                execution_id=new_id("exe"),
                fingerprint="f",
                payload_sha256="s",
                payload_bytes=2,
                payload_format=PayloadFormat.JSON,
                version=1,
            )
            item = {name: value for name, value in record_item(record).items() if value is not None}
            batch.put_item(Item={**item, "version": 1})
            records.append(record)
    return records


@pytest.fixture
def dynamodb_calls() -> Iterator[Counter[str]]:
    """Every DynamoDB operation the hub's own client makes from here on (botocore's event hook on
    the shared client: the real adapters, nothing stubbed)."""
    calls: Counter[str] = Counter()

    def count(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    dynamodb = client("dynamodb")
    dynamodb.meta.events.register("before-call.dynamodb", count)
    yield calls
    dynamodb.meta.events.unregister("before-call.dynamodb", count)


class TestAllTab:
    def test_every_message_newest_received_first_with_its_current_row(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination)
        destination.script(Answer(200), Answer(422, '{"error": "bad"}'), Answer(200))
        sent = send(ingest_api, tenancy, {"po_number": "PO-A1"})
        worker()
        failed = send(ingest_api, tenancy, {"po_number": "PO-A2"})
        worker()
        waiting = send(ingest_api, tenancy, {"po_number": "PO-A3"})  # not yet run: received
        [other_tenant] = seeded(stack, 1, start=datetime.now(UTC), tenant_id="t2")

        page = queue(admin_api, tab="all")

        assert page.status == 200
        assert (page.body["tenant_id"], page.body["tab"]) == ("t1", "all")
        assert [row["message_id"] for row in page.body["items"]] == [waiting, failed, sent]
        assert other_tenant.message_id not in {row["message_id"] for row in page.body["items"]}
        rows = {row["message_id"]: row for row in page.body["items"]}
        # The rows' fields are the message's current ones (not what the index saw at receipt).
        assert [rows[m]["pipeline_status"] for m in (waiting, failed, sent)] == ["received", "error", "sent"]
        assert (rows[failed]["dest_status"], rows[failed]["last_retry_error_class"]) == ("422", "http_4xx")
        assert set(rows[sent]) == ROW_FIELDS  # every tab shows the same row shape
        assert "dest_status_text" not in rows[failed]
        assert page.body["next_cursor"] is None

    def test_the_index_is_written_once_per_message_and_never_by_a_status_change(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        configure(stack, tenancy, destination)
        destination.script(Answer(503), Answer(200))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-IDX"})
        item = boto3.client("dynamodb").get_item(
            TableName=stack.table, Key={"PK": {"S": f"MSG#{message_id}"}, "SK": {"S": "STATUS"}}
        )["Item"]
        keys_at_receipt = (item["GSI2PK"]["S"], item["received_at"]["S"])
        worker()  # error: a status change

        after = status(stack, message_id)
        assert after["pipeline_status"] == "error"
        assert keys_at_receipt == ("t1", after["received_at"])
        assert (after["GSI2PK"], after["received_at"]) == keys_at_receipt
        # The template keys GSI2 on attributes no update changes and projects only such ones
        # (so no update writes GSI2), and the item carries one attribute for it (GSI2PK).
        from devstack.cfn import load_template  # noqa: PLC0415
        from tests.aws import TEMPLATE  # noqa: PLC0415

        table = load_template(TEMPLATE)["Resources"]["HubTable"]["Properties"]
        [gsi2] = [i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == "GSI2"]
        written = {k["AttributeName"] for k in gsi2["KeySchema"]} | set(
            gsi2["Projection"]["NonKeyAttributes"]
        )
        assert written == {
            "GSI2PK",
            "received_at",
            "message_id",
            "integration_id",
            "message_type",
            "external_id",
        }
        from hub.adapters.dynamo.messages import CHANGEABLE_FIELDS  # noqa: PLC0415

        assert not written & (CHANGEABLE_FIELDS | {"pipeline_status", "updated_at", "version", "log"})
        assert not [name for name in item if name.startswith("GSI2") and name != "GSI2PK"]


class TestFilters:
    def test_integration_filter_on_all_and_on_a_status_tab_across_pages(self, stack, tenancy, admin_api):
        records = seeded(stack, 12, start=datetime(2026, 11, 30, 8, tzinfo=UTC))
        newest_first = list(reversed(records))

        rows, pages = every_page(admin_api, tab="all", integration_id="int_erp_2", limit="2")

        expected = [r.message_id for r in newest_first if r.integration_id == "int_erp_2"]
        assert [row["message_id"] for row in rows] == expected
        assert {row["integration_id"] for row in rows} == {"int_erp_2"}
        assert pages >= 6  # a filtered page reads `limit` index items, so pages may be short
        errors, _ = every_page(admin_api, tab="error", integration_id="int_erp", limit="1")
        assert [row["message_id"] for row in errors] == [
            r.message_id
            for r in newest_first
            if r.integration_id == "int_erp" and r.pipeline_status is PipelineStatus.ERROR
        ]

    def test_since_until_bound_the_receipt_on_all_and_the_last_change_on_a_tab(
        self, stack, tenancy, admin_api
    ):
        start = datetime(2026, 11, 30, 8, tzinfo=UTC)
        records = seeded(stack, 9, start=start)
        since, until = start + timedelta(seconds=3), start + timedelta(seconds=7)

        rows, _ = every_page(admin_api, tab="all", since=at(since), until=at(until), limit="2")

        # [since, until): messages 3, 4, 5, 6, newest first.
        assert [row["message_id"] for row in rows] == [r.message_id for r in reversed(records[3:7])]
        # A status tab bounds the last change (`updated_at`): the error messages are 1, 4, 7.
        errors, _ = every_page(admin_api, tab="error", since=at(since))
        assert [row["message_id"] for row in errors] == [records[7].message_id, records[4].message_id]
        until_only, _ = every_page(admin_api, tab="error", until=at(until))
        assert [row["message_id"] for row in until_only] == [records[4].message_id, records[1].message_id]
        # Any offset: the same instant in -03:00.
        local = since.astimezone(tz=UTC).replace(tzinfo=None) - timedelta(hours=3)
        same, _ = every_page(admin_api, tab="error", since=local.isoformat() + "-03:00")
        assert same == errors

    @pytest.mark.parametrize(
        ("query", "field"),
        [
            ({"tab": "all", "since": "2026-11-30T08:00:00"}, "since"),  # no offset
            ({"tab": "all", "until": "yesterday"}, "until"),
            # Found by fuzzing (issue 15): pydantic alone reads a number as Unix seconds, and a
            # time before year 1 in UTC failed the cursor's fingerprint (500).
            ({"tab": "dead_letter", "since": "-1.502910352354167e-215"}, "since"),
            ({"tab": "all", "until": "0001-01-01T00:00:00+01:00"}, "until"),
            ({"tab": "all", "integration_id": "has#hash"}, "integration_id"),
        ],
    )
    def test_bad_filters_are_400_naming_the_field(self, stack, admin_api, query, field):
        answer = queue(admin_api, **query)
        assert answer.status == 400
        assert field in {d["field"] for d in answer.body["error"]["details"]}

    def test_since_not_before_until_is_400(self, stack, admin_api):
        answer = queue(admin_api, tab="all", since="2026-11-30T09:00:00Z", until="2026-11-30T09:00:00Z")
        assert (answer.status, answer.body["error"]["code"]) == (400, "validation_error")


class TestCursors:
    def test_a_cursor_of_other_filters_is_422_and_of_another_tab_400(self, stack, tenancy, admin_api):
        seeded(stack, 6, start=datetime(2026, 11, 30, 8, tzinfo=UTC))
        first = queue(admin_api, tab="all", integration_id="int_erp", limit="1")
        cursor = first.body["next_cursor"]
        assert cursor

        same = queue(admin_api, tab="all", integration_id="int_erp", limit="3", cursor=cursor)
        other_integration = queue(admin_api, tab="all", integration_id="int_erp_2", cursor=cursor)
        unfiltered = queue(admin_api, tab="all", cursor=cursor)
        with_since = queue(
            admin_api, tab="all", integration_id="int_erp", since="2026-11-30T08:00:00Z", cursor=cursor
        )
        other_tab = queue(admin_api, tab="error", integration_id="int_erp", cursor=cursor)
        other_tenant = admin_api(
            "GET",
            "/api/admin/queue",
            query={"tenant_id": "t2", "tab": "all", "integration_id": "int_erp", "cursor": cursor},
        )

        assert same.status == 200  # the limit is not a filter: a page size may change
        for answer in (other_integration, unfiltered, with_since):
            assert (answer.status, answer.body["error"]["code"]) == (422, "cursor_mismatch")
            assert answer.body["error"]["details"] == [{"field": "cursor", "problem": "other_filters"}]
        for answer in (other_tab, other_tenant):
            assert (answer.status, answer.body["error"]["code"]) == (400, "validation_error")

    def test_a_status_tab_cursor_is_bound_to_its_filters_too(self, stack, tenancy, admin_api):
        seeded(stack, 9, start=datetime(2026, 11, 30, 8, tzinfo=UTC))
        first = queue(admin_api, tab="error", limit="1")
        assert first.body["next_cursor"]

        moved = queue(admin_api, tab="error", until="2026-11-30T09:00:00Z", cursor=first.body["next_cursor"])

        assert (moved.status, moved.body["error"]["code"]) == (422, "cursor_mismatch")


class TestScale:
    def test_a_page_is_one_query_and_one_batch_get_whatever_the_tenant_holds(
        self, stack, tenancy, admin_api, dynamodb_calls
    ):
        """10,000 messages in a tenant: a page's cost does not depend on it. Each page of `all` is
        one Query (Limit = the page size, so it reads at most that many index items) and one
        BatchGetItem of those rows; a status tab's page one Query; never a Scan. Shown here on a
        few hundred messages, counting the requests the real adapters make."""
        seeded(stack, 300, start=datetime(2026, 11, 30, 8, tzinfo=UTC))
        wiring.reset()
        queue(admin_api, tab="all", limit="1")  # the token's check is read once, then cached
        dynamodb_calls.clear()

        first = queue(admin_api, tab="all", limit="50")
        calls_first = dict(dynamodb_calls)
        dynamodb_calls.clear()
        second = queue(admin_api, tab="all", limit="50", cursor=first.body["next_cursor"])
        calls_second = dict(dynamodb_calls)
        dynamodb_calls.clear()
        filtered = queue(admin_api, tab="all", limit="50", integration_id="int_erp")
        calls_filtered = dict(dynamodb_calls)
        dynamodb_calls.clear()
        tab = queue(admin_api, tab="error", limit="50")
        calls_tab = dict(dynamodb_calls)

        assert (len(first.body["items"]), len(second.body["items"])) == (50, 50)
        assert first.body["items"][0]["received_at"] > second.body["items"][0]["received_at"]
        queries_and_reads = {"Query": 1, "BatchGetItem": 1}
        assert without_auth(calls_first) == queries_and_reads
        assert without_auth(calls_second) == queries_and_reads
        assert without_auth(calls_filtered) == queries_and_reads
        assert len(filtered.body["items"]) == 25  # 50 index items read, half of them int_erp
        assert without_auth(calls_tab) == {"Query": 1}
        assert len(tab.body["items"]) == 50


def without_auth(calls: dict[str, int]) -> dict[str, int]:
    """The page's requests: the admin token's own lookup (a GetItem per call) left out."""
    return {name: n for name, n in calls.items() if name != "GetItem"}


class TestTimeline:
    def test_a_message_retried_then_sent_with_a_callback_in_order_with_the_outbox_events(
        self, stack, tenancy, world, ingest_api, worker, destination, admin
    ):
        config = DynamoConfigRepository(stack.table)
        config.put_integration(
            Integration(
                integration_id=tenancy.integration_id,
                tenant_id="t1",
                name="erp",
                mode=IntegrationMode.ORCHESTRATION,
                connection_id="con_a",
                retry_policy=AUTO,
                message_types={"purchase_order": MessageTypeConfig(duplicate_key_fields=("po_number",))},
            )
        )
        reader = StreamReader(stack.table)
        destination.script(Answer(503), Answer(200))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-TL"})
        worker()  # attempt 1: 503 -> retry_pending
        assert fire_all(stack) == 1
        worker()  # attempt 2: 200 -> sent
        assert report(ingest_api, message_id, world["con_a"], "delivered", detail="ok").status == 202

        view = admin("GET", f"/api/admin/messages/{message_id}")

        assert view.status == 200
        timeline = view.body["timeline"]
        assert [e["at"] for e in timeline] == sorted(e["at"] for e in timeline)
        # The waiting item (with its TTL, issue 29) passes 1 KB even with the attempt's entry
        # alone, so the first attempt's update keeps its process entry: shedding it would save no
        # write unit (hub.adapters.dynamo.messages.fitted_log).
        assert [(e["kind"], e.get("type") or e.get("step")) for e in timeline] == [
            ("event", "message.received"),
            ("step", "process"),
            ("attempt", "deliver"),
            ("event", "message.retry_scheduled"),
            ("attempt", "sent"),
            ("event", "message.sent"),
            ("callback", None),
        ]
        attempts = [e for e in timeline if e["kind"] == "attempt"]
        assert [a["title"] for a in attempts] == [
            "Delivery attempt 1: failure (http_5xx, 503)",
            "Delivery attempt 2: success (200)",
        ]
        assert timeline[-1]["title"] == "Status callback: delivered"
        assert timeline[-1]["detail"] == "ok"
        # The timeline's events are the outbox's: the same ids and types as the real stream's.
        published = [
            (event.id, event.type.value)
            for record in reader.new_records()
            for event in events_of_record(record)
            if event.message_id == message_id and event.type is not EventType.MESSAGE_DELIVERY_STATUS_CHANGED
        ]
        shown = [(e["event_id"], e["type"]) for e in timeline if e["kind"] == "event"]
        assert shown == published
        assert all(set(e) >= {"at", "kind", "title"} for e in timeline)
        # Compatibility: log and callbacks stay as they were.
        assert [entry["step"] for entry in view.body["log"] if "step" in entry] == [
            "process",
            "deliver",
            "sent",
        ]
        assert [c["status"] for c in view.body["callbacks"]] == ["delivered"]
        assert (view.body["timeline_complete"], view.body["uncertain_meaning"]) == (True, None)

    def test_an_operator_reprocess_shows_as_audit_then_a_new_received_event(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination)
        destination.script(Answer(503), Answer(200))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-TL2"})
        worker()
        assert (
            admin_api("POST", "/api/edi-hub/reprocess-message", body={"message_id": message_id}).status == 202
        )
        worker()

        timeline = admin_api("GET", f"/api/admin/messages/{message_id}").body["timeline"]

        kinds = [(e["kind"], e.get("type") or e.get("event") or e.get("step")) for e in timeline]
        assert kinds == [
            ("event", "message.received"),
            # Kept by the failed attempt's update (as above).
            ("step", "process"),
            ("attempt", "deliver"),
            ("event", "message.error"),
            # The operator's move carries the status move it made: a new execution, received.
            ("audit", "message.reprocessed"),
            ("event", "message.received"),
            ("step", "process"),
            ("attempt", "sent"),
            ("event", "message.sent"),
        ]
        assert [e["version"] for e in timeline if e["kind"] == "event"] == [1, 3, 4, 6]
        audit = next(e for e in timeline if e["kind"] == "audit")
        assert (audit["title"], audit["actor"]) == ("Reprocessed by an operator", "bootstrap-admin")
        versions = [e["version"] for e in timeline if e["kind"] == "event"]
        assert versions == sorted(versions)
        assert len(set(versions)) == len(versions)

    def test_an_uncertain_message_says_what_it_means(self, stack, tenancy, ingest_api, admin_api):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-UNC"})
        table = boto3.client("dynamodb")
        table.update_item(
            TableName=stack.table,
            Key={"PK": {"S": f"MSG#{message_id}"}, "SK": {"S": "STATUS"}},
            UpdateExpression="SET uncertain = :t",
            ExpressionAttributeValues={":t": {"BOOL": True}},
        )

        view = admin_api("GET", f"/api/admin/messages/{message_id}").body

        assert view["uncertain"] is True
        assert "Idempotency-Key" in view["uncertain_meaning"]
        assert "may or may not" in view["uncertain_meaning"]


class TestActionsAnswerWithTheRow:
    def test_reprocess_and_cancel_answer_with_the_row_the_listing_shows(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination, retry_policy=AUTO)
        destination.script(Answer(503))
        waiting = send(ingest_api, tenancy, {"po_number": "PO-ROW1"})
        worker()
        configure(stack, tenancy, destination)
        failed = send(ingest_api, tenancy, {"po_number": "PO-ROW2"})
        worker()

        cancelled = admin_api("POST", f"/api/admin/messages/{waiting}/cancel-retry")
        reprocessed = admin_api("POST", "/api/edi-hub/reprocess-message", body={"message_id": failed})

        assert (cancelled.status, reprocessed.status) == (200, 202)
        # The public view's fields stay (compatibility), the row is added.
        assert cancelled.body["pipeline_status"] == "cancelled"
        assert reprocessed.body["pipeline_status"] == "received"
        rows = {row["message_id"]: row for row in queue(admin_api, tab="all").body["items"]}
        assert cancelled.body["queue_row"] == rows[waiting]
        assert reprocessed.body["queue_row"] == rows[failed]
        assert set(cancelled.body["queue_row"]) == ROW_FIELDS
        assert (
            cancelled.body["queue_row"]["pipeline_status"],
            cancelled.body["queue_row"]["retry_count"],
        ) == (
            "cancelled",
            1,
        )
        assert reprocessed.body["queue_row"]["dest_status"] is None
