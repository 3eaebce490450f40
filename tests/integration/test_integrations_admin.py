"""Integrations through the real AdminApiFunction handler on moto: create, read, list, replace
with If-Match (412 when stale), delete (409 while messages of it wait), a validation 400 naming
the field, the tenant's default mode, the preview of a mapping; and a message sent through the
real IngestApiFunction to an integration created over the API, delivered by the real
PipelineWorkerFunction (the pipeline reads what the API wrote). Which saves are refused, the
write-only secrets and what a preview answers are the use case's rules:
tests/unit/test_integration_admin.py."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import boto3
import pytest

from hub.adapters.dynamo.keys import connection_key, integration_key
from hub.adapters.dynamo.table import format_ts
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.admin.access import Role
from hub.domain.clock import utcnow
from hub.domain.tenancy import Integration
from hub.outbox.events import events_of_record
from tests.aws import LambdaContext, load_handler
from tests.destinations import Answer
from tests.events import admin_event, http_event
from tests.integration.conftest import ADMIN_TOKEN, HttpAnswer, opening_config
from tests.mapping_bomb import BOMB, BOMB_TYPE, SMALL_PAYLOAD
from tests.outbox import StreamReader

INTEGRATIONS = "/api/admin/tenants/{tenant}/integrations"

PO_TO_ORDER = {
    "output": {
        "order": {"path": "po_number"},
        "total": {"path": "amount", "transforms": [{"name": "to_decimal", "places": 2}]},
    }
}


@pytest.fixture
def admin(stack):
    """The admin handler; a 204 has no body."""
    handler = load_handler("AdminApiFunction")

    def call(method: str, path: str, **options: Any) -> HttpAnswer:
        answer = handler(admin_event(method, path, token=ADMIN_TOKEN, **options), LambdaContext())
        body = json.loads(answer["body"]) if answer.get("body") else {}
        return HttpAnswer(answer["statusCode"], body, answer.get("headers", {}))

    return call


@pytest.fixture
def tenants(admin):
    assert admin("POST", "/api/admin/tenants", body={"tenant_id": "t1", "name": "T1"}).status == 201
    assert (
        admin(
            "POST",
            "/api/admin/tenants",
            body={"tenant_id": "t2", "name": "T2", "default_mode": "orchestration"},
        ).status
        == 201
    )


def url(tenant: str = "t1", integration: str | None = None, tail: str = "") -> str:
    base = INTEGRATIONS.format(tenant=tenant)
    return f"{base}/{integration}{tail}" if integration else base


def body(**changes: Any) -> dict[str, Any]:
    return {
        "integration_id": "int_po",
        "name": "Purchase orders",
        "message_types": {"purchase_order": {"duplicate_key_fields": ["po_number"], "mapping": PO_TO_ORDER}},
        **changes,
    }


def raw_item(stack, integration_id: str) -> dict[str, Any]:
    item = boto3.client("dynamodb").get_item(
        TableName=stack.table, Key={k: {"S": v} for k, v in integration_key("t1", integration_id).items()}
    )["Item"]
    return {name: next(iter(value.values())) for name, value in item.items()}


def age_reception(stack, integration_id: str, *, hours: int) -> None:
    """As if the integration's last recorded reception were `hours` ago."""
    key = {k: {"S": v} for k, v in integration_key("t1", integration_id).items()}
    boto3.client("dynamodb").update_item(
        TableName=stack.table,
        Key=key,
        UpdateExpression="SET last_received_at = :at",
        ExpressionAttributeValues={":at": {"S": format_ts(utcnow() - timedelta(hours=hours))}},
    )


def audit_actions(stack, tenant: str) -> list[str]:
    return [
        i["action"]["S"]
        for i in stack.scan()
        if i["PK"]["S"] == f"AUDIT#{tenant}" and i["action"]["S"].startswith("integration.")
    ]


