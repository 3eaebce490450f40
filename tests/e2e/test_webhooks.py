"""An inbound webhook on the local stack: a signed Standard Webhooks delivery through the HTTP
API, the real handler in its own process, the worker, and the echo destination."""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid

import httpx
import pytest

from devstack.demo import DEMO_TENANT_ID, pointed_at
from devstack.send_webhook import demo_delivery, send
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.tenancy import Destination, Integration, IntegrationMode, MessageTypeConfig
from hub.domain.webhook_config import InboundWebhook
from hub.mapping.engine import to_json
from hub.webhooks.signatures import sign_standard_webhooks
from tests.pipeline import wait_for_status

pytestmark = pytest.mark.e2e

SECRET = "whsec_" + base64.b64encode(b"e2e webhook secret, local only!!").decode()
INTEGRATION_ID = "int_e2e_webhooks"


def test_a_signed_standard_webhook_is_sent_to_the_destination(api: httpx.Client, local_stack):
    with pointed_at(local_stack):
        DynamoConfigRepository(local_stack.resources["HubTable"]).put_integration(
            Integration(
                integration_id=INTEGRATION_ID,
                tenant_id=DEMO_TENANT_ID,
                name="partner webhooks -> echo destination",
                mode=IntegrationMode.ORCHESTRATION,
                destination=Destination(url=local_stack.echo_url),
                message_types={"order.created": MessageTypeConfig()},
                inbound_webhook=InboundWebhook.model_validate(
                    {
                        "verification": {"scheme": "standard_webhooks", "secrets": [SECRET]},
                        "adapter": {"message_type_path": "type", "event_id_path": "id", "data_path": "data"},
                    }
                ),
            )
        )
    po_number = f"PO-{uuid.uuid4().hex[:8]}"
    body = json.dumps({"type": "order.created", "id": f"evt_{po_number}", "data": {"po_number": po_number}})
    msg_id, timestamp = f"msg_{uuid.uuid4().hex}", int(time.time())
    headers = {
        "content-type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign_standard_webhooks(SECRET, msg_id, timestamp, body.encode()),
    }
    url = f"{local_stack.api_url}/api/webhook/{DEMO_TENANT_ID}/{INTEGRATION_ID}"

    with httpx.Client(timeout=30, trust_env=False) as partner:
        forged = partner.post(url, content=body.replace(po_number, "PO-forged"), headers=headers)
        answer = partner.post(url, content=body, headers=headers)
        again = partner.post(url, content=body, headers=headers)

    assert (forged.status_code, forged.json()["error"]["code"]) == (401, "signature_invalid")
    assert answer.status_code == 202
    message_id = answer.json()["message_id"]
    assert (again.status_code, again.json()["message_id"]) == (200, message_id)
    final = wait_for_status(api, message_id, "sent")
    assert final["dest_status"] == "200"
    assert final["message_type"] == "order.created"
    delivered = [r for r in local_stack.echo.requests if r.headers.get("idempotency-key") == message_id]
    assert len(delivered) == 1
    # The business data (data_path "data"), passed through as compact JSON.
    assert delivered[0].sha256 == hashlib.sha256(to_json({"po_number": po_number})).hexdigest()


def test_the_demo_webhook_integration_takes_the_demo_sender(api: httpx.Client, local_stack):
    po_number = f"PO-{uuid.uuid4().hex[:8]}"
    delivery_id = f"msg_{uuid.uuid4().hex}"

    first = send(local_stack.api_url, demo_delivery(po_number), delivery_id)
    again = send(local_stack.api_url, demo_delivery(po_number), delivery_id)
    wrong = send(local_stack.api_url, demo_delivery(po_number), delivery_id, secret=SECRET)

    assert first.status_code == 202
    assert again.status_code == 200
    assert again.json()["message_id"] == first.json()["message_id"]
    assert again.json()["deduplicated_by"] == "idempotency_key"
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "signature_invalid")
    final = wait_for_status(api, first.json()["message_id"], "sent")
    assert (final["message_type"], final["external_id"]) == ("order.created", f"evt_{po_number}")
