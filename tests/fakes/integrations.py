"""An in-memory `hub.ports.IntegrationStore` (and `hub.ingest.receptions.ReceptionStore`) with
the DynamoDB adapter's contract, over the fakes' shared table: the same item as the adapter
writes, versioned conditional writes, listing by id, waiting messages found by their listed
status (tests/contract/test_integrations_contract.py)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.integrations import lost_version, stored_from
from hub.adapters.dynamo.table import format_ts
from hub.adapters.dynamo.tenancy import integration_item, integration_version
from hub.certificates.envelope import DataKeys
from hub.domain.tenancy import Integration, Tenant
from hub.errors import Conflict
from hub.ports import IntegrationPage, StoredIntegration
from hub.sealed_config import Sealer
from tests.fakes.config import FakeConfig
from tests.fakes.data_keys import SHARED_KEYS
from tests.fakes.table import FakeTable

_GONE = ("connection_gone_at", "connection_gone_status")


def _key(tenant_id: str, integration_id: str) -> tuple[str, str]:
    key = keys.integration_key(tenant_id, integration_id)
    return (key["PK"], key["SK"])


def _item(
    integration: Integration, version: int, sealer: Sealer, sealed: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return {k: v for k, v in integration_item(integration, version, sealer, sealed).items() if v is not None}


class FakeIntegrations:
    def __init__(self, table: FakeTable | None = None, keys: DataKeys | None = SHARED_KEYS) -> None:
        self.table = table or FakeTable()
        self._config = FakeConfig(self.table)
        #: Seals what it is given; never opens (the admin API's reads show stand-ins).
        self._sealer = Sealer(keys)

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        return self._config.get_tenant(tenant_id)

    def connection_exists(self, tenant_id: str, connection_id: str) -> bool:
        key = keys.connection_key(tenant_id, connection_id)
        return self.table.get((key["PK"], key["SK"])) is not None

    def get(self, tenant_id: str, integration_id: str) -> StoredIntegration | None:
        item = self.table.get(_key(tenant_id, integration_id))
        return stored_from(item) if item else None

    def create(self, integration: Integration) -> StoredIntegration:
        with self.table.lock:
            if self.table.get(_key(integration.tenant_id, integration.integration_id)) is not None:
                raise Conflict("integration exists")
            self.table.put(_item(integration, 1, self._sealer))
        return StoredIntegration(integration, 1)

    def replace(
        self, integration: Integration, expected_version: int, sealed: Mapping[str, Any] | None = None
    ) -> StoredIntegration:
        with self.table.lock:
            old = self.table.get(_key(integration.tenant_id, integration.integration_id))
            if old is None or integration_version(old) != expected_version:
                raise lost_version(old)
            kept = {k: v for k, v in old.items() if k not in (*_GONE, "connection_id", "sealed")}
            self.table.put({**kept, **_item(integration, expected_version + 1, self._sealer, sealed)})
        return StoredIntegration(integration, expected_version + 1)

    def delete(self, current: StoredIntegration) -> None:
        integration_id = current.integration.integration_id
        tenant_id = current.integration.tenant_id
        with self.table.lock:
            old = self.table.get(_key(tenant_id, integration_id))
            if old is None or integration_version(old) != current.version:
                raise lost_version(old)
            read = format_ts(current.last_received_at) if current.last_received_at else None
            if old.get("last_received_at") != read:
                raise Conflict("a message was received meanwhile")
            self.table.delete(_key(tenant_id, integration_id))

    def list_integrations(self, tenant_id: str, limit: int, cursor: str | None) -> IntegrationPage:
        partition = keys.integration_partition(tenant_id)
        with self.table.lock:
            ids = sorted(
                item["GSI1SK"]
                for item in self.table.items.values()
                if item.get("GSI1PK") == partition and (cursor is None or item["GSI1SK"] > cursor)
            )
        page = [stored for i in ids[:limit] if (stored := self.get(tenant_id, i)) is not None]
        return IntegrationPage(integrations=page, next_cursor=ids[limit - 1] if len(ids) > limit else None)

    def has_waiting_messages(self, tenant_id: str, integration_id: str) -> bool:
        partitions = {keys.status_partition(tenant_id, s.value) for s in keys.LISTED_STATUSES}
        with self.table.lock:
            return any(
                item.get("GSI1PK") in partitions and item.get("integration_id") == integration_id
                for item in self.table.items.values()
            )

    def mark_received(self, tenant_id: str, integration_id: str, at: datetime) -> None:
        with self.table.lock:
            item = self.table.get(_key(tenant_id, integration_id))
            if item is None or (item.get("last_received_at") or "") >= format_ts(at):
                return
            self.table.put({**item, "last_received_at": format_ts(at)})
