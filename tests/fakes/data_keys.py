"""An in-memory key service (KMS stand-in) for envelope encryption: each data key is "encrypted"
as its own id, and opens only under the context it was generated for, as KMS behaves."""

from __future__ import annotations

import os

from hub.certificates.envelope import CertificateUndecryptable, DataKey


class FakeDataKeys:
    def __init__(self) -> None:
        self._keys: dict[bytes, tuple[bytes, dict[str, str]]] = {}
        self.decrypts = 0

    def generate(self, context: dict[str, str]) -> DataKey:
        handle = os.urandom(16)
        plaintext = os.urandom(32)
        self._keys[handle] = (plaintext, dict(context))
        return DataKey(plaintext=plaintext, encrypted=handle, key_id="fake-key")

    def decrypt(self, encrypted: bytes, context: dict[str, str]) -> bytes:
        self.decrypts += 1
        found = self._keys.get(encrypted)
        if found is None or found[1] != context:
            raise CertificateUndecryptable("does not decrypt")
        return found[0]


#: The fakes' key service by default (one KMS key for every fake store of a test run).
SHARED_KEYS = FakeDataKeys()
