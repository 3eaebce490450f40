"""What a client certificate is to the hub, and the checks an upload must pass. Pure: no I/O.

A PKCS#12 (.pfx/.p12, e.g. an ICP-Brasil A1 file) is opened in memory with `cryptography`,
legacy 3DES/SHA1 files included. Only its public metadata ever leaves this module in clear; the
key, the password and the file itself go to envelope encryption (``envelope.py``).
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from hub.errors import HubError

#: Badge thresholds (seed 000, scenario F: yellow at 30 days or less, red at 7 or less).
WARNING_DAYS = 30
CRITICAL_DAYS = 7
_DAY_SECONDS = 86_400


class CertificateRejected(HubError):
    """An uploaded certificate cannot be used. Messages name the cause, never key material."""

    code = "certificate_invalid"
    http_status = 400


class CertificatePasswordInvalid(CertificateRejected):
    code = "certificate_password_invalid"


class CertificateKeyMismatch(CertificateRejected):
    code = "certificate_key_mismatch"


class CertificateExpired(CertificateRejected):
    code = "certificate_expired"


class ExpiryLevel(StrEnum):
    OK = "ok"
    WARNING = "warning"
    CRITICAL = "critical"
    EXPIRED = "expired"


def days_to_expiry(not_after: datetime, now: datetime) -> int:
    """Whole days left before `not_after` (floor): 0 on its last day, negative once past."""
    return math.floor((not_after - now).total_seconds() / _DAY_SECONDS)


def expiry_level(not_after: datetime, now: datetime) -> ExpiryLevel:
    if not_after <= now:
        return ExpiryLevel.EXPIRED
    days = days_to_expiry(not_after, now)
    if days <= CRITICAL_DAYS:
        return ExpiryLevel.CRITICAL
    if days <= WARNING_DAYS:
        return ExpiryLevel.WARNING
    return ExpiryLevel.OK


@dataclass(frozen=True)
class CertificateMetadata:
    """The public part of a stored client certificate: what the UI shows, stored in clear."""

    tenant_id: str
    connection_id: str
    subject: str
    issuer: str
    serial: str
    not_before: datetime
    not_after: datetime

    def view(self, now: datetime) -> dict[str, Any]:
        """The API answer: metadata plus badge data (`cert_expires_in_days`, `level`)."""
        return {
            "tenant_id": self.tenant_id,
            "connection_id": self.connection_id,
            "subject": self.subject,
            "issuer": self.issuer,
            "serial": self.serial,
            "not_before": iso(self.not_before),
            "not_after": iso(self.not_after),
            "cert_expires_in_days": days_to_expiry(self.not_after, now),
            "level": expiry_level(self.not_after, now).value,
        }


@dataclass(frozen=True)
class CertificateExpiry:
    """What the daily expiry check needs of a stored certificate (read from the expiry index)."""

    tenant_id: str
    connection_id: str
    not_after: datetime


@dataclass(frozen=True)
class PublicCertificate:
    subject: str
    issuer: str
    serial: str
    not_before: datetime
    not_after: datetime


def inspect_pkcs12(pfx: bytes, password: bytes, now: datetime) -> PublicCertificate:
    """Opens `pfx` with `password` and checks it can serve as a client certificate: it opens
    (else CertificatePasswordInvalid; cryptography does not tell a wrong password from a damaged
    file), it holds a certificate and the private key of that certificate (else
    CertificateKeyMismatch), and it has not expired (else CertificateExpired, with `not_after`).
    CRL/OCSP and the chain are not checked: the counterpart does that at the handshake."""
    # cryptography loads on the upload route only, not with the admin API's every cold start.
    from cryptography.hazmat.primitives.serialization import pkcs12  # noqa: PLC0415

    try:
        key, leaf, chain = pkcs12.load_key_and_certificates(pfx, password or None)
    except (ValueError, TypeError):
        # Not chained: the parser's message is not ours to show.
        raise CertificatePasswordInvalid(
            "the certificate's password is wrong, or the file is not a PKCS#12 (.pfx/.p12)"
        ) from None
    if leaf is None and key is None and not chain:
        raise CertificateRejected("the PKCS#12 file holds neither a certificate nor a private key")
    if key is None:
        raise CertificateKeyMismatch("the PKCS#12 file holds no private key for its certificate")
    if leaf is None:
        # Its certificates (if any) are not the key's: none is bound to it (localKeyId).
        raise CertificateKeyMismatch("the PKCS#12 file holds no certificate for its private key")
    if not _same_public_key(key.public_key(), leaf.public_key()):
        raise CertificateKeyMismatch("the PKCS#12 file does not hold the private key of its certificate")
    public = PublicCertificate(
        subject=leaf.subject.rfc4514_string(),
        issuer=leaf.issuer.rfc4514_string(),
        serial=format(leaf.serial_number, "x"),
        not_before=leaf.not_valid_before_utc,
        not_after=leaf.not_valid_after_utc,
    )
    if public.not_after <= now:
        raise CertificateExpired("the certificate has expired", details={"not_after": iso(public.not_after)})
    return public


def _same_public_key(a: Any, b: Any) -> bool:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - see inspect_pkcs12

    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    return bool(a.public_bytes(der, spki) == b.public_bytes(der, spki))


def iso(value: datetime) -> str:
    """Second-precision UTC, RFC 3339 (`...Z`): how certificate dates are stored and shown."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def decode_pkcs12_base64(value: str) -> bytes:
    """The uploaded file from its base64 text (standard alphabet, padding required; line breaks
    allowed, as `base64` tools wrap). CertificateRejected when it is not base64."""
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        raise CertificateRejected("pkcs12_base64 is not valid base64") from None
