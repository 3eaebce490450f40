"""POST /api/webhook/{tenant_id}/{integration_id} through the real IngestApiFunction handler, storage and
queue (moto, resources from template.yaml)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hub.adapters.aws import client
from hub.adapters.dynamo.messages import DynamoMessageRepository
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.tenancy import Integration, IntegrationMode, MessageTypeConfig
from hub.domain.webhook_config import InboundWebhook
from hub.webhooks.signatures import sign_standard_webhooks
from tests.events import http_event, load_event

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ROTATED = "whsec_" + base64.b64encode(b"the next secret, rotated in now!").decode()
GITHUB_SECRET = "gh-webhook-secret"
HOOKS = "int_hooks"  # tenant t1, Standard Webhooks
GITHUB = "int_github"  # tenant t1, hmac_sha256_hex with the sha256= prefix
SAP = "int_sap_xml"  # tenant t2, api_key, XML bodies (an IDoc)
SAP_KEY = "sap-webhook-key-0123456789abcdef"

PAYLOAD = {
    "type": "order.created",
    "id": "evt_1",
    "created": "2026-11-29T11:59:58-03:00",
    "tenant_id": "t2",  # a payload claiming another tenant: the integration decides
    "data": {"po_number": "PO-1"},
}


@pytest.fixture
def webhooks(stack, tenancy) -> None:
    config = DynamoConfigRepository(stack.table)
    adapter = {
        "message_type_path": "type",
        "known_types": ["order.created", "order.cancelled"],
        "event_id_path": "id",
        "occurred_at_path": "created",
    }
    for integration_id, verification in (
        (HOOKS, {"scheme": "standard_webhooks", "secrets": [SECRET, ROTATED]}),
        (GITHUB, {"scheme": "hmac_sha256_hex", "prefix": "sha256=", "secrets": [GITHUB_SECRET]}),
    ):
        config.put_integration(
            Integration(
                integration_id=integration_id,
                tenant_id="t1",
                name=integration_id,
                mode=IntegrationMode.ORCHESTRATION,
                message_types={"order.created": MessageTypeConfig(duplicate_key_fields=("data.po_number",))},
                inbound_webhook=InboundWebhook.model_validate(
                    {"verification": verification, "adapter": adapter}
                ),
            )
        )
    config.put_integration(
        Integration(
            integration_id=SAP,
            tenant_id="t2",
            name=SAP,
            message_types={"orders05": MessageTypeConfig()},
            inbound_webhook=InboundWebhook.model_validate(
                {
                    "verification": {
                        "scheme": "api_key",
                        "keys_sha256": [hashlib.sha256(SAP_KEY.encode()).hexdigest()],
                    },
                    "adapter": {"body_format": "xml", "message_type": "orders05"},
                }
            ),
        )
    )


def raw(payload: dict[str, Any] | None = None, **changes: Any) -> bytes:
    return json.dumps({**(payload or PAYLOAD), **changes}).encode()


def standard(
    body: bytes,
    *,
    integration_id: str = HOOKS,
    tenant_id: str = "t1",
    secret: str = SECRET,
    msg_id: str = "msg_delivery_1",
    timestamp: int | None = None,
    base64_body: bool = False,
) -> dict[str, Any]:
    """A Standard Webhooks delivery signed now (or at `timestamp`), from the sample event."""
    ts = int(time.time()) if timestamp is None else timestamp
    return http_event(
        "webhook_standard.json",
        body=body if base64_body else body.decode(),
        headers={
            "webhook-id": msg_id,
            "webhook-timestamp": str(ts),
            "webhook-signature": sign_standard_webhooks(secret, msg_id, ts, body),
        },
        path_parameters={"tenant_id": tenant_id, "integration_id": integration_id},
    )


def github(body: bytes, secret: str = GITHUB_SECRET, integration_id: str = GITHUB) -> dict[str, Any]:
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return http_event(
        "webhook_standard.json",
        body=body.decode(),
        headers={
            "webhook-id": None,
            "webhook-timestamp": None,
            "webhook-signature": None,
            "x-hub-signature-256": f"sha256={signature}",
        },
        path_parameters={"tenant_id": "t1", "integration_id": integration_id},
    )


def sap(body: bytes, key: str = SAP_KEY) -> dict[str, Any]:
    return http_event(
        "webhook_standard.json",
        body=body.decode(),
        headers={
            "webhook-id": None,
            "webhook-timestamp": None,
            "webhook-signature": None,
            "content-type": "application/xml",
            "x-webhook-key": key,
        },
        path_parameters={"tenant_id": "t2", "integration_id": SAP},
    )


IDOC = '<?xml version="1.0"?><ORDERS05><IDOC><E1EDK01><BELNR>4711</BELNR></E1EDK01></IDOC></ORDERS05>'


def emf_metrics(out: str) -> dict[str, float]:
    """Metric name -> value of every EMF document printed on stdout."""
    found: dict[str, float] = {}
    for line in out.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            document = json.loads(line)
            for definition in document["_aws"]["CloudWatchMetrics"]:
                for metric in definition["Metrics"]:
                    value = document[metric["Name"]]
                    found[metric["Name"]] = sum(value) if isinstance(value, list) else value
    return found


def payload_of(stack, message_id: str) -> dict[str, Any]:
    return json.loads(DynamoMessageRepository(stack.table).get_payload(message_id) or "null")


class TestAcceptedDelivery:
    def test_is_stored_under_the_integrations_tenant_and_enqueued(self, stack, webhooks, ingest_api):
        answer = ingest_api(standard(raw()))

        assert answer.status == 202
        assert answer.body["deduplicated"] is False
        [record] = stack.message_items()
        assert record["message_id"]["S"] == answer.body["message_id"]
        assert record["tenant_id"]["S"] == "t1"
        assert record["integration_id"]["S"] == HOOKS
        assert record["message_type"]["S"] == "order.created"
        assert record["external_id"]["S"] == "evt_1"
        assert record["idempotency_key"]["S"] == "msg_delivery_1"
        assert record["occurred_at"]["S"] == "2026-11-29T14:59:58.000000Z"
        assert payload_of(stack, answer.body["message_id"]) == PAYLOAD
        [step] = stack.drain_queue()
        assert (step["message_id"], step["tenant_id"], step["step"]) == (
            answer.body["message_id"],
            "t1",
            "process",
        )

    def test_a_payload_claiming_another_tenant_is_stored_under_the_integrations_only(
        self, stack, webhooks, ingest_api
    ):
        answer = ingest_api(standard(raw(tenant_id="t2", id="evt_t2"), msg_id="msg_t2"))

        assert answer.status == 202
        [record] = stack.message_items()
        assert record["tenant_id"]["S"] == "t1"
        written = [i for i in stack.scan() if i["PK"]["S"].startswith(("MSG#", "IDEM#", "FP#"))]
        assert {i["tenant_id"]["S"] for i in written if "tenant_id" in i} == {"t1"}
        assert not [i for i in written if "t2" in i.get("GSI1PK", {}).get("S", "")]

    def test_a_redelivery_answers_200_deduplicated(self, stack, webhooks, ingest_api):
        first = ingest_api(standard(raw()))
        again = ingest_api(standard(raw()))  # re-signed with a new timestamp, same webhook-id

        assert again.status == 200
        assert again.body == {**first.body, "deduplicated": True, "deduplicated_by": "idempotency_key"}
        assert len(stack.message_items()) == 1

    def test_an_unusable_webhook_id_is_refused_naming_that_header(self, stack, webhooks, ingest_api):
        answer = ingest_api(standard(raw(), msg_id="msg delivery\u00e9"))  # signed, not printable ASCII

        assert answer.status == 400
        assert answer.body["error"]["code"] == "invalid_idempotency_key"
        assert answer.body["error"]["details"]["header"] == "webhook-id"
        assert "webhook-id" in answer.body["error"]["message"]
        assert stack.message_items() == []

    def test_the_rotated_secret_is_accepted_too(self, stack, webhooks, ingest_api):
        answer = ingest_api(standard(raw(), secret=ROTATED))

        assert answer.status == 202

    def test_a_base64_body_is_verified_on_the_decoded_bytes(self, stack, webhooks, ingest_api):
        event = standard(raw(), base64_body=True)
        assert event["isBase64Encoded"] is True

        answer = ingest_api(event)

        assert answer.status == 202
        assert payload_of(stack, answer.body["message_id"])["data"] == {"po_number": "PO-1"}

    def test_github_style_event_id_from_the_payload_deduplicates(self, stack, webhooks, ingest_api):
        first = ingest_api(github(raw(id="evt_gh")))
        again = ingest_api(github(raw(id="evt_gh")))

        assert (first.status, again.status) == (202, 200)
        assert again.body["deduplicated_by"] == "idempotency_key"
        [record] = stack.message_items()
        assert record["idempotency_key"]["S"] == "evt_gh"

    def test_the_sample_event_is_signed_with_the_documented_secret(self, stack, webhooks, ingest_api):
        # events/webhook_standard.json is signed with SECRET at its own (past) timestamp: the
        # handler finds the signature valid and only the timestamp stale.
        sample = load_event("webhook_standard.json")
        event = http_event(
            "webhook_standard.json", path_parameters={"tenant_id": "t1", "integration_id": HOOKS}
        )
        headers = sample["headers"]
        resigned = sign_standard_webhooks(
            SECRET, headers["webhook-id"], int(headers["webhook-timestamp"]), sample["body"].encode()
        )

        answer = ingest_api(event)

        assert resigned == headers["webhook-signature"]
        assert (answer.status, answer.body["error"]["code"]) == (401, "signature_expired")

    def test_an_xml_body_is_kept_as_text_under_the_integrations_tenant(self, stack, webhooks, ingest_api):
        answer = ingest_api(sap(IDOC.encode()))

        assert answer.status == 202
        [record] = stack.message_items()
        assert (record["tenant_id"]["S"], record["message_type"]["S"]) == ("t2", "orders05")
        assert record["payload_format"]["S"] == "text"
        assert DynamoMessageRepository(stack.table).get_payload(record["message_id"]["S"]) == IDOC

    def test_concurrent_identical_deliveries_store_one_message(self, stack, webhooks, ingest_api):
        event = standard(raw(id="evt_burst"), msg_id="msg_burst")

        with ThreadPoolExecutor(max_workers=20) as pool:
            answers = list(pool.map(lambda _: ingest_api(event), range(20)))

        assert {a.status for a in answers} <= {200, 202}
        assert sum(a.status == 202 for a in answers) == 1
        assert len({a.body["message_id"] for a in answers}) == 1
        assert len(stack.message_items()) == 1


class TestRefusedDelivery:
    def test_an_invalid_signature_is_401_changes_nothing_and_counts_a_failure(
        self, stack, webhooks, ingest_api, capsys
    ):
        before = stack.scan()
        capsys.readouterr()

        answer = ingest_api(standard(raw(), secret="whsec_" + base64.b64encode(b"x" * 24).decode()))

        assert answer.status == 401
        assert answer.body["error"]["code"] == "signature_invalid"
        assert set(answer.body["error"]) <= {"code", "message", "details"}
        assert stack.scan() == before
        assert stack.drain_queue() == []
        out = capsys.readouterr().out
        assert emf_metrics(out).get("SignatureFailures") == 1.0
        assert SECRET not in out

    def test_a_body_changed_after_signing_is_401(self, stack, webhooks, ingest_api):
        event = standard(raw())
        event["body"] = json.dumps(PAYLOAD, separators=(",", ":"))  # same JSON, other bytes

        answer = ingest_api(event)

        assert (answer.status, answer.body["error"]["code"]) == (401, "signature_invalid")
        assert stack.message_items() == []

    def test_missing_signature_headers_are_401(self, stack, webhooks, ingest_api):
        event = standard(raw())
        del event["headers"]["webhook-signature"]

        answer = ingest_api(event)

        assert (answer.status, answer.body["error"]["code"]) == (401, "signature_invalid")

    def test_a_stale_timestamp_is_401_expired(self, stack, webhooks, ingest_api, capsys):
        capsys.readouterr()
        answer = ingest_api(standard(raw(), timestamp=int(time.time()) - 600))

        assert (answer.status, answer.body["error"]["code"]) == (401, "signature_expired")
        assert stack.message_items() == []
        assert emf_metrics(capsys.readouterr().out).get("SignatureFailures") == 1.0

    def test_valid_signature_but_malformed_json_is_400_and_nothing_is_stored(
        self, stack, webhooks, ingest_api
    ):
        before = stack.scan()

        answer = ingest_api(standard(b'{"type": "order.created", "id": '))

        assert (answer.status, answer.body["error"]["code"]) == (400, "malformed_json")
        assert stack.scan() == before
        assert stack.drain_queue() == []

    def test_a_wrong_key_or_malformed_xml_is_refused_and_nothing_is_stored(self, stack, webhooks, ingest_api):
        wrong_key = ingest_api(sap(IDOC.encode(), key="sap-guess"))
        broken = ingest_api(sap(b"<ORDERS05><IDOC></ORDERS05>"))
        hostile = ingest_api(sap(b'<!DOCTYPE a [<!ENTITY b "c">]><a>&b;</a>'))

        assert (wrong_key.status, wrong_key.body["error"]["code"]) == (401, "signature_invalid")
        assert (broken.status, broken.body["error"]["code"]) == (400, "malformed_xml")
        assert (hostile.status, hostile.body["error"]["code"]) == (400, "malformed_xml")
        assert stack.message_items() == []

    @pytest.mark.parametrize(
        ("changes", "status", "code", "field"),
        [
            ({"type": "order.shipped"}, 422, "unknown_event_type", "message_type"),
            ({"id": None}, 422, "missing_field", "event_id"),
        ],
    )
    def test_adapter_failures_are_422_naming_the_field(
        self, stack, webhooks, ingest_api, changes, status, code, field
    ):
        answer = ingest_api(standard(raw(**changes)))

        assert (answer.status, answer.body["error"]["code"]) == (status, code)
        assert answer.body["error"]["details"]["field"] == field
        assert stack.message_items() == []

    def test_a_verified_type_the_integration_does_not_define_is_422(self, stack, webhooks, ingest_api):
        # order.cancelled passes the adapter's known_types, but the integration defines only
        # order.created (and refuses undefined types, the default).
        answer = ingest_api(standard(raw(type="order.cancelled")))

        assert (answer.status, answer.body["error"]["code"]) == (422, "unknown_message_type")
        assert answer.body["error"]["details"] == {"field": "message_type", "known_types": ["order.created"]}
        assert stack.message_items() == []
        assert stack.drain_queue() == []

    @pytest.mark.parametrize(
        "content_type", [None, "text/plain", "application/xml", "application/x-www-form-urlencoded"]
    )
    def test_a_content_type_the_adapter_does_not_take_is_415_after_the_signature(
        self, stack, webhooks, ingest_api, content_type
    ):
        signed = standard(raw())
        signed["headers"].pop("content-type")
        if content_type:
            signed["headers"]["content-type"] = content_type
        unsigned = {**signed, "headers": {**signed["headers"], "webhook-signature": "v1,bm9wZQ=="}}

        answer = ingest_api(signed)

        assert (answer.status, answer.body["error"]["code"]) == (415, "unsupported_media_type")
        assert answer.body["error"]["details"] == {"accepted": ["application/json", "application/*+json"]}
        assert ingest_api(unsigned).status == 401  # an unsigned caller learns nothing more
        assert stack.message_items() == []

    def test_xml_deliveries_take_xml_content_types(self, stack, webhooks, ingest_api):
        as_text_xml = sap(IDOC.encode())
        as_text_xml["headers"]["content-type"] = "text/xml; charset=utf-8"
        as_json = sap(IDOC.encode())
        as_json["headers"]["content-type"] = "application/json"

        assert ingest_api(as_text_xml).status == 202
        answer = ingest_api(as_json)
        assert (answer.status, answer.body["error"]["code"]) == (415, "unsupported_media_type")

    def test_an_oversized_body_is_413_before_anything_reads_it(self, stack, webhooks, ingest_api):
        reads: list[str] = []
        events = client("dynamodb").meta.events
        events.register("before-call.dynamodb.*", lambda **_: reads.append("call"), unique_id="count-any")
        try:
            answer = ingest_api(standard(raw(blob="x" * 300_000)))
        finally:
            events.unregister("before-call.dynamodb.*", unique_id="count-any")

        assert (answer.status, answer.body["error"]["code"]) == (413, "payload_too_large")
        assert reads == []

    @pytest.mark.parametrize(
        ("tenant_id", "integration_id"),
        [
            ("t1", "int_nope"),
            ("t1", "int_erp"),
            ("t1", "bad id!"),
            # Issue 27, point 7: another tenant's integration (t1's int_hooks) is exactly as
            # missing as one that does not exist; so is any integration of an unknown tenant.
            ("t2", HOOKS),
            ("t_nobody", HOOKS),
            ("bad tenant!", HOOKS),
        ],
    )
    def test_unknown_or_not_webhook_enabled_integrations_are_the_same_404(
        self, stack, webhooks, ingest_api, tenant_id, integration_id
    ):
        answer = ingest_api(standard(raw(), tenant_id=tenant_id, integration_id=integration_id))

        assert answer.status == 404
        assert answer.body == {"error": {"code": "not_found", "message": "integration not found"}}

    def test_a_signature_for_another_integration_is_401(self, stack, webhooks, ingest_api):
        event = github(raw(), integration_id=HOOKS)  # a valid GitHub-style signature, wrong scheme

        answer = ingest_api(event)

        assert answer.status == 401
        assert stack.message_items() == []


def test_a_queue_failure_is_503_and_the_partners_retry_succeeds(stack, webhooks, ingest_api):
    def boom(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "injected"}}, "SendMessage")

    events = client("sqs").meta.events
    events.register("before-call.sqs.SendMessage", boom, unique_id="fail-send")
    try:
        failed = ingest_api(standard(raw()))
    finally:
        events.unregister("before-call.sqs.SendMessage", unique_id="fail-send")
    retried = ingest_api(standard(raw()))

    assert (failed.status, failed.body["error"]["code"]) == (503, "queue_unavailable")
    assert failed.headers.get("Retry-After") == "5"
    assert (retried.status, retried.body["deduplicated"]) == (202, False)
    assert len(stack.message_items()) == 1


def test_one_read_for_the_integration_then_one_transaction_a_refusal_only_the_read(
    stack, webhooks, ingest_api
):
    calls: list[str] = []
    events = client("dynamodb").meta.events
    events.register(
        "before-call.dynamodb.*",
        lambda event_name, **_: calls.append(event_name.split(".")[-1]),
        unique_id="count-ops",
    )
    try:
        accepted = ingest_api(standard(raw()))
        accepted_calls = list(calls)
        calls.clear()
        refused = ingest_api(standard(raw(id="evt_2"), msg_id="msg_2", secret=ROTATED[:-4] + "AAA="))
    finally:
        events.unregister("before-call.dynamodb.*", unique_id="count-ops")

    assert (accepted.status, refused.status) == (202, 401)
    # The integration and its tenant (cold cache; a verified delivery only), then the writes:
    # the claims (the webhook id's, the payload's) and the message; claims are never read first.
    assert accepted_calls == ["GetItem", "GetItem", "PutItem", "PutItem", "PutItem"]
    assert calls == []  # a warm instance knows the integration: a refusal costs no request


def test_a_disabled_tenants_webhooks_are_401_after_the_signature_and_202_once_enabled(
    stack, webhooks, ingest_api, admin_api, monkeypatch
):
    from hub import wiring  # noqa: PLC0415

    monkeypatch.setenv("HUB_CONFIG_CACHE_SECONDS", "0")
    wiring.reset()
    admin_api("POST", "/api/admin/tenants/t1/disable")

    refused = ingest_api(standard(raw()))
    badly_signed = ingest_api(standard(raw(), secret=ROTATED[:-4] + "AAA="))
    admin_api("POST", "/api/admin/tenants/t1/enable")
    accepted = ingest_api(standard(raw()))

    assert (refused.status, refused.body["error"]["code"]) == (401, "unauthorized")
    assert refused.body["error"]["message"] == "this tenant is disabled"
    # Whoever cannot sign learns nothing about the tenant: the signature is checked first.
    assert (badly_signed.status, badly_signed.body["error"]["code"]) == (401, "signature_invalid")
    assert accepted.status == 202
    assert len(stack.message_items()) == 1
