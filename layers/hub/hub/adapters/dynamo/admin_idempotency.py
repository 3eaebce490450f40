"""The admin API's Idempotency-Key claims over the hub table (hub.admin.idempotency.ClaimStore).

One item per (token, key): ``ADMINIDEM#<token id>#<sha256(key)>`` / ``CLAIM`` with
`request_sha256`, `state` (`running` | `kept`), `run_id` (the run that holds it), `lease_until`
while running, `status` and the sealed `answer` once kept, and `expires_at` (the table's TTL, 24 h
after the claim). Claiming is one conditional PutItem whose failed condition returns the claim as
it is, so a repeat costs one write attempt and no read; keeping and freeing are conditioned on
the run that holds the claim, so a run whose claim was taken over changes nothing.
"""

from __future__ import annotations

from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.table import ConditionFailed, Table, Update, epoch, format_ts
from hub.admin.idempotency import FoundClaim
from hub.domain.admin_idempotency import ClaimState, StoredClaim
from hub.sealing import SealedBytes

#: Free to claim: no claim, an expired one the TTL has not deleted yet, or one still running for
#: the same request after its lease (its run died).
_FREE = (
    "attribute_not_exists(PK) OR expires_at <= :now"
    " OR (#state = :running AND lease_until <= :now AND request_sha256 = :request)"
)


class DynamoAdminIdempotency:
    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "idempotency storage")

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
        item = {
            **keys.admin_idempotency_key(token_id, key_sha256),
            "item_type": "admin_idempotency",
            "request_sha256": request_sha256,
            "state": ClaimState.RUNNING.value,
            "run_id": run_id,
            "claimed_at": format_ts(now),
            "lease_until": epoch(lease_until),
            "expires_at": epoch(expires_at),
        }
        try:
            self._table.put(
                item,
                _FREE,
                values={":now": epoch(now), ":running": ClaimState.RUNNING.value, ":request": request_sha256},
                names={"#state": "state"},
            )
        except ConditionFailed as failed:
            if failed.old is None:  # deleted in between: free again, the caller retries
                return FoundClaim(StoredClaim(request_sha256, ClaimState.RUNNING, now, now))
            return _found(failed.old)
        return None

    def keep(self, token_id: str, key_sha256: str, run_id: str, status: int, answer: SealedBytes) -> bool:
        update = Update().set(state=ClaimState.KEPT.value, status=status, answer=answer.to_item())
        update.remove("lease_until")
        update.where(f"{update.name('run_id')} = {update.value(run_id)}")
        try:
            self._table.update(keys.admin_idempotency_key(token_id, key_sha256), update)
        except ConditionFailed:
            return False
        return True

    def release(self, token_id: str, key_sha256: str, run_id: str) -> None:
        # A failed condition: taken over, or already gone; not this run's to free.
        with suppress(ConditionFailed):
            self._table.delete(
                keys.admin_idempotency_key(token_id, key_sha256), "run_id = :run", values={":run": run_id}
            )


def _found(item: dict[str, Any]) -> FoundClaim:
    lease = item.get("lease_until")
    answer = item.get("answer")
    return FoundClaim(
        StoredClaim(
            request_sha256=str(item["request_sha256"]),
            state=ClaimState(item["state"]),
            lease_until=datetime.fromtimestamp(int(lease), UTC) if lease is not None else None,
            expires_at=datetime.fromtimestamp(int(item["expires_at"]), UTC),
        ),
        SealedBytes.from_item(answer) if answer else None,
    )
