"""The admin queue tabs (newest first, cursor-paginated, never a scan):

- waiting / dead_letter / error: GSI1 (tenant + listed status, sorted by last change), which
  projects a queue row's fields, so a page is one Query;
- all (issue 13): GSI2 (every message of the tenant, sorted by receipt), which projects only
  what never changes, so a page is one Query and one BatchGetItem of the rows' current fields.

Filters (hub.ports.QueueFilter): `since` / `until` narrow the sort key (last change, or receipt
for `all`); `integration_id` is a FilterExpression on the projected attribute, so a page reads at
most `limit` index items and may come back short, with a cursor. A cursor carries its filters'
fingerprint: another combination's cursor is 422 `cursor_mismatch`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import SortRange, index_page
from hub.adapters.dynamo.table import Table, format_ts
from hub.admin.health import StatusRows
from hub.domain.message import MessageRecord
from hub.domain.status import PipelineStatus, current_error_class
from hub.ports import QueueFilter, QueuePage, StatusCount

#: What an admin queue row shows; template.yaml projects exactly these into GSI1 (a test checks),
#: so a listing reads no item per row. Never the payload, nor dest_status_text (it may quote the
#: destination's answer).
QUEUE_ROW_FIELDS = (
    "message_id",
    "integration_id",
    "message_type",
    "external_id",
    "pipeline_status",
    "received_at",
    "updated_at",
    "retry_count",
    "next_retry_at",
    "last_retry_error_class",
    "dest_status",
    "uncertain",
)


_TIMES = ("received_at", "updated_at", "next_retry_at")
#: A count with a filter reads at most this many times its cap of index rows (the filter applies
#: after the read: a rare integration in a large partition would otherwise read all of it).
COUNT_READ_FACTOR = 10
#: The stored times' precision: `until` minus one is the last instant before it.
_TICK = timedelta(microseconds=1)


def queue_row(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A queue row as every tab shows it, from a stored item, an index row or a record's fields:
    every QUEUE_ROW_FIELDS key (null when unset; `retry_count` 0 and `uncertain` false when
    absent; `last_retry_error_class` null unless the status is a failing one), times in the
    stored fixed-width UTC form. One function, so the row an operator
    action answers with (reprocess, cancel) is the row the listing would show."""
    row = {field: fields.get(field) for field in QUEUE_ROW_FIELDS}
    row["retry_count"] = int(row["retry_count"] or 0)
    row["uncertain"] = bool(row["uncertain"])
    for field in _TIMES:
        if isinstance(moment := row[field], datetime):
            row[field] = format_ts(moment)
    for field, value in row.items():
        if isinstance(value, Enum):
            row[field] = value.value
    # A sent (or reprocessed, cancelled) message keeps its last failure's class on the item; the
    # row shows it only while the message still fails with it (issue 28).
    row["last_retry_error_class"] = current_error_class(row["pipeline_status"], row["last_retry_error_class"])
    return row


def record_row(record: MessageRecord) -> dict[str, Any]:
    """`record`'s queue row (the message as the listing shows it after a move)."""
    return queue_row(record.model_dump(mode="python", include=set(QUEUE_ROW_FIELDS)))


