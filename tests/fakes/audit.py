"""An in-memory `hub.admin.audit.AuditTrail` with the DynamoDB adapter's contract
(tests/contract/test_audit_contract.py): a scope's entries newest first (by time, then id), in
pages whose cursors only that scope's listing takes back."""

from __future__ import annotations

from dataclasses import replace

from hub.adapters.dynamo.table import format_ts
from hub.admin.audit import AuditEntry, AuditPage
from tests.fakes.pages import page


class FakeAuditTrail:
    def __init__(self) -> None:
        self.entries: list[AuditEntry] = []

    def record(self, entry: AuditEntry) -> None:
        """In the order recorded (`entries`); an entry without an id gets the next one."""
        self.entries.append(replace(entry, entry_id=entry.entry_id or f"aud_{len(self.entries):026d}"))

    def list_entries(self, scope: str, limit: int, cursor: str | None) -> AuditPage:
        mine = {_order(e): e for e in self.entries if e.scope == scope}
        keys, next_cursor = page(mine, limit, cursor, f"audit:{scope}", newest_first=True)
        return AuditPage(entries=[mine[k] for k in keys], next_cursor=next_cursor)

    def actions(self, scope: str | None = None) -> list[str]:
        return [e.action for e in self.entries if scope is None or e.scope == scope]


def _order(entry: AuditEntry) -> str:
    """Where the entry stands in its scope's log: by time, then by id."""
    return f"{format_ts(entry.at)}#{entry.entry_id}"
