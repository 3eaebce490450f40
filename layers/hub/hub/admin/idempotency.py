"""Idempotency-Key on every mutating admin call (issue 28, point 1): the use case behind the
admin API's middleware (hub.api.admin.idempotency) and the port it stores claims through.

A request with a key first claims it for the calling token (one conditional write); a repeat of
the same request gets the first answer again and runs nothing. The kept answer is sealed whole
under its own KMS data key (purpose `admin-answer`, bound to the token and the key's hash): an
answer may show a secret once (a new API key or admin token, a rotated subscription secret),
and the table never holds one in clear. The data key is generated when the claim is taken, before
the route runs, so a key service that does not answer refuses the request (503) with nothing
done, instead of failing to keep an answer whose action already happened.
"""

from __future__ import annotations

import json
import logging
import secrets
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from hub.certificates.envelope import CertificateUndecryptable, DataKey, DataKeys
from hub.domain.admin_idempotency import (
    LEASE,
    RETENTION,
    ClaimState,
    StoredClaim,
    Verdict,
    kept,
    key_hash,
    verdict,
)
from hub.domain.clock import utcnow
from hub.errors import ConfigurationError, HubError, IdempotencyKeyInUse, SecretUndecryptable
from hub.sealed_config import ADMIN_ANSWER
from hub.sealing import SealedBytes, open_bytes, seal_bytes

logger = logging.getLogger(__name__)

#: A kept answer larger than this, sealed and compressed, is not kept (a DynamoDB item holds
#: 400 KB): its key is freed instead, and a resend runs again. Admin answers are views of items
#: that fit in one, and compress well; the largest are configuration saves, which a resend
#: repeats harmlessly (the same content again, or 412 with If-Match).
MAX_SEALED_BYTES = 300_000
#: Claim attempts when a claim changes between the write and its reading (a lease just ended).
_ATTEMPTS = 3


@dataclass(frozen=True)
class FoundClaim:
    """A key's claim as the store found it, with its sealed answer once kept."""

    claim: StoredClaim
    answer: SealedBytes | None = None


class ClaimStore(Protocol):
    """Where the admin API's idempotency claims live (hub.adapters.dynamo.admin_idempotency)."""

    def claim(
        self,
        token_id: str,
        key_sha256: str,
        request_sha256: str,
        run_id: str,
        *,
        now: datetime,
        lease_until: datetime,
        expires_at: datetime,
    ) -> FoundClaim | None:
        """Claims the key for `run_id` when it is free: no claim, an expired one, or one still
        running for the same request after its lease. None when claimed; otherwise the claim
        as stored (nothing written)."""
        ...

    def keep(self, token_id: str, key_sha256: str, run_id: str, status: int, answer: SealedBytes) -> bool:
        """Keeps the answer on the claim while `run_id` holds it; False when it no longer does."""
        ...

    def release(self, token_id: str, key_sha256: str, run_id: str) -> None:
        """Deletes the claim while `run_id` holds it (a resend then runs again)."""
        ...


@dataclass(frozen=True)
class Answer:
    """An admin answer as it is kept and replayed: status, headers, body text."""

    status: int
    body: str
    headers: Mapping[str, str] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        text = json.dumps({"status": self.status, "headers": dict(self.headers), "body": self.body})
        return zlib.compress(text.encode("utf-8"))

    @classmethod
    def from_bytes(cls, data: bytes) -> Answer:
        loaded = json.loads(zlib.decompress(data))
        return cls(status=int(loaded["status"]), body=str(loaded["body"]), headers=dict(loaded["headers"]))


@dataclass(frozen=True)
class Run:
    """A request that holds its key: its answer is kept (`finish`) or the key freed (`abandon`)."""

    token_id: str
    key_sha256: str
    run_id: str
    data_key: DataKey = field(repr=False)


