"""Delivery-status callbacks (issue 12, pattern 5) through the real IngestApiFunction and
AdminApiFunction handlers on moto (stack from template.yaml): tokens minted over the admin API,
callbacks out of order and concurrent, every one recorded, the projection only forward, the
authentication matrix, bad bodies, and the table stream carrying each advance as its outbox
event."""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from hub import wiring
from hub.adapters.dynamo import keys
from hub.adapters.dynamo.table import Table, Update, epoch
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.tenancy import Integration, IntegrationMode, MessageTypeConfig
from hub.outbox.events import EventType, events_of_record
from tests.aws import LambdaContext, load_handler
from tests.events import admin_event, http_event
from tests.integration.conftest import ADMIN_TOKEN, HttpAnswer
from tests.pipeline import send, status

CONNECTIONS = {"con_a": "t1", "con_b": "t1", "con_c": "t2"}


@pytest.fixture
def admin(stack):
    """The real AdminApiFunction handler with the bootstrap token (bodies may be empty: 204)."""
    handler = load_handler("AdminApiFunction")

    def call(method: str, path: str, **options: Any) -> HttpAnswer:
        answer = handler(admin_event(method, path, token=ADMIN_TOKEN, **options), LambdaContext())
        body = json.loads(answer["body"]) if answer.get("body") else None
        return HttpAnswer(answer["statusCode"], body, answer.get("headers", {}))  # type: ignore[arg-type]

    return call


def connection_path(connection_id: str, tenant_id: str | None = None) -> str:
    tenant = tenant_id or CONNECTIONS[connection_id]
    return f"/api/admin/tenants/{tenant}/connections/{connection_id}"


@pytest.fixture
def world(stack, tenancy, admin, destination, monkeypatch) -> dict[str, str]:
    """Connections con_a, con_b (t1) and con_c (t2) to the local destination, created over the
    admin API; int_erp delivers through con_a, int_erp_2 through con_b, int_other (t2) through
    con_c; a callback token minted for each connection. Returns connection -> its token. No
    configuration cache: each test's changes are seen at once (as on the e2e stack)."""
    monkeypatch.setenv("HUB_CONFIG_CACHE_SECONDS", "0")
    wiring.reset()
    for connection_id, tenant_id in CONNECTIONS.items():
        body = {"connection_id": connection_id, "url": destination.url}
        created = admin("POST", f"/api/admin/tenants/{tenant_id}/connections", body=body)
        assert created.status == 201, created.body
    config = DynamoConfigRepository(stack.table)
    for integration_id, tenant_id, connection_id in (
        (tenancy.integration_id, "t1", "con_a"),
        (tenancy.second_integration_id, "t1", "con_b"),
        (tenancy.other_integration_id, "t2", "con_c"),
    ):
        config.put_integration(
            Integration(
                integration_id=integration_id,
                tenant_id=tenant_id,
                name=integration_id,
                mode=IntegrationMode.ORCHESTRATION,
                connection_id=connection_id,
                message_types={"purchase_order": MessageTypeConfig(duplicate_key_fields=("po_number",))},
            )
        )
    return {connection_id: mint(admin, connection_id) for connection_id in CONNECTIONS}


def mint(admin, connection_id: str, **body: Any) -> str:
    answer = admin("POST", f"{connection_path(connection_id)}/callback-token", body=body or None)
    assert answer.status == 201, answer.body
    assert answer.body["token"].startswith("hub_cb_")
    return str(answer.body["token"])


def callback_event(
    message_id: str, body: Any, token: str | None, content_type: str | None = "application/json"
) -> dict[str, Any]:
    event = http_event(
        "receive_message.json",
        body=body if isinstance(body, str | bytes) else json.dumps(body),
        headers={
            "authorization": f"Bearer {token}" if token else None,
            "x-api-key": None,
            "idempotency-key": None,
            "content-type": content_type,
        },
    )
    path = f"/api/edi-hub/status-callback/{message_id}"
    event["routeKey"] = "POST /api/edi-hub/status-callback/{message_id}"
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["pathParameters"] = {"message_id": message_id}
    return event


def post(ingest_api, message_id: str, token: str | None, body: Any = None, **options: Any):
    return ingest_api(callback_event(message_id, body if body is not None else {}, token, **options))


def report(ingest_api, message_id: str, token: str, delivery: str, **fields: Any):
    return post(ingest_api, message_id, token, {"status": delivery, **fields})


