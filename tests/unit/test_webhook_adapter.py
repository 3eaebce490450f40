"""The per-integration adapter: a verified partner payload becomes the internal event."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from hub.domain.tenancy import Integration
from hub.domain.webhook_config import WebhookAdapter
from hub.errors import MalformedBody, MalformedXml, UnknownEventType, UnprocessableEvent
from hub.mapping import MappingTooLarge
from hub.webhooks.adapter import adapt
from tests.mapping_bomb import BOMB, SMALL_PAYLOAD

PAYLOAD = {
    "type": "order.created",
    "id": "evt_42",
    "created": "2026-11-29T11:59:58-03:00",
    "tenant_id": "someone-else",
    "data": {"object": {"po_number": "PO-1"}},
}

MAPPED = WebhookAdapter(
    message_type_path="type",
    known_types=frozenset({"order.created", "order.cancelled"}),
    event_id_path="id",
    occurred_at_path="created",
    data_path="data.object",
)


def body(**changes: object) -> bytes:
    return json.dumps({**PAYLOAD, **changes}).encode()


def test_jmespath_picks_type_event_id_occurred_at_and_data():
    event = adapt(MAPPED, body())

    assert event.message_type == "order.created"
    assert event.event_id == "evt_42"
    assert event.occurred_at == datetime(2026, 11, 29, 11, 59, 58, tzinfo=timezone(timedelta(hours=-3)))
    assert event.payload == {"po_number": "PO-1"}


def test_defaults_fixed_type_and_the_whole_payload():
    event = adapt(WebhookAdapter(message_type="partner_event"), body())

    assert (event.message_type, event.event_id, event.occurred_at) == ("partner_event", None, None)
    assert event.payload == PAYLOAD


def test_numeric_ids_and_unix_timestamps():
    event = adapt(MAPPED, body(id=1234, created=1795953600))

    assert event.event_id == "1234"
    assert event.occurred_at == datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_an_unknown_type_is_422_naming_the_field():
    with pytest.raises(UnknownEventType) as refused:
        adapt(MAPPED, body(type="order.shipped"))

    assert refused.value.http_status == 422
    assert refused.value.details == {"field": "message_type"}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"type": None}, "message_type"),
        ({"id": None}, "event_id"),
        ({"id": ""}, "event_id"),
        ({"created": None}, "occurred_at"),
        ({"created": "2026-11-29T12:00:00"}, "occurred_at"),  # no offset
        ({"created": "0001-01-01T00:00:00+01:00"}, "occurred_at"),  # before year 1 in UTC
        ({"data": {}}, "data"),
        ({"data": {"object": [1, 2]}}, "data"),
        ({"type": "has spaces"}, "message_type"),
    ],
    ids=[
        "type",
        "id",
        "empty-id",
        "occurred-at",
        "naive-occurred-at",
        "outside-utc",
        "data",
        "data-not-object",
        "bad-type",
    ],
)
def test_missing_or_unusable_required_fields_are_422_naming_the_field(changes, field):
    with pytest.raises(UnprocessableEvent) as refused:
        adapt(MAPPED, body(**changes))

    assert refused.value.http_status == 422
    assert refused.value.details["field"] == field


def test_malformed_json_is_400():
    with pytest.raises(MalformedBody) as refused:
        adapt(MAPPED, b'{"type": "order.created",')
    assert (refused.value.http_status, refused.value.code) == (400, "malformed_json")
    with pytest.raises(MalformedBody):
        adapt(MAPPED, b"\xff\xfe not utf-8")


def test_xml_is_checked_and_kept_as_text():
    adapter = WebhookAdapter(body_format="xml", message_type="orders05")
    xml = '<?xml version="1.0"?><ORDERS05><IDOC><BELNR>4711</BELNR></IDOC></ORDERS05>'

    event = adapt(adapter, xml.encode())

    assert event.payload == xml
    assert event.message_type == "orders05"
    for bad in (b"<ORDERS05><IDOC></ORDERS05>", b'<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>'):
        with pytest.raises(MalformedXml) as refused:
            adapt(adapter, bad)
        assert (refused.value.http_status, refused.value.code) == (400, "malformed_xml")


def test_text_is_kept_as_received():
    event = adapt(WebhookAdapter(body_format="text", message_type="csv_batch"), b"a;b\n1;2\n")

    assert event.payload == "a;b\n1;2\n"


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"message_type": "a", "message_type_path": "type"},
        {"body_format": "xml", "message_type_path": "type"},
        {"body_format": "text", "message_type": "a", "data_path": "data"},
        {"message_type": "a", "event_id_path": "id["},
        {"message_type": "a", "known_types": ["b"]},
        {"message_type": "a", "unknown": 1},
    ],
    ids=["no-type", "both-types", "xml-path", "text-path", "bad-jmespath", "fixed-not-known", "extra"],
)
def test_adapter_configuration_is_validated(config):
    with pytest.raises(ValidationError):
        WebhookAdapter.model_validate(config)


def test_an_integration_round_trips_its_inbound_webhook_through_json():
    integration = Integration.model_validate(
        {
            "integration_id": "int_x",
            "tenant_id": "t1",
            "name": "x",
            "inbound_webhook": {
                "verification": {
                    "scheme": "hmac_sha256_hex",
                    "prefix": "sha256=",
                    "secrets": ["s3cr3t-partner-key-0001"],
                },
                "adapter": MAPPED.model_dump(mode="json"),
            },
        }
    )

    again = Integration.model_validate_json(integration.model_dump_json())

    assert again == integration
    assert again.inbound_webhook is not None
    assert again.inbound_webhook.verification.scheme == "hmac_sha256_hex"
    assert "s3cr3t" not in repr(integration)


# --- issue 10: the webhook body follows receive-message's JSON rules ------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b'{"type": "order.created", "id": "e1", "data": {"amount": 1e400}}', "number"),
        (b'{"type": "order.created", "id": "e1", "data": {"amount": -Infinity}}', "number"),
        (b'{"type": "order.created", "id": "e1", "data": {"note": "\\ud800"}}', "encoding"),
        (b'{"type": "order.created", "id": "\\udfff", "data": {}}', "encoding"),
        (b'{"type": "order.created", "id": "e1", "data": {"d": ' + b"[" * 64 + b"]" * 64 + b"}}", "depth"),
    ],
    ids=["1e400", "-Infinity", "surrogate-in-data", "surrogate-in-event-id", "65-levels"],
)
def test_json_the_hub_cannot_carry_is_400(text, problem):
    with pytest.raises(MalformedBody) as refused:
        adapt(WebhookAdapter(message_type_path="type", event_id_path="id", data_path="data"), text)
    assert refused.value.details["problem"] == problem


def test_the_deepest_accepted_webhook_body_is_adapted():
    # 64 levels in all: the body, "data" and 62 more.
    text = b'{"type": "order.created", "id": "e1", "data": {"d": ' + b"[" * 62 + b"]" * 62 + b"}}"
    event = adapt(WebhookAdapter(message_type_path="type", event_id_path="id", data_path="data"), text)
    assert event.event_id == "e1"


@pytest.mark.parametrize("path_field", ["event_id_path", "data_path"])
def test_a_webhook_path_that_builds_past_the_bounds_is_422_mapping_too_large(path_field):
    """Issue 27: the adapter's paths run in the bounded engine, like a mapping's."""
    adapter = WebhookAdapter(message_type="partner_event", **{path_field: BOMB})

    with pytest.raises(MappingTooLarge) as refused:
        adapt(adapter, json.dumps(SMALL_PAYLOAD).encode())

    assert refused.value.http_status == 422
    assert refused.value.code == "mapping_too_large"
    assert refused.value.details["field"] == f"inbound_webhook.{path_field}"
    assert refused.value.details["expression"] == BOMB


def test_known_types_are_shown_sorted_whatever_order_they_were_given_in():
    # A set has no order; a stored copy and `hubctl apply`'s plan are dumped by different
    # processes (other hash seeds), so both must read the same list.
    given = ["order.updated", "order.created", "order.cancelled"]
    for order in (given, list(reversed(given))):
        dumped = WebhookAdapter(message_type_path="type", known_types=frozenset(order)).model_dump(
            mode="json"
        )
        assert dumped["known_types"] == ["order.cancelled", "order.created", "order.updated"]
