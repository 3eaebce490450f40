"""Demo data for the local stack: one tenant, a connection to the stack's echo destination, two
integrations delivering through it (purchase orders, and signed partner webhooks), one API key,
and the curl commands that use them.

Everything is created through the admin API's own use cases (TenantAdmin, ConnectionAdmin,
IntegrationAdmin, ApiKeyAdmin), built by hub.wiring.admin exactly as the AdminApiFunction builds them,
in the function's environment: the records are what an operator would get from the admin API or
`hubctl apply` (validated, versioned, listed, secrets as the API stores them), and the audit log
says who made them (`SEED_PRINCIPAL`). Seeding is idempotent: what exists is kept (a connection or
integration is saved again, unchanged unless the echo destination moved).

The demo key and the demo admin token are fixed so the README's curl works as printed. They
only ever exist in a local stack; override them with HUB_LOCAL_DEMO_API_KEY and
HUB_LOCAL_DEMO_ADMIN_TOKEN.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, Protocol

from hub import wiring
from hub.adapters.aws import reset_clients
from hub.admin.access import Principal, Role
from hub.admin.api_keys import ApiKeyExists
from hub.admin.connections import ConnectionExists, ConnectionSpec
from hub.admin.integrations import IntegrationExists
from hub.admin.tenants import TenantExists
from hub.wiring import admin

DEMO_TENANT_ID = "tnt_demo"
DEMO_INTEGRATION_ID = "int_demo_erp"
DEMO_API_KEY = "hub_demo_local-only-key-0000000000000000000000"
#: Fixed, in the admin API's key id format, so the README's admin calls work as printed.
DEMO_KEY_ID = "key_0000000000000000000000demo"
DEMO_MESSAGE_TYPE = "purchase_order"
#: The demo integrations deliver through this connection (the stack's echo destination).
DEMO_CONNECTION_ID = "conn_demo_echo"
DEMO_ADMIN_TOKEN = "hub_admin_demo_local-only-token-00000000000000"  # noqa: S105 - local stack only
#: Partner webhooks (Standard Webhooks) into the demo tenant. The secret is the one the Standard
#: Webhooks spec publishes for its test vector: public, local stack only; events/webhook_standard.json
#: is signed with it.
DEMO_WEBHOOK_INTEGRATION_ID = "int_demo_webhooks"
DEMO_WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # noqa: S105 - public test secret
#: The partner's event types the demo webhook integration takes (and defines as message types).
DEMO_WEBHOOK_EVENT_TYPES = ("order.created", "order.cancelled")
#: Who the audit log says created the demo data: a platform admin that is no token (nothing can
#: authenticate as it), named so an operator reading the log knows where the records came from.
SEED_PRINCIPAL = Principal(
    token_id="local-demo-seed",  # noqa: S106 - an id, not a secret
    label="local stack demo seed",
    role=Role.ADMIN,
    tenant_id=None,
)


def admin_token() -> str:
    return os.environ.get("HUB_LOCAL_DEMO_ADMIN_TOKEN", DEMO_ADMIN_TOKEN)


def parameter_overrides() -> dict[str, str]:
    """Template parameters of the local stack: the admin API opens to the demo admin token."""
    return {"AdminTokenSha256": hashlib.sha256(admin_token().encode()).hexdigest()}


class StackInfo(Protocol):
    @property
    def resources(self) -> dict[str, str]: ...

    @property
    def env(self) -> dict[str, str]: ...

    @property
    def api_url(self) -> str: ...

    @property
    def echo_url(self) -> str: ...

    @property
    def function_urls(self) -> dict[str, str]: ...

    def function_environment(self, logical_id: str) -> dict[str, str]: ...


def demo_body() -> dict[str, Any]:
    return {
        "integration_id": DEMO_INTEGRATION_ID,
        "message_type": DEMO_MESSAGE_TYPE,
        "external_id": "PO-4711",
        "payload": {"po_number": "PO-4711", "lines": [{"sku": "A-1", "qty": 2}]},
    }


@contextmanager
def _environment(variables: dict[str, str]) -> Iterator[None]:
    """`variables` set in this process (the hub's AWS clients rebuilt for them); the caller's
    environment is restored afterwards."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    reset_clients()
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        reset_clients()


@contextmanager
def pointed_at(stack: StackInfo) -> Iterator[None]:
    """The hub's AWS clients talk to this stack's moto (tests reading the stack's table)."""
    with _environment(stack.env):
        yield


@contextmanager
def admin_wiring(stack: StackInfo) -> Iterator[None]:
    """hub.wiring.admin builds the admin use cases as the stack's AdminApiFunction does: in its
    environment (table, KMS key, secrets' ARNs; validated as at its cold start) and against this
    stack's moto. What it built is forgotten afterwards."""
    with _environment(stack.function_environment("AdminApiFunction")):
        wiring.reset()
        try:
            admin.init()
            yield
        finally:
            wiring.reset()


def demo_connection(echo_url: str) -> ConnectionSpec:
    return ConnectionSpec(
        connection_id=DEMO_CONNECTION_ID, name="Local echo destination", url=echo_url, method="POST"
    )


def demo_integrations() -> list[dict[str, Any]]:
    """The two demo integrations as the admin API takes them (POST .../integrations)."""
    return [
        {
            "integration_id": DEMO_INTEGRATION_ID,
            "name": "Demo ERP -> echo destination",
            "mode": "orchestration",
            "connection_id": DEMO_CONNECTION_ID,
            "message_types": {DEMO_MESSAGE_TYPE: {"duplicate_key_fields": ["po_number"]}},
        },
        {
            "integration_id": DEMO_WEBHOOK_INTEGRATION_ID,
            "name": "Demo partner webhooks -> echo destination",
            "mode": "orchestration",
            "connection_id": DEMO_CONNECTION_ID,
            "message_types": {event_type: {} for event_type in DEMO_WEBHOOK_EVENT_TYPES},
            "inbound_webhook": {
                "verification": {"scheme": "standard_webhooks", "secrets": [DEMO_WEBHOOK_SECRET]},
                "adapter": {
                    "message_type_path": "type",
                    "known_types": list(DEMO_WEBHOOK_EVENT_TYPES),
                    "event_id_path": "id",
                    "occurred_at_path": "created_at",
                    "data_path": "data",
                },
            },
        },
    ]


def _write_demo_records(stack: StackInfo, api_key: str) -> None:
    """The demo data through the admin use cases, as SEED_PRINCIPAL. Idempotent."""
    actor = SEED_PRINCIPAL
    with admin_wiring(stack):
        with suppress(TenantExists):
            admin.tenant_admin().create(DEMO_TENANT_ID, "Demo Tenant", None, actor)
        connections = admin.connection_admin()
        spec = demo_connection(stack.echo_url)
        try:
            connections.create(actor, DEMO_TENANT_ID, spec)
        except ConnectionExists:
            connections.update(actor, DEMO_TENANT_ID, DEMO_CONNECTION_ID, spec, None)
        integrations = admin.integration_admin()
        for body in demo_integrations():
            try:
                integrations.create(actor, DEMO_TENANT_ID, body)
            except IntegrationExists:
                integrations.replace(actor, DEMO_TENANT_ID, body["integration_id"], body, None)
        with suppress(ApiKeyExists):
            admin.api_key_admin().register(
                DEMO_TENANT_ID, api_key, DEMO_KEY_ID, "demo (local stack only)", actor
            )


def seed(stack: StackInfo) -> list[str]:
    """Writes the demo tenant, integration and API key; returns the lines to print."""
    api_key = os.environ.get("HUB_LOCAL_DEMO_API_KEY", DEMO_API_KEY)
    _write_demo_records(stack, api_key)
    receive = " ".join(
        [
            "curl -sS -X POST",
            shlex.quote(f"{stack.api_url}/api/edi-hub/receive-message"),
            "-H",
            shlex.quote(f"Authorization: Bearer {api_key}"),
            "-H 'Content-Type: application/json' -H 'Idempotency-Key: demo-po-4711'",
            "-d",
            shlex.quote(json.dumps(demo_body(), separators=(",", ":"))),
        ]
    )
    status = " ".join(
        [
            "curl -sS",
            shlex.quote(f"{stack.api_url}/api/edi-hub/messages/<message_id>"),
            "-H",
            shlex.quote(f"Authorization: Bearer {api_key}"),
        ]
    )
    admin_url = stack.function_urls.get("AdminApiFunction", "").rstrip("/")
    waiting = " ".join(
        [
            "curl -sS",
            shlex.quote(f"{admin_url}/api/admin/queue?tenant_id={DEMO_TENANT_ID}&tab=error"),
            "-H",
            shlex.quote(f"Authorization: Bearer {admin_token()}"),
        ]
    )
    return [
        f"demo tenant:       {DEMO_TENANT_ID}",
        f"demo integration:  {DEMO_INTEGRATION_ID} -> {DEMO_CONNECTION_ID} -> {stack.echo_url}",
        f"demo API key:      {api_key}",
        "",
        "send a message (202; run it again for deduplicated: true):",
        f"  {receive}",
        "",
        "read its status:",
        f"  {status}",
        "",
        "admin API (the demo admin token), e.g. the error tab of the queue:",
        f"  {waiting}",
        "",
        f"a partner webhook, signed now (Standard Webhooks, into {DEMO_WEBHOOK_INTEGRATION_ID}):",
        f"  .venv/bin/python -m devstack.send_webhook --api {stack.api_url}",
    ]
