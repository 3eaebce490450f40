"""Webhook verification schemes, as pure functions over the raw body bytes as received.

Every comparison is constant time (`hmac.compare_digest`) and every candidate secret is tried
(no early exit), so timing says nothing about how much of a signature matched. The signature is
checked before the timestamp: `signature_expired` then always means "genuinely signed, but old".
Errors never carry the presented or expected values.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

from hub.domain.webhook_config import (
    ApiKeyVerification,
    BasicVerification,
    HmacSha256HexVerification,
    StandardWebhooksVerification,
    StripeStyleVerification,
    Verification,
    whsec_key,
)
from hub.errors import SignatureExpired, SignatureInvalid

Clock = Callable[[], datetime]
Headers = Mapping[str, str]
"""Request headers with lowercase names (API Gateway HTTP API lowercases them)."""


_DIGITS = re.compile(r"[0-9]{1,12}")


def _hmac(key: bytes, content: bytes) -> bytes:
    return hmac.new(key, content, hashlib.sha256).digest()


def _any_equal(presented: Iterable[bytes], expected: Iterable[bytes]) -> bool:
    wanted = list(expected)
    matched = False
    for candidate in presented:
        for value in wanted:
            matched |= hmac.compare_digest(candidate, value)
    return matched


def _timestamp(raw: str | None, what: str) -> int:
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses.
    if raw is None or not _DIGITS.fullmatch(raw):
        raise SignatureInvalid(f"missing or malformed {what}")
    return int(raw)


def _fresh(timestamp: int, clock: Clock, tolerance_seconds: int) -> None:
    skew = abs(clock().timestamp() - timestamp)
    if skew > tolerance_seconds:
        raise SignatureExpired(f"the signed timestamp is more than {tolerance_seconds} s away from now")


def sign_standard_webhooks(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64>` for one secret: what a sender puts in `webhook-signature`."""
    content = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(_hmac(whsec_key(secret), content)).decode()


def verify_standard_webhooks(
    config: StandardWebhooksVerification, headers: Headers, body: bytes, clock: Clock
) -> str:
    """The verified `webhook-id` (the delivery's idempotency key). Any `v1` signature in the
    space-separated list may match any configured secret (rotation)."""
    msg_id = headers.get("webhook-id")
    raw_ts = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not msg_id or not signatures:
        raise SignatureInvalid("missing webhook-id, webhook-timestamp or webhook-signature")
    timestamp = _timestamp(raw_ts, "webhook-timestamp")
    presented: list[bytes] = []
    for entry in signatures.split(" "):
        version, _, value = entry.partition(",")
        if version != "v1" or not value:
            continue  # other versions (v1a: asymmetric) are not ours to check
        try:
            presented.append(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError):
            continue
    content = f"{msg_id}.{timestamp}.".encode() + body
    expected = (_hmac(whsec_key(secret), content) for secret in config.secrets)
    if not presented or not _any_equal(presented, expected):
        raise SignatureInvalid("no webhook-signature matches")
    _fresh(timestamp, clock, config.tolerance_seconds)
    return msg_id


def verify_hmac_sha256_hex(config: HmacSha256HexVerification, headers: Headers, body: bytes) -> None:
    """`<header>: <prefix><hex HMAC-SHA256 of the body>` with any configured secret."""
    value = headers.get(config.header) or ""
    if not value.startswith(config.prefix) or not value[len(config.prefix) :]:
        raise SignatureInvalid(f"missing or malformed {config.header}")
    presented = value[len(config.prefix) :].strip().lower().encode("ascii", "replace")
    expected = (_hmac(s.encode(), body).hex().encode() for s in config.secrets)
    if not _any_equal([presented], expected):
        raise SignatureInvalid(f"{config.header} does not match")


def verify_stripe_style(config: StripeStyleVerification, headers: Headers, body: bytes, clock: Clock) -> None:
    """`<header>: t=<ts>,v1=<hex>[,v1=<hex>...]` over `{t}.{body}`; any v1 may match."""
    raw_ts: str | None = None
    presented: list[bytes] = []
    for part in (headers.get(config.header) or "").split(","):
        name, _, value = part.strip().partition("=")
        if name == "t":
            raw_ts = value
        elif name == "v1" and value:
            presented.append(value.lower().encode("ascii", "replace"))
    timestamp = _timestamp(raw_ts, f"{config.header} timestamp")
    content = f"{timestamp}.".encode() + body
    expected = (_hmac(s.encode(), content).hex().encode() for s in config.secrets)
    if not presented or not _any_equal(presented, expected):
        raise SignatureInvalid(f"no {config.header} v1 signature matches")
    _fresh(timestamp, clock, config.tolerance_seconds)


def _sha256_hex(value: bytes) -> bytes:
    return hashlib.sha256(value).hexdigest().encode()


def verify_basic(config: BasicVerification, headers: Headers) -> None:
    """`Authorization: Basic base64(username:password)` whose SHA-256 is configured."""
    scheme, _, token = (headers.get("authorization") or "").partition(" ")
    try:
        credentials = base64.b64decode(token.strip(), validate=True) if scheme.lower() == "basic" else b""
    except (binascii.Error, ValueError):
        credentials = b""
    if b":" not in credentials:
        raise SignatureInvalid("missing or malformed Basic credentials")
    if not _any_equal([_sha256_hex(credentials)], (h.encode() for h in config.credentials_sha256)):
        raise SignatureInvalid("invalid Basic credentials")


def verify_api_key(config: ApiKeyVerification, headers: Headers) -> None:
    """A static key in `<header>` whose SHA-256 is configured."""
    key = headers.get(config.header)
    if not key:
        raise SignatureInvalid(f"missing {config.header}")
    if not _any_equal([_sha256_hex(key.encode())], (h.encode() for h in config.keys_sha256)):
        raise SignatureInvalid(f"invalid {config.header}")


def verify(config: Verification, headers: Headers, body: bytes, clock: Clock) -> str | None:
    """Verifies a delivery with the integration's scheme. Returns the delivery id the scheme
    itself carries (Standard Webhooks' `webhook-id`), else None. Raises SignatureInvalid or
    SignatureExpired."""
    if isinstance(config, StandardWebhooksVerification):
        return verify_standard_webhooks(config, headers, body, clock)
    if isinstance(config, HmacSha256HexVerification):
        verify_hmac_sha256_hex(config, headers, body)
    elif isinstance(config, StripeStyleVerification):
        verify_stripe_style(config, headers, body, clock)
    elif isinstance(config, BasicVerification):
        verify_basic(config, headers)
    else:
        verify_api_key(config, headers)
    return None
