"""Scenario A through the outbox on the local stack (seed 000: "webhook event message.sent is
fired to outbound integrations"): a tenant subscribes a receiver on 127.0.0.1 over the admin API,
a partner's message is delivered, and the receiver gets `message.received` and `message.sent`
once each, verified with the `standardwebhooks` package unchanged."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from standardwebhooks import Webhook

from devstack.demo import DEMO_INTEGRATION_ID, DEMO_TENANT_ID, demo_body
from tests.destinations import HttpDestination
from tests.pipeline import post, wait_for_status
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def subscriber(admin: httpx.Client) -> Iterator[tuple[HttpDestination, str]]:
    with HttpDestination() as receiver:
        created = admin.post(
            f"/api/admin/tenants/{DEMO_TENANT_ID}/subscriptions",
            json={
                "url": receiver.url,
                "event_types": ["message.*"],
                "integration_ids": [DEMO_INTEGRATION_ID],
            },
        )
        assert created.status_code == 201, created.text
        subscription = created.json()
        try:
            yield receiver, subscription["secret"]
        finally:
            admin.delete(
                f"/api/admin/tenants/{DEMO_TENANT_ID}/subscriptions/{subscription['subscription_id']}"
            )


def events_of(receiver: HttpDestination, message_id: str, secret: str) -> list[dict]:
    verified = []
    for request in list(receiver.requests):
        event = Webhook(secret).verify(request.body, request.headers)  # raises unless ours
        assert request.headers["webhook-id"] == event["id"]
        if event["data"].get("message_id") == message_id:
            verified.append(event)
    return verified


def test_a_subscriber_gets_received_and_sent_once_each_with_verified_signatures(
    api: httpx.Client, local_stack, subscriber: tuple[HttpDestination, str]
) -> None:
    receiver, secret = subscriber
    body = demo_body()
    body["payload"] = {**body["payload"], "po_number": f"PO-{uuid.uuid4().hex[:8]}"}
    message_id = api.post("/api/edi-hub/receive-message", json=body).json()["message_id"]
    wait_for_status(api, message_id, "sent")

    wait_for(
        lambda: len(events_of(receiver, message_id, secret)),
        "both events at the subscriber",
        until=lambda count: count >= 2,
    )
    time.sleep(2)  # time-based on purpose: a third would have come by now (the publisher batches for 1 s)
    events = events_of(receiver, message_id, secret)

    assert Counter(e["type"] for e in events) == {"message.received": 1, "message.sent": 1}
    assert len({e["id"] for e in events}) == 2
    by_type = {e["type"]: e for e in events}
    sent = by_type["message.sent"]["data"]
    assert (sent["status_before"], sent["status_after"], sent["dest_status"]) == ("received", "sent", "200")
    assert sent["version"] > by_type["message.received"]["data"]["version"]
    assert by_type["message.sent"]["id"] == f"{message_id}:{sent['version']}"
    assert "payload" not in json.dumps(events)
    assert body["payload"]["po_number"] not in json.dumps(events)  # never the payload


def test_the_outbox_keeps_publishing_after_a_resend_is_deduplicated(
    api: httpx.Client, local_stack, subscriber: tuple[HttpDestination, str]
) -> None:
    """A deduplicated resend is a cancelled transaction; the local stack once lost its stream
    readers to moto's rollback of it, so every later status change went unannounced."""
    receiver, secret = subscriber
    body = demo_body()
    body["payload"] = {**body["payload"], "po_number": f"PO-{uuid.uuid4().hex[:8]}"}
    key = {"Idempotency-Key": f"resend-{uuid.uuid4().hex[:8]}"}
    first = api.post("/api/edi-hub/receive-message", json=body, headers=key)
    again = api.post("/api/edi-hub/receive-message", json=body, headers=key)
    assert (first.status_code, again.status_code, again.json()["deduplicated"]) == (202, 200, True)

    message_id = post(api, DEMO_INTEGRATION_ID)
    wait_for_status(api, message_id, "sent")

    wait_for(
        lambda: len(events_of(receiver, message_id, secret)),
        "both events at the subscriber",
        until=lambda count: count >= 2,
    )
    assert Counter(e["type"] for e in events_of(receiver, message_id, secret)) == {
        "message.received": 1,
        "message.sent": 1,
    }