class TestCreateReadList:
    def test_created_read_and_listed_with_etag_version_and_the_tenants_default_mode(
        self, stack, tenants, admin
    ):
        created = admin("POST", url(), body=body())
        generated = admin("POST", url("t2"), body=body(integration_id=None, name="Generated"))

        assert (created.status, created.headers["ETag"], created.body["version"]) == (201, '"1"', 1)
        assert created.body["mode"] == "observability"  # t1's default
        assert generated.status == 201
        assert generated.body["integration_id"].startswith("int_")
        assert generated.body["mode"] == "orchestration"  # t2's default
        read = admin("GET", url(integration="int_po"))
        assert (read.status, read.body, read.headers["ETag"]) == (200, created.body, '"1"')
        admin("POST", url(), body=body(integration_id="int_zz"))
        listed = admin("GET", url(), query={"limit": "1"})
        assert [i["integration_id"] for i in listed.body["items"]] == ["int_po"]
        rest = admin("GET", url(), query={"cursor": listed.body["next_cursor"]}).body
        assert ([i["integration_id"] for i in rest["items"]], rest["next_cursor"]) == (["int_zz"], None)
        assert audit_actions(stack, "t1") == ["integration.created", "integration.created"]

    def test_the_item_is_the_one_the_pipeline_reads(self, stack, tenants, admin):
        admin("POST", url(), body=body(mode="orchestration"))

        item = raw_item(stack, "int_po")
        stored = opening_config(stack).get_integration("t1", "int_po")
        assert (item["version"], item["tenant_id"], item["GSI1PK"], item["GSI1SK"]) == (
            "1",
            "t1",
            "TENANT#t1#INTEGRATIONS",
            "int_po",
        )
        assert stored is not None
        assert stored.mode.value == "orchestration"
        assert stored.message_types["purchase_order"].duplicate_key_fields == ("po_number",)

    def test_a_taken_id_is_409_another_tenants_integration_404_and_an_unknown_tenant_404(
        self, stack, tenants, admin
    ):
        """Issue 27, point 7: integration ids are unique within a tenant. Before t2 has one, t1's
        int_po answers t2 exactly as a never-existing id; then t2 creates its own int_po (201,
        not 409), and each tenant's update and delete touch its own only."""
        assert admin("POST", url(), body=body()).status == 201

        taken = admin("POST", url("t1"), body=body())
        assert (taken.status, taken.body["error"]["code"]) == (409, "integration_exists")
        unnamed = {k: v for k, v in body().items() if k != "integration_id"}
        for method, options in (("GET", {}), ("PUT", {"body": unnamed}), ("DELETE", {})):
            theirs = admin(method, url("t2", "int_po"), **options)
            never = admin(method, url("t2", "int_never"), **options)
            assert theirs.status == never.status == 404
            assert theirs.body == json.loads(json.dumps(never.body).replace("int_never", "int_po"))
        assert admin("POST", url("nobody"), body=body()).body["error"]["code"] == "not_found"
        assert admin("GET", url("nobody")).status == 404

        own = admin("POST", url("t2"), body=body(name="t2's own"))
        assert (own.status, own.body["tenant_id"], own.body["version"]) == (201, "t2", 1)
        assert admin("GET", url("t1", "int_po")).body["name"] != "t2's own"
        changed = admin("PUT", url("t2", "int_po"), body=body(name="t2 again"))
        assert (changed.status, changed.body["version"]) == (200, 2)
        assert admin("GET", url("t1", "int_po")).body["version"] == 1
        # The same version of the same id in another tenant is another change (its own event).
        mine = admin("PUT", url("t1", "int_po"), body=body(name="t1 again"))
        assert (mine.status, mine.body["version"]) == (200, 2)
        assert admin("DELETE", url("t2", "int_po")).status == 204
        assert admin("GET", url("t2", "int_po")).status == 404
        assert admin("GET", url("t1", "int_po")).status == 200
        # The operator's view takes the tenant too (a platform token names it).
        view = admin("GET", "/api/admin/integrations/int_po", query={"tenant_id": "t1"})
        assert (view.status, view.body["tenant_id"]) == (200, "t1")
        gone = admin("GET", "/api/admin/integrations/int_po", query={"tenant_id": "t2"})
        never = admin("GET", "/api/admin/integrations/int_never", query={"tenant_id": "t2"})
        assert gone.status == never.status == 404
        assert gone.body == json.loads(json.dumps(never.body).replace("int_never", "int_po"))

    def test_a_hand_written_integration_without_version_is_version_1(self, stack, tenants, admin):
        DynamoConfigRepository(stack.table).put_integration(
            Integration(integration_id="int_hand", tenant_id="t1", name="by hand")
        )
        client = boto3.client("dynamodb")
        key = {k: {"S": v} for k, v in integration_key("t1", "int_hand").items()}
        client.update_item(TableName=stack.table, Key=key, UpdateExpression="REMOVE version")

        assert admin("GET", url(integration="int_hand")).headers["ETag"] == '"1"'
        saved = admin(
            "PUT", url(integration="int_hand"), body={"name": "now managed"}, headers={"if-match": '"1"'}
        )
        assert (saved.status, saved.body["version"]) == (200, 2)


