"""The admin queue tabs over the fakes' table (hub.adapters.dynamo.status_index's contract):
a status tab lists the items carrying that tab's GSI1 keys, `all` every item carrying the
tenant's GSI2 keys, newest first by the index's sort key; `since` / `until` narrow the sort key,
`integration_id` filters after `limit` items are read (a page may come back short, with a
cursor); cursors are the adapter's (its encoder and checks), bound to their filters."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import SCOPE, decode_cursor, encode_cursor
from hub.adapters.dynamo.status_index import COUNT_READ_FACTOR, QUEUE_ROW_FIELDS, queue_row, record_row
from hub.adapters.dynamo.table import format_ts
from hub.domain.message import MessageRecord
from hub.domain.status import PipelineStatus
from hub.ports import QueueFilter, QueuePage, StatusCount
from tests.fakes.table import FakeTable


class FakeStatusIndex:
    def __init__(self, table: FakeTable) -> None:
        self.table = table
        #: Index items each listing read (what DynamoDB would bill), newest call last.
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
        filters = filters or QueueFilter()
        high = format_ts(filters.until) if filters.until else None
        partition = keys.status_partition(tenant_id, status.value)
        return self._page("GSI1PK", "GSI1SK", partition, high, limit, cursor, filters)

    def list_received(
        self, tenant_id: str, limit: int, cursor: str | None, filters: QueueFilter | None = None
    ) -> QueuePage:
        filters = filters or QueueFilter()
        high = format_ts(filters.until - timedelta(microseconds=1)) if filters.until else None
        partition = keys.messages_partition(tenant_id)
        return self._page("GSI2PK", keys.RECEIVED_SORT_KEY, partition, high, limit, cursor, filters)

    def count_by_status(
        self, tenant_id: str, status: PipelineStatus, cap: int, integration_id: str | None = None
    ) -> StatusCount:
        """The adapter's bounds: `cap` rows read without a filter, COUNT_READ_FACTOR x `cap`
        with one, in the index's order (oldest change first)."""
        partition = keys.status_partition(tenant_id, status.value)
        with self.table.lock:
            items = sorted(
                (dict(item) for item in self.table.items.values() if item.get("GSI1PK") == partition),
                key=lambda item: (item["GSI1SK"], item["PK"], item["SK"]),
            )
        budget = cap * COUNT_READ_FACTOR if integration_id else cap
        read = items[:budget]
        self.read.append(len(read))
        counted = sum(
            1 for item in read if not integration_id or item.get("integration_id") == integration_id
        )
        if counted >= cap:
            return StatusCount(count=cap, at_least=True)
        return StatusCount(count=counted, at_least=len(items) > budget)

    def _page(
        self,
        pk: str,
        sk: str,
        partition: str,
        high: str | None,
        limit: int,
        cursor: str | None,
        filters: QueueFilter,
    ) -> QueuePage:
        scope = filters.fingerprint()
        low = format_ts(filters.since) if filters.since else None
        with self.table.lock:
            items = [
                dict(item)
                for item in self.table.items.values()
                if item.get(pk) == partition
                and (low is None or item[sk] >= low)
                and (high is None or item[sk] <= high)
            ]
        # DynamoDB orders equal sort keys by the table key; sort keys here end in the message id.
        items.sort(key=lambda item: (item[sk], item["PK"], item["SK"]), reverse=True)
        if cursor:
            shape = frozenset({"PK", "SK", pk, sk})
            start = decode_cursor(
                cursor,
                lambda key: key[pk] == partition and key["PK"].startswith(keys.MESSAGE_PREFIX),
                shape,
                scope=scope,
            )
            after = (start[sk], start["PK"], start["SK"])
            items = [item for item in items if (item[sk], item["PK"], item["SK"]) < after]
        read, more = items[:limit], len(items) > limit
        self.read.append(len(read))
        next_cursor = None
        if more and read:
            last = read[-1]
            next_cursor = encode_cursor({name: last[name] for name in ("PK", "SK", pk, sk)} | {SCOPE: scope})
        kept = [
            item
            for item in read
            if not filters.integration_id or item["integration_id"] == filters.integration_id
        ]
        return QueuePage(
            rows=[queue_row({name: item.get(name) for name in QUEUE_ROW_FIELDS}) for item in kept],
            next_cursor=next_cursor,
        )
