"""The admin queue tabs: GSI1 (tenant + listed status, sorted by last change), newest first."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.table import Table
from hub.domain.status import PipelineStatus
from hub.errors import ValidationFailed
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
        return QueuePage(rows=rows, next_cursor=_encode_cursor(last) if last else None)


_CURSOR_KEYS = frozenset({"PK", "SK", "GSI1PK", "GSI1SK"})


def _encode_cursor(key: Mapping[str, Any]) -> str:
    raw = json.dumps(dict(key), separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str, partition: str) -> dict[str, str]:
    """The start key a cursor stands for; it must be one this listing gives out (same tenant
    and status, keys consistent with each other), so a cursor can never open another tenant's
    partition nor make DynamoDB refuse the query."""
    invalid = ValidationFailed(
        "cursor is not valid", details=[{"field": "cursor", "problem": "invalid_cursor"}]
    )
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError as exc:
        raise invalid from exc
    if (
        not isinstance(key, dict)
        or set(key) != _CURSOR_KEYS
        or not all(isinstance(v, str) for v in key.values())
        or key["GSI1PK"] != partition
        or key["SK"] != "STATUS"
        or not key["PK"].startswith("MSG#")
        or not key["GSI1SK"].endswith("#" + key["PK"].removeprefix("MSG#"))
    ):
        raise invalid
    return key