class TestValidation:
    # The answer of a refused save; which saves are refused: tests/unit/test_integration_admin.py.
    @pytest.mark.parametrize(("changes", "field"), [({"mode": "sometimes"}, "mode")])
    def test_a_save_the_pipeline_could_not_run_is_400_naming_the_field(
        self, stack, tenants, admin, changes, field
    ):
        refused = admin("POST", url(), body=body(**changes))

        assert (refused.status, refused.body["error"]["code"]) == (400, "validation_error")
        assert field in [d["field"] for d in refused.body["error"]["details"]]
        assert admin("GET", url()).body["items"] == []

    def test_a_connection_must_exist_in_the_same_tenant(self, stack, tenants, admin):
        client = boto3.client("dynamodb")
        for connection_id, tenant in (("con_t1", "t1"), ("con_t2", "t2")):
            item = {**connection_key(tenant, connection_id), "tenant_id": tenant, "version": "1"}
            client.put_item(TableName=stack.table, Item={k: {"S": v} for k, v in item.items()})

        refusals = {}
        for connection_id in ("con_t2", "con_missing"):
            refused = admin("POST", url(), body=body(connection_id=connection_id))
            assert (refused.status, refused.body["error"]["code"]) == (422, "unknown_connection")
            assert refused.body["error"]["details"]["field"] == "connection_id"
            refusals[connection_id] = refused.body
        # Another tenant's connection id is answered exactly as one that never existed.
        assert refusals["con_t2"] == json.loads(
            json.dumps(refusals["con_missing"]).replace("con_missing", "con_t2")
        )
        created = admin("POST", url(), body=body(connection_id="con_t1"))
        assert (created.status, created.body["connection_id"]) == (201, "con_t1")
        assert raw_item(stack, "int_po")["connection_id"] == "con_t1"


class TestUpdate:
    def test_if_match_replaces_a_stale_version_is_412_and_the_same_content_changes_nothing(
        self, stack, tenants, admin
    ):
        admin("POST", url(), body=body())

        saved = admin(
            "PUT", url(integration="int_po"), body=body(name="Renamed"), headers={"if-match": '"1"'}
        )
        stale = admin("PUT", url(integration="int_po"), body=body(name="Lost"), headers={"if-match": '"1"'})
        same = admin("PUT", url(integration="int_po"), body=body(name="Renamed"))

        assert (saved.status, saved.headers["ETag"], saved.body["name"]) == (200, '"2"', "Renamed")
        assert (stale.status, stale.body["error"]["code"]) == (412, "precondition_failed")
        assert stale.body["error"]["details"] == {"current_version": 2}
        assert (same.status, same.body["version"]) == (200, 2)
        assert admin("GET", url(integration="int_po")).body["name"] == "Renamed"
        assert audit_actions(stack, "t1") == ["integration.created", "integration.updated"]

    def test_a_saved_change_leaves_the_outbox_as_one_integration_updated_event(self, stack, tenants, admin):
        admin("POST", url(), body=body())
        admin("PUT", url(integration="int_po"), body=body(name="Renamed"), headers={"if-match": '"1"'})
        admin("PUT", url(integration="int_po"), body=body(name="Lost"), headers={"if-match": '"1"'})  # 412
        admin("PUT", url(integration="int_po"), body=body(name="Renamed"))  # the same content

        records = StreamReader(stack.table).new_records()

        events = [e for r in records for e in events_of_record(r)]
        assert [(e.id, e.type.value, e.tenant_id, e.details) for e in events] == [
            ("t1:int_po:2", "integration.updated", "t1", {"version": 2, "mode": "observability"})
        ]
        assert "Renamed" not in events[0].model_dump_json()  # ids and version, never the configuration

    def test_a_full_replace_resets_what_the_body_leaves_out_and_saving_clears_connection_gone(
        self, stack, tenants, admin
    ):
        admin("POST", url(), body=body(unknown_message_types="accept"))
        config = DynamoConfigRepository(stack.table)
        config.flag_connection_gone(config.get_integration("t1", "int_po"), utcnow(), "410")
        assert admin("GET", url(integration="int_po")).body["connection_gone_at"] is not None

        saved = admin("PUT", url(integration="int_po"), body=body())

        assert (saved.body["unknown_message_types"], saved.body["connection_gone_at"]) == ("reject", None)
        assert "connection_gone_at" not in raw_item(stack, "int_po")


