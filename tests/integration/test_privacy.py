"""Privacy (seed 000, "Privacidade"): personal data and credentials never reach logs or admin
views; the stored payload stays intact for delivery."""

from __future__ import annotations

import json

import boto3

from hub.adapters.dynamo.messages import DynamoMessageRepository
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.redaction import MASK
from hub.domain.webhook_config import InboundWebhook, StandardWebhooksVerification, WebhookAdapter
from tests.destinations import Answer
from tests.pipeline import configure, send, status

CPF = "123.456.789-09"
EMAIL = "ana.silva@example.com.br"
PAYLOAD = {"po_number": "PO-PRIV", "buyer": {"cpf": CPF, "email": EMAIL, "name": "Ana"}}


def test_the_admin_view_masks_sensitive_fields_and_delivery_gets_them_intact(
    stack, tenancy, ingest_api, worker, destination, admin_api
):
    configure(stack, tenancy, destination, sensitive_fields=("cpf", "email"))
    message_id = send(ingest_api, tenancy, PAYLOAD)
    worker()

    view = admin_api("GET", f"/api/admin/messages/{message_id}")

    assert view.status == 200
    assert view.body["payload_purged"] is False
    assert view.body["payload"]["buyer"] == {"cpf": MASK, "email": MASK, "name": "Ana"}
    assert [entry["step"] for entry in view.body["log"]] == ["process", "sent"]
    assert CPF not in json.dumps(view.body)
    assert EMAIL not in json.dumps(view.body)
    # Stored and delivered as received.
    assert json.loads(DynamoMessageRepository(stack.table).get_payload(message_id) or "") == PAYLOAD
    assert json.loads(destination.requests[0].body)["buyer"]["cpf"] == CPF


def test_a_purged_payload_is_said_so_in_the_admin_view_and_its_metadata_stays(
    stack, tenancy, ingest_api, worker, destination, admin_api
):
    configure(stack, tenancy, destination, sensitive_fields=("cpf", "email"))
    message_id = send(ingest_api, tenancy, PAYLOAD)
    worker()
    table = boto3.resource("dynamodb").Table(stack.table)
    for item in table.scan()["Items"]:  # the payload's retention ran out: TTL deleted its claim
        if str(item["PK"]).startswith("FP#"):
            table.delete_item(Key={"PK": item["PK"], "SK": item["SK"]})

    view = admin_api("GET", f"/api/admin/messages/{message_id}")

    assert view.status == 200
    assert (view.body["payload_purged"], view.body["payload"], view.body["mapped"]) == (True, None, None)
    assert (view.body["pipeline_status"], view.body["message_id"]) == ("sent", message_id)
    assert [entry["step"] for entry in view.body["log"]] == ["process", "sent"]


def test_a_destination_quoting_personal_data_back_is_masked_in_status_logs_and_views(
    stack, tenancy, ingest_api, worker, destination, admin_api, capsys
):
    configure(stack, tenancy, destination, sensitive_fields=("cpf", "email"))
    destination.script(Answer(422, json.dumps({"error": f"buyer {CPF} / {EMAIL} rejected"})))
    message_id = send(ingest_api, tenancy, PAYLOAD)
    capsys.readouterr()

    worker()

    logs = capsys.readouterr().out
    failed = status(stack, message_id)
    assert failed["pipeline_status"] == "error"
    assert MASK in failed["dest_status_text"]
    view = admin_api("GET", f"/api/admin/messages/{message_id}").body
    for shown in (logs, failed["dest_status_text"], json.dumps(view)):
        assert CPF not in shown
        assert EMAIL not in shown


def test_the_integration_view_masks_every_credential(stack, tenancy, destination, admin_api):
    configure(
        stack,
        tenancy,
        destination,
        headers={"Authorization": "Bearer live-token-123", "Accept": "application/json"},
        auth={"kind": "basic", "username": "hub", "password": "pa55word"},
    )

    view = admin_api("GET", f"/api/admin/integrations/{tenancy.integration_id}", query={"tenant_id": "t1"})

    assert view.status == 200
    connection = view.body["destination"]
    assert connection["headers"] == {"Authorization": MASK, "Accept": "application/json"}
    assert (connection["auth"]["username"], connection["auth"]["password"]) == ("hub", MASK)
    assert "live-token-123" not in json.dumps(view.body)
    assert "pa55word" not in json.dumps(view.body)
    assert view.body["connection_gone_at"] is None
    missing = admin_api("GET", "/api/admin/integrations/int_nope", query={"tenant_id": "t1"})
    assert (missing.status, missing.body["error"]["code"]) == (404, "not_found")


def test_the_integration_view_masks_inbound_webhook_secrets(stack, tenancy, admin_api):
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    config = DynamoConfigRepository(stack.table)
    integration = config.get_integration(tenancy.tenant_id, tenancy.integration_id)
    assert integration is not None
    inbound = InboundWebhook(
        verification=StandardWebhooksVerification(secrets=(secret,)),
        adapter=WebhookAdapter(message_type="order"),
    )
    config.put_integration(integration.model_copy(update={"inbound_webhook": inbound}))

    view = admin_api(
        "GET", f"/api/admin/integrations/{tenancy.integration_id}", query={"tenant_id": "t1"}
    ).body

    assert view["inbound_webhook"]["verification"]["secrets"] == MASK
    assert view["inbound_webhook"]["verification"]["scheme"] == "standard_webhooks"
    assert secret not in json.dumps(view)


def test_the_mapped_body_in_the_admin_view_is_masked_even_under_renamed_fields(
    stack, tenancy, ingest_api, worker, destination, admin_api
):
    from hub import wiring  # noqa: PLC0415
    from hub.domain.mapping_spec import MappingSpec  # noqa: PLC0415

    configure(stack, tenancy, destination, sensitive_fields=("cpf", "email"))
    repository = wiring.config_repository()
    integration = repository.get_integration(tenancy.tenant_id, tenancy.integration_id)
    assert integration is not None
    purchase_order = integration.message_types["purchase_order"].model_copy(
        update={
            "mapping": MappingSpec.model_validate(
                {
                    "output": {
                        "order": {"path": "po_number"},
                        "cpf": {"path": "buyer.cpf"},
                        "documento": {"path": "buyer.cpf"},
                        "contato": {"path": "buyer.email"},
                    }
                }
            )
        }
    )
    repository.put_integration(
        integration.model_copy(
            update={"message_types": {**integration.message_types, "purchase_order": purchase_order}}
        )
    )
    message_id = send(ingest_api, tenancy, PAYLOAD)
    worker()

    view = admin_api("GET", f"/api/admin/messages/{message_id}")

    mapped = view.body["mapped"]
    assert (mapped["ok"], mapped["mapped"], mapped["content_type"]) == (True, True, "application/json")
    assert json.loads(mapped["body"]) == {"order": "PO-PRIV", "cpf": MASK, "documento": MASK, "contato": MASK}
    assert CPF not in json.dumps(view.body)
    assert EMAIL not in json.dumps(view.body)
    # The destination got the mapped body with the values themselves.
    assert json.loads(destination.requests[0].body)["documento"] == CPF