def recorded(admin, message_id: str) -> list[dict[str, Any]]:
    """Every callback the admin listing shows, following its cursor (newest first)."""
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {"limit": "7", **({"cursor": cursor} if cursor else {})}
        page = admin("GET", f"/api/admin/messages/{message_id}/callbacks", query=query)
        assert page.status == 200, page.body
        rows += page.body["items"]
        cursor = page.body["next_cursor"]
        if cursor is None:
            return rows


def partner_view(ingest_api, tenancy, message_id: str) -> dict[str, Any]:
    event = http_event(
        "get_message.json",
        headers={"x-api-key": tenancy.key},
        path_parameters={"message_id": message_id},
    )
    answer = ingest_api(event)
    assert answer.status == 200, answer.body
    return answer.body


class TestProjection:
    def test_out_of_order_callbacks_end_at_read_and_each_one_is_recorded(
        self, stack, tenancy, world, ingest_api, admin, worker, destination
    ):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-1"})
        before = int(status(stack, message_id)["version"])

        read = report(ingest_api, message_id, world["con_a"], "read", occurred_at="2026-12-01T10:00:03Z")
        late = report(ingest_api, message_id, world["con_a"], "delivered", external_ref="ext-1")
        later = report(ingest_api, message_id, world["con_a"], "accepted", detail="queued upstream")

        assert (read.status, late.status, later.status) == (202, 200, 200)
        assert read.body["advanced"]
        assert not late.body["advanced"]
        assert not later.body["advanced"]
        assert {a.body["delivery_status"] for a in (read, late, later)} == {"read"}
        assert late.body["delivery_status_at"] == read.body["delivery_status_at"]
        stored = status(stack, message_id)
        assert stored["delivery_status"] == "read"
        assert int(stored["version"]) == before + 1  # only the advance wrote the message item
        rows = recorded(admin, message_id)
        assert [r["status"] for r in rows] == ["accepted", "delivered", "read"]  # newest first
        assert rows[2]["occurred_at"] == "2026-12-01T10:00:03.000000Z"
        assert rows[1]["external_ref"] == "ext-1"
        assert rows[0]["detail"] == "queued upstream"
        assert len({r["callback_id"] for r in rows}) == 3
        assert {read.body["callback_id"], late.body["callback_id"], later.body["callback_id"]} == {
            r["callback_id"] for r in rows
        }
        assert partner_view(ingest_api, tenancy, message_id)["delivery_status"] == "read"
        detail = admin("GET", f"/api/admin/messages/{message_id}")
        assert detail.body["delivery_status"] == "read"
        assert [c["status"] for c in detail.body["callbacks"]] == ["accepted", "delivered", "read"]

    def test_a_message_without_callbacks_is_pending_in_no_view(self, tenancy, world, ingest_api, admin):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-0"})

        assert partner_view(ingest_api, tenancy, message_id)["delivery_status"] is None
        detail = admin("GET", f"/api/admin/messages/{message_id}")
        assert (detail.body["delivery_status"], detail.body["callbacks"]) == (None, [])

    def test_a_callback_may_come_before_the_delivery_is_recorded_and_neither_disturbs_the_other(
        self, stack, tenancy, world, ingest_api, worker, destination
    ):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-EARLY"})
        assert report(ingest_api, message_id, world["con_a"], "accepted").status == 202

        worker()  # delivers to the local destination after the callback bumped the version

        stored = status(stack, message_id)
        assert (stored["pipeline_status"], stored["delivery_status"]) == ("sent", "accepted")
        assert len(destination.requests) == 1
        assert report(ingest_api, message_id, world["con_a"], "read").status == 202

    def test_a_repeat_answers_200_and_moves_nothing(self, stack, tenancy, world, ingest_api, admin):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-2"})

        first = report(ingest_api, message_id, world["con_a"], "delivered")
        version = status(stack, message_id)["version"]
        again = report(ingest_api, message_id, world["con_a"], "delivered")

        assert (first.status, again.status) == (202, 200)
        assert again.body["delivery_status"] == "delivered"
        assert not again.body["advanced"]
        assert status(stack, message_id)["version"] == version
        assert len(recorded(admin, message_id)) == 2

    @pytest.mark.parametrize("failure", ["rejected", "expired"])
    def test_a_failure_is_terminal(self, stack, tenancy, world, ingest_api, admin, failure):
        message_id = send(ingest_api, tenancy, {"po_number": f"PO-{failure}"})

        answers = [
            report(ingest_api, message_id, world["con_a"], s).status
            for s in (
                "accepted",
                failure,
                "delivered",
                "read",
                "expired" if failure == "rejected" else "rejected",
            )
        ]

        assert answers == [202, 202, 200, 200, 200]
        assert status(stack, message_id)["delivery_status"] == failure
        assert len(recorded(admin, message_id)) == 5

    def test_a_failure_after_delivered_is_kept_but_moves_nothing(self, stack, tenancy, world, ingest_api):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-3"})

        report(ingest_api, message_id, world["con_a"], "delivered")
        refused = report(ingest_api, message_id, world["con_a"], "rejected", detail="too late")

        assert (refused.status, refused.body["delivery_status"]) == (200, "delivered")
        assert status(stack, message_id)["delivery_status"] == "delivered"

    def test_a_reprocess_starts_the_confirmations_again(
        self, stack, tenancy, world, ingest_api, admin, worker
    ):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-4"})
        worker()
        report(ingest_api, message_id, world["con_a"], "rejected")

        forced = {"message_id": message_id, "force": True}  # the destination had accepted it
        rerun = admin("POST", "/api/edi-hub/reprocess-message", body=forced)

        assert rerun.status == 202, rerun.body
        assert rerun.body["delivery_status"] is None
        assert report(ingest_api, message_id, world["con_a"], "delivered").status == 202
        assert len(recorded(admin, message_id)) == 2  # the record of the first run stays


