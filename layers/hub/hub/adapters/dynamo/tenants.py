"""Tenants for the admin API (hub.admin.tenants).

One item per tenant, the one ingest reads through its configuration cache: ``TENANT#<id>`` /
``PROFILE``. It carries GSI1 keys (``TENANTS`` / ``<tenant_id>``), so the listing is one Query by
tenant id; GSI1 projects only message attributes, so one BatchGetItem reads the page's items.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import index_page, items_of
from hub.adapters.dynamo.table import ConditionFailed, Table, Update, format_ts
from hub.adapters.dynamo.tenancy import rate_item, tenant_from, tenant_item
from hub.domain.rate_limit import Rate
from hub.domain.tenancy import Tenant
from hub.errors import Conflict, NotFound
from hub.ports import TenantPage

_TENANT_SK = "PROFILE"


class DynamoTenants:
    """hub.ports.TenantStore over the hub table."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "configuration storage")

    def create(self, tenant: Tenant) -> None:
        try:
            self._table.put(tenant_item(tenant), condition="attribute_not_exists(PK)")
        except ConditionFailed as taken:
            raise Conflict("tenant exists", details={"tenant_id": tenant.tenant_id}) from taken

    def get(self, tenant_id: str) -> Tenant | None:
        item = self._table.get(keys.tenant_key(tenant_id))
        return tenant_from(item) if item else None

    def list_tenants(self, limit: int, cursor: str | None) -> TenantPage:
        rows, next_cursor = index_page(
            self._table, keys.TENANTS_PARTITION, limit, cursor, _one_of_the_tenants, newest_first=False
        )
        page = [tenant_from(item) for item in items_of(self._table, rows, _TENANT_SK)]
        return TenantPage(tenants=page, next_cursor=next_cursor)

    def update(self, tenant_id: str, changes: Mapping[str, Any], now: datetime) -> Tenant:
        stored = {name: _stored(value) for name, value in changes.items()}
        # The index keys too: a tenant written by hand (without them) is listed from its first change.
        update = Update().set(**stored, **keys.tenant_index_keys(tenant_id), updated_at=format_ts(now))
        update.where(f"attribute_exists({update.name('PK')})")
        try:
            return tenant_from(self._table.update(keys.tenant_key(tenant_id), update))
        except ConditionFailed as missing:
            raise NotFound("tenant not found", details={"tenant_id": tenant_id}) from missing


def _stored(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_ts(value)
    if isinstance(value, Rate):
        return rate_item(value)
    return value


def _one_of_the_tenants(key: dict[str, str]) -> bool:
    """A cursor of the tenant listing names a tenant item, under its own id."""
    return key["SK"] == _TENANT_SK and key["PK"] == keys.tenant_key(key["GSI1SK"])["PK"]
