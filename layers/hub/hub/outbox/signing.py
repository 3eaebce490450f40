"""Standard Webhooks signatures (https://www.standardwebhooks.com): what a receiver verifies
with the `standardwebhooks` or `svix` libraries unchanged.

`webhook-signature` is `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, keyed with the
base64-decoded part of a `whsec_` secret; with several secrets (a rotation), one signature per
secret, space-separated: a receiver that knows any one of them verifies.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence

from hub.outbox.subscriptions import secret_key


def signature(secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def webhook_headers(secrets: Sequence[str], webhook_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers of one attempt. `timestamp`: Unix seconds of the
    attempt (receivers refuse one more than 5 minutes off), not of the event."""
    if not secrets:
        raise ValueError("a webhook is signed with at least one secret")
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(signature(s, webhook_id, timestamp, body) for s in secrets),
    }
