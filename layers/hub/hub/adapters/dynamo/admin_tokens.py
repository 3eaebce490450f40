"""Admin tokens over the hub table (hub.admin.tokens.AdminTokenStore).

Two items per token, written in one transaction: ``ADMINTOKEN#<sha256>`` / ``ADMINTOKEN``, the
token itself, which authentication reads by hash (one consistent GetItem) and which carries the
GSI1 keys of its scope's listing; and ``ADMINTOKENID#<token id>`` / ``ADMINTOKEN``, which never
changes and leads from the id a revocation names to the hash.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import index_page, items_of
from hub.adapters.dynamo.table import ConditionFailed, Table, TransactionCancelled, Update, format_ts
from hub.admin.access import Role
from hub.admin.tokens import AdminToken, AdminTokenPage
from hub.errors import Conflict, NotFound


def admin_token_item(token: AdminToken) -> dict[str, Any]:
    return {
        **keys.admin_token_key(token.token_hash),
        **keys.admin_token_index_keys(token.tenant_id, token.token_id),
        "item_type": "admin_token",
        "token_id": token.token_id,
        "token_hash": token.token_hash,
        "prefix": token.prefix,
        "label": token.label,
        "role": token.role.value,
        "tenant_id": token.tenant_id,
        "created_at": format_ts(token.created_at),
        "created_by": token.created_by,
        "revoked_at": format_ts(token.revoked_at) if token.revoked_at else None,
    }


def admin_token_from(item: dict[str, Any]) -> AdminToken:
    revoked = item.get("revoked_at")
    return AdminToken(
        token_id=item["token_id"],
        token_hash=item["token_hash"],
        prefix=item["prefix"],
        label=item["label"],
        role=Role(item["role"]),
        tenant_id=item.get("tenant_id"),
        created_at=datetime.fromisoformat(item["created_at"]),
        created_by=item["created_by"],
        revoked_at=datetime.fromisoformat(revoked) if revoked else None,
    )


class DynamoAdminTokens:
    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "configuration storage")

    def create(self, token: AdminToken) -> None:
        pointer = {
            **keys.admin_token_id_key(token.token_id),
            "item_type": "admin_token_id",
            "token_id": token.token_id,
            "token_hash": token.token_hash,
            "tenant_id": token.tenant_id,
        }
        try:
            self._table.transact(
                [
                    self._table.put_entry(admin_token_item(token), "attribute_not_exists(PK)"),
                    self._table.put_entry(pointer, "attribute_not_exists(PK)"),
                ]
            )
        except TransactionCancelled as cancelled:  # 256 random bits: never in practice
            raise Conflict("admin token exists", details={"token_id": token.token_id}) from cancelled

    def by_hash(self, token_hash: str) -> AdminToken | None:
        item = self._table.get(keys.admin_token_key(token_hash))
        return admin_token_from(item) if item else None

    def get(self, token_id: str) -> AdminToken | None:
        pointer = self._table.get(keys.admin_token_id_key(token_id))
        return self.by_hash(pointer["token_hash"]) if pointer else None

    def list_tokens(self, tenant_id: str | None, limit: int, cursor: str | None) -> AdminTokenPage:
        rows, next_cursor = index_page(
            self._table, keys.admin_token_partition(tenant_id), limit, cursor, _one_of_the_tokens
        )
        tokens = [admin_token_from(item) for item in items_of(self._table, rows, keys.ADMIN_TOKEN_SK)]
        return AdminTokenPage(tokens=tokens, next_cursor=next_cursor)

    def revoke(self, token: AdminToken, now: datetime) -> AdminToken:
        update = Update().set(revoked_at=format_ts(now))
        update.where(
            f"attribute_exists({update.name('PK')}) AND attribute_not_exists({update.name('revoked_at')})"
        )
        try:
            return admin_token_from(self._table.update(keys.admin_token_key(token.token_hash), update))
        except ConditionFailed as failed:
            if failed.old is None:
                raise NotFound("admin token not found", details={"token_id": token.token_id}) from failed
            return admin_token_from(failed.old)  # already revoked


def _one_of_the_tokens(key: dict[str, str]) -> bool:
    """A cursor of a token listing names a token item."""
    return key["SK"] == keys.ADMIN_TOKEN_SK and key["PK"].startswith("ADMINTOKEN#")
