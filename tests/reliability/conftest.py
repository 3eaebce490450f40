"""Reliability tier, the partner edge (issue 15): the local stack with its ingest function talking
to DynamoDB and SQS through a fault proxy (tests/reliability/faults.py), and tenants set up the way
an operator sets them up, through the admin API.

Every fixture and helper here is prefixed ``edge_`` / ``Edge``: the other reliability modules
bring their own stacks and support.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from devstack.demo import DEMO_ADMIN_TOKEN, parameter_overrides
from devstack.stack import LocalStack
from hub.webhooks.signatures import sign_standard_webhooks
from tests.aws import function_names, local_stack_on_free_ports
from tests.destinations import HttpDestination
from tests.reliability.faults import AwsFaultProxy
from tests.waiting import wait_for

#: The function whose AWS calls go through the fault proxy.
EDGE_FUNCTION = "IngestApiFunction"
EDGE_MESSAGE_TYPE = "purchase_order"
#: A Standard Webhooks secret for the tests' inbound webhook integrations (local only).
EDGE_WEBHOOK_SECRET = "whsec_" + "ZWRnZS10ZXN0cy1vbmx5LXNlY3JldC0wMDAwMDAwMA=="
#: The table items a message consists of: its status and payload, and its claims.
MESSAGE_PREFIXES = ("MSG#", "IDEM#", "FP#", "BK#")


@pytest.fixture(scope="module")
def edge_proxy() -> Iterator[AwsFaultProxy]:
    with AwsFaultProxy() as proxy:
        yield proxy


@pytest.fixture(scope="module")
def edge_destination() -> Iterator[HttpDestination]:
    with HttpDestination() as destination:
        yield destination


@pytest.fixture(scope="module")
def edge_stack(edge_proxy: AwsFaultProxy) -> Iterator[LocalStack]:
    """One stack per module. No configuration cache anywhere: each ingest request reads its key
    and integration, so "DynamoDB down" fails at the first read (nothing enqueued) and a fault on
    PutItem alone (the claims and the message) is the "after the enqueue" case, whichever instance
    answers."""
    overrides: dict[str, dict[str, str]] = {
        name: {"HUB_CONFIG_CACHE_SECONDS": "0"} for name in function_names()
    }
    overrides[EDGE_FUNCTION] |= edge_proxy.environment("dynamodb", "sqs")
    stack = local_stack_on_free_ports(
        stack_name="hub-reliability-edge",
        parameter_overrides=parameter_overrides(),
        env_overrides=overrides,
        # Fewer instances, fewer cold starts (each ~1-2 s here); three still race each other.
        max_instances=3,
        sqs_pollers_per_source=3,
    )
    with stack:
        edge_proxy.upstream = stack.aws_endpoint
        yield stack


@pytest.fixture(scope="module")
def edge_admin(edge_stack: LocalStack) -> Iterator[httpx.Client]:
    """The admin API with the platform admin token."""
    with edge_client(edge_stack.function_urls["AdminApiFunction"], DEMO_ADMIN_TOKEN) as client:
        yield client


@pytest.fixture(scope="module")
def edge_partner_api(edge_stack: LocalStack) -> Iterator[httpx.Client]:
    """The partner API with no credentials (each call brings its tenant's key)."""
    with edge_client(edge_stack.api_url, None) as client:
        yield client


@pytest.fixture
def edge_tenant(
    edge_admin: httpx.Client, edge_partner_api: httpx.Client, edge_destination: HttpDestination
) -> EdgeTenant:
    """A fresh tenant per test (its own key, integrations and claims), delivering to the module's
    destination, so no test's messages deduplicate against another's."""
    return EdgeTenant.create(edge_admin, edge_partner_api, edge_destination)


@pytest.fixture
def edge_other_tenant(
    edge_admin: httpx.Client, edge_partner_api: httpx.Client, edge_destination: HttpDestination
) -> EdgeTenant:
    """A second fresh tenant, for the tenancy tests."""
    return EdgeTenant.create(edge_admin, edge_partner_api, edge_destination)


@pytest.fixture
def edge_faults(edge_proxy: AwsFaultProxy) -> Iterator[AwsFaultProxy]:
    """The fault proxy, every fault lifted when the test ends (also when it fails)."""
    edge_proxy.heal()
    yield edge_proxy
    edge_proxy.heal()


def edge_client(base_url: str, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=base_url, headers=headers, timeout=30, trust_env=False)


def created(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 201, answer.text
    body: dict[str, Any] = answer.json()
    return body


@dataclass
class EdgeTenant:
    """A tenant as its operator leaves it: a connection to `destination`, an API integration
    (purchase orders, keyed by po_number), a signed-webhook integration, a partner API key and a
    tenant-scoped admin token."""

    tenant_id: str
    integration_id: str
    webhook_integration_id: str
    api_key: str
    admin_token: str
    api: httpx.Client
    destination: HttpDestination

    @classmethod
    def create(cls, admin: httpx.Client, api: httpx.Client, destination: HttpDestination) -> EdgeTenant:
        suffix = uuid.uuid4().hex[:10]
        tenant_id = f"tnt_edge{suffix}"
        created(admin.post("/api/admin/tenants", json={"tenant_id": tenant_id, "name": f"edge {suffix}"}))
        base = f"/api/admin/tenants/{tenant_id}"
        connection = {"connection_id": f"con_edge{suffix}", "name": "destination", "url": destination.url}
        created(admin.post(f"{base}/connections", json=connection))
        integration_id = f"int_edge{suffix}"
        created(
            admin.post(
                f"{base}/integrations",
                json={
                    "integration_id": integration_id,
                    "name": "partner api",
                    "mode": "orchestration",
                    "connection_id": connection["connection_id"],
                    "message_types": {EDGE_MESSAGE_TYPE: {"duplicate_key_fields": ["po_number"]}},
                },
            )
        )
        webhook_integration_id = f"int_edgewh{suffix}"
        created(
            admin.post(
                f"{base}/integrations",
                json={
                    "integration_id": webhook_integration_id,
                    "name": "partner webhooks",
                    "mode": "orchestration",
                    "connection_id": connection["connection_id"],
                    "message_types": {"order.created": {}},
                    "inbound_webhook": {
                        "verification": {"scheme": "standard_webhooks", "secrets": [EDGE_WEBHOOK_SECRET]},
                        "adapter": {
                            "message_type_path": "type",
                            "known_types": ["order.created"],
                            "event_id_path": "id",
                            "data_path": "data",
                        },
                    },
                },
            )
        )
        api_key = created(admin.post(f"{base}/api-keys", json={"label": "partner"}))["key"]
        token = created(
            admin.post(
                "/api/admin/tokens", json={"label": "tenant admin", "role": "admin", "tenant_id": tenant_id}
            )
        )["token"]
        return cls(tenant_id, integration_id, webhook_integration_id, api_key, token, api, destination)

    def receive(
        self, payload: dict[str, Any], idempotency_key: str | None = None, **extra: Any
    ) -> httpx.Response:
        """POST receive-message with this tenant's key (into its API integration unless told)."""
        body = {
            "integration_id": self.integration_id,
            "message_type": EDGE_MESSAGE_TYPE,
            "payload": payload,
            **extra,
        }
        headers = {"Authorization": f"Bearer {self.api_key}"}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return self.api.post("/api/edi-hub/receive-message", json=body, headers=headers)

    def status(self, message_id: str) -> httpx.Response:
        return self.api.get(
            f"/api/edi-hub/messages/{message_id}", headers={"Authorization": f"Bearer {self.api_key}"}
        )

    def webhook(
        self, body: bytes, delivery_id: str, *, secret: str = EDGE_WEBHOOK_SECRET, signed: bytes | None = None
    ) -> httpx.Response:
        """A partner webhook into this tenant's webhook integration, its signature made now with
        `secret` over `signed` (by default the body itself)."""
        timestamp = int(time.time())
        signature = sign_standard_webhooks(secret, delivery_id, timestamp, body if signed is None else signed)
        headers = {
            "content-type": "application/json",
            "webhook-id": delivery_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature,
        }
        return self.api.post(
            f"/api/webhook/{self.tenant_id}/{self.webhook_integration_id}", content=body, headers=headers
        )

    def wait_until_sent(self, message_id: str) -> dict[str, Any]:
        """Polls the partner API until the message is `sent`; its public view then (waiting while
        the view or the stack moves: tests/waiting.py)."""
        view: dict[str, Any] = wait_for(
            lambda: self.status(message_id).json(),
            f"{message_id} to become 'sent'",
            until=lambda seen: seen.get("pipeline_status") == "sent",
        )
        return view

    def deliveries(self, message_id: str) -> int:
        """How many requests for `message_id` reached the destination (it keys them by our
        Idempotency-Key, the message id)."""
        return sum(
            1 for r in list(self.destination.requests) if r.headers.get("idempotency-key") == message_id
        )


def edge_message_items(stack: LocalStack) -> set[tuple[str, str]]:
    """(PK, SK) of every item of every message in the table: statuses, payloads, claims."""
    dynamodb = stack.client("dynamodb")
    found: set[tuple[str, str]] = set()
    request: dict[str, Any] = {"TableName": stack.resources["HubTable"], "ProjectionExpression": "PK, SK"}
    while True:
        page = dynamodb.scan(**request)
        found |= {
            (i["PK"]["S"], i["SK"]["S"])
            for i in page.get("Items", [])
            if i["PK"]["S"].startswith(MESSAGE_PREFIXES)
        }
        if "LastEvaluatedKey" not in page:
            return found
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def edge_messages_of(stack: LocalStack, integration_id: str) -> list[str]:
    """The ids of the messages stored for `integration_id` (their status records)."""
    dynamodb = stack.client("dynamodb")
    request: dict[str, Any] = {
        "TableName": stack.resources["HubTable"],
        "FilterExpression": "SK = :status AND integration_id = :integration",
        "ExpressionAttributeValues": {":status": {"S": "STATUS"}, ":integration": {"S": integration_id}},
    }
    ids: list[str] = []
    while True:
        page = dynamodb.scan(**request)
        ids += [i["message_id"]["S"] for i in page.get("Items", [])]
        if "LastEvaluatedKey" not in page:
            return ids
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def edge_error(answer: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    """Asserts the one error shape, ``{"error": {"code", "message", "details"?}}``, with this
    status (and code); the error object."""
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert isinstance(error.get("code"), str), body
    assert isinstance(error.get("message"), str), body
    if code is not None:
        assert error["code"] == code, body
    return error
