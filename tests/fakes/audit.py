"""An in-memory `hub.admin.audit.AuditTrail`: the entries in the order they were recorded."""

from __future__ import annotations

from dataclasses import replace

from hub.admin.audit import AuditEntry


class FakeAuditTrail:
    def __init__(self) -> None:
        self.entries: list[AuditEntry] = []

    def record(self, entry: AuditEntry) -> None:
        self.entries.append(replace(entry, entry_id=entry.entry_id or f"aud_{len(self.entries):026d}"))
