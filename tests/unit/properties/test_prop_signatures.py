"""Properties of the webhook signature schemes (hub.webhooks.signatures): a signature made over
one body verifies that body and never another one, whatever the bytes."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hub.domain.webhook_config import (
    HmacSha256HexVerification,
    StandardWebhooksVerification,
    StripeStyleVerification,
)
from hub.errors import SignatureInvalid
from hub.webhooks.signatures import (
    sign_standard_webhooks,
    verify,
    verify_hmac_sha256_hex,
    verify_standard_webhooks,
    verify_stripe_style,
)

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
TS = int(NOW.timestamp())


def clock() -> datetime:
    return NOW


bodies = st.binary(max_size=512)
whsec_secrets = st.binary(min_size=16, max_size=64).map(lambda key: "whsec_" + base64.b64encode(key).decode())
hmac_secrets = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=16, max_size=48
)  # printable, as an operator pastes one
msg_ids = st.from_regex(r"msg_[A-Za-z0-9]{1,24}", fullmatch=True)
skews = st.integers(-300, 300)  # within the default tolerance: freshness is not what is tested


def _hex(secret: str, content: bytes) -> str:
    return hmac.new(secret.encode(), content, hashlib.sha256).hexdigest()


@settings(derandomize=True, deadline=None, max_examples=100)
@given(secret=whsec_secrets, msg_id=msg_ids, body=bodies, other=bodies, skew=skews)
def test_standard_webhooks_signature_binds_the_body(
    secret: str, msg_id: str, body: bytes, other: bytes, skew: int
) -> None:
    config = StandardWebhooksVerification(secrets=(secret,))
    ts = TS + skew
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": sign_standard_webhooks(secret, msg_id, ts, body),
    }
    assert verify_standard_webhooks(config, headers, body, clock) == msg_id
    assert verify(config, headers, body, clock) == msg_id
    assume(other != body)
    with pytest.raises(SignatureInvalid):
        verify_standard_webhooks(config, headers, other, clock)


@settings(derandomize=True, deadline=None, max_examples=100)
@given(secret=whsec_secrets, msg_id=msg_ids, other_id=msg_ids, body=bodies, skew=skews)
def test_standard_webhooks_signature_binds_the_id_and_timestamp(
    secret: str, msg_id: str, other_id: str, body: bytes, skew: int
) -> None:
    config = StandardWebhooksVerification(secrets=(secret,))
    signature = sign_standard_webhooks(secret, msg_id, TS, body)
    headers = {"webhook-id": msg_id, "webhook-timestamp": str(TS), "webhook-signature": signature}
    if other_id != msg_id:
        with pytest.raises(SignatureInvalid):
            verify_standard_webhooks(config, {**headers, "webhook-id": other_id}, body, clock)
    if skew != 0:
        with pytest.raises(SignatureInvalid):
            verify_standard_webhooks(config, {**headers, "webhook-timestamp": str(TS + skew)}, body, clock)


@settings(derandomize=True, deadline=None, max_examples=100)
@given(
    secret=hmac_secrets,
    prefix=st.sampled_from(["", "sha256="]),
    upper=st.booleans(),
    body=bodies,
    other=bodies,
)
def test_hmac_sha256_hex_signature_binds_the_body(
    secret: str, prefix: str, upper: bool, body: bytes, other: bytes
) -> None:
    config = HmacSha256HexVerification(prefix=prefix, secrets=(secret,))
    digest = _hex(secret, body)
    headers = {"x-hub-signature-256": prefix + (digest.upper() if upper else digest)}
    verify_hmac_sha256_hex(config, headers, body)  # raises if refused
    assert verify(config, headers, body, clock) is None
    assume(other != body)
    with pytest.raises(SignatureInvalid):
        verify_hmac_sha256_hex(config, headers, other)


@settings(derandomize=True, deadline=None, max_examples=100)
@given(secret=hmac_secrets, body=bodies, other=bodies, skew=skews)
def test_stripe_style_signature_binds_the_body_and_timestamp(
    secret: str, body: bytes, other: bytes, skew: int
) -> None:
    config = StripeStyleVerification(secrets=(secret,))
    ts = TS + skew
    headers = {"stripe-signature": f"t={ts},v1={_hex(secret, f'{ts}.'.encode() + body)}"}
    verify_stripe_style(config, headers, body, clock)  # raises if refused
    assert verify(config, headers, body, clock) is None
    if other != body:
        with pytest.raises(SignatureInvalid):
            verify_stripe_style(config, headers, other, clock)
    # The same v1 under another timestamp is not a signature of it.
    moved = {"stripe-signature": headers["stripe-signature"].replace(f"t={ts},", f"t={ts + 1},")}
    with pytest.raises(SignatureInvalid):
        verify_stripe_style(config, moved, body, clock)


@settings(derandomize=True, deadline=None, max_examples=100)
@given(secret=hmac_secrets, other_secret=hmac_secrets, body=bodies)
def test_a_signature_with_another_secret_never_verifies(secret: str, other_secret: str, body: bytes) -> None:
    assume(secret != other_secret)
    hex_config = HmacSha256HexVerification(secrets=(secret,))
    with pytest.raises(SignatureInvalid):
        verify_hmac_sha256_hex(hex_config, {"x-hub-signature-256": _hex(other_secret, body)}, body)
    stripe_config = StripeStyleVerification(secrets=(secret,))
    forged = f"t={TS},v1={_hex(other_secret, f'{TS}.'.encode() + body)}"
    with pytest.raises(SignatureInvalid):
        verify_stripe_style(stripe_config, {"stripe-signature": forged}, body, clock)
    # Rotation: with both secrets configured, either signs.
    both = HmacSha256HexVerification(secrets=(secret, other_secret))
    verify_hmac_sha256_hex(both, {"x-hub-signature-256": _hex(other_secret, body)}, body)


@settings(derandomize=True, deadline=None, max_examples=150)
@given(
    scheme=st.sampled_from(["standard", "hex", "stripe"]),
    header=st.text(max_size=200),
    body=bodies,
)
def test_arbitrary_signature_headers_are_refused_not_crashing(scheme: str, header: str, body: bytes) -> None:
    # Never a valid signature by chance; whatever the text, the only outcome is SignatureInvalid.
    secret_key = "whsec_" + base64.b64encode(b"k" * 24).decode()
    if scheme == "standard":
        config: StandardWebhooksVerification | HmacSha256HexVerification | StripeStyleVerification = (
            StandardWebhooksVerification(secrets=(secret_key,))
        )
        headers = {"webhook-id": "msg_1", "webhook-timestamp": str(TS), "webhook-signature": header}
    elif scheme == "hex":
        config = HmacSha256HexVerification(secrets=("a" * 24,))
        headers = {"x-hub-signature-256": header}
    else:
        config = StripeStyleVerification(secrets=("a" * 24,))
        headers = {"stripe-signature": header}
    with pytest.raises(SignatureInvalid):
        verify(config, headers, body, clock)