def test_the_operators_view_shows_their_own_save_at_once(stack, tenants, admin):
    """Issue 28, point 7: the admin API reads what is stored now, not the 30 s configuration
    cache the partner API and the worker keep."""
    assert admin("POST", url(), body=body()).status == 201
    view = "/api/admin/integrations/int_po"
    assert admin("GET", view, query={"tenant_id": "t1"}).body["name"] == "Purchase orders"

    saved = admin("PUT", url(integration="int_po"), body=body(name="Renamed"))

    assert saved.status == 200
    assert admin("GET", view, query={"tenant_id": "t1"}).body["name"] == "Renamed"


class TestDelete:
    def test_deleted_204_then_gone(self, stack, tenants, admin):
        admin("POST", url(), body=body())

        stale = admin("DELETE", url(integration="int_po"), headers={"if-match": '"7"'})
        deleted = admin("DELETE", url(integration="int_po"), headers={"if-match": '"1"'})

        assert (stale.status, stale.body["error"]["details"]) == (412, {"current_version": 1})
        assert (deleted.status, deleted.body) == (204, {})
        assert admin("GET", url(integration="int_po")).status == 404
        assert admin("DELETE", url(integration="int_po")).status == 404
        assert audit_actions(stack, "t1") == ["integration.created", "integration.deleted"]

    def test_refused_while_its_messages_may_be_in_flight_then_while_one_waits_in_error(
        self, stack, tenants, admin, ingest_api, worker, destination
    ):
        destination.script(Answer(status=400, body='{"error": "bad po"}'))
        key = created_integration_and_key(admin, destination.url)
        assert send(ingest_api, key).status == 202
        received = raw_item(stack, "int_po")["last_received_at"]

        in_flight = admin("DELETE", url(integration="int_po"))
        worker()
        age_reception(stack, "int_po", hours=2)
        waiting = admin("DELETE", url(integration="int_po"))

        assert (in_flight.status, in_flight.body["error"]["code"]) == (409, "integration_in_use")
        assert in_flight.body["error"]["details"]["reason"] == "in_flight"
        assert in_flight.body["error"]["details"]["last_received_at"] == received
        assert (waiting.status, waiting.body["error"]["code"]) == (409, "integration_in_use")
        assert waiting.body["error"]["details"]["reason"] == "waiting"
        assert admin("GET", url(integration="int_po")).status == 200

    def test_allowed_once_its_messages_are_sent_and_the_in_flight_window_is_over(
        self, stack, tenants, admin, ingest_api, worker, destination
    ):
        key = created_integration_and_key(admin, destination.url)
        assert send(ingest_api, key).status == 202
        worker()
        assert stack.message_items()[0]["pipeline_status"]["S"] == "sent"
        assert admin("DELETE", url(integration="int_po")).status == 409

        age_reception(stack, "int_po", hours=2)

        assert admin("DELETE", url(integration="int_po")).status == 204
        assert admin("GET", url(integration="int_po")).status == 404


