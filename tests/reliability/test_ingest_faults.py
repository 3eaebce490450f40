"""Reliability at the partner edge (issue 15; seed 004, section 7; seed 002, section 10): duplicate
and concurrent deliveries, bad signatures and bodies, and DynamoDB or SQS failing around the
moment a message is stored, on the local stack. The outages are real: the ingest function reaches
DynamoDB and SQS through a proxy that refuses their calls (tests/reliability/faults.py).

"Nothing stored" is read from the table (every item of every message, claims included); "applied
once" from the destination, which sees our Idempotency-Key (the message id) on each request.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import httpx
import pytest

from devstack.stack import LocalStack
from tests.reliability.conftest import (
    EdgeTenant,
    edge_error,
    edge_message_items,
    edge_messages_of,
)
from tests.reliability.faults import AwsFaultProxy, Fault
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e


def purchase_order() -> dict[str, Any]:
    return {"po_number": f"PO-{uuid.uuid4().hex[:10]}", "lines": [{"sku": "A-1", "qty": 2}]}


def accepted(answer: httpx.Response, status: int = 202) -> str:
    assert answer.status_code == status, answer.text
    return str(answer.json()["message_id"])


# --- seed 004 §7: the same event delivered twice -> one business operation --------------------


def test_the_same_event_delivered_twice_is_one_business_operation(
    edge_tenant: EdgeTenant, edge_stack: LocalStack
):
    order = purchase_order()
    message_id = accepted(edge_tenant.receive(order, idempotency_key="po-once"))

    by_key = edge_tenant.receive(order, idempotency_key="po-once")
    by_payload = edge_tenant.receive(order)  # a re-delivery without a key: the same business keys

    assert (by_key.status_code, by_key.json()) == (
        200,
        {
            "message_id": message_id,
            "pipeline_status": by_key.json()["pipeline_status"],
            "deduplicated": True,
            "deduplicated_by": "idempotency_key",
        },
    )
    assert by_payload.status_code == 200, by_payload.text
    assert (by_payload.json()["message_id"], by_payload.json()["deduplicated_by"]) == (
        message_id,
        "fingerprint",
    )
    edge_tenant.wait_until_sent(message_id)
    assert edge_tenant.deliveries(message_id) == 1
    assert edge_messages_of(edge_stack, edge_tenant.integration_id) == [message_id]


# --- seed 004 §7: two concurrent duplicate requests -> one accepted event record --------------


def test_concurrent_duplicates_make_one_accepted_record(edge_tenant: EdgeTenant, edge_stack: LocalStack):
    order = purchase_order()
    start = threading.Barrier(8)
    answers: list[httpx.Response] = []
    lock = threading.Lock()

    def post() -> None:
        start.wait()
        answer = edge_tenant.receive(order, idempotency_key="po-race")
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=post) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert len(answers) == 8
    assert all(a.status_code in (200, 202) for a in answers), [a.text for a in answers]
    assert [a.status_code for a in answers].count(202) == 1
    assert len({a.json()["message_id"] for a in answers}) == 1
    [message_id] = edge_messages_of(edge_stack, edge_tenant.integration_id)
    assert answers[0].json()["message_id"] == message_id
    edge_tenant.wait_until_sent(message_id)
    assert edge_tenant.deliveries(message_id) == 1


# --- seed 004 §7: invalid signature -> no business change -------------------------------------


def order_event(event_id: str) -> bytes:
    """A partner's webhook body (Standard Webhooks) for the tenant's webhook integration."""
    event = {"type": "order.created", "id": event_id, "data": purchase_order()}
    return json.dumps(event, separators=(",", ":")).encode()


def test_an_invalid_signature_changes_nothing(edge_tenant: EdgeTenant, edge_stack: LocalStack):
    before = edge_message_items(edge_stack)
    seen_before = len(edge_tenant.destination.requests)
    body = order_event(f"evt_{uuid.uuid4().hex}")

    wrong_secret = edge_tenant.webhook(body, "wh-1", secret="whsec_" + "d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldA==")
    other_body = edge_tenant.webhook(body, "wh-2", signed=body.replace(b"A-1", b"B-2"))

    edge_error(wrong_secret, 401, "signature_invalid")
    edge_error(other_body, 401, "signature_invalid")  # a valid signature, of a different body
    assert edge_message_items(edge_stack) == before
    # The control: the same body rightly signed is taken, and is all the destination ever sees.
    message_id = accepted(edge_tenant.webhook(body, "wh-3"))
    edge_tenant.wait_until_sent(message_id)
    assert len(edge_tenant.destination.requests) - seen_before == 1
    assert edge_tenant.deliveries(message_id) == 1
    assert edge_messages_of(edge_stack, edge_tenant.webhook_integration_id) == [message_id]


# --- seed 004 §7: valid signature, malformed JSON -> controlled rejection ---------------------


def test_a_validly_signed_malformed_body_is_refused_and_nothing_stored(
    edge_tenant: EdgeTenant, edge_stack: LocalStack
):
    before = edge_message_items(edge_stack)

    truncated = edge_tenant.webhook(b'{"type":"order.created","id":"evt_1","data":{"po', "wh-bad-json")
    not_an_event = edge_tenant.webhook(b'["order.created"]', "wh-not-object")

    edge_error(truncated, 400, "malformed_json")
    edge_error(not_an_event, 422, "missing_field")  # JSON, but not an event the adapter can read
    assert edge_message_items(edge_stack) == before
    assert edge_messages_of(edge_stack, edge_tenant.webhook_integration_id) == []


# --- seed 004 §7 / issue 15: DynamoDB unavailable before persistence --------------------------


def assert_retry_later(answer: httpx.Response, code: str) -> None:
    edge_error(answer, 503, code)
    assert int(answer.headers["Retry-After"]) > 0


# Throttling (Fault.THROTTLED) is left out: botocore backs off 1 s per retry, a slower same answer.
@pytest.mark.parametrize("fault", [Fault.UNAVAILABLE, Fault.DROP])
def test_dynamodb_unavailable_before_persistence_acknowledges_nothing(
    edge_tenant: EdgeTenant, edge_stack: LocalStack, edge_faults: AwsFaultProxy, fault: Fault
):
    order = purchase_order()
    before = edge_message_items(edge_stack)
    sends_before = len(edge_faults.seen("sqs", "SendMessage"))
    calls_before = len(edge_faults.calls)
    edge_faults.fail("dynamodb", fault=fault)

    refused = edge_tenant.receive(order, idempotency_key="po-db-down")

    assert_retry_later(refused, "storage_unavailable")
    refused_calls = [c for c in edge_faults.calls[calls_before:] if c.refused]
    assert refused_calls
    assert {c.service for c in refused_calls} == {"dynamodb"}
    assert len(edge_faults.seen("sqs", "SendMessage")) == sends_before  # nothing queued either
    assert edge_message_items(edge_stack) == before

    edge_faults.heal()
    message_id = accepted(edge_tenant.receive(order, idempotency_key="po-db-down"))  # new: 202

    edge_tenant.wait_until_sent(message_id)
    assert edge_tenant.deliveries(message_id) == 1
    assert edge_messages_of(edge_stack, edge_tenant.integration_id) == [message_id]


# --- seed 002 §10: the broker (SQS) unavailable at the door -----------------------------------


def test_sqs_unavailable_stores_nothing_and_the_resend_makes_one_message(
    edge_tenant: EdgeTenant, edge_stack: LocalStack, edge_faults: AwsFaultProxy
):
    order = purchase_order()
    before = edge_message_items(edge_stack)
    edge_faults.fail("sqs", "SendMessage", fault=Fault.DROP)
    writes_before = len(edge_faults.seen("dynamodb", "PutItem"))

    refused = edge_tenant.receive(order, idempotency_key="po-sqs-down")

    assert_retry_later(refused, "queue_unavailable")
    assert [c.refused for c in edge_faults.seen("sqs", "SendMessage")][-1]
    assert len(edge_faults.seen("dynamodb", "PutItem")) == writes_before
    assert edge_message_items(edge_stack) == before

    edge_faults.heal()
    message_id = accepted(edge_tenant.receive(order, idempotency_key="po-sqs-down"))
    again = edge_tenant.receive(order, idempotency_key="po-sqs-down")

    assert (again.status_code, again.json()["message_id"]) == (200, message_id)
    edge_tenant.wait_until_sent(message_id)
    assert edge_tenant.deliveries(message_id) == 1
    assert edge_messages_of(edge_stack, edge_tenant.integration_id) == [message_id]


# --- DynamoDB failing after the enqueue: an orphan step the worker drops -----------------------


def pipeline_steps_naming(stack: LocalStack, message_id: str) -> int:
    """Step messages for `message_id` still on the pipeline queue (visible, delayed or in
    flight). The delayed ones are made due at once, as SQS would make them in a few seconds:
    the worker's orphan re-checks wait 5 s each (read from moto, which runs in this process)."""
    from moto.core import DEFAULT_ACCOUNT_ID  # noqa: PLC0415 - moto's state, not its API
    from moto.sqs.models import sqs_backends  # noqa: PLC0415

    name = str(stack.resources["PipelineQueue"]).rsplit("/", 1)[-1]
    queue = sqs_backends[DEFAULT_ACCOUNT_ID][stack.region].get_queue(name)
    naming = [m for m in list(queue._messages) if json.loads(m.body).get("message_id") == message_id]
    for message in naming:
        if message.delayed:
            message.delayed_until = 0
    return len(naming)


