"""Envelope encryption of a client certificate: a fresh 256-bit data key from KMS per upload
(``GenerateDataKey``, bound to an encryption context), the PKCS#12 file and its password sealed
with AES-256-GCM under it, and only the KMS-encrypted data key kept beside them.

The encryption context ({tenant_id, connection_id}) is both KMS's context (Decrypt fails under
any other) and the GCM associated data: a sealed certificate opens only for the tenant and
connection it was sealed for (the store also refuses a record filed under another connection's
key). Plaintext data keys live in memory for one call only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Protocol

from hub.errors import HubError

# cryptography is imported by seal and open_sealed, as by hub.certificates.model: a function
# that only reads certificates' metadata (the daily expiry check) never loads it.

ALGORITHM = "AES-256-GCM"
_NONCE_BYTES = 12


class CertificateUndecryptable(HubError):
    """A stored certificate does not open: wrong context, tampered record or another key."""

    code = "certificate_undecryptable"
    http_status = 500


@dataclass(frozen=True)
class DataKey:
    plaintext: bytes = field(repr=False)
    encrypted: bytes
    key_id: str


class DataKeys(Protocol):
    """The key service (KMS) behind envelope encryption."""

    def generate(self, context: dict[str, str]) -> DataKey:
        """A new AES-256 data key bound to `context`."""
        ...

    def decrypt(self, encrypted: bytes, context: dict[str, str]) -> bytes:
        """The plaintext of a data key `generate` gave out under the same `context`; raises
        CertificateUndecryptable when the context or the blob does not match."""
        ...


@dataclass(frozen=True)
class SealedSecret:
    """Everything needed to open the secrets again, except the key service itself."""

    key_id: str
    encrypted_data_key: bytes
    context: dict[str, str]
    pfx_nonce: bytes
    pfx_ciphertext: bytes
    password_nonce: bytes
    password_ciphertext: bytes
    algorithm: str = ALGORITHM


def _aad(context: dict[str, str], part: str) -> bytes:
    return json.dumps({**context, "part": part}, sort_keys=True, separators=(",", ":")).encode()


def seal(keys: DataKeys, context: dict[str, str], pfx: bytes, password: bytes) -> SealedSecret:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: PLC0415 - see the imports

    data_key = keys.generate(context)
    aes = AESGCM(data_key.plaintext)
    pfx_nonce, password_nonce = os.urandom(_NONCE_BYTES), os.urandom(_NONCE_BYTES)
    return SealedSecret(
        key_id=data_key.key_id,
        encrypted_data_key=data_key.encrypted,
        context=dict(context),
        pfx_nonce=pfx_nonce,
        pfx_ciphertext=aes.encrypt(pfx_nonce, pfx, _aad(context, "pfx")),
        password_nonce=password_nonce,
        password_ciphertext=aes.encrypt(password_nonce, password, _aad(context, "password")),
    )


def open_sealed(keys: DataKeys, sealed: SealedSecret, context: dict[str, str]) -> tuple[bytes, bytes]:
    """(pfx, password). `context` is what the caller expects (from the record's own keys), not
    what the record claims: a record moved to another connection fails here."""
    from cryptography.exceptions import InvalidTag  # noqa: PLC0415 - see the imports
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: PLC0415

    aes = AESGCM(keys.decrypt(sealed.encrypted_data_key, context))
    try:
        pfx = aes.decrypt(sealed.pfx_nonce, sealed.pfx_ciphertext, _aad(context, "pfx"))
        password = aes.decrypt(sealed.password_nonce, sealed.password_ciphertext, _aad(context, "password"))
    except InvalidTag:
        raise CertificateUndecryptable("stored client certificate does not decrypt") from None
    return pfx, password
