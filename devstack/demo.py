"""Demo data for the local stack: one tenant, one integration pointing at the stack's echo
destination, one API key, and the curl commands that use them.

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
from contextlib import contextmanager
from typing import Any, Protocol

from hub.adapters.aws import reset_clients
from hub.adapters.dynamo.api_keys import DynamoApiKeys
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.adapters.dynamo.tenants import DynamoTenants
from hub.domain.clock import utcnow
from hub.domain.tenancy import (
    ApiKey,
    Destination,
    Integration,
    IntegrationMode,
    MessageTypeConfig,
    Tenant,
    hash_api_key,
    shown_prefix,
)
from hub.domain.webhook_config import InboundWebhook

DEMO_TENANT_ID = "tnt_demo"
DEMO_INTEGRATION_ID = "int_demo_erp"
DEMO_API_KEY = "hub_demo_local-only-key-0000000000000000000000"
#: Fixed, in the admin API's key id format, so the README's admin calls work as printed.
DEMO_KEY_ID = "key_0000000000000000000000demo"
DEMO_MESSAGE_TYPE = "purchase_order"
DEMO_ADMIN_TOKEN = "hub_admin_demo_local-only-token-00000000000000"  # noqa: S105 - local stack only
#: Partner webhooks (Standard Webhooks) into the demo tenant. The secret is the one the Standard
#: Webhooks spec publishes for its test vector: public, local stack only; events/webhook_standard.json
#: is signed with it.
DEMO_WEBHOOK_INTEGRATION_ID = "int_demo_webhooks"
DEMO_WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # noqa: S105 - public test secret
#: The partner's event types the demo webhook integration takes (and defines as message types).
DEMO_WEBHOOK_EVENT_TYPES = ("order.created", "order.cancelled")


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


def demo_body() -> dict[str, Any]:
    return {
        "integration_id": DEMO_INTEGRATION_ID,
        "message_type": DEMO_MESSAGE_TYPE,
        "external_id": "PO-4711",
        "payload": {"po_number": "PO-4711", "lines": [{"sku": "A-1", "qty": 2}]},
    }


@contextmanager
def pointed_at(stack: StackInfo) -> Iterator[None]:
    """The hub's AWS clients talk to this stack's moto while seeding; the caller's
    environment is restored afterwards."""
    saved = {name: os.environ.get(name) for name in stack.env}
    os.environ.update(stack.env)
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


def _write_demo_records(stack: StackInfo, api_key: str) -> None:
    config = DynamoConfigRepository(stack.resources["HubTable"])
    # Stored as the admin API stores tenants, so it is listed, and can be updated or disabled there.
    DynamoTenants(stack.resources["HubTable"]).put(
        Tenant(tenant_id=DEMO_TENANT_ID, name="Demo Tenant", created_at=utcnow(), updated_at=utcnow())
    )
    config.put_integration(
        Integration(
            integration_id=DEMO_INTEGRATION_ID,
            tenant_id=DEMO_TENANT_ID,
            name="Demo ERP -> echo destination",
            mode=IntegrationMode.ORCHESTRATION,
            destination=Destination(protocol="http", url=stack.echo_url, method="POST"),
            message_types={DEMO_MESSAGE_TYPE: MessageTypeConfig(duplicate_key_fields=("po_number",))},
        )
    )
    config.put_integration(
        Integration(
            integration_id=DEMO_WEBHOOK_INTEGRATION_ID,
            tenant_id=DEMO_TENANT_ID,
            name="Demo partner webhooks -> echo destination",
            mode=IntegrationMode.ORCHESTRATION,
            destination=Destination(protocol="http", url=stack.echo_url, method="POST"),
            message_types={event_type: MessageTypeConfig() for event_type in DEMO_WEBHOOK_EVENT_TYPES},
            inbound_webhook=InboundWebhook.model_validate(
                {
                    "verification": {"scheme": "standard_webhooks", "secrets": [DEMO_WEBHOOK_SECRET]},
                    "adapter": {
                        "message_type_path": "type",
                        "known_types": list(DEMO_WEBHOOK_EVENT_TYPES),
                        "event_id_path": "id",
                        "occurred_at_path": "created_at",
                        "data_path": "data",
                    },
                }
            ),
        )
    )
    # Stored as the admin API stores keys, so it is listed, and can be revoked and rotated there.
    DynamoApiKeys(stack.resources["HubTable"]).put(
        ApiKey(
            key_id=DEMO_KEY_ID,
            tenant_id=DEMO_TENANT_ID,
            key_hash=hash_api_key(api_key),
            label="demo (local stack only)",
            prefix=shown_prefix(api_key),
            created_at=utcnow(),
        )
    )


def seed(stack: StackInfo) -> list[str]:
    """Writes the demo tenant, integration and API key; returns the lines to print."""
    api_key = os.environ.get("HUB_LOCAL_DEMO_API_KEY", DEMO_API_KEY)
    with pointed_at(stack):
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
        f"demo integration:  {DEMO_INTEGRATION_ID} -> {stack.echo_url}",
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
