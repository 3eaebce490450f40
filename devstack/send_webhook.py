"""``python -m devstack.send_webhook``: one signed Standard Webhooks delivery to the local stack's
demo webhook integration (what a partner's platform would send), and the hub's answer.

Signing needs the current time (deliveries older than 5 minutes are refused), so a printed curl
would go stale; this signs at send time. Send the same `--id` twice to see the deduplication.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from typing import Any

import httpx

from devstack.demo import DEMO_TENANT_ID, DEMO_WEBHOOK_INTEGRATION_ID, DEMO_WEBHOOK_SECRET
from hub.webhooks.signatures import sign_standard_webhooks


def demo_delivery(po_number: str) -> bytes:
    """A partner's own payload: its event type, event id and business data."""
    body: dict[str, Any] = {
        "type": "order.created",
        "id": f"evt_{po_number}",
        "created_at": "2026-11-29T11:59:58-03:00",
        "data": {"po_number": po_number, "lines": [{"sku": "A-1", "qty": 2}]},
    }
    return json.dumps(body, separators=(",", ":")).encode()


def send(api_url: str, body: bytes, delivery_id: str, secret: str = DEMO_WEBHOOK_SECRET) -> httpx.Response:
    """POSTs `body` signed now with `secret` to the demo webhook integration."""
    timestamp = int(time.time())
    headers = {
        "content-type": "application/json",
        "webhook-id": delivery_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign_standard_webhooks(secret, delivery_id, timestamp, body),
    }
    url = f"{api_url.rstrip('/')}/api/webhook/{DEMO_TENANT_ID}/{DEMO_WEBHOOK_INTEGRATION_ID}"
    with httpx.Client(timeout=30, trust_env=False) as client:
        return client.post(url, content=body, headers=headers)


def main(argv: list[str] | None = None) -> int:
    default_api = f"http://127.0.0.1:{os.environ.get('HUB_LOCAL_API_PORT', '3000')}"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--api", default=default_api, help=f"partner API base URL ({default_api})")
    parser.add_argument("--po", default=f"PO-{uuid.uuid4().hex[:8]}", help="the order number in the payload")
    parser.add_argument("--id", default=f"msg_{uuid.uuid4().hex}", help="the webhook-id (delivery id)")
    args = parser.parse_args(argv)
    answer = send(args.api, demo_delivery(args.po), args.id)
    print(answer.status_code, answer.text)
    return 0 if answer.status_code < 300 else 1


if __name__ == "__main__":
    raise SystemExit(main())
