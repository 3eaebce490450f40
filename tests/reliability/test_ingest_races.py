"""The races ingest opens by writing its claims and its message separately (issue 29, option 1:
no transaction), on the local stack, through the fault proxy between the ingest function and
DynamoDB (tests/reliability/faults.py): nothing in the hub is patched.

- a crash between the claims and the message: the resend is told to wait (503 + Retry-After)
  while the claims' own request might still write it, then succeeds once;
- two resends racing for the takeover of those claims: one message;
- a message put after the ingest's deadline: refused (503), nothing stored, the resend succeeds.

Every message is counted at the destination by our Idempotency-Key (the message id).
"""

from __future__ import annotations

import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from devstack.stack import LocalStack
from hub.adapters.dynamo.table import format_ts
from hub.ingest.receive import INGEST_DEADLINE_SECONDS
from tests.reliability.conftest import EdgeTenant, edge_error, edge_messages_of
from tests.reliability.faults import AwsFaultProxy, Fault

pytestmark = pytest.mark.e2e


def purchase_order() -> dict[str, Any]:
    return {"po_number": f"PO-{uuid.uuid4().hex[:10]}", "lines": [{"sku": "A-1", "qty": 2}]}


def is_message_put(body: dict[str, Any]) -> bool:
    """The PutItem of a message item (its claims are `CLAIM` items)."""
    return body.get("Item", {}).get("SK", {}).get("S") == "STATUS"


def is_claim_put(body: dict[str, Any]) -> bool:
    return body.get("Item", {}).get("SK", {}).get("S") == "CLAIM"


def claims_of(stack: LocalStack, tenant_id: str) -> list[dict[str, Any]]:
    """The tenant's claims (Idempotency-Key and fingerprint) as stored."""
    dynamodb = stack.client("dynamodb")
    found: list[dict[str, Any]] = []
    request: dict[str, Any] = {"TableName": stack.resources["HubTable"]}
    while True:
        page = dynamodb.scan(**request)
        found += [
            item
            for item in page.get("Items", [])
            if item["PK"]["S"].startswith((f"IDEM#{tenant_id}#", f"FP#{tenant_id}#"))
        ]
        if "LastEvaluatedKey" not in page:
            return found
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def age_claims(stack: LocalStack, tenant_id: str) -> None:
    """Moves the tenant's claims a minute into the past, as if the pending window had passed
    (fast-forwarded, as the worker-fault tests run a lease out)."""
    past = format_ts(datetime.now(UTC) - timedelta(minutes=1))
    for claim in claims_of(stack, tenant_id):
        stack.client("dynamodb").update_item(
            TableName=stack.resources["HubTable"],
            Key={"PK": claim["PK"], "SK": claim["SK"]},
            UpdateExpression="SET claimed_at = :past",
            ExpressionAttributeValues={":past": {"S": past}},
        )


def crash_before_the_message(
    tenant: EdgeTenant, faults: AwsFaultProxy, order: dict[str, Any], key: str
) -> None:
    """A request whose claims were written and whose message's write failed: what a crash
    between the two leaves (claims naming a message that never comes)."""
    faults.fail_when("dynamodb", "PutItem", is_message_put, Fault.UNAVAILABLE)
    try:
        edge_error(tenant.receive(order, idempotency_key=key), 503, "storage_unavailable")
    finally:
        faults.heal()


