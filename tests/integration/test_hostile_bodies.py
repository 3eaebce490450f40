"""Hostile JSON bodies (issue 10, items 1-4) through the real IngestApiFunction handler, storage
and queue (moto), on both endpoints: 400 `malformed_json` at the door, 401 first without a
credential, and whatever the door accepts the worker maps and delivers."""

from __future__ import annotations

import json

import pytest

from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.strict_json import MAX_NESTING_DEPTH
from hub.domain.tenancy import Destination, Integration, IntegrationMode, MessageTypeConfig
from hub.mapping import MappingSpec
from tests.integration.test_inbound_webhook import standard, webhooks  # noqa: F401 (a fixture)
from tests.integration.test_receive_message import receive
from tests.pipeline import status


def nested(depth: int, leaf: str = '"x"') -> str:
    """JSON text of objects `{"a": ...}` nested `depth` levels around `leaf`."""
    return '{"a": ' * depth + leaf + "}" * depth


def receive_text(tenancy, payload_text: str, **fields: str) -> str:
    """A receive-message body around payload JSON text (the body object is one more level)."""
    extra = "".join(f", {json.dumps(k)}: {v}" for k, v in fields.items())
    return (
        f'{{"integration_id": "{tenancy.integration_id}", "message_type": "purchase_order", '
        f'"payload": {payload_text}{extra}}}'
    )


def webhook_text(data_text: str, **fields: str) -> str:
    """A webhook body for int_hooks (type, id, created, data) around `data` JSON text."""
    extra = "".join(f", {json.dumps(k)}: {v}" for k, v in fields.items())
    return (
        '{"type": "order.created", "id": "evt_hostile", "created": "2026-11-29T11:59:58-03:00", '
        f'"data": {data_text}{extra}}}'
    )


def assert_refused(answer, status: int, code: str) -> None:
    assert (answer.status, answer.body["error"]["code"]) == (status, code), answer.body
    assert set(answer.body) == {"error"}


class TestDeepNesting:
    """Item 1: a RecursionError was a 500, even without an API key."""

    @pytest.mark.parametrize("depth", [600, 990, 1_000, 5_000])
    def test_without_a_key_is_401_with_one_400(self, stack, tenancy, ingest_api, depth):
        text = receive_text(tenancy, nested(depth))

        assert_refused(ingest_api(receive(tenancy, text, key=None)), 401, "unauthorized")
        assert_refused(ingest_api(receive(tenancy, text, key="hub_unknown")), 401, "unauthorized")
        with_key = ingest_api(receive(tenancy, text))
        assert_refused(with_key, 400, "malformed_json")
        assert with_key.body["error"]["details"] == {"problem": "depth", "max_depth": MAX_NESTING_DEPTH}
        assert stack.message_items() == []

    @pytest.mark.parametrize("depth", [600, 1_000])
    @pytest.mark.usefixtures("webhooks")
    def test_a_signed_webhook_is_400_an_unsigned_one_401(self, stack, ingest_api, depth):
        body = webhook_text(nested(depth)).encode()
        unsigned = standard(body)
        unsigned["headers"]["webhook-signature"] = "v1,bm90IGEgc2lnbmF0dXJl"

        assert_refused(ingest_api(standard(body)), 400, "malformed_json")
        assert_refused(ingest_api(unsigned), 401, "signature_invalid")
        assert stack.message_items() == []


class TestLoneSurrogates:
    """Item 2: `"\\ud800"` escapes were a 500 (UnicodeEncodeError when hashing the payload)."""

    @pytest.mark.parametrize(
        ("payload", "fields"),
        [
            ('{"name": "\\ud800"}', {}),
            ('{"\\udc00": 1}', {}),
            ('"<order>\\udbff</order>"', {}),
            ('{"po_number": "PO-1"}', {"external_id": '"evt-\\ud800"'}),
        ],
        ids=["payload-value", "payload-key", "string-payload", "external-id"],
    )
    def test_receive_message_is_400_malformed_json(self, stack, tenancy, ingest_api, payload, fields):
        answer = ingest_api(receive(tenancy, receive_text(tenancy, payload, **fields)))

        assert_refused(answer, 400, "malformed_json")
        assert answer.body["error"]["details"] == {"problem": "encoding"}
        assert stack.message_items() == []

    @pytest.mark.parametrize(
        "body", [webhook_text('{"note": "\\ud800"}'), webhook_text("{}", id='"\\udfff"')], ids=["data", "id"]
    )
    @pytest.mark.usefixtures("webhooks")
    def test_a_correctly_signed_webhook_is_400_malformed_json(self, stack, ingest_api, body):
        answer = ingest_api(standard(body.encode()))

        assert_refused(answer, 400, "malformed_json")
        assert stack.message_items() == []