class DynamoStatusIndex:
    """The admin queue tabs: GSI1 by status, GSI2 for `all`; newest first."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "message storage")

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
        items, next_cursor = index_page(
            self._table,
            keys.status_partition(tenant_id, status.value),
            limit,
            cursor,
            _one_of_its_messages,
            # GSI1SK is `<updated_at>#<id>`: the bare `until` sorts before every key at that time.
            sort_range=SortRange(
                low=format_ts(filters.since) if filters.since else None,
                high=format_ts(filters.until) if filters.until else None,
            ),
            equals=_equals(filters),
            scope=filters.fingerprint(),
        )
        return QueuePage(rows=[queue_row(item) for item in items], next_cursor=next_cursor)

    def list_received(
        self, tenant_id: str, limit: int, cursor: str | None, filters: QueueFilter | None = None
    ) -> QueuePage:
        """Every message of `tenant_id`, newest received first: one Query of GSI2 and one
        BatchGetItem (eventually consistent, the row fields only) of the page's items."""
        filters = filters or QueueFilter()
        rows, next_cursor = index_page(
            self._table,
            keys.messages_partition(tenant_id),
            limit,
            cursor,
            _one_of_its_received,
            index="GSI2",
            sort_key=keys.RECEIVED_SORT_KEY,
            # The sort key is the bare time: `until` excluded by ending a microsecond before it.
            sort_range=SortRange(
                low=format_ts(filters.since) if filters.since else None,
                high=format_ts(filters.until - _TICK) if filters.until else None,
            ),
            equals=_equals(filters),
            scope=filters.fingerprint(),
        )
        if not rows:
            return QueuePage(rows=[], next_cursor=next_cursor)
        found = self._table.batch_get(
            [{"PK": row["PK"], "SK": row["SK"]} for row in rows],
            projection=QUEUE_ROW_FIELDS,
            consistent=False,
        )
        current = [queue_row(item) for row in rows if (item := found.get((row["PK"], row["SK"]))) is not None]
        return QueuePage(rows=current, next_cursor=next_cursor)

    def count_by_status(
        self, tenant_id: str, status: PipelineStatus, cap: int, integration_id: str | None = None
    ) -> StatusCount:
        """How many of `tenant_id`'s messages are in `status` (of `integration_id` only, when
        given), up to `cap`: `Select=COUNT` Query pages of GSI1's status partition, so no row
        comes back and each page bills only the index rows it reads (about 300 bytes each).
        Without a filter it reads at most `cap` rows; with one (a FilterExpression, counted
        after the read) at most COUNT_READ_FACTOR x `cap`. `at_least` when it stopped early."""
        request: dict[str, Any] = {
            "IndexName": "GSI1",
            "KeyConditionExpression": "GSI1PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": keys.status_partition(tenant_id, status.value)}},
        }
        if integration_id:
            request["FilterExpression"] = "#integration = :integration"
            request["ExpressionAttributeNames"] = {"#integration": "integration_id"}
            request["ExpressionAttributeValues"][":integration"] = {"S": integration_id}
        budget = cap * COUNT_READ_FACTOR if integration_id else cap
        counted = read = 0
        while True:
            request["Limit"] = budget - read
            matched, scanned, last = self._table.count(**request)
            counted, read = counted + matched, read + scanned
            if counted >= cap:
                return StatusCount(count=cap, at_least=True)
            if last is None:
                return StatusCount(count=counted, at_least=False)
            if read >= budget or not scanned:
                return StatusCount(count=counted, at_least=True)
            request["ExclusiveStartKey"] = {name: {"S": value} for name, value in last.items()}

    def changed_since(
        self,
        tenant_id: str,
        status: PipelineStatus,
        since: datetime | None,
        max_pages: int,
        page_size: int = 500,
    ) -> StatusRows:
        """The admin Health view: the tenant's messages in `status` changed at or after
        `since` (a key condition on GSI1SK, `<updated_at>#<message_id>`), oldest change first, at
        most `max_pages` Query pages of `page_size`."""
        condition = "GSI1PK = :pk"
        values: dict[str, Any] = {":pk": {"S": keys.status_partition(tenant_id, status.value)}}
        if since is not None:
            condition += " AND GSI1SK >= :since"
            values[":since"] = {"S": format_ts(since)}
        request: dict[str, Any] = {
            "IndexName": "GSI1",
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ProjectionExpression": "integration_id, updated_at, received_at",
            "ScanIndexForward": True,
            "Limit": page_size,
        }
        rows: list[dict[str, object]] = []
        for _ in range(max_pages):
            items, last = self._table.query(**request)
            rows += items
            if last is None:
                return StatusRows(rows=rows, truncated=False)
            request["ExclusiveStartKey"] = {name: {"S": value} for name, value in last.items()}
        return StatusRows(rows=rows, truncated=True)


def _equals(filters: QueueFilter) -> dict[str, str] | None:
    return {"integration_id": filters.integration_id} if filters.integration_id else None


def _one_of_its_messages(key: dict[str, str]) -> bool:
    """A cursor of the queue tabs: the index key names the same message as the table key."""
    return (
        key["SK"] == "STATUS"
        and key["PK"].startswith("MSG#")
        and key["GSI1SK"].endswith("#" + key["PK"].removeprefix("MSG#"))
    )


def _one_of_its_received(key: dict[str, str]) -> bool:
    """A cursor of the `all` tab: a message item's key."""
    return key["SK"] == keys.MESSAGE_SK and key["PK"].startswith(keys.MESSAGE_PREFIX)
