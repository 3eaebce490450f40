"""KMS adapter for envelope encryption: data keys bound to an encryption context.

KMS errors become hub errors: a blob or context that does not match is
CertificateUndecryptable (never retried into success); throttling, a disabled key or an
unreachable endpoint is KeyServiceUnavailable (retryable).
"""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from hub.adapters.aws import client, error_code
from hub.certificates.envelope import CertificateUndecryptable, DataKey
from hub.errors import KeyServiceUnavailable

_NOT_OURS = frozenset({"InvalidCiphertextException", "IncorrectKeyException", "InvalidKeyUsageException"})


class KmsDataKeys:
    def __init__(self, key_id: str) -> None:
        self._key_id = key_id

    def generate(self, context: dict[str, str]) -> DataKey:
        try:
            answer = client("kms").generate_data_key(
                KeyId=self._key_id, KeySpec="AES_256", EncryptionContext=context
            )
        except (BotoCoreError, ClientError) as exc:
            raise KeyServiceUnavailable(
                "the key service is temporarily unavailable", details={"operation": "GenerateDataKey"}
            ) from exc
        return DataKey(
            plaintext=bytes(answer["Plaintext"]),
            encrypted=bytes(answer["CiphertextBlob"]),
            key_id=str(answer["KeyId"]),
        )

    def decrypt(self, encrypted: bytes, context: dict[str, str]) -> bytes:
        try:
            answer = client("kms").decrypt(
                CiphertextBlob=encrypted, EncryptionContext=context, KeyId=self._key_id
            )
        except ClientError as exc:
            if error_code(exc) in _NOT_OURS:
                raise CertificateUndecryptable("stored client certificate does not decrypt") from None
            raise KeyServiceUnavailable(
                "the key service is temporarily unavailable", details={"operation": "Decrypt"}
            ) from exc
        except BotoCoreError as exc:
            raise KeyServiceUnavailable(
                "the key service is temporarily unavailable", details={"operation": "Decrypt"}
            ) from exc
        return bytes(answer["Plaintext"])