class TestNumbersJsonCannotCarry:
    """Item 3: NaN / Infinity / 1e400 were accepted (202) and then failed the worker forever."""

    @pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "9" * 400])
    @pytest.mark.usefixtures("webhooks")
    def test_are_refused_at_the_door_on_both_endpoints(self, stack, tenancy, ingest_api, number):
        direct = ingest_api(receive(tenancy, receive_text(tenancy, f'{{"amount": {number}}}')))
        hooked = ingest_api(standard(webhook_text(f'{{"amount": {number}}}').encode()))

        for answer in (direct, hooked):
            assert_refused(answer, 400, "malformed_json")
            assert answer.body["error"]["details"] == {"problem": "number"}
        assert stack.message_items() == []
        assert stack.drain_queue() == []


class TestOneNestingLimit:
    """Item 4: 600-990 levels were accepted and then stuck in `received`. The body may nest
    MAX_NESTING_DEPTH levels, the same on both endpoints; the worker delivers the deepest."""

    @pytest.mark.usefixtures("webhooks")
    def test_one_level_more_is_refused_on_both_endpoints(self, stack, tenancy, ingest_api):
        # The body object is level 1, so its payload / data may nest one level less.
        direct = ingest_api(receive(tenancy, receive_text(tenancy, nested(MAX_NESTING_DEPTH))))
        hooked = ingest_api(standard(webhook_text(nested(MAX_NESTING_DEPTH)).encode()))

        for answer in (direct, hooked):
            assert_refused(answer, 400, "malformed_json")
            assert answer.body["error"]["details"]["max_depth"] == MAX_NESTING_DEPTH
        assert stack.message_items() == []

    @pytest.mark.usefixtures("webhooks")
    def test_the_deepest_accepted_body_is_accepted_on_both_endpoints(self, stack, tenancy, ingest_api):
        direct = ingest_api(receive(tenancy, receive_text(tenancy, nested(MAX_NESTING_DEPTH - 1))))
        hooked = ingest_api(standard(webhook_text(nested(MAX_NESTING_DEPTH - 1)).encode()))

        assert (direct.status, hooked.status) == (202, 202)

    @pytest.mark.parametrize(
        ("mapping", "content_type"),
        [
            (None, "application/json"),
            ({"output": {"order": {"path": "@"}}}, "application/json"),
            (
                {"output_format": "xml", "xml_root": "order", "output": {"doc": {"path": "@"}}},
                "application/xml",
            ),
        ],
        ids=["passthrough", "mapped-to-json", "mapped-to-xml"],
    )
    def test_the_deepest_accepted_payload_is_mapped_and_delivered(
        self, stack, tenancy, ingest_api, worker, destination, mapping, content_type
    ):
        DynamoConfigRepository(stack.table).put_integration(
            Integration(
                integration_id=tenancy.integration_id,
                tenant_id="t1",
                name="deep",
                mode=IntegrationMode.ORCHESTRATION,
                destination=Destination(url=destination.url),
                message_types={
                    "purchase_order": MessageTypeConfig(
                        mapping=MappingSpec.model_validate(mapping) if mapping else None
                    )
                },
            )
        )
        payload_text = nested(MAX_NESTING_DEPTH - 1)
        answer = ingest_api(receive(tenancy, receive_text(tenancy, payload_text)))
        assert answer.status == 202, answer.body

        worker()

        final = status(stack, answer.body["message_id"])
        assert final["pipeline_status"] == "sent", final.get("dest_status_text")
        [request] = destination.requests
        assert request.headers["content-type"].startswith(content_type)
        sent = request.body.decode()
        if content_type == "application/xml":
            inner = "<a>" * (MAX_NESTING_DEPTH - 2) + "<a>x</a>" + "</a>" * (MAX_NESTING_DEPTH - 2)
            assert sent == f"<order><doc>{inner}</doc></order>"
        else:
            document = json.loads(sent)
            expected = json.loads(payload_text)
            assert document == (expected if mapping is None else {"order": expected})