def test_a_crash_between_the_claims_and_the_message_costs_a_wait_never_a_loss_or_a_double(
    edge_other_tenant: EdgeTenant, edge_stack: LocalStack, edge_faults: AwsFaultProxy
):
    edge_tenant = edge_other_tenant  # a tenant of its own: its messages and claims are this test's
    order, key = purchase_order(), f"crash-{uuid.uuid4().hex[:8]}"
    crash_before_the_message(edge_tenant, edge_faults, order, key)
    assert {c["PK"]["S"].split("#")[0] for c in claims_of(edge_stack, edge_tenant.tenant_id)} >= {
        "IDEM",
        "FP",
    }

    # The partner resends as told: each 503 names when to come back, until the window ends.
    # Time-based on purpose: the window is the hub's own time; 120 s only stops a hung run.
    waits: list[int] = []
    deadline = time.monotonic() + 120
    while True:
        answer = edge_tenant.receive(order, idempotency_key=key)
        if answer.status_code != 503:
            break
        edge_error(answer, 503, "message_pending")
        waits.append(int(answer.headers["Retry-After"]))
        assert time.monotonic() < deadline, "the resend never succeeded"
        time.sleep(waits[-1])
    assert answer.status_code == 202, answer.text
    message_id = answer.json()["message_id"]

    assert waits, "a resend within the window is told to wait"
    assert all(1 <= wait <= 15 for wait in waits)
    again = edge_tenant.receive(order, idempotency_key=key)
    assert (again.status_code, again.json()["message_id"]) == (200, message_id)
    edge_tenant.wait_until_sent(message_id)
    assert edge_tenant.deliveries(message_id) == 1
    assert edge_messages_of(edge_stack, edge_tenant.integration_id) == [message_id]


def test_two_resends_racing_for_the_takeover_make_one_message(
    edge_other_tenant: EdgeTenant, edge_stack: LocalStack, edge_faults: AwsFaultProxy
):
    edge_tenant = edge_other_tenant  # a tenant of its own: its messages and claims are this test's
    order, key = purchase_order(), f"race-{uuid.uuid4().hex[:8]}"
    crash_before_the_message(edge_tenant, edge_faults, order, key)
    age_claims(edge_stack, edge_tenant.tenant_id)
    start = threading.Barrier(2)
    answers: list[httpx.Response] = []
    lock = threading.Lock()

    def resend() -> None:
        start.wait(timeout=30)
        answer = edge_tenant.receive(order, idempotency_key=key)
        while answer.status_code == 503:  # the other resend is still writing its message
            edge_error(answer, 503, "message_pending")
            time.sleep(int(answer.headers["Retry-After"]))  # as told: the hub's own time
            answer = edge_tenant.receive(order, idempotency_key=key)
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=resend) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert sorted(a.status_code for a in answers) == [200, 202], [a.text for a in answers]
    [message_id] = {a.json()["message_id"] for a in answers}
    [duplicate] = [a.json() for a in answers if a.status_code == 200]
    assert duplicate["deduplicated_by"] in {"race_winner", "idempotency_key"}
    edge_tenant.wait_until_sent(message_id)
    assert edge_tenant.deliveries(message_id) == 1
    assert edge_messages_of(edge_stack, edge_tenant.integration_id) == [message_id]


def test_a_message_is_not_written_after_the_ingest_deadline(
    edge_other_tenant: EdgeTenant, edge_stack: LocalStack, edge_faults: AwsFaultProxy
):
    edge_tenant = edge_other_tenant  # a tenant of its own: its messages and claims are this test's
    order, key = purchase_order(), f"late-{uuid.uuid4().hex[:8]}"
    puts_before = len([c for c in edge_faults.seen("dynamodb", "PutItem") if is_message_put(c.body)])
    # DynamoDB answers each claim's write slowly: past the deadline once both are written (each
    # still within the SDK's 5 s read timeout, so neither is retried).
    edge_faults.delay_when("dynamodb", "PutItem", is_claim_put, INGEST_DEADLINE_SECONDS * 0.6)
    try:
        late = edge_tenant.receive(order, idempotency_key=key)
    finally:
        edge_faults.heal()

    edge_error(late, 503, "service_unavailable")
    message_puts = [c for c in edge_faults.seen("dynamodb", "PutItem") if is_message_put(c.body)]
    assert len(message_puts) == puts_before  # the message's write was never sent
    assert edge_messages_of(edge_stack, edge_tenant.integration_id) == []

    age_claims(edge_stack, edge_tenant.tenant_id)
    answer = edge_tenant.receive(order, idempotency_key=key)
    assert answer.status_code == 202, answer.text
    message_id = answer.json()["message_id"]
    edge_tenant.wait_until_sent(message_id)
    assert edge_tenant.deliveries(message_id) == 1
    assert edge_messages_of(edge_stack, edge_tenant.integration_id) == [message_id]
