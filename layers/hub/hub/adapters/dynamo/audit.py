"""The audit log over the hub table (hub.admin.audit.AuditTrail): one item per entry,
``AUDIT#<scope>`` / ``<at>#<entry id>``, so a scope's log is one Query, newest first."""

from __future__ import annotations

import json
from dataclasses import replace

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.table import Table, format_ts
from hub.admin.audit import AuditEntry
from hub.domain.ids import new_id


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
