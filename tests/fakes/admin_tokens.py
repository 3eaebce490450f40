"""An in-memory `hub.admin.tokens.AdminTokenStore` with the DynamoDB adapter's contract: found
by hash and by id, listed per scope newest first, a revocation keeps its first time."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from hub.admin.tokens import AdminToken, AdminTokenPage
from hub.errors import Conflict, NotFound
from tests.fakes.pages import page


class FakeAdminTokens:
    def __init__(self) -> None:
        self.by_id: dict[str, AdminToken] = {}

    def create(self, token: AdminToken) -> None:
        if token.token_id in self.by_id or self.by_hash(token.token_hash) is not None:
            raise Conflict("admin token exists")
        self.by_id[token.token_id] = token

    def by_hash(self, token_hash: str) -> AdminToken | None:
        return next((t for t in self.by_id.values() if t.token_hash == token_hash), None)

    def get(self, token_id: str) -> AdminToken | None:
        return self.by_id.get(token_id)

    def list_tokens(self, tenant_id: str | None, limit: int, cursor: str | None) -> AdminTokenPage:
        mine = [i for i, t in self.by_id.items() if t.tenant_id == tenant_id]
        ids, next_cursor = page(mine, limit, cursor, f"admin_tokens:{tenant_id}", newest_first=True)
        return AdminTokenPage(tokens=[self.by_id[i] for i in ids], next_cursor=next_cursor)

    def revoke(self, token: AdminToken, now: datetime) -> AdminToken:
        stored = self.by_id.get(token.token_id)
        if stored is None:
            raise NotFound("admin token not found")
        if stored.revoked_at is None:
            stored = self.by_id[token.token_id] = replace(stored, revoked_at=now)
        return stored