def _context(token_id: str, key_sha256: str) -> dict[str, str]:
    """The encryption context of a kept answer: KMS's and the GCM associated data."""
    return {"purpose": ADMIN_ANSWER, "token_id": token_id, "key_sha256": key_sha256}


class AdminIdempotency:
    """Begins a keyed request (a replay or a run) and ends its run. Idempotent per (token, key):
    a repeat of the first request answers the first answer and does nothing."""

    def __init__(self, claims: ClaimStore, keys: DataKeys, *, clock: Callable[[], datetime] = utcnow) -> None:
        self._claims = claims
        self._keys = keys
        self._clock = clock

    def begin(self, token_id: str, key: str, request_sha256: str) -> Answer | Run:
        """The kept answer of this request with this key (replay it), or a Run that holds the key
        (run the request, then `finish` or `abandon`). Raises IdempotencyKeyReused (422: the key
        was first used with another request), IdempotencyKeyInUse (409: the first is running),
        KeyServiceUnavailable or StorageUnavailable (503: nothing done)."""
        hashed = key_hash(key)
        run_id = secrets.token_hex(16)
        for _ in range(_ATTEMPTS):
            now = self._clock()
            found = self._claims.claim(
                token_id,
                hashed,
                request_sha256,
                run_id,
                now=now,
                lease_until=now + LEASE,
                expires_at=now + RETENTION,
            )
            if found is None:
                return self._run(token_id, hashed, run_id)
            if verdict(found.claim, request_sha256, now) is Verdict.REPLAY:
                return self._opened(token_id, hashed, found)
            # Verdict.CLAIM: freed between the write and this reading (a lease just ended).
        raise IdempotencyKeyInUse("the first request with this Idempotency-Key is still running")

    def finish(self, run: Run, answer: Answer) -> None:
        """Keeps a 2xx or 4xx answer for repeats; frees the key after a 5xx. Never raises: the
        request's own answer goes out whatever happens here (its action is done)."""
        try:
            if not kept(answer.status):
                self._claims.release(run.token_id, run.key_sha256, run.run_id)
                return
            sealed = seal_bytes(run.data_key, _context(run.token_id, run.key_sha256), answer.to_bytes())
            if len(sealed.ciphertext) > MAX_SEALED_BYTES:
                logger.warning(
                    "admin answer too large to keep; its Idempotency-Key is freed",
                    extra={"token_id": run.token_id, "sealed_bytes": len(sealed.ciphertext)},
                )
                self._claims.release(run.token_id, run.key_sha256, run.run_id)
                return
            if not self._claims.keep(run.token_id, run.key_sha256, run.run_id, answer.status, sealed):
                logger.warning("an Idempotency-Key claim was taken over before its answer was kept")
        except HubError as error:
            # The claim stays running until its lease ends; then a resend runs again.
            logger.warning("could not keep an admin answer", extra={"code": error.code})

    def abandon(self, run: Run) -> None:
        """Frees the key of a request that failed unexpectedly (a resend runs again). Never
        raises: the failure being handled is what the caller must see."""
        try:
            self._claims.release(run.token_id, run.key_sha256, run.run_id)
        except HubError as error:
            logger.warning("could not free an Idempotency-Key", extra={"code": error.code})

    def _run(self, token_id: str, hashed: str, run_id: str) -> Run:
        try:
            data_key = self._keys.generate(_context(token_id, hashed))
        except BaseException:
            self._claims.release(token_id, hashed, run_id)
            raise
        return Run(token_id=token_id, key_sha256=hashed, run_id=run_id, data_key=data_key)

    def _opened(self, token_id: str, hashed: str, found: FoundClaim) -> Answer:
        if found.claim.state is not ClaimState.KEPT or found.answer is None:
            raise ConfigurationError("a kept Idempotency-Key claim has no answer")
        try:
            plain = open_bytes(self._keys, found.answer, _context(token_id, hashed))
        except CertificateUndecryptable:
            raise SecretUndecryptable("a kept answer does not decrypt") from None
        return Answer.from_bytes(plain)
