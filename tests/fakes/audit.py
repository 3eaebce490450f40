"""An in-memory `hub.admin.audit.AuditTrail`: the entries in the order they were recorded."""

from __future__ import annotations

from dataclasses import replace

from hub.admin.audit import AuditEntry, AuditPage


class FakeAuditTrail:
    def __init__(self) -> None:
        self.entries: list[AuditEntry] = []

    def record(self, entry: AuditEntry) -> None:
        self.entries.append(replace(entry, entry_id=entry.entry_id or f"aud_{len(self.entries):026d}"))

    def list_entries(self, scope: str, limit: int, cursor: str | None) -> AuditPage:
        """Newest first; the cursor is the index of the next entry in that order."""
        mine = [e for e in reversed(self.entries) if e.scope == scope]
        start = int(cursor) if cursor else 0
        page = mine[start : start + limit]
        more = start + limit < len(mine)
        return AuditPage(entries=page, next_cursor=str(start + limit) if more else None)

    def actions(self, scope: str | None = None) -> list[str]:
        return [e.action for e in self.entries if scope is None or e.scope == scope]