def test_dynamodb_failing_after_the_enqueue_leaves_an_orphan_the_worker_drops(
    edge_tenant: EdgeTenant, edge_stack: LocalStack, edge_faults: AwsFaultProxy
):
    order = purchase_order()
    before = edge_message_items(edge_stack)
    edge_faults.fail("dynamodb", "PutItem", fault=Fault.UNAVAILABLE)

    refused = edge_tenant.receive(order, idempotency_key="po-tx-down")

    assert_retry_later(refused, "storage_unavailable")
    sent = edge_faults.seen("sqs", "SendMessage")[-1]
    assert not sent.refused  # the step went out first...
    orphan = json.loads(sent.body["MessageBody"])["message_id"]
    assert edge_faults.seen("dynamodb", "PutItem")[-1].refused  # ...then the store failed
    assert edge_message_items(edge_stack) == before

    edge_faults.heal()
    message_id = accepted(edge_tenant.receive(order, idempotency_key="po-tx-down"))

    assert message_id != orphan
    edge_tenant.wait_until_sent(message_id)
    # The orphan's step leaves the queue: dropped by the worker, not run (nothing delivered).
    wait_for(
        lambda: pipeline_steps_naming(edge_stack, orphan),
        "the orphan step off the pipeline queue",
        until=lambda steps: steps == 0,
    )
    assert edge_tenant.deliveries(orphan) == 0
    assert edge_tenant.deliveries(message_id) == 1
    assert edge_messages_of(edge_stack, edge_tenant.integration_id) == [message_id]
    assert not {item for item in edge_message_items(edge_stack) if orphan in item[0]}
