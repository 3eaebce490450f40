"""API keys for the admin API (hub.admin.api_keys) and their last-used day (ingest).

One item per key, the one ingest reads: ``APIKEY#<sha256(key)>`` / ``APIKEY``. A key created
here also carries GSI1 keys (``TENANT#<tenant>#APIKEYS`` / ``<key_id>``), so a tenant's keys are
one Query, newest first. GSI1 projects only message attributes: the Query yields each key's PK,
and one BatchGetItem reads the page's items (an admin listing, never a hot path).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import index_page, items_of
from hub.adapters.dynamo.table import ConditionFailed, Table, TransactionCancelled, Update, format_ts
from hub.adapters.dynamo.tenancy import api_key_from
from hub.domain.tenancy import ApiKey
from hub.errors import Conflict, NotFound
from hub.ports import ApiKeyPage

_API_KEY_SK = "APIKEY"


def api_key_item(key: ApiKey) -> dict[str, Any]:
    """The stored item of a key created through the admin API."""
    return {
        **keys.api_key_key(key.key_hash),
        **keys.api_key_index_keys(key.tenant_id, key.key_id),
        "item_type": "api_key",
        "key_id": key.key_id,
        "tenant_id": key.tenant_id,
        "key_hash": key.key_hash,
        "integration_ids": sorted(key.integration_ids) if key.integration_ids is not None else None,
        "active": key.active,
        "label": key.label,
        "prefix": key.prefix,
        "created_at": format_ts(key.created_at) if key.created_at else None,
        "rotated_from": key.rotated_from,
    }


class DynamoApiKeys:
    """hub.ports.ApiKeyStore over the hub table."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "configuration storage")

    def tenant_exists(self, tenant_id: str) -> bool:
        return self._table.get(keys.tenant_key(tenant_id), consistent=False) is not None

    def tenant_integrations(self, tenant_id: str, integration_ids: Collection[str]) -> set[str]:
        wanted = {i: keys.integration_key(tenant_id, i) for i in sorted(set(integration_ids))}
        found = self._table.batch_get(list(wanted.values())) if wanted else {}
        return {i for i, key in wanted.items() if (key["PK"], key["SK"]) in found}

    def create(self, key: ApiKey) -> None:
        """Conflict when a key of the same hash is stored (never for a generated key: 256 random
        bits do not collide; a registered demo key stored before does)."""
        try:
            self._table.put(api_key_item(key), condition="attribute_not_exists(PK)")
        except ConditionFailed as taken:
            raise Conflict("api key exists", details={"key_id": key.key_id}) from taken

    def find(self, tenant_id: str, key_id: str) -> ApiKey | None:
        items, _ = self._table.query(
            IndexName="GSI1",
            KeyConditionExpression="GSI1PK = :pk AND GSI1SK = :sk",
            ExpressionAttributeValues={
                ":pk": {"S": keys.api_key_partition(tenant_id)},
                ":sk": {"S": key_id},
            },
        )
        if not items:
            return None
        item = self._table.get({"PK": items[0]["PK"], "SK": _API_KEY_SK})
        return api_key_from(item) if item and item["tenant_id"] == tenant_id else None

    def list_keys(self, tenant_id: str, limit: int, cursor: str | None) -> ApiKeyPage:
        rows, next_cursor = index_page(
            self._table, keys.api_key_partition(tenant_id), limit, cursor, _one_of_its_keys
        )
        page = [api_key_from(item) for item in items_of(self._table, rows, _API_KEY_SK)]
        return ApiKeyPage(keys=page, next_cursor=next_cursor)

    def revoke(self, key: ApiKey, now: datetime) -> ApiKey:
        update = Update().set(active=False, revoked_at=format_ts(now))
        active = update.name("active")
        update.where(f"attribute_exists({update.name('PK')}) AND {active} = {update.value(True)}")
        try:
            return api_key_from(self._table.update(keys.api_key_key(key.key_hash), update))
        except ConditionFailed as failed:
            if failed.old is None:
                raise NotFound("api key not found", details={"key_id": key.key_id}) from failed
            return api_key_from(failed.old)  # already revoked

    def rotate(self, old: ApiKey, new: ApiKey, grace_until: datetime) -> ApiKey:
        update = Update().set(grace_until=format_ts(grace_until), rotated_to=new.key_id)
        active, grace = update.name("active"), update.name("grace_until")
        update.where(f"{active} = {update.value(True)} AND attribute_not_exists({grace})")
        try:
            self._table.transact(
                [
                    self._table.put_entry(api_key_item(new), "attribute_not_exists(PK)"),
                    self._table.update_entry(keys.api_key_key(old.key_hash), update),
                ]
            )
        except TransactionCancelled as cancelled:
            changed = Conflict("the key changed while it was rotated", details={"key_id": old.key_id})
            raise changed from cancelled
        return old.model_copy(update={"expires_at": grace_until, "rotated_to": new.key_id})


class DynamoKeyUse:
    """hub.ports.KeyUseStore: one conditional UpdateItem, one attempt, short timeouts."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "configuration storage", best_effort=True)

    def record_use(self, key_hash: str, day: str) -> None:
        update = Update().set(last_used_day=day)
        field = update.name("last_used_day")
        update.where(
            f"attribute_exists({update.name('PK')}) AND "
            f"(attribute_not_exists({field}) OR {field} <> {update.value(day)})"
        )
        try:
            self._table.update(keys.api_key_key(key_hash), update)
        except ConditionFailed:
            return  # already recorded today (another instance), or the key is gone


def _one_of_its_keys(key: dict[str, str]) -> bool:
    """A cursor of a tenant's key listing names an API key item."""
    return key["SK"] == _API_KEY_SK and key["PK"].startswith("APIKEY#")
