"""Envelope encryption of the secret fields of a configuration item (an integration's webhook
HMAC secrets, a connection's destination credentials), as client certificates are sealed
(hub.certificates.envelope): a fresh AES-256 data key from KMS per save, bound to an
encryption context {tenant_id, owner}; the fields' values sealed together with AES-256-GCM
under it, the context as associated data; only the KMS-encrypted data key kept beside them.

The item keeps, in clear, only *which* fields are sealed (`paths`: views show them as set,
never their values) and a scrypt digest of the values under a random salt, so a save can tell
"the same secrets again" (nothing changes) without decrypting: the admin API may seal but not
open. scrypt, not a fast hash, because a destination password may be short enough to guess.

`seal_bytes` / `open_bytes` seal one opaque value the same way, with no digest (nothing compares
it): the admin API's kept answers (hub.admin.idempotency), which may carry a secret shown once.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hub.certificates.envelope import CertificateUndecryptable, DataKey, DataKeys

ALGORITHM = "AES-256-GCM"
_NONCE_BYTES = 12
_SALT_BYTES = 16
# scrypt cost: ~20 ms and 16 MiB per digest; a save computes one or two.
_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}


@dataclass(frozen=True)
class SealedFields:
    key_id: str
    encrypted_data_key: bytes
    nonce: bytes
    ciphertext: bytes
    #: Dotted paths of the sealed fields, e.g. ("auth.token",). Not secret.
    paths: tuple[str, ...]
    salt: bytes
    digest: bytes
    algorithm: str = ALGORITHM

    def to_item(self) -> dict[str, Any]:
        """The stored attribute (a map; binary values as bytes)."""
        return {**_envelope_item(self), "paths": list(self.paths), "salt": self.salt, "digest": self.digest}

    @classmethod
    def from_item(cls, data: Mapping[str, Any]) -> SealedFields:
        return cls(
            **_envelope_of(data),
            paths=tuple(data["paths"]),
            salt=bytes(data["salt"]),
            digest=bytes(data["digest"]),
        )


def _envelope_item(sealed: SealedFields | SealedBytes) -> dict[str, Any]:
    """What every sealed value stores: its data key (id, encrypted), nonce, ciphertext, algorithm."""
    return {
        "key_id": sealed.key_id,
        "encrypted_data_key": sealed.encrypted_data_key,
        "nonce": sealed.nonce,
        "ciphertext": sealed.ciphertext,
        "algorithm": sealed.algorithm,
    }


def _envelope_of(data: Mapping[str, Any]) -> dict[str, Any]:
    """The envelope's fields of a stored sealed value (`_envelope_item` read back)."""
    return {
        "key_id": str(data["key_id"]),
        "encrypted_data_key": bytes(data["encrypted_data_key"]),
        "nonce": bytes(data["nonce"]),
        "ciphertext": bytes(data["ciphertext"]),
        "algorithm": str(data.get("algorithm", ALGORITHM)),
    }


