"""Search (issue 28) through the real handlers on moto: messages received through the real partner
API handler (and run by the real worker where a business key needs its first step), then found
through the real admin handler by message id, external id, Idempotency-Key, correlation id and
business-key value; scoped to the tenant, newest received first, in pages, each lookup a fixed
number of DynamoDB requests (never a Scan), and GSI3 written once per message."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from hub import wiring
from hub.adapters.aws import client
from tests.destinations import Answer
from tests.events import http_event
from tests.integration.conftest import HttpAnswer
from tests.integration.test_queue_api import ROW_FIELDS, dynamodb_calls, seeded, without_auth
from tests.pipeline import configure, status

__all__ = ["dynamodb_calls"]  # the fixture, shared with the queue's tests


def receive(
    ingest_api: Any,
    key: str,
    payload: dict[str, Any],
    *,
    integration_id: str = "int_erp",
    external_id: str | None = None,
    idempotency_key: str | None = None,
    correlation_id: str | None = None,
) -> str:
    """Posts one purchase order through the real ingest handler; its message id. No
    `correlation_id`: no x-correlation-id header (the message then carries the gateway's
    request id)."""
    body: dict[str, Any] = {
        "integration_id": integration_id,
        "message_type": "purchase_order",
        "payload": payload,
    }
    if external_id is not None:
        body["external_id"] = external_id
    headers = {
        "authorization": f"Bearer {key}",
        "idempotency-key": idempotency_key,
        "x-correlation-id": correlation_id,
    }
    answer = ingest_api(http_event("receive_message.json", body=body, headers=headers))
    assert answer.status == 202, answer.body
    return str(answer.body["message_id"])


def find(admin_api: Any, q: str, *, tenant_id: str = "t1", **query: str) -> HttpAnswer:
    return admin_api("GET", "/api/admin/messages", query={"tenant_id": tenant_id, "q": q, **query})


def ids(answer: HttpAnswer) -> list[str]:
    assert answer.status == 200, answer.body
    return [row["message_id"] for row in answer.body["items"]]


def matched(answer: HttpAnswer) -> list[tuple[str, str]]:
    assert answer.status == 200, answer.body
    return [(row["message_id"], row["matched_by"]) for row in answer.body["items"]]


def every_page(admin_api: Any, q: str, **query: str) -> tuple[list[str], int]:
    """The ids of every page (following next_cursor with the same query) and the page count."""
    found: list[str] = []
    cursor, pages = None, 0
    while True:
        answer = find(admin_api, q, **query, **({"cursor": cursor} if cursor else {}))
        found += ids(answer)
        pages += 1
        cursor = answer.body["next_cursor"]
        if cursor is None:
            return found, pages
        assert pages < 50, "the cursor does not move on"


def index_entries(stack: Any) -> Counter[str]:
    """GSI3 entries per message: the items carrying GSI3PK, by the message their PK names."""
    return Counter(item["PK"]["S"].removeprefix("MSG#") for item in stack.scan() if "GSI3PK" in item)


class TestEachKind:
    def test_each_kind_of_value_finds_the_message_with_its_current_row(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination)
        message_id = receive(
            ingest_api,
            tenancy.key,
            {"po_number": "PO-BK-4711"},
            external_id="EXT-4711",
            idempotency_key="idem-4711",
            correlation_id="corr-4711",
        )
        worker()  # its first step takes the business key: the key's item names it
        values = {
            "message_id": message_id,
            "external_id": "EXT-4711",
            "idempotency_key": "idem-4711",
            "correlation_id": "corr-4711",
            "business_key": "PO-BK-4711",
        }

        for kind, value in values.items():
            by_kind = find(admin_api, value, by=kind)
            anything = find(admin_api, value)

            assert matched(by_kind) == [(message_id, kind)], kind
            assert matched(anything) == [(message_id, kind)], kind
            assert (anything.body["tenant_id"], anything.body["q"], anything.body["by"]) == (
                "t1",
                value,
                "any",
            )
            assert by_kind.body["by"] == kind
            assert anything.body["next_cursor"] is None
            [row] = anything.body["items"]
            assert set(row) == ROW_FIELDS | {"matched_by"}  # the queue's row, plus how it was found
            assert row["pipeline_status"] == "sent"  # current, not as at receipt
            # Another kind's lookup does not take this value for its own.
            other = "correlation_id" if kind != "correlation_id" else "external_id"
            assert ids(find(admin_api, value, by=other)) == [], (kind, other)

    def test_no_match_is_an_empty_page(self, stack, tenancy, admin_api):
        for by in ("any", "message_id", "external_id", "idempotency_key", "correlation_id", "business_key"):
            answer = find(admin_api, "msg_00000000000000000000000000", by=by)
            assert (answer.status, answer.body["items"], answer.body["next_cursor"]) == (200, [], None)

    def test_an_idempotency_key_is_found_while_its_claim_lives(self, stack, tenancy, ingest_api, admin_api):
        message_id = receive(ingest_api, tenancy.key, {"po_number": "PO-IDEM"}, idempotency_key="idem-old")
        assert ids(find(admin_api, "idem-old", by="idempotency_key")) == [message_id]
        claims = [i for i in stack.scan() if i["PK"]["S"].startswith("IDEM#t1#")]
        assert len(claims) == 1
        # Its retention passed; DynamoDB's TTL deletes late, and an expired claim counts for nothing.
        boto3.client("dynamodb").update_item(
            TableName=stack.table,
            Key={"PK": claims[0]["PK"], "SK": claims[0]["SK"]},
            UpdateExpression="SET expires_at = :past",
            ExpressionAttributeValues={":past": {"N": str(int(datetime.now(UTC).timestamp()) - 1)}},
        )

        assert ids(find(admin_api, "idem-old", by="idempotency_key")) == []
        assert ids(find(admin_api, "idem-old")) == []

    def test_the_integration_filter_keeps_one_integrations_messages(
        self, stack, tenancy, ingest_api, admin_api
    ):
        first = receive(ingest_api, tenancy.key, {"po_number": "PO-I1"}, external_id="PO-BOTH-INTEGRATIONS")
        second = receive(
            ingest_api,
            tenancy.key,
            {"po_number": "PO-I2"},
            integration_id=tenancy.second_integration_id,
            external_id="PO-BOTH-INTEGRATIONS",
        )

        assert ids(find(admin_api, "PO-BOTH-INTEGRATIONS")) == [second, first]
        only = find(admin_api, "PO-BOTH-INTEGRATIONS", integration_id=tenancy.second_integration_id)
        assert ids(only) == [second]
        assert ids(find(admin_api, first, integration_id=tenancy.second_integration_id)) == []


class TestTenants:
    def test_another_tenants_message_never_shows_even_with_the_same_values(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination)
        shared = {
            "external_id": "PO-SHARED",
            "idempotency_key": "idem-shared",
            "correlation_id": "corr-shared",
        }
        ours = receive(ingest_api, tenancy.key, {"po_number": "PO-BK-SHARED"}, **shared)
        theirs = receive(
            ingest_api,
            tenancy.other_key,
            {"po_number": "PO-BK-SHARED"},
            integration_id=tenancy.other_integration_id,
            **shared,
        )
        worker()  # both take their tenant's business key PO-BK-SHARED

        for value in ("PO-SHARED", "idem-shared", "corr-shared", "PO-BK-SHARED"):
            assert ids(find(admin_api, value)) == [ours], value
            assert ids(find(admin_api, value, tenant_id="t2")) == [theirs], value
        for by in ("any", "message_id"):
            assert ids(find(admin_api, theirs, by=by)) == []  # its id, asked as t1's
            assert ids(find(admin_api, theirs, tenant_id="t2", by=by)) == [theirs]


class TestOrder:
    def test_messages_sharing_an_external_id_come_newest_received_first_in_pages(
        self, stack, tenancy, ingest_api, admin_api
    ):
        received = [
            receive(ingest_api, tenancy.key, {"po_number": f"PO-V{n}"}, external_id="PO-SAME")
            for n in range(5)
        ]
        newest_first = list(reversed(received))

        assert ids(find(admin_api, "PO-SAME", by="external_id")) == newest_first
        assert ids(find(admin_api, "PO-SAME")) == newest_first
        for by in ("external_id", "any"):
            assert every_page(admin_api, "PO-SAME", by=by, limit="2") == (newest_first, 3), by
        first_page = find(admin_api, "PO-SAME", limit="2")
        assert first_page.body["next_cursor"] is not None

    def test_a_message_with_an_external_id_and_another_correlation_id_is_found_by_each(
        self, stack, tenancy, ingest_api, admin_api
    ):
        both = receive(
            ingest_api, tenancy.key, {"po_number": "PO-B"}, external_id="PO-BOTH", correlation_id="corr-b"
        )
        same = receive(
            ingest_api, tenancy.key, {"po_number": "PO-S"}, external_id="PO-EQUAL", correlation_id="PO-EQUAL"
        )
        bare = receive(ingest_api, tenancy.key, {"po_number": "PO-N"}, external_id="PO-NO-HEADER")
        only_correlation = receive(ingest_api, tenancy.key, {"po_number": "PO-C"}, correlation_id="corr-only")

        assert matched(find(admin_api, "PO-BOTH", by="external_id")) == [(both, "external_id")]
        assert matched(find(admin_api, "corr-b", by="correlation_id")) == [(both, "correlation_id")]
        assert matched(find(admin_api, "corr-b")) == [(both, "correlation_id")]
        assert matched(find(admin_api, "PO-EQUAL")) == [(same, "external_id")]
        assert matched(find(admin_api, "PO-EQUAL", by="correlation_id")) == [(same, "correlation_id")]
        assert matched(find(admin_api, "corr-only", by="correlation_id")) == [
            (only_correlation, "correlation_id")
        ]
        # One index entry per message; a second (its correlation pointer) only for a partner-given
        # correlation id beside a different external id. The gateway's request id of a message
        # with an external id is not indexed: no second write for a value the partner never gave.
        assert index_entries(stack) == {both: 2, same: 1, bare: 1, only_correlation: 1}
        pointer = [i for i in stack.scan() if i["PK"]["S"] == f"MSG#{both}" and i["SK"]["S"] == "CORRELATION"]
        assert len(pointer) == 1
        assert ids(find(admin_api, status(stack, bare)["correlation_id"], by="correlation_id")) == []


class TestCost:
    def test_each_lookup_is_a_fixed_few_requests_never_a_scan_whatever_the_tenant_holds(
        self, stack, tenancy, ingest_api, admin_api, dynamodb_calls
    ):
        """300 messages sharing one correlation id in the tenant: each kind of lookup still makes
        the same requests, and a page of them is one Query and one BatchGetItem."""
        seeded(stack, 300, start=datetime(2026, 11, 30, 8, tzinfo=UTC))  # correlation id "c"
        target = receive(
            ingest_api,
            tenancy.key,
            {"po_number": "PO-COST"},
            external_id="PO-COST",
            idempotency_key="idem-cost",
            correlation_id="corr-cost",
        )
        wiring.reset()
        find(admin_api, "warm-up", by="message_id")  # the token's check is read once, then cached
        # (by, q) -> requests: the tenant's integrations are one Query of GSI1 and one
        # BatchGetItem; the claims and business keys one BatchGetItem; GSI3 one Query; the rows
        # one BatchGetItem (none when nothing was named).
        expected = {
            ("message_id", target): {"BatchGetItem": 1},
            ("external_id", "PO-COST"): {"Query": 1, "BatchGetItem": 1},
            ("correlation_id", "corr-cost"): {"Query": 1, "BatchGetItem": 1},
            ("idempotency_key", "idem-cost"): {"Query": 1, "BatchGetItem": 3},
            ("business_key", "PO-COST"): {"Query": 1, "BatchGetItem": 2},  # not taken yet: no row
            ("any", "PO-COST"): {"Query": 2, "BatchGetItem": 3},
        }
        for (by, q), requests in expected.items():
            dynamodb_calls.clear()
            answer = find(admin_api, q, by=by)
            assert "Scan" not in dynamodb_calls
            assert without_auth(dict(dynamodb_calls)) == requests, (by, dict(dynamodb_calls))
            assert ids(answer) == ([] if by == "business_key" else [target]), by

        dynamodb_calls.clear()
        first = find(admin_api, "c", by="correlation_id", limit="50")
        calls_first = without_auth(dict(dynamodb_calls))
        dynamodb_calls.clear()
        second = find(admin_api, "c", by="correlation_id", limit="50", cursor=first.body["next_cursor"])
        calls_second = without_auth(dict(dynamodb_calls))

        assert calls_first == calls_second == {"Query": 1, "BatchGetItem": 1}
        assert (len(ids(first)), len(ids(second))) == (50, 50)
        assert not set(ids(first)) & set(ids(second))
        assert first.body["items"][-1]["received_at"] > second.body["items"][0]["received_at"]


class TestIndexWrites:
    def test_later_status_changes_never_write_the_search_index(
        self, stack, tenancy, ingest_api, worker, destination, admin_api, written
    ):
        configure(stack, tenancy, destination)
        destination.script(Answer(422, '{"error": "bad"}'), Answer(200))
        message_id = receive(
            ingest_api, tenancy.key, {"po_number": "PO-W"}, external_id="PO-W", correlation_id="corr-w"
        )
        at_receipt = status(stack, message_id)
        written.clear()
        worker()  # error
        assert status(stack, message_id)["pipeline_status"] == "error"
        reprocessed = admin_api("POST", "/api/edi-hub/reprocess-message", body={"message_id": message_id})
        assert reprocessed.status == 202, reprocessed.body
        worker()  # sent

        after = status(stack, message_id)
        assert after["pipeline_status"] == "sent"
        assert (after["GSI3PK"], after["received_at"]) == (at_receipt["GSI3PK"], at_receipt["received_at"])
        touched = [names for names in written if names]
        assert touched, "the moves were seen"
        assert not [names for names in touched if names & {"GSI3PK", "received_at"}]
        # The index keeps keys only, on attributes no update changes: no move rewrites it.
        from devstack.cfn import load_template  # noqa: PLC0415
        from hub.adapters.dynamo.messages import CHANGEABLE_FIELDS  # noqa: PLC0415
        from tests.aws import TEMPLATE  # noqa: PLC0415

        table = load_template(TEMPLATE)["Resources"]["HubTable"]["Properties"]
        [gsi3] = [i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == "GSI3"]
        assert gsi3["Projection"] == {"ProjectionType": "KEYS_ONLY"}
        assert [k["AttributeName"] for k in gsi3["KeySchema"]] == ["GSI3PK", "received_at"]
        assert not {"GSI3PK", "received_at"} & CHANGEABLE_FIELDS


@pytest.fixture
def written() -> Iterator[list[set[str]]]:
    """The attribute names each update of a message item (UpdateItem, or an Update in a
    transaction) names, from here on: the real adapters' requests, through botocore's hook."""
    names: list[set[str]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        updates = [params] if model.name == "UpdateItem" else []
        if model.name == "TransactWriteItems":
            updates = [entry["Update"] for entry in params.get("TransactItems", []) if "Update" in entry]
        for update in updates:
            if json.dumps(update.get("Key", {}), default=str).find("MSG#") >= 0:
                names.append(set((update.get("ExpressionAttributeNames") or {}).values()))

    dynamodb = client("dynamodb")
    dynamodb.meta.events.register("provide-client-params.dynamodb", record)
    yield names
    dynamodb.meta.events.unregister("provide-client-params.dynamodb", record)


class TestRefusals:
    @pytest.mark.parametrize(
        ("query", "field"),
        [
            ({"q": ""}, "q"),
            ({"q": "x" * 256}, "q"),
            ({"q": "PO-1", "by": "payload"}, "by"),
            ({"q": "PO-1", "limit": "0"}, "limit"),
            ({"q": "PO-1", "limit": "101"}, "limit"),
            ({"q": "PO-1", "integration_id": "bad#id"}, "integration_id"),
            ({"q": "PO-1", "cursor": "not-a-cursor"}, "cursor"),
            ({"q": "PO-1", "color": "red"}, "color"),
        ],
    )
    def test_bad_input_is_a_validation_error_naming_the_field(self, stack, tenancy, admin_api, query, field):
        answer = admin_api("GET", "/api/admin/messages", query={"tenant_id": "t1", **query})

        assert (answer.status, answer.body["error"]["code"]) == (400, "validation_error")
        assert field in json.dumps(answer.body["error"]["details"])

    def test_a_value_without_a_utf8_form_is_refused_not_a_crash(self, stack, tenancy):
        from tests.aws import LambdaContext, load_handler  # noqa: PLC0415
        from tests.events import admin_event  # noqa: PLC0415
        from tests.integration.conftest import ADMIN_TOKEN  # noqa: PLC0415

        event = admin_event(
            "GET", "/api/admin/messages", token=ADMIN_TOKEN, query={"tenant_id": "t1", "q": "x"}
        )
        event["queryStringParameters"]["q"] = "PO\ud8001"  # a lone surrogate: no URL could carry it

        answer = load_handler("AdminApiFunction")(event, LambdaContext())

        assert answer["statusCode"] == 400
        assert json.loads(answer["body"])["error"]["code"] == "validation_error"

    def test_without_q_or_tenant_it_is_refused(self, stack, tenancy, admin_api):
        no_q = admin_api("GET", "/api/admin/messages", query={"tenant_id": "t1"})
        no_tenant = admin_api("GET", "/api/admin/messages", query={"q": "PO-1"})

        assert (no_q.status, no_q.body["error"]["code"]) == (400, "validation_error")
        assert no_tenant.status in (400, 403), no_tenant.body  # the guard asks for the tenant first

    def test_a_cursor_of_another_search_is_422(self, stack, tenancy, ingest_api, admin_api):
        for n in range(3):
            receive(ingest_api, tenancy.key, {"po_number": f"PO-K{n}"}, external_id="PO-CURSOR")
        cursor = find(admin_api, "PO-CURSOR", limit="1").body["next_cursor"]
        assert cursor is not None

        elsewhere = [
            find(admin_api, "PO-OTHER", limit="1", cursor=cursor),
            find(admin_api, "PO-CURSOR", by="external_id", limit="1", cursor=cursor),
            find(admin_api, "PO-CURSOR", tenant_id="t2", limit="1", cursor=cursor),
        ]

        for answer in elsewhere:
            assert (answer.status, answer.body["error"]["code"]) == (422, "cursor_mismatch"), answer.body