class TestUnderAStepsLease:
    def test_an_advance_waits_while_a_step_holds_the_message_and_the_resend_moves_it(
        self, stack, tenancy, world, ingest_api, admin
    ):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-LEASED"})
        report(ingest_api, message_id, world["con_a"], "accepted")
        key = keys.message_key(message_id)
        table = Table(stack.table)
        # A worker mid-delivery: what DynamoExecutions.take leaves on the item.
        table.update(key, Update().set(lease_owner="run-1", lease_until=epoch(datetime.now(UTC)) + 60))

        held = report(ingest_api, message_id, world["con_a"], "delivered")
        repeat = report(ingest_api, message_id, world["con_a"], "accepted")

        assert (held.status, held.body["error"]["code"]) == (503, "delivery_in_flight")
        assert held.headers["Retry-After"] == "5"
        assert repeat.status == 200  # nothing to move: no reason to make it wait
        assert status(stack, message_id)["delivery_status"] == "accepted"
        table.update(key, Update().remove("lease_owner", "lease_until"))  # the step finished

        resent = report(ingest_api, message_id, world["con_a"], "delivered")

        assert resent.status == 202
        assert [r["status"] for r in recorded(admin, message_id)] == [
            "delivered",
            "accepted",
            "delivered",
            "accepted",
        ]

    def test_every_advance_passes_the_outbox_publishers_stream_filter(
        self, stack, tenancy, world, ingest_api
    ):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-FILTER"})
        for delivery in ("accepted", "read"):
            report(ingest_api, message_id, world["con_a"], delivery)

        changes = [
            record
            for record in stream_records(stack)
            if record["dynamodb"]["Keys"]["PK"]["S"] == f"MSG#{message_id}"
            and "delivery_status" in record["dynamodb"].get("NewImage", {})
        ]

        # The publisher takes status records of an unleased message item (template.yaml).
        assert len(changes) == 2
        assert all(r["dynamodb"]["Keys"]["SK"]["S"] == "STATUS" for r in changes)
        assert all("lease_owner" not in r["dynamodb"]["NewImage"] for r in changes)


class TestConcurrency:
    def test_concurrent_callbacks_end_at_the_highest_rank(self, stack, tenancy, world, ingest_api, admin):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-RACE"})
        before = int(status(stack, message_id)["version"])
        statuses = ["accepted"] * 10 + ["delivered"] * 10 + ["read"] * 10
        random.Random(12).shuffle(statuses)

        with ThreadPoolExecutor(max_workers=15) as pool:
            answers = list(pool.map(lambda s: report(ingest_api, message_id, world["con_a"], s), statuses))

        assert {a.status for a in answers} <= {200, 202}
        advances = sum(a.status == 202 for a in answers)
        assert 1 <= advances <= 3
        stored = status(stack, message_id)
        assert stored["delivery_status"] == "read"
        assert int(stored["version"]) == before + advances  # one version per advance, none lost
        assert len(recorded(admin, message_id)) == 30

    def test_concurrent_lower_ranks_never_regress_a_read(self, stack, tenancy, world, ingest_api):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-RACE-2"})
        report(ingest_api, message_id, world["con_a"], "read")

        with ThreadPoolExecutor(max_workers=10) as pool:
            answers = list(
                pool.map(
                    lambda s: report(ingest_api, message_id, world["con_a"], s),
                    ["accepted", "delivered"] * 10,
                )
            )

        assert {a.status for a in answers} == {200}
        assert status(stack, message_id)["delivery_status"] == "read"


