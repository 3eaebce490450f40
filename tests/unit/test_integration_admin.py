"""Integrations: the admin use cases over the in-memory store (tests/fakes/integrations.py, held
to the DynamoDB adapter by tests/contract/test_integrations_contract.py), the preview, the
write-only secrets, the validators the save relies on, and ingest's reception record."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from hub.admin.access import BOOTSTRAP
from hub.admin.audit import Audit
from hub.admin.integrations import (
    IN_FLIGHT_AFTER_RECEPTION,
    IntegrationAdmin,
    IntegrationExists,
    IntegrationInUse,
    UnknownConnection,
    keep_secrets,
    preview_message,
)
from hub.domain.retry import RetryPolicy
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import (
    Connection,
    Destination,
    Integration,
    IntegrationMode,
    MessageTypeConfig,
    Tenant,
)
from hub.errors import NotFound, PreconditionFailed, SecretRequired, UnknownMessageType, ValidationFailed
from hub.ingest.receptions import MARK_EVERY, Receptions
from hub.mapping import MappingTooLarge
from tests.contract.scenario import new_message
from tests.fakes import ConfigState, FakeClock, FakeConfig, FakeMessages, FakeTable
from tests.fakes.audit import FakeAuditTrail
from tests.fakes.connections import FakeConnections
from tests.fakes.integrations import FakeIntegrations
from tests.mapping_bomb import BOMB, BOMB_TYPE, SMALL_PAYLOAD

WHSEC = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
PO = {
    "duplicate_key_fields": ["po_number"],
    "mapping": {"output": {"order": {"path": "po_number"}}},
}


@pytest.fixture
def state() -> ConfigState:
    state = ConfigState()
    config = FakeConfig(state)
    config.put_tenant(Tenant(tenant_id="t1", name="T1"))
    orchestrating = IntegrationMode.ORCHESTRATION
    config.put_tenant(Tenant(tenant_id="t2", name="T2", default_mode=orchestrating, active=False))
    return state


@pytest.fixture
def messages(state: ConfigState) -> FakeMessages:
    return FakeMessages(FakeTable(), state)


@pytest.fixture
def store(state: ConfigState, messages: FakeMessages) -> FakeIntegrations:
    return FakeIntegrations(state, messages=messages.records)


def connection(tenant_id: str, connection_id: str) -> Connection:
    return Connection(
        connection_id=connection_id, tenant_id=tenant_id, destination=Destination(url="https://e.x/in")
    )


@pytest.fixture
def audit() -> FakeAuditTrail:
    return FakeAuditTrail()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def admin(store, audit, clock) -> IntegrationAdmin:
    return IntegrationAdmin(store, Audit(audit), clock)


def body(**changes) -> dict:
    return {"integration_id": "int_po", "name": "PO", "message_types": {"po": PO}, **changes}


def webhook(secrets=(WHSEC,)) -> dict:
    verification: dict = {"scheme": "standard_webhooks"}
    if secrets is not None:
        verification["secrets"] = list(secrets) if isinstance(secrets, tuple) else secrets
    return {"verification": verification, "adapter": {"message_type": "po"}}


class TestCreate:
    def test_the_mode_defaults_to_the_tenants_and_the_creation_is_audited_without_secrets(
        self, admin, store, audit
    ):
        created = admin.create(BOOTSTRAP, "t1", body(inbound_webhook=webhook()))
        # A disabled tenant is still configured (its traffic is what is refused).
        other = admin.create(BOOTSTRAP, "t2", body(integration_id=None))

        assert (created["mode"], created["version"]) == ("observability", 1)
        assert created["inbound_webhook"]["verification"]["secrets"] == "***"
        assert other["mode"] == "orchestration"
        assert other["integration_id"].startswith("int_")
        [first, second] = audit.entries
        assert (first.scope, first.action) == ("t1", "integration.created")
        assert first.target == {"integration_id": "int_po"}
        assert (first.before, first.after) == (None, created)
        assert WHSEC not in json.dumps(first.after)
        assert second.scope == "t2"
        # Sealed: what ingest opens (the admin store reads stand-ins).
        assert FakeConfig(store.state).get_integration(
            "t1", "int_po"
        ).inbound_webhook.verification.secrets == (WHSEC,)

    def test_a_taken_id_an_unknown_tenant_and_an_unknown_connection_are_refused(self, admin, store, audit):
        admin.create(BOOTSTRAP, "t1", body())

        with pytest.raises(IntegrationExists):
            admin.create(BOOTSTRAP, "t1", body())
        with pytest.raises(NotFound):
            admin.create(BOOTSTRAP, "nobody", body(integration_id="int_x"))
        FakeConnections(store.state).create(connection("t2", "con_t2"))
        with pytest.raises(UnknownConnection) as unknown:
            admin.create(BOOTSTRAP, "t1", body(integration_id="int_y", connection_id="con_t2"))
        FakeConnections(store.state).create(connection("t1", "con_t1"))
        same_tenant = admin.create(BOOTSTRAP, "t1", body(integration_id="int_z", connection_id="con_t1"))
        assert same_tenant["connection_id"] == "con_t1"

        assert unknown.value.details["field"] == "connection_id"
        assert [e.action for e in audit.entries] == ["integration.created", "integration.created"]

    @pytest.mark.parametrize(
        ("changes", "field"),
        [
            ({"retry_policy": {"ladder_seconds": [10, 10]}}, "retry_policy.ladder_seconds"),
            (
                {"message_types": {"po": {"duplicate_key_fields": ["a[0"]}}},
                "message_types.po.duplicate_key_fields",
            ),
            (
                {"message_types": {"po": {"mapping": {"output": {"x": {"path": "f(("}}}}}},
                "message_types.po.mapping",
            ),
            ({"tenant_id": "t2"}, "tenant_id"),
            ({"extra": 1}, "extra"),
        ],
    )
    def test_what_the_pipeline_could_not_run_is_refused_naming_the_field(self, admin, store, changes, field):
        with pytest.raises(ValidationFailed) as refused:
            admin.create(BOOTSTRAP, "t1", body(**changes))

        assert any(d["field"].startswith(field) for d in refused.value.details)
        assert store.get("t1", "int_po") is None


class TestReplace:
    def test_a_stale_if_match_is_412_and_the_same_content_is_no_change(self, admin, audit):
        admin.create(BOOTSTRAP, "t1", body())

        with pytest.raises(PreconditionFailed) as stale:
            admin.replace(BOOTSTRAP, "t1", "int_po", body(name="X"), if_match=3)
        same = admin.replace(BOOTSTRAP, "t1", "int_po", body(), if_match=1)
        changed = admin.replace(BOOTSTRAP, "t1", "int_po", body(name="X"), if_match=1)

        assert stale.value.details == {"current_version": 1}
        assert same["version"] == 1
        assert changed["version"] == 2
        assert [e.action for e in audit.entries] == ["integration.created", "integration.updated"]
        assert (audit.entries[1].before["name"], audit.entries[1].after["name"]) == ("PO", "X")

    def test_another_tenants_integration_is_not_found(self, admin):
        admin.create(BOOTSTRAP, "t1", body())

        with pytest.raises(NotFound):
            admin.get("t2", "int_po")
        with pytest.raises(NotFound):
            admin.replace(BOOTSTRAP, "t2", "int_po", body(), None)
        with pytest.raises(NotFound):
            admin.delete(BOOTSTRAP, "t2", "int_po", None)

    @pytest.mark.parametrize("sent", [None, "***", ["***"]])
    def test_secrets_left_out_or_sent_back_masked_are_kept(self, admin, store, sent):
        admin.create(BOOTSTRAP, "t1", body(inbound_webhook=webhook()))

        saved = admin.replace(BOOTSTRAP, "t1", "int_po", body(name="N", inbound_webhook=webhook(sent)), None)

        # Sealed: what ingest opens (the admin store reads stand-ins).
        assert FakeConfig(store.state).get_integration(
            "t1", "int_po"
        ).inbound_webhook.verification.secrets == (WHSEC,)
        assert saved["version"] == 2

    def test_another_scheme_does_not_inherit_the_stored_secrets(self, admin):
        admin.create(BOOTSTRAP, "t1", body(inbound_webhook=webhook()))
        other = {"verification": {"scheme": "hmac_sha256_hex"}, "adapter": {"message_type": "po"}}

        with pytest.raises(ValidationFailed) as refused:
            admin.replace(BOOTSTRAP, "t1", "int_po", body(inbound_webhook=other), None)

        assert "inbound_webhook.verification.hmac_sha256_hex.secrets" in [
            d["field"] for d in refused.value.details
        ]


class TestDelete:
    def test_refused_within_the_in_flight_window_after_a_reception_then_allowed(
        self, admin, store, clock, audit
    ):
        admin.create(BOOTSTRAP, "t1", body())
        store.mark_received("t1", "int_po", clock.now)

        clock.advance(IN_FLIGHT_AFTER_RECEPTION - timedelta(seconds=1))
        with pytest.raises(IntegrationInUse) as in_flight:
            admin.delete(BOOTSTRAP, "t1", "int_po", None)
        clock.advance(timedelta(seconds=1))
        admin.delete(BOOTSTRAP, "t1", "int_po", if_match=1)

        assert in_flight.value.details["reason"] == "in_flight"
        assert store.get("t1", "int_po") is None
        assert audit.entries[-1].action == "integration.deleted"
        assert audit.entries[-1].after is None

    def test_refused_while_a_message_waits(self, admin, store, messages):
        admin.create(BOOTSTRAP, "t1", body())
        new = new_message(tenant_id="t1", integration_id="int_po")
        messages.create(new, new.record.received_at)
        messages.transition(new.record, PipelineStatus.DEAD_LETTER, new.record.received_at)

        with pytest.raises(IntegrationInUse) as waiting:
            admin.delete(BOOTSTRAP, "t1", "int_po", None)

        assert waiting.value.details["reason"] == "waiting"
        assert store.get("t1", "int_po") is not None

    def test_a_reception_between_the_check_and_the_delete_refuses_it(self, admin, store, clock):
        admin.create(BOOTSTRAP, "t1", body())
        real_has_waiting = store.has_waiting_messages

        def a_message_arrives(tenant_id: str, integration_id: str) -> bool:
            store.mark_received("t1", integration_id, clock.now)
            return real_has_waiting(tenant_id, integration_id)

        store.has_waiting_messages = a_message_arrives

        with pytest.raises(IntegrationInUse):
            admin.delete(BOOTSTRAP, "t1", "int_po", None)
        assert store.get("t1", "int_po") is not None


class TestPreview:
    def test_json_mapping_and_business_key(self):
        shown = preview_message(MessageTypeConfig.model_validate(PO), {"po_number": "PO-1"})

        assert shown == {
            "ok": True,
            "mapped": True,
            "content_type": "application/json",
            "body": '{"order":"PO-1"}',
            "duplicate_key": {"fields": ["po_number"], "values": ["PO-1"], "handling": "accept"},
        }

    def test_no_mapping_is_the_passthrough_and_text_is_sent_as_is(self):
        shown = preview_message(MessageTypeConfig(), "plain text")

        assert (shown["ok"], shown["mapped"], shown["body"]) == (True, False, "plain text")
        assert shown["content_type"].startswith("text/plain")
        assert shown["duplicate_key"]["values"] is None

    def test_unsafe_xml_and_a_missing_field_are_errors_in_the_answer(self):
        config = MessageTypeConfig.model_validate(PO)

        unsafe = preview_message(config, '<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>')
        missing = preview_message(config, {"other": 1})

        assert (unsafe["ok"], unsafe["error"]["code"]) == (False, "mapping_failed")
        assert missing["error"] == {
            "code": "mapping_failed",
            "message": missing["error"]["message"],
            "details": {"field": "order"},
        }

    def test_an_undefined_type_is_refused_unless_a_config_is_given(self, admin):
        admin.create(BOOTSTRAP, "t1", body())

        with pytest.raises(UnknownMessageType):
            admin.preview("t1", "int_po", "invoice", {})
        shown = admin.preview("t1", "int_po", "invoice", {"n": 1}, MessageTypeConfig())

        assert (shown["message_type"], shown["ok"], shown["body"]) == ("invoice", True, '{"n":1}')

    def test_a_mapping_over_the_limits_is_raised_by_the_previews_and_shown_by_the_message_view(self, admin):
        # The message view (hub.admin.operations) shows what the worker made of a message; the
        # preview routes answer 422: the spec must change, the sample is not at fault.
        bomb = MessageTypeConfig.model_validate(BOMB_TYPE)
        admin.create(BOOTSTRAP, "t1", body(message_types={"po": BOMB_TYPE}))

        shown = preview_message(bomb, SMALL_PAYLOAD)
        with pytest.raises(MappingTooLarge) as saved:
            admin.preview("t1", "int_po", "po", SMALL_PAYLOAD)
        with pytest.raises(MappingTooLarge) as unsaved:
            admin.preview_unsaved("t1", bomb, SMALL_PAYLOAD)

        assert (shown["ok"], shown["error"]["code"]) == (False, "mapping_too_large")
        assert shown["error"]["details"]["expression"] == BOMB
        assert saved.value.details == unsaved.value.details == shown["error"]["details"]


class TestValidators:
    @pytest.mark.parametrize("ladder", [(30, 30), (60, 30), (0, 10), ()])
    def test_a_retry_ladder_is_positive_and_increasing(self, ladder):
        with pytest.raises(ValidationError) as refused:
            RetryPolicy(ladder_seconds=ladder)

        assert refused.value.errors()[0]["loc"] == ("ladder_seconds",)

    def test_an_increasing_ladder_is_kept(self):
        assert RetryPolicy(ladder_seconds=(5, 10, 60)).ladder_seconds == (5, 10, 60)

    def test_duplicate_key_fields_are_jmespath_that_parses(self):
        with pytest.raises(ValidationError) as refused:
            MessageTypeConfig(duplicate_key_fields=("po_number", "lines[0"))

        assert refused.value.errors()[0]["loc"] == ("duplicate_key_fields",)
        assert MessageTypeConfig(duplicate_key_fields=("a.b", "lines[0].sku")).duplicate_key_fields == (
            "a.b",
            "lines[0].sku",
        )


class TestKeepSecrets:
    def test_masked_headers_and_destination_credentials_come_from_the_stored_config(self):
        stored = {
            "destination": {
                "url": "u",
                "headers": {"Authorization": "Bearer s3cret", "X-Trace": "1"},
                "auth": {"kind": "basic", "username": "u", "password": "pw"},
            }
        }
        incoming = {
            "destination": {
                "url": "u2",
                "headers": {"Authorization": "***", "X-Trace": "2"},
                "auth": {"kind": "basic", "username": "v", "password": "***"},
            }
        }

        merged = keep_secrets(incoming, stored)

        assert merged == {
            "destination": {
                "url": "u2",
                "headers": {"Authorization": "Bearer s3cret", "X-Trace": "2"},
                "auth": {"kind": "basic", "username": "v", "password": "pw"},
            }
        }

    def test_another_auth_kind_inherits_nothing(self):
        stored = {"auth": {"kind": "bearer", "token": "t"}}

        assert keep_secrets({"auth": {"kind": "api_key"}}, stored) == {"auth": {"kind": "api_key"}}


class FailingStore:
    def __init__(self) -> None:
        self.calls = 0

    def mark_received(self, tenant_id, integration_id, at) -> None:
        self.calls += 1
        raise RuntimeError("storage down")


class TestReceptions:
    def test_an_instance_records_an_integration_at_most_once_per_window_and_never_raises(self, clock):
        store = FailingStore()
        receptions = Receptions(store)

        for _ in range(5):
            receptions.seen("t1", "int_1", clock.now)
        receptions.seen("t1", "int_2", clock.now)
        clock.advance(MARK_EVERY)
        receptions.seen("t1", "int_1", clock.now)

        assert store.calls == 3


#: An integration as the operator's form saves it: a message type mapped to another JSON.
PO_TO_ORDER = {
    "output": {
        "order": {"path": "po_number"},
        "total": {"path": "amount", "transforms": [{"name": "to_decimal", "places": 2}]},
    }
}
IDOC = (
    '<?xml version="1.0"?><ORDERS05><IDOC BEGIN="1"><E1EDK01><BELNR>4500012345</BELNR></E1EDK01>'
    "</IDOC></ORDERS05>"
)
BEARER = "dest-bearer-token-0123456789"


def po_body(**changes: Any) -> dict[str, Any]:
    return {
        "integration_id": "int_po",
        "name": "Purchase orders",
        "message_types": {"purchase_order": {"duplicate_key_fields": ["po_number"], "mapping": PO_TO_ORDER}},
        **changes,
    }


def po_webhook(secret: str = WHSEC) -> dict[str, Any]:
    return {
        "verification": {"scheme": "standard_webhooks", "secrets": [secret]},
        "adapter": {"message_type": "purchase_order"},
    }


def opened(store: FakeIntegrations, integration_id: str = "int_po") -> Integration | None:
    """The integration as ingest and the worker read it: sealed secrets opened."""
    return FakeConfig(store.state).get_integration("t1", integration_id)


class TestSaveRefusals:
    @pytest.mark.parametrize(
        ("changes", "field"),
        [
            (
                {"message_types": {"po": {"mapping": {"output": {"x": {"path": "a["}}}}}},
                "message_types.po.mapping.output.x.path.path",
            ),
            (
                {"message_types": {"po": {"duplicate_key_fields": ["po["]}}},
                "message_types.po.duplicate_key_fields",
            ),
            ({"retry_policy": {"ladder_seconds": [60, 30]}}, "retry_policy.ladder_seconds"),
            ({"retry_policy": {"retry_max": -1}}, "retry_policy.retry_max"),
            ({"mode": "sometimes"}, "mode"),
            ({"colour": "blue"}, "colour"),
            ({"integration_id": "bad#id"}, "integration_id"),
        ],
    )
    def test_a_save_the_pipeline_could_not_run_is_400_naming_the_field(self, admin, changes, field):
        with pytest.raises(ValidationFailed) as refused:
            admin.create(BOOTSTRAP, "t1", po_body(**changes))

        assert (refused.value.http_status, refused.value.code) == (400, "validation_error")
        assert field in [d["field"] for d in refused.value.details]
        assert admin.list_integrations("t1", 50, None)["items"] == []

    def test_an_expression_over_the_length_or_nesting_limit_is_not_saved(self, admin):
        too_long = {"mapping": {"output": {"order": {"path": "a" * 1001}}}}
        too_deep = {"duplicate_key_fields": ["!" * 40 + "a"]}

        refused = []
        for message_type in (too_long, too_deep):
            with pytest.raises(ValidationFailed) as refusal:
                admin.create(BOOTSTRAP, "t1", po_body(message_types={"purchase_order": message_type}))
            refused.append(refusal.value)

        assert [(r.http_status, r.code) for r in refused] == [(400, "validation_error")] * 2
        assert [(d["field"], d["problem"]) for r in refused for d in r.details] == [
            ("message_types.purchase_order.mapping.output.order.path.path", "mapping_too_large"),
            ("message_types.purchase_order.duplicate_key_fields", "mapping_too_large"),
        ]
        assert admin.list_integrations("t1", 50, None)["items"] == []


class TestEmbeddedDestination:
    def test_moved_elsewhere_it_needs_its_secret_again(self, admin, store):
        bearer = {"url": "https://erp.example/orders", "auth": {"kind": "bearer", "token": BEARER}}
        admin.create(BOOTSTRAP, "t1", po_body(destination=bearer))
        elsewhere = {"url": "https://collector.example.net/", "auth": {"kind": "bearer"}}

        with pytest.raises(SecretRequired) as moved:
            admin.replace(BOOTSTRAP, "t1", "int_po", po_body(destination=elsewhere), None)
        path_only = {**elsewhere, "url": "https://erp.example/v2/orders"}
        admin.replace(BOOTSTRAP, "t1", "int_po", po_body(destination=path_only), None)
        resent = {**elsewhere, "auth": {"kind": "bearer", "token": "new-token"}}
        admin.replace(BOOTSTRAP, "t1", "int_po", po_body(destination=resent), None)

        assert (moved.value.http_status, moved.value.code) == (400, "secret_required")
        assert moved.value.details[0]["field"] == "destination.auth.token"
        stored = opened(store)
        assert stored is not None
        assert stored.destination is not None
        assert (stored.destination.url, stored.destination.auth.token) == (
            "https://collector.example.net/",
            "new-token",
        )

    def test_it_cannot_name_a_client_certificate(self, admin, store):
        mtls = {"url": "https://any.example.net/", "client_certificate_id": "sefaz-sp"}

        with pytest.raises(ValidationFailed) as refused:
            admin.create(BOOTSTRAP, "t1", po_body(destination=mtls))

        assert (refused.value.http_status, refused.value.code) == (400, "validation_error")
        assert refused.value.details[0]["field"] == "destination.client_certificate_id"
        assert opened(store) is None


class TestWriteOnlySecrets:
    def test_webhook_and_destination_secrets_are_never_answered_and_a_save_without_them_keeps_them(
        self, admin, store, audit
    ):
        destination = {"url": "https://erp.example/orders", "auth": {"kind": "bearer", "token": BEARER}}
        hook = po_webhook()
        created = admin.create(BOOTSTRAP, "t1", po_body(inbound_webhook=hook, destination=destination))
        read = admin.get("t1", "int_po")
        # The view sent back as it was shown, and a body leaving the secrets out: both keep them.
        shown_back = admin.replace(BOOTSTRAP, "t1", "int_po", {**read, "name": "Shown back"}, None)
        left_out = admin.replace(
            BOOTSTRAP,
            "t1",
            "int_po",
            po_body(
                name="Left out",
                inbound_webhook={**hook, "verification": {"scheme": "standard_webhooks"}},
                destination={"url": "https://erp.example/orders", "auth": {"kind": "bearer"}},
            ),
            None,
        )
        listed = admin.list_integrations("t1", 50, None)

        for answer in (created, read, shown_back, left_out, listed):
            text = json.dumps(answer)
            assert WHSEC not in text
            assert BEARER not in text
        assert read["inbound_webhook"]["verification"]["secrets"] == "***"
        assert read["destination"]["auth"]["token"] == "***"
        stored = opened(store)
        assert stored is not None
        assert stored.name == "Left out"
        assert stored.inbound_webhook is not None
        assert stored.inbound_webhook.verification.secrets == (WHSEC,)
        assert stored.destination is not None
        assert stored.destination.auth.token == BEARER
        entries = [e for e in audit.entries if e.scope == "t1" and e.action.startswith("integration.")]
        assert len(entries) == 3
        assert WHSEC not in json.dumps([vars(e) for e in entries], default=str)
        assert BEARER not in json.dumps([vars(e) for e in entries], default=str)

    def test_a_new_secret_replaces_the_stored_one(self, admin, store):
        admin.create(BOOTSTRAP, "t1", po_body(inbound_webhook=po_webhook()))
        rotated = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"

        admin.replace(BOOTSTRAP, "t1", "int_po", po_body(inbound_webhook=po_webhook(rotated)), None)

        stored = opened(store)
        assert stored is not None
        assert stored.inbound_webhook is not None
        assert stored.inbound_webhook.verification.secrets == (rotated,)


class TestPreviewAnswers:
    def test_xml_input_to_xml_output_from_an_unsaved_message_type(self, admin):
        admin.create(BOOTSTRAP, "t1", po_body())
        config = MessageTypeConfig.model_validate(
            {
                "duplicate_key_fields": ["ORDERS05.IDOC.E1EDK01.BELNR"],
                "mapping": {
                    "output_format": "xml",
                    "xml_root": "order",
                    "output": {"number": {"path": "ORDERS05.IDOC.E1EDK01.BELNR"}},
                },
            }
        )

        answer = admin.preview("t1", "int_po", "idoc", IDOC, config)

        assert answer["ok"] is True
        assert answer["content_type"] == "application/xml"
        assert "<order><number>4500012345</number></order>" in answer["body"]
        assert answer["duplicate_key"]["values"] == ["4500012345"]

    def test_a_failing_mapping_is_the_error_the_message_would_fail_with(self, admin):
        admin.create(BOOTSTRAP, "t1", po_body())

        answer = admin.preview("t1", "int_po", "purchase_order", {"amount": "1"})

        assert answer["ok"] is False
        assert answer["error"]["code"] == "mapping_failed"
        assert answer["error"]["details"] == {"field": "order"}
        assert answer["duplicate_key"]["values"] is None


def test_the_unit_models_accept_what_the_api_stores() -> None:
    # The API validates with the pipeline's models: a message type it stores loads back as is.
    config = MessageTypeConfig.model_validate({"duplicate_key_fields": ["po_number"], "mapping": PO_TO_ORDER})
    assert MessageTypeConfig.model_validate_json(config.model_dump_json()) == config
