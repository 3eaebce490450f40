"""The admin queue tabs: GSI1 (tenant + listed status, sorted by last change), newest first."""

from __future__ import annotations

from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import decode_cursor, encode_cursor
from hub.adapters.dynamo.table import Table
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
        partition = keys.status_partition(tenant_id, status.value)
        request: dict[str, Any] = {
            "IndexName": "GSI1",
            "KeyConditionExpression": "GSI1PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": partition}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if cursor:
            request["ExclusiveStartKey"] = {k: {"S": v} for k, v in _decode_cursor(cursor, partition).items()}
        items, last = self._table.query(**request)
        rows = [
            {field: value for field, value in item.items() if field in QUEUE_ROW_FIELDS} for item in items
        ]
        return QueuePage(rows=rows, next_cursor=encode_cursor(last) if last else None)


def _decode_cursor(cursor: str, partition: str) -> dict[str, str]:
    """The start key a cursor stands for: one this listing gives out (same tenant and status,
    the index key naming the same message as the table key)."""
    return decode_cursor(
        cursor,
        lambda key: (
            key["GSI1PK"] == partition
            and key["SK"] == "STATUS"
            and key["PK"].startswith("MSG#")
            and key["GSI1SK"].endswith("#" + key["PK"].removeprefix("MSG#"))
        ),
    )
