"""An in-memory `hub.ports.ConnectionStore` over the fakes' `ConfigState` (so FakeConfig resolves
an integration's connection from what it stores), with the DynamoDB adapter's contract
(tests/contract/test_connections_contract.py): ids taken once per tenant, writes at the version
read (VersionConflict), listing by id, credentials sealed (opened only by `with_credentials`),
the integrations using a connection found by their `connection_id`."""

from __future__ import annotations

from collections.abc import Collection

from hub.certificates.envelope import DataKeys
from hub.domain.tenancy import Connection, Destination
from hub.errors import Conflict
from hub.ports import ConnectionPage
from hub.sealed_config import DESTINATION_CREDENTIAL, Sealer, opened_destination
from tests.fakes.config import ConfigState, at_version, saved_connection
from tests.fakes.data_keys import SHARED_KEYS
from tests.fakes.pages import page


class FakeConnections:
    def __init__(self, state: ConfigState | None = None, keys: DataKeys | None = SHARED_KEYS) -> None:
        self.state = state or ConfigState()
        self._sealer = Sealer(keys)
        self._opener = Sealer(keys, opens=(DESTINATION_CREDENTIAL,))

    def with_credentials(self, connection: Connection) -> Destination:
        return opened_destination(connection, self._opener)

    def tenant_exists(self, tenant_id: str) -> bool:
        return tenant_id in self.state.tenants

    def has_certificate(self, tenant_id: str, connection_id: str) -> bool:
        return (tenant_id, connection_id) in self.state.certificates

    def create(self, connection: Connection) -> None:
        with self.state.lock:
            if (connection.tenant_id, connection.connection_id) in self.state.connections:
                raise Conflict("connection exists", details={"connection_id": connection.connection_id})
            self.state.save_connection(saved_connection(connection, self._sealer))

    def get(self, tenant_id: str, connection_id: str) -> Connection | None:
        return self.state.connections.get((tenant_id, connection_id))

    def list_connections(self, tenant_id: str, limit: int, cursor: str | None) -> ConnectionPage:
        with self.state.lock:
            mine = [c for (t, c) in self.state.connections if t == tenant_id]
        ids, next_cursor = page(mine, limit, cursor, f"connections:{tenant_id}")
        found = [c for c in (self.get(tenant_id, i) for i in ids) if c is not None]
        return ConnectionPage(connections=found, next_cursor=next_cursor)

    def replace(self, connection: Connection, expected_version: int) -> None:
        with self.state.lock:
            at_version(self.get(connection.tenant_id, connection.connection_id), expected_version)
            self.state.save_connection(saved_connection(connection, self._sealer))

    def delete(self, tenant_id: str, connection_id: str, expected_version: int) -> None:
        with self.state.lock:
            at_version(self.get(tenant_id, connection_id), expected_version)
            del self.state.connections[(tenant_id, connection_id)]
            self.state.writes += 1

    def integrations_using(self, tenant_id: str, connection_id: str) -> list[str]:
        with self.state.lock:
            return sorted(
                integration_id
                for (t, integration_id), saved in self.state.integrations.items()
                if t == tenant_id and saved.integration.connection_id == connection_id
            )

    def clear_connection_gone(
        self, tenant_id: str, integration_ids: Collection[str], connection_id: str
    ) -> None:
        """Only on the integrations that still name the connection."""
        with self.state.lock:
            for integration_id in integration_ids:
                saved = self.state.integrations.get((tenant_id, integration_id))
                if saved is not None and saved.integration.connection_id == connection_id:
                    saved.connection_gone_at = None
                    self.state.writes += 1