class TestPreview:
    def preview(self, admin, message_type: str = "purchase_order", **request: Any) -> HttpAnswer:
        return admin(
            "POST", url(integration="int_po", tail=f"/message-types/{message_type}/preview"), body=request
        )

    def test_json_to_json_with_the_business_key_and_no_side_effect(self, stack, tenants, admin):
        admin("POST", url(), body=body())
        before = stack.scan()

        answer = self.preview(admin, payload={"po_number": "PO-9", "amount": "10.5"})

        assert answer.status == 200
        assert answer.body["ok"] is True
        assert answer.body["content_type"] == "application/json"
        assert json.loads(answer.body["body"]) == {"order": "PO-9", "total": 10.5}
        assert answer.body["duplicate_key"] == {
            "fields": ["po_number"],
            "values": ["PO-9"],
            "handling": "accept",
        }
        assert stack.scan() == before

    def test_an_undefined_type_is_422_and_an_invalid_unsaved_config_400(self, stack, tenants, admin):
        admin("POST", url(), body=body())

        undefined = self.preview(admin, "invoice", payload={})
        invalid = self.preview(admin, payload={}, config={"duplicate_key_fields": ["a["]})

        assert (undefined.status, undefined.body["error"]["code"]) == (422, "unknown_message_type")
        assert (invalid.status, invalid.body["error"]["code"]) == (400, "validation_error")
        assert invalid.body["error"]["details"][0]["field"] == "config.duplicate_key_fields"

    def test_the_mapping_bomb_is_422_mapping_too_large_naming_the_expression(self, stack, tenants, admin):
        # Short and shallow enough to be saved: what stops it is the size of what it builds.
        saved = admin("POST", url(), body=body(message_types={"purchase_order": BOMB_TYPE}))
        assert saved.status == 201, saved.body
        before = stack.scan()

        of_saved_type = self.preview(admin, payload=SMALL_PAYLOAD)
        unsaved = admin(
            "POST",
            "/api/admin/tenants/t1/mapping-preview",
            body={"payload": SMALL_PAYLOAD, "config": BOMB_TYPE},
        )

        for answer in (of_saved_type, unsaved):
            assert answer.status == 422, answer.body
            assert answer.body["error"]["code"] == "mapping_too_large"
            assert answer.body["error"]["details"] == {
                "field": "order",
                "expression": BOMB,
                "limit": "intermediate_bytes",
                "maximum": 256 * 1024,
            }
            assert "PO-B" not in answer.body["error"]["message"]  # never the payload
        assert stack.scan() == before


def created_integration_and_key(admin, destination_url: str) -> str:
    created = admin(
        "POST",
        url(),
        body=body(mode="orchestration", destination={"url": destination_url}),
    )
    assert created.status == 201
    key = admin("POST", "/api/admin/tenants/t1/api-keys", body={"integration_ids": ["int_po"]})
    assert key.status == 201
    return str(key.body["key"])


def send(ingest_api, key: str, po: str = "PO-1") -> HttpAnswer:
    request = {
        "integration_id": "int_po",
        "message_type": "purchase_order",
        "payload": {"po_number": po, "amount": "12.5"},
    }
    headers: dict[str, str | None] = {"authorization": f"Bearer {key}", "idempotency-key": None}
    return ingest_api(http_event("receive_message.json", body=request, headers=headers))


def test_a_message_to_an_integration_created_over_the_api_is_mapped_and_delivered(
    stack, tenants, admin, ingest_api, worker, destination
):
    key = created_integration_and_key(admin, destination.url)

    accepted = send(ingest_api, key)
    worker()

    assert accepted.status == 202
    assert [json.loads(r.body) for r in destination.requests] == [{"order": "PO-1", "total": 12.5}]
    item = stack.message_items()[0]
    assert item["pipeline_status"]["S"] == "sent"


@pytest.mark.parametrize(
    ("role", "tenant", "reads", "writes"),
    [
        (Role.VIEWER, "t1", 200, 403),
        (Role.ADMIN, "t1", 200, 200),
        (Role.ADMIN, "t2", 404, 404),  # another tenant's token: as if the integration did not exist
    ],
)
def test_reads_and_preview_need_a_viewer_changes_an_admin_of_the_same_tenant(
    stack, tenants, admin, role, tenant, reads, writes
):
    admin("POST", url(), body=body())
    minted = admin(
        "POST", "/api/admin/tokens", body={"label": "scoped", "role": role.value, "tenant_id": tenant}
    )
    assert minted.status == 201
    handler = load_handler("AdminApiFunction")

    def call(method: str, path: str, **options: Any) -> int:
        answer = handler(admin_event(method, path, token=minted.body["token"], **options), LambdaContext())
        return int(answer["statusCode"])

    preview = url(integration="int_po", tail="/message-types/purchase_order/preview")
    assert call("GET", url(integration="int_po")) == reads
    assert call("GET", url()) == reads
    assert call("POST", preview, body={"payload": {"po_number": "1"}}) == reads
    assert call("PUT", url(integration="int_po"), body=body(name="X")) == writes
    created = call("POST", url(), body=body(integration_id="int_new"))
    assert created == (201 if writes == 200 else writes)
