"""An in-memory `hub.ports.ConnectionStore` over the fakes' shared table, storing the items the
DynamoDB adapter stores (its codec), so FakeConfig resolves an integration's connection from
them; conditions (unique ids, versions, tenants) are implemented here independently."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.connections import connection_from, connection_item, opened_destination
from hub.certificates.envelope import DataKeys
from hub.domain.tenancy import Connection, Destination
from hub.errors import Conflict
from hub.ports import ConnectionPage, VersionConflict
from hub.sealed_config import DESTINATION_CREDENTIAL, Sealer
from tests.fakes.data_keys import SHARED_KEYS
from tests.fakes.table import Change, ConditionFailed, FakeTable


def _key(key: dict[str, str]) -> tuple[str, str]:
    return (key["PK"], key["SK"])


def _stored(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if v is not None}


class FakeConnections:
    def __init__(self, table: FakeTable | None = None, keys: DataKeys | None = SHARED_KEYS) -> None:
        self.table = table or FakeTable()
        self._sealer = Sealer(keys)
        self._opener = Sealer(keys, opens=(DESTINATION_CREDENTIAL,))

    def with_credentials(self, connection: Connection) -> Destination:
        return opened_destination(connection, self._opener)

    def tenant_exists(self, tenant_id: str) -> bool:
        return self.table.get(_key(keys.tenant_key(tenant_id))) is not None

    def has_certificate(self, tenant_id: str, connection_id: str) -> bool:
        return self.table.get(_key(keys.certificate_key(tenant_id, connection_id))) is not None

    def create(self, connection: Connection) -> None:
        item = _stored(connection_item(connection, self._sealer))
        with self.table.lock:
            if self.table.get((item["PK"], item["SK"])) is not None:
                raise Conflict("connection exists", details={"connection_id": connection.connection_id})
            self.table.put(item)

    def get(self, tenant_id: str, connection_id: str) -> Connection | None:
        item = self.table.get(_key(keys.connection_key(tenant_id, connection_id)))
        return connection_from(item) if item else None

    def list_connections(self, tenant_id: str, limit: int, cursor: str | None) -> ConnectionPage:
        partition = keys.connection_partition(tenant_id)
        with self.table.lock:
            ids = sorted(
                item["GSI1SK"]
                for item in self.table.items.values()
                if item.get("GSI1PK") == partition and (cursor is None or item["GSI1SK"] > cursor)
            )
        page = [c for c in (self.get(tenant_id, i) for i in ids[:limit]) if c is not None]
        return ConnectionPage(connections=page, next_cursor=ids[limit - 1] if len(ids) > limit else None)

    def replace(self, connection: Connection, expected_version: int) -> None:
        item = _stored(connection_item(connection, self._sealer))
        with self.table.lock:
            old = self.table.get((item["PK"], item["SK"]))
            if (
                old is None
                or old.get("version") != expected_version
                or old["tenant_id"] != connection.tenant_id
            ):
                raise VersionConflict(int(old["version"]) if old else None)
            self.table.put(item)

    def delete(self, tenant_id: str, connection_id: str, expected_version: int) -> None:
        key = _key(keys.connection_key(tenant_id, connection_id))
        with self.table.lock:
            old = self.table.get(key)
            if old is None or old.get("version") != expected_version:
                raise VersionConflict(int(old["version"]) if old else None)
            self.table.delete(key)
            self.table.delete(
                _key(keys.callback_credential_key(tenant_id, connection_id))
            )  # as the adapter does

    def integrations_using(self, tenant_id: str, connection_id: str) -> list[str]:
        partition = keys.tenant_integrations_partition(tenant_id)
        with self.table.lock:
            return sorted(
                item["GSI1SK"]
                for item in self.table.items.values()
                if item.get("GSI1PK") == partition
                and item.get("tenant_id") == tenant_id
                and item.get("connection_id") == connection_id
            )

    def clear_connection_gone(
        self, tenant_id: str, integration_ids: Collection[str], connection_id: str
    ) -> None:
        for integration_id in integration_ids:
            change = Change().remove("connection_gone_at", "connection_gone_status")
            change.where(lambda item: item is not None and item.get("connection_id") == connection_id)
            try:
                self.table.update(_key(keys.integration_key(tenant_id, integration_id)), change)
            except ConditionFailed:
                continue