def _encrypted(data_key: DataKey, context: Mapping[str, str], plaintext: bytes) -> dict[str, Any]:
    """The envelope's fields of `plaintext` sealed with AES-256-GCM under `data_key`, `context`
    as the associated data."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: PLC0415 - loaded on use

    nonce = os.urandom(_NONCE_BYTES)
    return {
        "key_id": data_key.key_id,
        "encrypted_data_key": data_key.encrypted,
        "nonce": nonce,
        "ciphertext": AESGCM(data_key.plaintext).encrypt(nonce, plaintext, _aad(context)),
    }


def _decrypted(
    keys: DataKeys, sealed: SealedFields | SealedBytes, context: Mapping[str, str], refusal: str
) -> bytes:
    """The sealed plaintext, opened under `context` (what the reader expects, not what the item
    claims); CertificateUndecryptable(`refusal`) when it does not open under it."""
    from cryptography.exceptions import InvalidTag  # noqa: PLC0415 - loaded on use
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: PLC0415

    aes = AESGCM(keys.decrypt(sealed.encrypted_data_key, dict(context)))
    try:
        return aes.decrypt(sealed.nonce, sealed.ciphertext, _aad(context))
    except InvalidTag:
        raise CertificateUndecryptable(refusal) from None


def _canonical(values: Mapping[str, Any]) -> bytes:
    return json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _aad(context: Mapping[str, str]) -> bytes:
    return json.dumps(dict(context), sort_keys=True, separators=(",", ":")).encode()


def _digest(salt: bytes, values: Mapping[str, Any]) -> bytes:
    return hashlib.scrypt(_canonical(values), salt=salt, **_SCRYPT)


def seal_fields(keys: DataKeys, context: Mapping[str, str], values: Mapping[str, Any]) -> SealedFields:
    """`values` ({path: JSON value}) sealed under a new data key bound to `context`."""
    data_key = keys.generate(dict(context))
    salt = os.urandom(_SALT_BYTES)
    return SealedFields(
        **_encrypted(data_key, context, _canonical(values)),
        paths=tuple(sorted(values)),
        salt=salt,
        digest=_digest(salt, values),
    )


def open_fields(keys: DataKeys, sealed: SealedFields, context: Mapping[str, str]) -> dict[str, Any]:
    """The sealed values. `context` is what the reader expects (the item's own tenant and id),
    not what the item claims: values moved to another item do not open."""
    values = json.loads(_decrypted(keys, sealed, context, "stored secrets do not decrypt"))
    if not isinstance(values, dict):
        raise CertificateUndecryptable("stored secrets are not a field map")
    return values


def same_values(sealed: SealedFields, values: Mapping[str, Any]) -> bool:
    """Whether `values` are exactly what `sealed` holds (no decryption needed)."""
    return tuple(sorted(values)) == sealed.paths and hmac.compare_digest(
        _digest(sealed.salt, values), sealed.digest
    )


def take_fields(data: Mapping[str, Any], paths: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(`data` without the fields at `paths`, {path: value} of those present and not None).
    `data` is a JSON-like dict (a model's dump); it is not changed."""
    rest = copy.deepcopy(dict(data))
    taken: dict[str, Any] = {}
    for path in paths:
        *parents, leaf = path.split(".")
        node: Any = rest
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(leaf) is not None:
            taken[path] = node.pop(leaf)
    return rest, taken


def put_fields(data: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """`data` with each {path: value} set (parents created as needed); `data` is not changed."""
    result = copy.deepcopy(dict(data))
    for path, value in values.items():
        *parents, leaf = path.split(".")
        node = result
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[leaf] = value
    return result


@dataclass(frozen=True)
class SealedBytes:
    """One value sealed under its own data key (see `seal_bytes`)."""

    key_id: str
    encrypted_data_key: bytes
    nonce: bytes
    ciphertext: bytes
    algorithm: str = ALGORITHM

    def to_item(self) -> dict[str, Any]:
        return _envelope_item(self)

    @classmethod
    def from_item(cls, data: Mapping[str, Any]) -> SealedBytes:
        return cls(**_envelope_of(data))


def seal_bytes(data_key: DataKey, context: Mapping[str, str], plaintext: bytes) -> SealedBytes:
    """`plaintext` sealed with AES-256-GCM under `data_key` (generated for `context`, which is
    also the associated data). The caller generates the key first (`DataKeys.generate`), so a key
    service that does not answer fails before the work whose result is sealed."""
    return SealedBytes(**_encrypted(data_key, context, plaintext))


def open_bytes(keys: DataKeys, sealed: SealedBytes, context: Mapping[str, str]) -> bytes:
    """The sealed value. `context` is what the reader expects (from the item's own key), not what
    the item claims: a value moved to another item does not open (CertificateUndecryptable)."""
    return _decrypted(keys, sealed, context, "a sealed value does not decrypt")
