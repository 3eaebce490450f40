"""Webhook verification schemes: pure functions over the raw bytes, a clock for the tolerance."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from hub.domain.webhook_config import (
    ApiKeyVerification,
    BasicVerification,
    HmacSha256HexVerification,
    InboundWebhook,
    StandardWebhooksVerification,
    StripeStyleVerification,
)
from hub.errors import SignatureExpired, SignatureInvalid
from hub.webhooks.signatures import (
    sign_standard_webhooks,
    verify,
    verify_api_key,
    verify_basic,
    verify_hmac_sha256_hex,
    verify_standard_webhooks,
    verify_stripe_style,
)

# The official Standard Webhooks test vector.
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MSG_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
TIMESTAMP = 1614265330
BODY = b'{"test": 2432232314}'
SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
OTHER_SECRET = "whsec_" + base64.b64encode(b"a second, rotated-in secret key!").decode()


def at(timestamp: float):
    return lambda: datetime.fromtimestamp(timestamp, UTC)


def sw_headers(
    signature: str = SIGNATURE, timestamp: int = TIMESTAMP, msg_id: str = MSG_ID
) -> dict[str, str]:
    return {"webhook-id": msg_id, "webhook-timestamp": str(timestamp), "webhook-signature": signature}


def sw(*secrets: str) -> StandardWebhooksVerification:
    return StandardWebhooksVerification(secrets=secrets or (SECRET,))


class TestStandardWebhooks:
    def test_official_vector_signs_and_verifies(self):
        assert sign_standard_webhooks(SECRET, MSG_ID, TIMESTAMP, BODY) == SIGNATURE
        assert verify_standard_webhooks(sw(), sw_headers(), BODY, at(TIMESTAMP)) == MSG_ID

    def test_the_same_json_reserialized_fails(self):
        with pytest.raises(SignatureInvalid) as refused:
            verify_standard_webhooks(sw(), sw_headers(), b'{"test":2432232314}', at(TIMESTAMP))
        assert refused.value.code == "signature_invalid"

    @pytest.mark.parametrize(
        "change",
        [{"webhook-id": "msg_other"}, {"webhook-timestamp": str(TIMESTAMP + 1)}],
        ids=["other-id", "other-timestamp"],
    )
    def test_id_and_timestamp_are_signed(self, change):
        with pytest.raises(SignatureInvalid):
            verify_standard_webhooks(sw(), {**sw_headers(), **change}, BODY, at(TIMESTAMP))

    def test_rotation_any_secret_and_any_listed_signature_matches(self):
        old_only = sign_standard_webhooks(OTHER_SECRET, MSG_ID, TIMESTAMP, BODY)
        both = f"v1,AAAA {old_only} v1a,ignored"

        assert verify_standard_webhooks(sw(SECRET, OTHER_SECRET), sw_headers(both), BODY, at(TIMESTAMP))
        with pytest.raises(SignatureInvalid):
            verify_standard_webhooks(sw(SECRET), sw_headers(both), BODY, at(TIMESTAMP))

    @pytest.mark.parametrize("offset", [-301, 301], ids=["stale", "future"])
    def test_outside_five_minutes_is_expired(self, offset):
        with pytest.raises(SignatureExpired) as refused:
            verify_standard_webhooks(sw(), sw_headers(), BODY, at(TIMESTAMP - offset))
        assert refused.value.code == "signature_expired"

    @pytest.mark.parametrize("offset", [-300, 300])
    def test_inside_five_minutes_is_fresh(self, offset):
        assert verify_standard_webhooks(sw(), sw_headers(), BODY, at(TIMESTAMP + offset)) == MSG_ID

    def test_an_unsigned_stale_request_is_invalid_not_expired(self):
        with pytest.raises(SignatureInvalid) as refused:
            verify_standard_webhooks(sw(), sw_headers("v1,bm9wZQ=="), BODY, at(TIMESTAMP + 3600))
        assert refused.value.code == "signature_invalid"

    @pytest.mark.parametrize(
        "headers",
        [
            {},
            {"webhook-id": MSG_ID, "webhook-timestamp": str(TIMESTAMP)},
            sw_headers(signature="g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="),  # no "v1,"
            sw_headers(signature="v1,not base64!"),
            {**sw_headers(), "webhook-timestamp": "1614265330.5"},
            {**sw_headers(), "webhook-timestamp": "-1"},
        ],
        ids=["none", "no-signature", "no-version", "bad-base64", "float-ts", "negative-ts"],
    )
    def test_missing_or_malformed_headers_are_invalid(self, headers):
        with pytest.raises(SignatureInvalid):
            verify_standard_webhooks(sw(), headers, BODY, at(TIMESTAMP))

    @pytest.mark.parametrize("secret", ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_!!", "whsec_c2hvcnQ="])
    def test_secrets_must_be_whsec_base64(self, secret):
        with pytest.raises(ValidationError) as refused:
            StandardWebhooksVerification(secrets=(secret,))
        assert secret not in str(refused.value)

    def test_secrets_stay_out_of_reprs(self):
        config = InboundWebhook.model_validate(
            {
                "verification": {"scheme": "standard_webhooks", "secrets": [SECRET]},
                "adapter": {"message_type": "x"},
            }
        )
        assert SECRET not in repr(config)
        assert SECRET not in str(config)


def hex_hmac(secret: str, content: bytes) -> str:
    return hmac.new(secret.encode(), content, hashlib.sha256).hexdigest()


class TestHmacSha256Hex:
    def test_github_style_prefix(self):
        config = HmacSha256HexVerification(prefix="sha256=", secrets=("It's a Secret to Everybody",))
        # GitHub's documented example: payload "Hello, World!".
        expected = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        verify_hmac_sha256_hex(config, {"x-hub-signature-256": f"sha256={expected}"}, b"Hello, World!")

        with pytest.raises(SignatureInvalid):
            verify_hmac_sha256_hex(config, {"x-hub-signature-256": expected}, b"Hello, World!")  # no prefix
        with pytest.raises(SignatureInvalid):
            verify_hmac_sha256_hex(config, {"x-hub-signature-256": f"sha256={expected}"}, b"Hello, World")

    def test_configured_header_and_second_secret(self):
        old, new = "old-partner-secret-0001", "new-partner-secret-0002"
        config = HmacSha256HexVerification(header="X-Partner-Signature", secrets=(old, new))
        body = b"<order id='1'/>"

        verify_hmac_sha256_hex(config, {"x-partner-signature": hex_hmac(new, body).upper()}, body)
        with pytest.raises(SignatureInvalid):
            verify_hmac_sha256_hex(
                config, {"x-partner-signature": hex_hmac("other-secret-000003", body)}, body
            )
        with pytest.raises(SignatureInvalid):
            verify_hmac_sha256_hex(config, {}, body)


class TestStripeStyle:
    config = StripeStyleVerification(secrets=("whsec_stripe_test",))
    body = b'{"id": "evt_1", "type": "invoice.paid"}'

    def header(self, timestamp: int, *signatures: str) -> dict[str, str]:
        parts = [f"t={timestamp}", *(f"v1={s}" for s in signatures), "v0=deadbeef"]
        return {"stripe-signature": ",".join(parts)}

    def test_any_of_several_v1_signatures(self):
        good = hex_hmac("whsec_stripe_test", f"{TIMESTAMP}.".encode() + self.body)

        verify_stripe_style(self.config, self.header(TIMESTAMP, "00" * 32, good), self.body, at(TIMESTAMP))
        with pytest.raises(SignatureInvalid):
            verify_stripe_style(self.config, self.header(TIMESTAMP, "00" * 32), self.body, at(TIMESTAMP))

    def test_timestamp_is_signed_and_checked(self):
        good = hex_hmac("whsec_stripe_test", f"{TIMESTAMP}.".encode() + self.body)

        with pytest.raises(SignatureInvalid):
            verify_stripe_style(self.config, self.header(TIMESTAMP + 1, good), self.body, at(TIMESTAMP))
        with pytest.raises(SignatureExpired):
            verify_stripe_style(self.config, self.header(TIMESTAMP, good), self.body, at(TIMESTAMP + 301))
        with pytest.raises(SignatureInvalid):
            verify_stripe_style(self.config, {"stripe-signature": f"v1={good}"}, self.body, at(TIMESTAMP))


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


class TestUnsignedPartners:
    def test_basic_compares_the_hash_of_user_and_password(self):
        config = BasicVerification(credentials_sha256=(sha("partner:long-random-password"),))
        good = base64.b64encode(b"partner:long-random-password").decode()
        bad = base64.b64encode(b"partner:guess").decode()

        verify_basic(config, {"authorization": f"Basic {good}"})
        for presented in (f"Basic {bad}", f"Bearer {good}", "Basic !!", ""):
            with pytest.raises(SignatureInvalid):
                verify_basic(config, {"authorization": presented})

    def test_api_key_in_the_configured_header(self):
        config = ApiKeyVerification(header="X-Partner-Token", keys_sha256=(sha("tok-1"), sha("tok-2")))

        verify_api_key(config, {"x-partner-token": "tok-2"})
        for headers in ({"x-partner-token": "tok-3"}, {"x-webhook-key": "tok-1"}, {}):
            with pytest.raises(SignatureInvalid):
                verify_api_key(config, headers)

    def test_only_hashes_are_accepted_as_configuration(self):
        with pytest.raises(ValidationError):
            ApiKeyVerification(keys_sha256=("tok-1",))
        with pytest.raises(ValidationError):
            BasicVerification(credentials_sha256=("partner:password",))


def test_verify_dispatches_on_the_scheme_and_returns_the_delivery_id():
    api_key = ApiKeyVerification(keys_sha256=(sha("k"),))

    assert verify(sw(), sw_headers(), BODY, at(TIMESTAMP)) == MSG_ID
    assert verify(api_key, {"x-webhook-key": "k"}, BODY, at(TIMESTAMP)) is None
    with pytest.raises(SignatureInvalid):
        verify(api_key, sw_headers(), BODY, at(TIMESTAMP))


@pytest.mark.parametrize("secret", ["", "   ", "short"])
@pytest.mark.parametrize("model", [HmacSha256HexVerification, StripeStyleVerification])
def test_blank_or_short_hmac_secrets_are_refused_at_save(model, secret):
    # An empty key would let anyone compute a valid signature.
    with pytest.raises(ValidationError) as refused:
        model(secrets=(secret,))
    assert "at least 16" in str(refused.value)


@pytest.mark.parametrize("timestamp", ["\u00b2", "1e9", "-1614265330", "16142653300000"])
def test_a_timestamp_that_is_not_ascii_digits_is_a_401_not_a_crash(timestamp):
    headers = {**sw_headers(), "webhook-timestamp": timestamp}
    with pytest.raises(SignatureInvalid):
        verify_standard_webhooks(sw(), headers, BODY, at(TIMESTAMP))
