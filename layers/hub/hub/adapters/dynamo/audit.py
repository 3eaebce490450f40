"""The audit log over the hub table (hub.admin.audit.AuditTrail): one item per entry,
``AUDIT#<scope>`` / ``<at>#<entry id>``, so a scope's log is one Query, newest first."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import decode_cursor, encode_cursor
from hub.adapters.dynamo.table import Table, format_ts
from hub.admin.audit import AuditEntry, AuditPage
from hub.domain.ids import new_id

#: A Query of the table (not an index): its LastEvaluatedKey is the item's key.
_TABLE_KEY = frozenset({"PK", "SK"})


class DynamoAuditTrail:
    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "audit log")

    def record(self, entry: AuditEntry) -> None:
        stored = replace(entry, entry_id=entry.entry_id or new_id("aud"))
        at = format_ts(stored.at)
        self._table.put(
            {
                **keys.audit_key(stored.scope, at, stored.entry_id),
                "item_type": "audit",
                "entry_id": stored.entry_id,
                "scope": stored.scope,
                "actor_token_id": stored.actor_token_id,
                "actor_label": stored.actor_label,
                "action": stored.action,
                "target": dict(stored.target),
                "at": at,
                # JSON text: a view's shape (floats, nulls, nesting) is kept as it was shown.
                "before_json": json.dumps(stored.before, default=str) if stored.before is not None else None,
                "after_json": json.dumps(stored.after, default=str) if stored.after is not None else None,
            }
        )

    def list_entries(self, scope: str, limit: int, cursor: str | None) -> AuditPage:
        partition = keys.audit_partition(scope)
        request: dict[str, Any] = {
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": partition}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if cursor:
            start = decode_cursor(cursor, lambda key: key["PK"] == partition, _TABLE_KEY)
            request["ExclusiveStartKey"] = {name: {"S": value} for name, value in start.items()}
        items, last = self._table.query(**request)
        return AuditPage(
            entries=[_entry_from(item) for item in items],
            next_cursor=encode_cursor(last) if last else None,
        )


def _entry_from(item: dict[str, Any]) -> AuditEntry:
    before, after = item.get("before_json"), item.get("after_json")
    return AuditEntry(
        scope=item["scope"],
        actor_token_id=item["actor_token_id"],
        actor_label=item["actor_label"],
        action=item["action"],
        target=dict(item.get("target") or {}),
        at=datetime.fromisoformat(item["at"]),
        before=json.loads(before) if before is not None else None,
        after=json.loads(after) if after is not None else None,
        entry_id=item["entry_id"],
    )
