"""The admin queue tabs over the fakes' messages (hub.adapters.dynamo.status_index's contract,
tests/contract/test_status_index_contract.py), read from the stored records
(FakeMessages.records), not from index keys: a status tab lists the tenant's messages in that
status (the listed ones: error, retry_pending, dead_letter), newest change first; `all` every
message of the tenant, newest received first (equal times: the larger message id first).
`since` / `until` narrow those times (`until` excluded); `integration_id` filters after `limit`
messages are read (a page may come back short, with a cursor); a cursor is taken back only by
its own listing (ValidationFailed) under the same filters (CursorMismatch)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from hub.adapters.dynamo.cursors import SCOPE, decode_cursor, encode_cursor
from hub.adapters.dynamo.keys import LISTED_STATUSES
from hub.adapters.dynamo.status_index import COUNT_READ_FACTOR, record_row
from hub.adapters.dynamo.table import format_ts
from hub.domain.message import MessageRecord
from hub.domain.status import PipelineStatus
from hub.ports import QueueFilter, QueuePage, StatusCount

#: Where a message stands in a listing: its time there, then its id.
Place = tuple[str, str]
_SHAPE = frozenset({"listing", "at", "id"})


class FakeStatusIndex:
    def __init__(self, records: Callable[[], Iterable[MessageRecord]]) -> None:
        self._records = records
        #: Messages each listing read (what DynamoDB would bill), newest call last.
        self.read: list[int] = []

    def row(self, record: MessageRecord) -> dict[str, Any]:
        return record_row(record)

    def list_by_status(
        self,
        tenant_id: str,
        status: PipelineStatus,
        limit: int,
        cursor: str | None,
        filters: QueueFilter | None = None,
    ) -> QueuePage:
        listing = f"status:{tenant_id}:{status.value}"
        return self._page(
            listing, self._in_status(tenant_id, status), limit, cursor, filters or QueueFilter()
        )

    def list_received(
        self, tenant_id: str, limit: int, cursor: str | None, filters: QueueFilter | None = None
    ) -> QueuePage:
        mine = {(_at(r.received_at), r.message_id): r for r in self._records() if r.tenant_id == tenant_id}
        return self._page(f"received:{tenant_id}", mine, limit, cursor, filters or QueueFilter())

    def count_by_status(
        self, tenant_id: str, status: PipelineStatus, cap: int, integration_id: str | None = None
    ) -> StatusCount:
        """The adapter's bounds: `cap` messages read without a filter, COUNT_READ_FACTOR x `cap`
        with one, oldest change first."""
        listed = self._in_status(tenant_id, status)
        budget = cap * COUNT_READ_FACTOR if integration_id else cap
        read = [listed[place] for place in sorted(listed)[:budget]]
        self.read.append(len(read))
        counted = sum(1 for r in read if not integration_id or r.integration_id == integration_id)
        if counted >= cap:
            return StatusCount(count=cap, at_least=True)
        return StatusCount(count=counted, at_least=len(listed) > budget)

    def _in_status(self, tenant_id: str, status: PipelineStatus) -> dict[Place, MessageRecord]:
        if status not in LISTED_STATUSES:
            return {}
        return {
            (_at(r.updated_at), r.message_id): r
            for r in self._records()
            if r.tenant_id == tenant_id and r.pipeline_status is status
        }

    def _page(
        self,
        listing: str,
        listed: dict[Place, MessageRecord],
        limit: int,
        cursor: str | None,
        filters: QueueFilter,
    ) -> QueuePage:
        scope = filters.fingerprint()
        low = _at(filters.since) if filters.since else None
        high = _at(filters.until) if filters.until else None
        places = sorted(
            (p for p in listed if (low is None or p[0] >= low) and (high is None or p[0] < high)),
            reverse=True,
        )
        if cursor:
            start = decode_cursor(cursor, lambda key: key["listing"] == listing, _SHAPE, scope=scope)
            places = [p for p in places if p < (start["at"], start["id"])]
        read, more = places[:limit], len(places) > limit
        self.read.append(len(read))
        next_cursor = None
        if more and read:
            at, message_id = read[-1]
            next_cursor = encode_cursor({"listing": listing, "at": at, "id": message_id, SCOPE: scope})
        kept = [
            listed[p]
            for p in read
            if not filters.integration_id or listed[p].integration_id == filters.integration_id
        ]
        return QueuePage(rows=[record_row(r) for r in kept], next_cursor=next_cursor)


def _at(moment: datetime) -> str:
    return format_ts(moment)
