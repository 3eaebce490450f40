"""An in-memory configuration repository (`hub.ports.ConfigRepository`) over the fakes' shared
table, so the message repository's `get_for_key` finds API keys as it does in DynamoDB."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.tenancy import UNVERSIONED, integration_item
from hub.domain.tenancy import ApiKey, Destination, Integration, Tenant
from hub.sealed_config import (
    DESTINATION_PATHS,
    INTEGRATION_PATHS,
    PURPOSES,
    Sealer,
    blobs_from,
    connection_owner,
    integration_owner,
)
from tests.fakes.data_keys import SHARED_KEYS
from tests.fakes.table import Change, ConditionFailed, FakeTable, format_ts


def api_key_of(item: Mapping[str, Any]) -> ApiKey:
    ids = item.get("integration_ids")
    return ApiKey(
        key_id=item["key_id"],
        tenant_id=item["tenant_id"],
        key_hash=item["key_hash"],
        integration_ids=frozenset(ids) if ids is not None else None,
        active=bool(item.get("active", True)),
        expires_at=datetime.fromisoformat(item["grace_until"]) if item.get("grace_until") else None,
    )


def _key(key: Mapping[str, str]) -> tuple[str, str]:
    return (key["PK"], key["SK"])


class FakeConfig:
    """Tenants, integrations and API keys, stored as the DynamoDB adapter stores them."""

    def __init__(self, table: FakeTable | None = None, sealer: Sealer | None = None) -> None:
        self.table = table or FakeTable()
        #: Seals what put_integration is given; opens every purpose (one fake plays every function).
        self.sealer = sealer or Sealer(SHARED_KEYS, opens=PURPOSES)
        #: How often an integration was read (a worker reads it once per step).
        self.integration_reads = 0
        #: How often a tenant was read (ingest checks that the key's tenant is not disabled).
        self.tenant_reads = 0

    def get_api_key(self, key_hash: str) -> ApiKey | None:
        item = self.table.get(_key(keys.api_key_key(key_hash)))
        return api_key_of(item) if item else None

    def get_integration(self, tenant_id: str, integration_id: str) -> Integration | None:
        self.integration_reads += 1
        item = self.table.get(_key(keys.integration_key(tenant_id, integration_id)))
        if item is None:
            return None
        config = self.sealer.reveal(
            json.loads(item["config_json"]),
            INTEGRATION_PATHS,
            item["tenant_id"],
            integration_owner(integration_id),
            blobs_from(item),
        )
        integration = Integration.model_validate(config)
        if item.get("connection_gone_at"):
            gone = datetime.fromisoformat(item["connection_gone_at"])
            integration = integration.model_copy(update={"connection_gone_at": gone})
        if integration.connection_id is None and item.get("connection_id"):
            integration = integration.model_copy(update={"connection_id": item["connection_id"]})
        if integration.destination is not None or integration.connection_id is None:
            return integration
        # Resolved like the adapter: only this tenant's connection; else no destination.
        connection = self.table.get(
            _key(keys.connection_key(integration.tenant_id, integration.connection_id))
        )
        if connection is None or connection.get("tenant_id") != integration.tenant_id:
            return integration
        destination = Destination.model_validate(
            self.sealer.reveal(
                json.loads(connection["config_json"]),
                DESTINATION_PATHS,
                connection["tenant_id"],
                connection_owner(integration.connection_id),
                blobs_from(connection),
            )
        )
        return integration.model_copy(
            update={
                "destination": destination.model_copy(update={"connection_id": integration.connection_id})
            }
        )

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        self.tenant_reads += 1
        item = self.table.get(_key(keys.tenant_key(tenant_id)))
        return Tenant.model_validate(item) if item else None

    def put_tenant(self, tenant: Tenant) -> None:
        # Plain values only, as DynamoDB stores them (times as ISO strings, the mode as its value).
        item = {**keys.tenant_key(tenant.tenant_id), "item_type": "tenant", **tenant.model_dump(mode="json")}
        self.table.put(item)

    def put_integration(self, integration: Integration) -> None:
        current = self.table.get(
            _key(keys.integration_key(integration.tenant_id, integration.integration_id))
        )
        item = integration_item(integration, UNVERSIONED, self.sealer, blobs_from(current) if current else {})
        self.table.put({k: v for k, v in item.items() if v is not None})

    def put_api_key(self, api_key: ApiKey) -> None:
        item: dict[str, Any] = {
            **keys.api_key_key(api_key.key_hash),
            "item_type": "api_key",
            "key_id": api_key.key_id,
            "tenant_id": api_key.tenant_id,
            "key_hash": api_key.key_hash,
            "active": api_key.active,
        }
        if api_key.integration_ids is not None:
            item["integration_ids"] = sorted(api_key.integration_ids)
        self.table.put(item)

    def flag_connection_gone(self, integration: Integration, now: datetime, dest_status: str | None) -> None:
        change = Change().set(connection_gone_at=format_ts(now), connection_gone_status=dest_status or "410")
        change.where(lambda item: item is not None)
        try:
            self.table.update(
                _key(keys.integration_key(integration.tenant_id, integration.integration_id)), change
            )
        except ConditionFailed:
            return
