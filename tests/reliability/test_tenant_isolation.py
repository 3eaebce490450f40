"""Reliability at the partner edge, tenancy (issue 15; seed 004, section 7: "the event targets
another tenant's conversation -> access rejected"). Two tenants set up through the admin API on
the local stack; tenant B's partner key and tenant-scoped admin token aim at tenant A's message,
integration, keys and tokens. Every refusal is in the one error shape, answers exactly as for
something that does not exist (nothing tells B what A has), and changes nothing of A's; the same
calls with A's own credentials succeed (the control that proves each route works).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
import pytest

from devstack.stack import LocalStack
from hub.domain.ids import new_id
from tests.destinations import HttpDestination
from tests.reliability.conftest import (
    EdgeTenant,
    edge_client,
    edge_error,
    edge_message_items,
    edge_messages_of,
)

pytestmark = pytest.mark.e2e


# One pair of tenants for the module (nothing here changes either: that is what it checks).
@pytest.fixture(scope="module")
def tenant_a(
    edge_admin: httpx.Client, edge_partner_api: httpx.Client, edge_destination: HttpDestination
) -> EdgeTenant:
    return EdgeTenant.create(edge_admin, edge_partner_api, edge_destination)


@pytest.fixture(scope="module")
def tenant_b(
    edge_admin: httpx.Client, edge_partner_api: httpx.Client, edge_destination: HttpDestination
) -> EdgeTenant:
    return EdgeTenant.create(edge_admin, edge_partner_api, edge_destination)


@pytest.fixture(scope="module")
def sent_message(tenant_a: EdgeTenant) -> str:
    """A message of tenant A, delivered."""
    answer = tenant_a.receive({"po_number": f"PO-{new_id('po')}", "lines": []})
    assert answer.status_code == 202, answer.text
    message_id = str(answer.json()["message_id"])
    tenant_a.wait_until_sent(message_id)
    return message_id


@dataclass(frozen=True)
class Scope:
    """A tenant and an integration by id."""

    tenant_id: str
    integration_id: str


#: Ids of nothing: what B would be told about something that does not exist.
GHOST = Scope("tnt_edgeghost", "int_edgeghost")
GHOST_MESSAGE = new_id("msg")


def as_if_missing(answer: httpx.Response, tenant: EdgeTenant, message_id: str) -> Any:
    """The answer with A's ids (echoed from the request) read as the ghost's."""
    text = answer.text.replace(message_id, GHOST_MESSAGE)
    text = text.replace(tenant.integration_id, GHOST.integration_id).replace(
        tenant.tenant_id, GHOST.tenant_id
    )
    return json.loads(text)


def test_another_tenants_message_status_is_not_found_like_a_missing_one(
    tenant_a: EdgeTenant, tenant_b: EdgeTenant, sent_message: str
):
    theirs = tenant_b.status(sent_message)
    missing = tenant_b.status(new_id("msg"))

    edge_error(theirs, 404, "not_found")
    assert theirs.json() == missing.json()
    assert tenant_a.status(sent_message).json()["pipeline_status"] == "sent"


def test_another_tenants_integration_takes_nothing(
    tenant_a: EdgeTenant, tenant_b: EdgeTenant, edge_stack: LocalStack
):
    before = edge_message_items(edge_stack)
    theirs_before = edge_messages_of(edge_stack, tenant_a.integration_id)
    order = {"po_number": f"PO-{new_id('po')}", "lines": []}

    into_theirs = tenant_b.receive(order, integration_id=tenant_a.integration_id)
    into_nothing = tenant_b.receive(order, integration_id="int_edgenothere")

    edge_error(into_theirs, 404, "not_found")
    assert into_theirs.json() == into_nothing.json()
    assert edge_message_items(edge_stack) == before
    assert edge_messages_of(edge_stack, tenant_a.integration_id) == theirs_before


def test_keys_and_tokens_open_only_their_own_door(
    tenant_a: EdgeTenant, tenant_b: EdgeTenant, edge_stack: LocalStack, sent_message: str
):
    admin_url = edge_stack.function_urls["AdminApiFunction"]
    with edge_client(admin_url, tenant_b.api_key) as partner_key_on_admin:
        edge_error(partner_key_on_admin.get(f"/api/admin/messages/{sent_message}"), 401)
    with edge_client(edge_stack.api_url, tenant_b.admin_token) as admin_token_on_partner_api:
        edge_error(admin_token_on_partner_api.get(f"/api/edi-hub/messages/{sent_message}"), 401)
        answer = admin_token_on_partner_api.post(
            "/api/edi-hub/receive-message",
            json={
                "integration_id": tenant_b.integration_id,
                "message_type": "purchase_order",
                "payload": {"po_number": "PO-X"},
            },
        )
        edge_error(answer, 401)
    # A's own key, on A's own message: the door does open.
    assert tenant_a.status(sent_message).status_code == 200


class Scoped(Protocol):
    """What a route names: a tenant and its integration (an EdgeTenant, or the ghost's ids)."""

    @property
    def tenant_id(self) -> str: ...

    @property
    def integration_id(self) -> str: ...


Call = Callable[[Scoped, str], tuple[str, str, dict[str, Any] | None]]

#: What a tenant-scoped admin token may call about a tenant's things: (name, call given the
#: tenant and its message id). Reads succeed with the tenant's own token (200); for another
#: tenant's they answer 404, as for a missing one.
READS: list[tuple[str, Call]] = [
    ("message view", lambda t, m: ("GET", f"/api/admin/messages/{m}", None)),
    ("message callbacks", lambda t, m: ("GET", f"/api/admin/messages/{m}/callbacks", None)),
    ("queue, every tab", lambda t, m: ("GET", f"/api/admin/queue?tenant_id={t.tenant_id}&tab=all", None)),
    (
        "integration view",
        lambda t, m: ("GET", f"/api/admin/integrations/{t.integration_id}?tenant_id={t.tenant_id}", None),
    ),
    ("tenant", lambda t, m: ("GET", f"/api/admin/tenants/{t.tenant_id}", None)),
    ("integrations", lambda t, m: ("GET", f"/api/admin/tenants/{t.tenant_id}/integrations", None)),
    (
        "integration",
        lambda t, m: ("GET", f"/api/admin/tenants/{t.tenant_id}/integrations/{t.integration_id}", None),
    ),
    ("api keys", lambda t, m: ("GET", f"/api/admin/tenants/{t.tenant_id}/api-keys", None)),
    ("admin tokens", lambda t, m: ("GET", f"/api/admin/tokens?tenant_id={t.tenant_id}", None)),
    ("audit", lambda t, m: ("GET", f"/api/admin/tenants/{t.tenant_id}/audit", None)),
    ("connections", lambda t, m: ("GET", f"/api/admin/tenants/{t.tenant_id}/connections", None)),
]

#: Changes a tenant's admin could make to its own things; for another tenant's: 404, nothing done.
WRITES: list[tuple[str, Call]] = [
    ("reprocess", lambda t, m: ("POST", "/api/edi-hub/reprocess-message", {"message_id": m})),
    ("cancel retry", lambda t, m: ("POST", f"/api/admin/messages/{m}/cancel-retry", None)),
    ("new api key", lambda t, m: ("POST", f"/api/admin/tenants/{t.tenant_id}/api-keys", {"label": "x"})),
    (
        "new admin token",
        lambda t, m: ("POST", "/api/admin/tokens", {"label": "x", "role": "admin", "tenant_id": t.tenant_id}),
    ),
    (
        "delete integration",
        lambda t, m: ("DELETE", f"/api/admin/tenants/{t.tenant_id}/integrations/{t.integration_id}", None),
    ),
]


def call(client: httpx.Client, request: tuple[str, str, dict[str, Any] | None]) -> httpx.Response:
    method, path, body = request
    return client.request(method, path, json=body) if body is not None else client.request(method, path)


def test_another_tenants_admin_token_reads_and_changes_nothing_of_theirs(
    tenant_a: EdgeTenant, tenant_b: EdgeTenant, edge_stack: LocalStack, sent_message: str
):
    admin_url = edge_stack.function_urls["AdminApiFunction"]
    ours = edge_client(admin_url, tenant_a.admin_token)
    theirs = edge_client(admin_url, tenant_b.admin_token)
    with ours, theirs:
        for name, route in READS:
            own = call(ours, route(tenant_a, sent_message))
            assert own.status_code == 200, (name, own.text)
            refused = call(theirs, route(tenant_a, sent_message))
            edge_error(refused, 404, "not_found")
            missing = call(theirs, route(GHOST, GHOST_MESSAGE))
            assert as_if_missing(refused, tenant_a, sent_message) == missing.json(), name
        own_queue = call(ours, READS[2][1](tenant_a, sent_message)).json()
        assert sent_message in [row["message_id"] for row in own_queue["items"]]

        for name, route in WRITES:
            refused = call(theirs, route(tenant_a, sent_message))
            edge_error(refused, 404, "not_found")
            missing = call(theirs, route(GHOST, GHOST_MESSAGE))
            assert as_if_missing(refused, tenant_a, sent_message) == missing.json(), name

        # Nothing of A's changed: its message as it was, its integration, keys and tokens as they were.
        after = call(ours, ("GET", f"/api/admin/messages/{sent_message}", None))
        assert after.json()["pipeline_status"] == "sent"
        assert tenant_a.deliveries(sent_message) == 1
        assert call(ours, READS[6][1](tenant_a, sent_message)).status_code == 200
        keys = call(ours, READS[7][1](tenant_a, sent_message)).json()
        tokens = call(ours, READS[8][1](tenant_a, sent_message)).json()
        assert [key["label"] for key in keys["items"]] == ["partner"]
        assert [token["label"] for token in tokens["items"]] == ["tenant admin"]
