"""The `inbound_webhook` part of an integration: how a delivery is verified and how its payload
becomes a message. Validated when the integration is saved; secrets never appear in reprs."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    field_validator,
    model_validator,
)

from hub.domain.mapping_spec import check_expression
from hub.domain.media_type import WEBHOOK_DEFAULTS, check_range
from hub.domain.model import HubModel

WHSEC_PREFIX = "whsec_"
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_HEADER = re.compile(r"[A-Za-z0-9-]{1,64}")
_TYPE = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"


def whsec_key(secret: str) -> bytes:
    """The HMAC key of a Standard Webhooks secret: the base64 after the `whsec_` prefix."""
    return base64.b64decode(secret.removeprefix(WHSEC_PREFIX), validate=True)


class _Frozen(HubModel):
    # Validation errors never repeat the input: it holds secrets.
    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)


def _lower_header(value: str) -> str:
    if not _HEADER.fullmatch(value):
        raise ValueError("a header name is 1-64 letters, digits or '-'")
    return value.lower()


_MIN_SECRET_CHARS = 16


def _check_hashes(values: tuple[str, ...]) -> tuple[str, ...]:
    if not all(_SHA256_HEX.fullmatch(v) for v in values):
        raise ValueError("each entry is the lowercase hex SHA-256 of the expected credential")
    return values


def _check_secrets(values: tuple[str, ...]) -> tuple[str, ...]:
    """HMAC keys: at least 16 characters each, not blank. An empty key (an unset variable
    rendered as "") would make every signature computable by anyone."""
    if not all(len(v.strip()) >= _MIN_SECRET_CHARS for v in values):
        # Never echo the secret: the message names the rule only.
        raise ValueError(f"each secret is at least {_MIN_SECRET_CHARS} non-blank characters")
    return values


#: A header name, stored lowercase (HTTP API events carry lowercase header names).
HeaderName = Annotated[str, AfterValidator(_lower_header)]
#: HMAC keys (several while rotating), never shown in reprs.
HmacSecrets = Annotated[tuple[str, ...], Field(min_length=1, repr=False), AfterValidator(_check_secrets)]
#: SHA-256 (hex) of the expected credentials (several while rotating).
CredentialHashes = Annotated[tuple[str, ...], Field(min_length=1, repr=False), AfterValidator(_check_hashes)]


class StandardWebhooksVerification(_Frozen):
    """standardwebhooks.com: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<b64> ...`
    over `{id}.{timestamp}.{body}`. Several secrets at once while rotating: any may match."""

    scheme: Literal["standard_webhooks"] = "standard_webhooks"
    secrets: tuple[str, ...] = Field(min_length=1, repr=False)
    tolerance_seconds: int = Field(default=300, ge=1, le=3600)

    @field_validator("secrets")
    @classmethod
    def _whsec(cls, secrets: tuple[str, ...]) -> tuple[str, ...]:
        for secret in secrets:
            try:
                key = whsec_key(secret)
            except (binascii.Error, ValueError):
                key = b""
            if not secret.startswith(WHSEC_PREFIX) or len(key) < 16:
                # Never echo the secret: the message names the rule only.
                raise ValueError("each secret is 'whsec_' + base64 of at least 16 random bytes")
        return secrets


class HmacSha256HexVerification(_Frozen):
    """A header carrying the hex HMAC-SHA256 of the raw body, optionally prefixed (GitHub:
    `X-Hub-Signature-256: sha256=<hex>`)."""

    scheme: Literal["hmac_sha256_hex"] = "hmac_sha256_hex"
    header: HeaderName = "x-hub-signature-256"
    prefix: str = ""
    secrets: HmacSecrets


class StripeStyleVerification(_Frozen):
    """`<header>: t=<unix ts>,v1=<hex>[,v1=<hex>...]`, hex HMAC-SHA256 over `{t}.{body}`."""

    scheme: Literal["stripe_style"] = "stripe_style"
    header: HeaderName = "stripe-signature"
    secrets: HmacSecrets
    tolerance_seconds: int = Field(default=300, ge=1, le=3600)


class BasicVerification(_Frozen):
    """`Authorization: Basic ...` for partners that cannot sign. Only the SHA-256 (hex) of
    `username:password` is stored; give partners long random passwords (a fast hash is then
    safe, as for API keys). Several entries while rotating."""

    scheme: Literal["basic"] = "basic"
    credentials_sha256: CredentialHashes


class ApiKeyVerification(_Frozen):
    """A static key in a header, for partners that cannot sign. Only its SHA-256 (hex) is stored."""

    scheme: Literal["api_key"] = "api_key"
    header: HeaderName = "x-webhook-key"
    keys_sha256: CredentialHashes


Verification = Annotated[
    StandardWebhooksVerification
    | HmacSha256HexVerification
    | StripeStyleVerification
    | BasicVerification
    | ApiKeyVerification,
    Field(discriminator="scheme"),
]


class WebhookAdapter(_Frozen):
    """Turns the partner's payload into the internal event. Paths are
    JMESPath into the JSON body; XML and text bodies need a fixed message type and are kept as
    text."""

    body_format: Literal["json", "xml", "text"] = "json"
    #: A fixed message type, or...
    message_type: str | None = Field(default=None, pattern=_TYPE)
    #: ...where the payload names it (e.g. "type").
    message_type_path: str | None = None
    #: When set, any other type is refused (422). Shown sorted: a set has no order of its own,
    #: and a stored or planned copy must read the same in every process.
    known_types: Annotated[frozenset[str], PlainSerializer(sorted, return_type=list[str])] | None = None
    #: The partner's event id: the idempotency key and external id (Standard Webhooks: the
    #: `webhook-id` header is the idempotency key; this path then only sets the external id).
    event_id_path: str | None = None
    occurred_at_path: str | None = None
    #: The business data; None = the whole payload.
    data_path: str | None = None
    #: The Content-Types a delivery may carry (`type/subtype`, `type/*`, `type/*+suffix`); None =
    #: the defaults of `body_format` (hub.domain.media_type.WEBHOOK_DEFAULTS). Others are 415.
    content_types: tuple[str, ...] | None = Field(default=None, min_length=1)

    @field_validator("message_type_path", "event_id_path", "occurred_at_path", "data_path")
    @classmethod
    def _jmespath(cls, value: str | None) -> str | None:
        return None if value is None else check_expression(value)

    @field_validator("content_types")
    @classmethod
    def _media_ranges(cls, values: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if values is None else tuple(check_range(value) for value in values)

    def accepted_content_types(self) -> tuple[str, ...]:
        """The media ranges a delivery's Content-Type must match."""
        return self.content_types or WEBHOOK_DEFAULTS[self.body_format]

    @model_validator(mode="after")
    def _one_type_source(self) -> WebhookAdapter:
        if (self.message_type is None) == (self.message_type_path is None):
            raise ValueError("set exactly one of message_type and message_type_path")
        if self.body_format != "json":
            paths = (self.message_type_path, self.event_id_path, self.occurred_at_path, self.data_path)
            if any(p is not None for p in paths):
                raise ValueError("xml and text bodies take a fixed message_type and no paths")
        known = self.known_types
        if known is not None and self.message_type is not None and self.message_type not in known:
            raise ValueError("the fixed message_type is not among known_types")
        return self


class InboundWebhook(_Frozen):
    """`POST /api/webhook/{tenant_id}/{integration_id}`: verification first, then the adapter."""

    verification: Verification
    adapter: WebhookAdapter