class TestStream:
    def test_each_advance_leaves_through_the_stream_as_its_outbox_event(
        self, stack, tenancy, world, ingest_api
    ):
        message_id = send(ingest_api, tenancy, {"po_number": "PO-5"})
        for delivery in ("delivered", "accepted", "read", "read"):
            report(ingest_api, message_id, world["con_a"], delivery)

        events = [
            event
            for record in stream_records(stack)
            for event in events_of_record(record)
            if event.message_id == message_id and event.type is EventType.MESSAGE_DELIVERY_STATUS_CHANGED
        ]

        assert [e.delivery_status for e in events] == ["delivered", "read"]
        assert [e.id for e in events] == [f"{message_id}:{e.version}" for e in events]
        assert events[1].version == events[0].version + 1
        assert all(e.status_before == e.status_after == "received" for e in events)


def stream_records(stack) -> list[dict[str, Any]]:
    """Every record of the table's stream, as Lambda would get them (typed images)."""
    streams = boto3.client("dynamodbstreams")
    arn = boto3.client("dynamodb").describe_table(TableName=stack.table)["Table"]["LatestStreamArn"]
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records += streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
    return records


class TestAuthentication:
    @pytest.fixture
    def message_id(self, tenancy, world, ingest_api) -> str:
        return send(ingest_api, tenancy, {"po_number": "PO-AUTH"})

    def _refused(self, answer) -> None:
        assert answer.status == 401, answer.body
        assert answer.body["error"]["code"] == "unauthorized"

    def test_no_token_or_a_wrong_one_is_401(self, ingest_api, message_id):
        self._refused(post(ingest_api, message_id, None, {"status": "read"}))
        self._refused(post(ingest_api, message_id, "hub_cb_not-a-token", {"status": "read"}))

    def test_an_api_key_is_not_a_callback_token(self, tenancy, ingest_api, message_id):
        self._refused(post(ingest_api, message_id, tenancy.key, {"status": "read"}))

    @pytest.mark.parametrize("other", ["con_b", "con_c"], ids=["same_tenant", "other_tenant"])
    def test_another_connections_token_is_refused(self, stack, world, ingest_api, message_id, other):
        answer = post(ingest_api, message_id, world[other], {"status": "read"})

        self._refused(answer)
        assert "delivery_status" not in status(stack, message_id)

    def test_a_missing_message_answers_like_a_wrong_token(self, world, ingest_api, message_id):
        missing = message_id[:-4] + "zzzz"
        unknown = post(ingest_api, missing, world["con_a"], {"status": "read"})
        wrong = post(ingest_api, message_id, "hub_cb_wrong", {"status": "read"})
        garbage = post(ingest_api, "not-a-message-id", world["con_a"], {"status": "read"})

        for answer in (unknown, wrong, garbage):
            self._refused(answer)
        assert unknown.body == wrong.body == garbage.body

    def test_a_connection_without_a_token_takes_no_callbacks(self, admin, world, ingest_api, message_id):
        assert admin("DELETE", f"{connection_path('con_a')}/callback-token").status == 204

        self._refused(post(ingest_api, message_id, world["con_a"], {"status": "read"}))
        shown = admin("GET", f"{connection_path('con_a')}/callback-token")
        assert shown.body["callback_token"] is None
        assert admin("DELETE", f"{connection_path('con_a')}/callback-token").status == 404

    def test_an_integration_without_a_connection_takes_no_callbacks(self, stack, tenancy, world, ingest_api):
        config = DynamoConfigRepository(stack.table)
        stored = config.get_integration(tenancy.tenant_id, tenancy.integration_id)
        assert stored is not None
        message_id = send(ingest_api, tenancy, {"po_number": "PO-EMBEDDED"})
        # The integration stops naming a connection (an older integration embeds its destination).
        config.put_integration(stored.model_copy(update={"connection_id": None}))

        self._refused(post(ingest_api, message_id, world["con_a"], {"status": "read"}))

    def test_rotation_keeps_the_previous_token_for_its_grace_only(self, admin, world, ingest_api, message_id):
        old = world["con_a"]

        new = mint(admin, "con_a", grace_hours=24)
        assert report(ingest_api, message_id, old, "accepted").status == 202
        assert report(ingest_api, message_id, new, "delivered").status == 202

        newest = mint(admin, "con_a", grace_hours=0)
        self._refused(report(ingest_api, message_id, new, "read"))
        self._refused(report(ingest_api, message_id, old, "read"))
        assert report(ingest_api, message_id, newest, "read").status == 202

    def test_a_disabled_tenant_takes_no_callbacks(self, admin, world, ingest_api, message_id):
        assert admin("POST", "/api/admin/tenants/t1/disable").status == 200

        answer = post(ingest_api, message_id, world["con_a"], {"status": "read"})

        self._refused(answer)
        assert "disabled" in answer.body["error"]["message"]


