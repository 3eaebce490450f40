"""The admin queue tabs: GSI1 (tenant + listed status, sorted by last change), newest first."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import index_page
from hub.adapters.dynamo.table import Table, format_ts
from hub.admin.health import StatusRows
from hub.domain.status import PipelineStatus
from hub.ports import QueuePage

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


class DynamoStatusIndex:
    """The admin queue tabs: GSI1 (tenant + status, sorted by last change), newest first."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "message storage")

    def list_by_status(
        self, tenant_id: str, status: PipelineStatus, limit: int, cursor: str | None
    ) -> QueuePage:
        items, next_cursor = index_page(
            self._table, keys.status_partition(tenant_id, status.value), limit, cursor, _one_of_its_messages
        )
        rows = [
            {field: value for field, value in item.items() if field in QUEUE_ROW_FIELDS} for item in items
        ]
        return QueuePage(rows=rows, next_cursor=next_cursor)

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


def _one_of_its_messages(key: dict[str, str]) -> bool:
    """A cursor of the queue tabs: the index key names the same message as the table key."""
    return (
        key["SK"] == "STATUS"
        and key["PK"].startswith("MSG#")
        and key["GSI1SK"].endswith("#" + key["PK"].removeprefix("MSG#"))
    )
