"""Tenants, integrations and API keys: the configuration items."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.connections import destination_of
from hub.adapters.dynamo.outbox import event_put
from hub.adapters.dynamo.table import ConditionFailed, Table, TransactionCancelled, Update, format_ts
from hub.domain.ids import new_id
from hub.domain.rate_limit import Rate
from hub.domain.tenancy import ApiKey, Integration, IntegrationMode, Tenant
from hub.outbox.events import EventType, OutboxEvent
from hub.sealed_config import (
    INTEGRATION_CONFIG,
    Sealer,
    blobs_from,
    blobs_item,
    parse_config,
    seal_integration,
)


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


def tenant_item(tenant: Tenant) -> dict[str, Any]:
    """The stored item of a tenant, with its GSI1 keys (listed by the admin API)."""
    return {
        **keys.tenant_key(tenant.tenant_id),
        **keys.tenant_index_keys(tenant.tenant_id),
        "item_type": "tenant",
        "tenant_id": tenant.tenant_id,
        "name": tenant.name,
        "default_mode": tenant.default_mode.value,
        "active": tenant.active,
        "created_at": format_ts(tenant.created_at) if tenant.created_at else None,
        "updated_at": format_ts(tenant.updated_at) if tenant.updated_at else None,
        "disabled_at": format_ts(tenant.disabled_at) if tenant.disabled_at else None,
        "rate_limit": rate_item(tenant.rate_limit),
        # Days; null: the platform's default (issue 29).
        "payload_retention_days": tenant.payload_retention_days,
        "message_retention_days": tenant.message_retention_days,
    }


def rate_item(rate: Rate | None) -> dict[str, Any] | None:
    """A tenant's rate limit as stored (DynamoDB numbers are Decimals, never floats)."""
    if rate is None:
        return None
    return {"per_second": Decimal(str(rate.per_second)), "burst": rate.burst}


def tenant_from(data: Mapping[str, Any]) -> Tenant:
    """A stored tenant; one written before the admin API (only id and name) is active, with
    the default mode."""
    return Tenant(
        tenant_id=data["tenant_id"],
        name=data["name"],
        default_mode=data.get("default_mode") or IntegrationMode.OBSERVABILITY,
        active=bool(data.get("active", True)),
        created_at=_ts(data.get("created_at")),
        updated_at=_ts(data.get("updated_at")),
        disabled_at=_ts(data.get("disabled_at")),
        rate_limit=Rate.model_validate(data["rate_limit"]) if data.get("rate_limit") else None,
        payload_retention_days=_days(data.get("payload_retention_days")),
        message_retention_days=_days(data.get("message_retention_days")),
    )


def _days(value: Any) -> int | None:
    return int(value) if value is not None else None


def _ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


#: The version of an integration item written without one (by hand, before the admin API).
UNVERSIONED = 1


#: Reads without opening (stand-ins for sealed secrets) and writes without sealing.
_NO_KEYS = Sealer(None)