class TestBadInput:
    @pytest.fixture
    def message_id(self, tenancy, world, ingest_api) -> str:
        return send(ingest_api, tenancy, {"po_number": "PO-BAD"})

    @pytest.mark.parametrize(
        ("body", "code"),
        [
            ("{not json", "malformed_json"),
            ('{"status": "read", "n": NaN}', "malformed_json"),
            ("[]", "validation_error"),
            ({"status": "lost"}, "validation_error"),
            ({"status": "read", "occurred_at": "yesterday"}, "validation_error"),
            ({"status": "read", "occurred_at": "9999-12-31T23:00:00-05:00"}, "validation_error"),
            ({"status": "read", "detail": "d" * 501}, "validation_error"),
            ({"status": "read", "unknown": True}, "validation_error"),
            ({}, "validation_error"),
        ],
    )
    def test_bad_bodies_are_400_and_record_nothing(
        self, stack, world, ingest_api, admin, message_id, body, code
    ):
        answer = post(ingest_api, message_id, world["con_a"], body)

        assert (answer.status, answer.body["error"]["code"]) == (400, code)
        assert recorded(admin, message_id) == []
        assert "delivery_status" not in status(stack, message_id)

    def test_another_media_type_is_415(self, world, ingest_api, message_id):
        answer = post(ingest_api, message_id, world["con_a"], {"status": "read"}, content_type="text/plain")

        assert (answer.status, answer.body["error"]["code"]) == (415, "unsupported_media_type")

    def test_without_a_valid_token_a_bad_body_is_still_401(self, ingest_api, message_id):
        answer = post(ingest_api, message_id, "hub_cb_wrong", "{not json")

        assert answer.status == 401


class TestTokenAdministration:
    def test_minting_is_audited_and_the_token_is_shown_once(self, admin, world):
        shown = admin("GET", f"{connection_path('con_a')}/callback-token")
        audit = admin("GET", "/api/admin/tenants/t1/audit")

        assert shown.status == 200
        assert shown.body["callback_token"]["prefix"] == world["con_a"][:15]
        assert world["con_a"] not in json.dumps(shown.body)
        assert world["con_a"] not in json.dumps(audit.body)
        minted = [e for e in audit.body["items"] if e["action"] == "connection.callback_token_minted"]
        assert {e["target"]["connection_id"] for e in minted} == {"con_a", "con_b"}

    def test_stored_only_as_its_hash(self, stack, world):
        items = json.dumps(stack.scan())

        assert all(token not in items for token in world.values())

    def test_another_tenants_connection_is_404(self, admin, world):
        answer = admin("POST", f"{connection_path('con_c', 't1')}/callback-token")

        assert answer.status == 404

    def test_deleting_the_connection_deletes_its_token(self, stack, admin, world, tenancy):
        config = DynamoConfigRepository(stack.table)
        stored = config.get_integration(tenancy.tenant_id, tenancy.second_integration_id)
        assert stored is not None
        config.put_integration(stored.model_copy(update={"connection_id": "con_a"}))

        assert admin("DELETE", connection_path("con_b")).status == 204
        assert (
            admin(
                "POST",
                "/api/admin/tenants/t1/connections",
                body={"connection_id": "con_b", "url": "https://x.example.com"},
            ).status
            == 201
        )

        shown = admin("GET", f"{connection_path('con_b')}/callback-token")
        assert shown.body["callback_token"] is None
