"""An in-memory store of the admin API's Idempotency-Key claims (hub.admin.idempotency.ClaimStore),
over the port's own terms: what is claimed, by which run, and its kept answer."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from hub.admin.idempotency import FoundClaim
from hub.domain.admin_idempotency import ClaimState, StoredClaim
from hub.sealing import SealedBytes


@dataclass
class _Held:
    claim: StoredClaim
    run_id: str
    status: int | None = None
    answer: SealedBytes | None = None


class FakeClaims:
    def __init__(self) -> None:
        self.held: dict[tuple[str, str], _Held] = {}

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
        found = self.held.get((token_id, key_sha256))
        if found is not None and not _free(found.claim, request_sha256, now):
            return FoundClaim(found.claim, found.answer)
        claim = StoredClaim(request_sha256, ClaimState.RUNNING, lease_until, expires_at)
        self.held[(token_id, key_sha256)] = _Held(claim, run_id)
        return None

    def keep(self, token_id: str, key_sha256: str, run_id: str, status: int, answer: SealedBytes) -> bool:
        found = self.held.get((token_id, key_sha256))
        if found is None or found.run_id != run_id:
            return False
        found.claim = replace(found.claim, state=ClaimState.KEPT, lease_until=None)
        found.status, found.answer = status, answer
        return True

    def release(self, token_id: str, key_sha256: str, run_id: str) -> None:
        found = self.held.get((token_id, key_sha256))
        if found is not None and found.run_id == run_id:
            del self.held[(token_id, key_sha256)]


def _free(claim: StoredClaim, request_sha256: str, now: datetime) -> bool:
    if claim.expires_at <= now:
        return True
    return (
        claim.state is ClaimState.RUNNING
        and claim.lease_until is not None
        and claim.lease_until <= now
        and claim.request_sha256 == request_sha256
    )
