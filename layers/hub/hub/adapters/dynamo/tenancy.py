"""Tenants, integrations and API keys: the configuration items."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.table import ConditionFailed, Table, Update, format_ts
from hub.domain.tenancy import ApiKey, Integration, Tenant


def api_key_from(data: Mapping[str, Any]) -> ApiKey:
    ids = data.get("integration_ids")
    return ApiKey(
        key_id=data["key_id"],
        tenant_id=data["tenant_id"],
        key_hash=data["key_hash"],
        integration_ids=frozenset(ids) if ids is not None else None,
        active=bool(data.get("active", True)),
        label=data.get("label"),
        prefix=data.get("prefix"),
        created_at=_ts(data.get("created_at")),
        last_used_day=data.get("last_used_day"),
        # Not `expires_at`: that is the table's TTL attribute, which would delete the item.
        expires_at=_ts(data.get("grace_until")),
        revoked_at=_ts(data.get("revoked_at")),
        rotated_to=data.get("rotated_to"),
        rotated_from=data.get("rotated_from"),
    )


def _ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def integration_from(data: Mapping[str, Any]) -> Integration:
    integration = Integration.model_validate_json(data["config_json"])
    gone_at = data.get("connection_gone_at")
    if gone_at:
        integration = integration.model_copy(update={"connection_gone_at": datetime.fromisoformat(gone_at)})
    return integration


class DynamoConfigRepository:
    """Tenants, integrations and API keys."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "configuration storage")

    def get_api_key(self, key_hash: str) -> ApiKey | None:
        item = self._table.get(keys.api_key_key(key_hash), consistent=False)
        return api_key_from(item) if item else None

    def get_integration(self, integration_id: str) -> Integration | None:
        item = self._table.get(keys.integration_key(integration_id), consistent=False)
        return integration_from(item) if item else None

    def put_tenant(self, tenant: Tenant) -> None:
        self._table.put({**keys.tenant_key(tenant.tenant_id), "item_type": "tenant", **tenant.model_dump()})

    def put_integration(self, integration: Integration) -> None:
        self._table.put(
            {
                **keys.integration_key(integration.integration_id),
                "item_type": "integration",
                "tenant_id": integration.tenant_id,
                # The gone flag is the hub's observation, kept beside the configuration.
                "config_json": integration.model_dump_json(exclude={"connection_gone_at"}),
            }
        )

    def flag_connection_gone(self, integration_id: str, now: datetime, dest_status: str | None) -> None:
        """Sets `connection_gone_at` beside the stored configuration (only if the integration
        still exists); put_integration replaces the item, so saving the connection clears it."""
        update = Update().set(connection_gone_at=format_ts(now), connection_gone_status=dest_status or "410")
        update.where(f"attribute_exists({update.name('PK')})")
        try:
            self._table.update(keys.integration_key(integration_id), update)
        except ConditionFailed:
            return

    def put_api_key(self, api_key: ApiKey) -> None:
        ids = sorted(api_key.integration_ids) if api_key.integration_ids is not None else None
        self._table.put(
            {
                **keys.api_key_key(api_key.key_hash),
                "item_type": "api_key",
                "key_id": api_key.key_id,
                "tenant_id": api_key.tenant_id,
                "key_hash": api_key.key_hash,
                "integration_ids": ids,
                "active": api_key.active,
            }
        )
