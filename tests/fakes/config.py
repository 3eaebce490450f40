"""The configuration as the fakes hold it: tenants, API keys, integrations and connections as
plain values in one `ConfigState`, shared by the configuration repository (`FakeConfig`,
`hub.ports.ConfigRepository`), the integration store (tests/fakes/integrations.py) and the
connection store (tests/fakes/connections.py), as their DynamoDB adapters share the hub table.

Secrets are sealed by the hub's own rules (hub.sealed_config: each secret field sealed on its
own, a stand-in where a reader does not open it): the state keeps each configuration as the
admin API reads it (stand-ins at sealed fields; values in clear when saved without a key) and
its seals beside it, and a reader opens the purposes its sealer opens."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar

from hub.domain.tenancy import ApiKey, Connection, Integration, Tenant
from hub.ports import StoredIntegration, VersionConflict
from hub.sealed_config import (
    DESTINATION_CONFIG,
    INTEGRATION_CONFIG,
    PURPOSES,
    Sealer,
    opened_destination,
    seal_connection,
    seal_integration,
)
from hub.sealing import SealedFields
from tests.fakes.data_keys import SHARED_KEYS

#: The version of an integration saved by the configuration repository (hub.ports.ConfigRepository:
#: as one written by hand, before the admin API).
UNVERSIONED = 1
#: Opens nothing: reads stand-ins at sealed fields (as the admin API reads).
_READER = Sealer(None)


@dataclass
class SavedIntegration:
    """One integration as the state holds it."""

    #: As the admin store reads it: stand-ins at sealed fields, no `connection_gone_at`.
    integration: Integration
    version: int
    #: The sealed secrets, by field.
    sealed: dict[str, SealedFields] = field(default_factory=dict)
    #: When ingest last recorded a reception (hub.ingest.receptions).
    last_received_at: datetime | None = None
    #: The hub's observation that the destination answered 410, kept beside the configuration.
    connection_gone_at: datetime | None = None

    def stored(self) -> StoredIntegration:
        """What the integration store reads."""
        integration = self.integration
        if self.connection_gone_at is not None:
            integration = integration.model_copy(update={"connection_gone_at": self.connection_gone_at})
        return StoredIntegration(integration, self.version, self.last_received_at, dict(self.sealed))


@dataclass
class ConfigState:
    """Everything the configuration fakes hold; one lock makes each of their writes atomic."""

    tenants: dict[str, Tenant] = field(default_factory=dict)
    #: By key hash.
    api_keys: dict[str, ApiKey] = field(default_factory=dict)
    #: By (tenant id, integration id): ids are unique within a tenant only.
    integrations: dict[tuple[str, str], SavedIntegration] = field(default_factory=dict)
    #: By (tenant id, connection id), as the connection store reads them: stand-ins at sealed
    #: credentials, the seals in `Connection.sealed`.
    connections: dict[tuple[str, str], Connection] = field(default_factory=dict)
    #: (tenant id, connection id) of each uploaded client certificate.
    certificates: set[tuple[str, str]] = field(default_factory=set)
    lock: threading.RLock = field(default_factory=threading.RLock)
    #: How many writes changed something (a refused or idle one is not counted).
    writes: int = 0

    def save_integration(self, saved: SavedIntegration) -> None:
        with self.lock:
            self.integrations[(saved.integration.tenant_id, saved.integration.integration_id)] = saved
            self.writes += 1

    def save_connection(self, connection: Connection) -> None:
        with self.lock:
            self.connections[(connection.tenant_id, connection.connection_id)] = connection
            self.writes += 1


class _Versioned(Protocol):
    @property
    def version(self) -> int: ...


V = TypeVar("V", bound=_Versioned)


def at_version(found: V | None, expected: int) -> V:
    """`found` when it is at version `expected`: else VersionConflict naming its version (None:
    there is none), as a conditional write of the adapters."""
    if found is None or found.version != expected:
        raise VersionConflict(found.version if found is not None else None)
    return found


def saved_integration(
    integration: Integration, sealer: Sealer, kept: Mapping[str, SealedFields] | None = None
) -> tuple[Integration, dict[str, SealedFields]]:
    """`integration` as `sealer` saves it (a stand-in keeps the seal `kept` holds at its field),
    read back with stand-ins; and its seals."""
    config, blobs = seal_integration(sealer, integration, kept)
    return INTEGRATION_CONFIG.open(
        _READER, config, integration.tenant_id, integration.integration_id, blobs
    ), blobs


def saved_connection(connection: Connection, sealer: Sealer) -> Connection:
    """`connection` as `sealer` saves it (a stand-in keeps the seal `connection.sealed` holds),
    read back with stand-ins and its seals; its destination names it."""
    config, blobs = seal_connection(sealer, connection)
    destination = DESTINATION_CONFIG.open(
        _READER, config, connection.tenant_id, connection.connection_id, blobs
    )
    destination = destination.model_copy(update={"connection_id": connection.connection_id})
    return connection.model_copy(update={"destination": destination, "sealed": blobs})


def opened_integration(saved: SavedIntegration, sealer: Sealer) -> Integration:
    """The integration with the secrets `sealer` opens in clear (stand-ins elsewhere)."""
    integration = saved.integration
    config = integration.model_dump(mode="json")
    opened = INTEGRATION_CONFIG.open(
        sealer, config, integration.tenant_id, integration.integration_id, saved.sealed
    )
    if saved.connection_gone_at is not None:
        opened = opened.model_copy(update={"connection_gone_at": saved.connection_gone_at})
    return opened


class FakeConfig:
    """`hub.ports.ConfigRepository` over a `ConfigState`. `sealer` seals what put_integration is
    given and opens, on reads, what it opens (by default every purpose: one fake plays every
    function)."""

    def __init__(self, state: ConfigState | None = None, sealer: Sealer | None = None) -> None:
        self.state = state or ConfigState()
        self.sealer = sealer or Sealer(SHARED_KEYS, opens=PURPOSES)
        #: How often an integration was read (a worker reads it once per step).
        self.integration_reads = 0
        #: How often a tenant was read (ingest checks that the key's tenant is not disabled).
        self.tenant_reads = 0

    def get_api_key(self, key_hash: str) -> ApiKey | None:
        return self.state.api_keys.get(key_hash)

    def get_integration(self, tenant_id: str, integration_id: str) -> Integration | None:
        """The integration with its connection (the same tenant's) resolved into `destination`;
        an embedded destination wins; a missing connection resolves to none."""
        self.integration_reads += 1
        with self.state.lock:
            saved = self.state.integrations.get((tenant_id, integration_id))
            if saved is None:
                return None
            integration = opened_integration(saved, self.sealer)
            if integration.destination is not None or integration.connection_id is None:
                return integration
            connection = self.state.connections.get((tenant_id, integration.connection_id))
        if connection is None:
            return integration
        return integration.model_copy(update={"destination": opened_destination(connection, self.sealer)})

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        self.tenant_reads += 1
        return self.state.tenants.get(tenant_id)

    def put_tenant(self, tenant: Tenant) -> None:
        with self.state.lock:
            self.state.tenants[tenant.tenant_id] = tenant
            self.state.writes += 1

    def put_integration(self, integration: Integration) -> None:
        """Replaces the integration (at version 1); stand-ins keep the stored seals."""
        with self.state.lock:
            current = self.state.integrations.get((integration.tenant_id, integration.integration_id))
            shown, blobs = saved_integration(integration, self.sealer, current.sealed if current else None)
            self.state.save_integration(SavedIntegration(shown, UNVERSIONED, blobs))

    def put_api_key(self, api_key: ApiKey) -> None:
        with self.state.lock:
            self.state.api_keys[api_key.key_hash] = api_key
            self.state.writes += 1

    def flag_connection_gone(self, integration: Integration, now: datetime, dest_status: str | None) -> None:
        """Only while the integration exists."""
        with self.state.lock:
            saved = self.state.integrations.get((integration.tenant_id, integration.integration_id))
            if saved is not None:
                saved.connection_gone_at = now
                self.state.writes += 1