def integration_item(
    integration: Integration,
    version: int,
    sealer: Sealer = _NO_KEYS,
    sealed: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The stored item of an integration: the configuration the pipeline reads (`config_json`,
    without the hub's own `connection_gone_at`, nor its secrets: those are sealed by `sealer`
    into `sealed`, by field; a stand-in keeps what `sealed` holds), and beside it the attributes
    the admin API uses: `version` (optimistic updates), `connection_id`, and GSI1 keys."""
    config, blobs = seal_integration(sealer, integration, sealed)
    return {
        **keys.integration_key(integration.tenant_id, integration.integration_id),
        **keys.integration_index_keys(integration.tenant_id, integration.integration_id),
        "item_type": "integration",
        "tenant_id": integration.tenant_id,
        "connection_id": integration.connection_id,
        "version": version,
        # The gone flag is the hub's observation, kept beside the configuration.
        "config_json": json.dumps(config, separators=(",", ":")),
        "sealed": blobs_item(blobs) or None,
    }


def integration_version(data: Mapping[str, Any]) -> int:
    return int(data.get("version") or UNVERSIONED)


def integration_from(data: Mapping[str, Any], sealer: Sealer = _NO_KEYS) -> Integration:
    """A stored integration, its sealed secrets opened where `sealer` opens their purpose
    (stand-ins elsewhere); one written before sealing holds them in clear, read as they are."""
    config = parse_config(data["config_json"])
    tenant_id = str(config.get("tenant_id") or data.get("tenant_id"))
    integration_id = str(config.get("integration_id") or data.get("integration_id"))
    integration = INTEGRATION_CONFIG.open(sealer, config, tenant_id, integration_id, blobs_from(data))
    changes: dict[str, Any] = {}
    gone_at = data.get("connection_gone_at")
    if gone_at:
        changes["connection_gone_at"] = datetime.fromisoformat(gone_at)
    # The integrations admin keeps the reference as a top-level attribute too (GSI1 readers).
    if integration.connection_id is None and data.get("connection_id"):
        changes["connection_id"] = str(data["connection_id"])
    return integration.model_copy(update=changes) if changes else integration


def with_connection(
    integration: Integration, connection: Mapping[str, Any] | None, sealer: Sealer = _NO_KEYS
) -> Integration:
    """`integration` with `destination` resolved from its connection's item: an embedded
    destination (written before connections were items) wins; a connection that is missing or
    another tenant's resolves to None, which the worker reports as `error` naming the connection
    (hub.pipeline.steps)."""
    if integration.destination is not None or integration.connection_id is None:
        return integration
    if connection is None or connection.get("tenant_id") != integration.tenant_id:
        return integration
    return integration.model_copy(update={"destination": destination_of(connection, sealer)})


class DynamoConfigRepository:
    """Tenants, integrations and API keys. `sealer` seals the secrets `put_integration` is given
    (when it has a key) and opens, on reads, the purposes this function needs (ingest: webhook
    secrets; the worker: destination credentials); without one, reads show stand-ins for sealed
    secrets and writes keep them in clear."""

    def __init__(self, table_name: str, sealer: Sealer = _NO_KEYS) -> None:
        self._table = Table(table_name, "configuration storage")
        self._sealer = sealer

    def get_api_key(self, key_hash: str) -> ApiKey | None:
        item = self._table.get(keys.api_key_key(key_hash), consistent=False)
        return api_key_from(item) if item else None

    def get_integration(self, tenant_id: str, integration_id: str) -> Integration | None:
        """The tenant's integration with its connection (the same tenant's) resolved into
        `destination` (one more read when it names a connection; CachedConfig keeps the resolved
        integration)."""
        item = self._table.get(keys.integration_key(tenant_id, integration_id), consistent=False)
        if not item:
            return None
        integration = integration_from(item, self._sealer)
        if integration.destination is None and integration.connection_id:
            connection = self._table.get(
                keys.connection_key(integration.tenant_id, integration.connection_id), consistent=False
            )
            return with_connection(integration, connection, self._sealer)
        return integration

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        item = self._table.get(keys.tenant_key(tenant_id), consistent=False)
        return tenant_from(item) if item else None

    def put_tenant(self, tenant: Tenant) -> None:
        """Stores `tenant` as the admin API does (listed), replacing any item of the same id."""
        self._table.put(tenant_item(tenant))

    def put_integration(self, integration: Integration) -> None:
        """Stores `integration` as the admin API does (version 1, listed), replacing any item of
        the same id (tests, the local stack's demo data). Its secrets are sealed when this
        repository has a key, kept in clear otherwise (as an item written by hand)."""
        # Stand-ins (an integration read here and written back) keep the stored seals.
        current = self._table.get(keys.integration_key(integration.tenant_id, integration.integration_id))
        sealed = blobs_from(current) if current else {}
        self._table.put(integration_item(integration, UNVERSIONED, self._sealer, sealed))

    def flag_connection_gone(self, integration: Integration, now: datetime, dest_status: str | None) -> None:
        """Sets `connection_gone_at` beside the stored configuration (only if the integration
        still exists); put_integration replaces the item, so saving the connection clears it.
        The first flag writes `connection.gone` in the same transaction; a later 410 while
        still gone only moves the time."""
        key = keys.integration_key(integration.tenant_id, integration.integration_id)
        status = dest_status or "410"
        first = Update().set(connection_gone_at=format_ts(now), connection_gone_status=status)
        first.where(f"attribute_exists({first.name('PK')})")
        first.where(f"attribute_not_exists({first.name('connection_gone_at')})")
        gone = OutboxEvent(
            id=new_id("evt"),
            type=EventType.CONNECTION_GONE,
            tenant_id=integration.tenant_id,
            occurred_at=now,
            integration_id=integration.integration_id,
            connection_id=integration.connection_id,
            dest_status=status,
        )
        try:
            self._table.transact([self._table.update_entry(key, first), event_put(self._table, gone, now)])
            return
        except TransactionCancelled:
            pass  # already gone (or the integration was deleted): only the time moves
        again = Update().set(connection_gone_at=format_ts(now), connection_gone_status=status)
        again.where(f"attribute_exists({again.name('PK')})")
        try:
            self._table.update(key, again)
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
