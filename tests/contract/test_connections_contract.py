"""The connection store's contract (hub.ports.ConnectionStore), run against the in-memory fake
(tests/fakes/connections.py) and the DynamoDB adapter on moto; and both configuration
repositories resolving an integration's `connection_id` from the items the store writes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.connections import DynamoConnections
from hub.adapters.dynamo.table import Table
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.tenancy import AuthKind, Connection, Destination, HttpAuth, Integration, Tenant
from hub.errors import Conflict
from hub.ports import VersionConflict
from tests.contract import scenario
from tests.contract.scenario import all_pages, refuses_foreign_cursor
from tests.fakes import ConfigState, FakeConfig
from tests.fakes.connections import FakeConnections

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class Side:
    """One implementation: the store, the configuration repository over the same storage, and
    what the integrations admin and the certificate upload store beside them."""

    def __init__(self, store: Any, config: Any) -> None:
        self.store = store
        self.config = config

    def put_integration(
        self, integration_id: str, tenant_id: str, reference: str | None, **extra: Any
    ) -> None:
        """An integration naming connection `reference` (None: none)."""
        raise NotImplementedError

    def upload_certificate(self, tenant_id: str, connection_id: str) -> None:
        raise NotImplementedError


class FakeSide(Side):
    def __init__(self) -> None:
        self.state = ConfigState()
        super().__init__(FakeConnections(self.state), FakeConfig(self.state))

    def put_integration(
        self, integration_id: str, tenant_id: str, reference: str | None, **extra: Any
    ) -> None:
        extra.setdefault("connection_id", reference)
        self.config.put_integration(
            Integration(integration_id=integration_id, tenant_id=tenant_id, name="i", **extra)
        )

    def upload_certificate(self, tenant_id: str, connection_id: str) -> None:
        self.state.certificates.add((tenant_id, connection_id))


class DynamoSide(Side):
    def __init__(self, table_name: str) -> None:
        self.table = Table(table_name)
        super().__init__(DynamoConnections(table_name), DynamoConfigRepository(table_name))

    def put_integration(
        self, integration_id: str, tenant_id: str, reference: str | None, **extra: Any
    ) -> None:
        """`reference` is the top-level `connection_id` attribute; `extra` goes into config_json
        (an item written before the reference moved into the configuration has only the
        attribute)."""
        config = Integration(integration_id=integration_id, tenant_id=tenant_id, name="i", **extra)
        self.table.put(
            {
                **keys.integration_key(tenant_id, integration_id),
                "GSI1PK": keys.tenant_integrations_partition(tenant_id),
                "GSI1SK": integration_id,
                "item_type": "integration",
                "tenant_id": tenant_id,
                "version": 1,
                **({"connection_id": reference} if reference else {}),
                "config_json": config.model_dump_json(),
            }
        )

    def upload_certificate(self, tenant_id: str, connection_id: str) -> None:
        self.table.put(
            {
                **keys.certificate_key(tenant_id, connection_id),
                "tenant_id": tenant_id,
                "connection_id": connection_id,
            }
        )


@pytest.fixture(params=("fake", "dynamo"))
def side(request: pytest.FixtureRequest) -> Side:
    if request.param == "fake":
        return FakeSide()
    return DynamoSide(request.getfixturevalue("dynamo_table"))


def fresh(prefix: str = "c") -> str:
    return scenario.fresh(prefix)


def connection(connection_id: str, tenant_id: str, version: int = 1, **destination: Any) -> Connection:
    return Connection(
        connection_id=connection_id,
        tenant_id=tenant_id,
        name="ERP",
        version=version,
        destination=Destination(
            connection_id=connection_id,
            url=destination.pop("url", "https://erp.example.com/orders"),
            **destination,
        ),
        created_at=NOW,
        updated_at=NOW,
    )


def test_a_created_connection_reads_back_and_its_id_is_taken_once(side):
    connection_id, tenant = fresh(), fresh("t")
    stored = connection(connection_id, tenant, auth=HttpAuth(kind=AuthKind.BEARER, token="tok"))
    side.store.create(stored)

    with pytest.raises(Conflict):
        side.store.create(connection(connection_id, tenant))
    # Ids are unique within a tenant only: another tenant's of the same id is another connection.
    other = fresh("t")
    theirs = connection(connection_id, other, url="https://theirs.example.com/in")
    side.store.create(theirs)

    read = side.store.get(tenant, connection_id)
    assert read.model_copy(update={"destination": side.store.with_credentials(read), "sealed": {}}) == stored
    assert side.store.get(other, connection_id) == theirs
    assert side.store.get(tenant, fresh()) is None
    assert side.store.get(fresh("t"), connection_id) is None


def test_replace_and_delete_hold_only_at_the_expected_version(side):
    connection_id, tenant = fresh(), fresh("t")
    side.store.create(connection(connection_id, tenant))
    second = connection(connection_id, tenant, version=2, url="https://erp.example.com/v2")

    side.store.replace(second, 1)
    with pytest.raises(VersionConflict) as lost:
        side.store.replace(connection(connection_id, tenant, version=2), 1)
    assert lost.value.current == 2
    with pytest.raises(VersionConflict) as stale_delete:
        side.store.delete(tenant, connection_id, 1)
    assert stale_delete.value.current == 2

    assert side.store.get(tenant, connection_id) == second
    side.store.delete(tenant, connection_id, 2)
    assert side.store.get(tenant, connection_id) is None
    with pytest.raises(VersionConflict) as gone:
        side.store.delete(tenant, connection_id, 2)
    assert gone.value.current is None


def test_the_listing_pages_a_tenants_connections_by_id(side):
    tenant, other = fresh("t"), fresh("t")
    for name in ("c", "a", "b"):
        side.store.create(connection(f"{tenant}-{name}", tenant))
    side.store.create(connection(f"{other}-a", other))

    seen = all_pages(lambda cursor: side.store.list_connections(tenant, 2, cursor), "connections", 2)

    assert [c.connection_id for c in seen] == [f"{tenant}-a", f"{tenant}-b", f"{tenant}-c"]


def test_a_cursor_of_another_listing_is_refused(side):
    store = side.store
    tenant, other = fresh("t"), fresh("t")
    for n in range(3):
        store.create(connection(f"{other}-{n}", other))

    refuses_foreign_cursor(lambda owner, cursor: store.list_connections(owner, 1, cursor), tenant, other)


def test_users_of_a_connection_are_the_tenants_integrations_naming_it(side):
    tenant, connection_id = fresh("t"), fresh()
    side.put_integration(f"{tenant}-1", tenant, connection_id)
    side.put_integration(f"{tenant}-2", tenant, "elsewhere")
    side.put_integration(f"{tenant}-3", tenant, None)
    side.put_integration(fresh("int"), fresh("t"), connection_id)

    assert side.store.integrations_using(tenant, connection_id) == [f"{tenant}-1"]
    assert side.store.integrations_using(tenant, fresh()) == []


def test_clearing_the_gone_flag_only_touches_integrations_still_using_the_connection(side):
    tenant, connection_id = fresh("t"), fresh()
    side.put_integration(f"{tenant}-1", tenant, connection_id)
    side.put_integration(f"{tenant}-2", tenant, "elsewhere")
    for integration_id in (f"{tenant}-1", f"{tenant}-2"):
        side.config.flag_connection_gone(side.config.get_integration(tenant, integration_id), NOW, "410")

    side.store.clear_connection_gone(tenant, [f"{tenant}-1", f"{tenant}-2", fresh("missing")], connection_id)

    assert side.config.get_integration(tenant, f"{tenant}-1").connection_gone_at is None
    assert side.config.get_integration(tenant, f"{tenant}-2").connection_gone_at == NOW
    assert side.config.get_integration(tenant, fresh("missing")) is None


def test_tenant_and_certificate_lookups(side):
    tenant, connection_id = fresh("t"), fresh()
    assert side.store.tenant_exists(tenant) is False
    assert side.store.has_certificate(tenant, connection_id) is False
    side.config.put_tenant(Tenant(tenant_id=tenant, name="T"))
    side.upload_certificate(tenant, connection_id)

    assert side.store.tenant_exists(tenant) is True
    assert side.store.has_certificate(tenant, connection_id) is True
    assert side.store.has_certificate(fresh("t"), connection_id) is False


class TestResolution:
    def test_connection_id_resolves_into_the_destination(self, side):
        tenant, connection_id = fresh("t"), fresh()
        side.store.create(connection(connection_id, tenant, auth=HttpAuth(kind=AuthKind.BEARER, token="tok")))
        side.put_integration(f"{tenant}-i", tenant, connection_id, connection_id=connection_id)

        resolved = side.config.get_integration(tenant, f"{tenant}-i")

        assert resolved.connection_id == connection_id
        assert resolved.destination == side.store.with_credentials(side.store.get(tenant, connection_id))

    def test_the_top_level_attribute_alone_is_enough(self, side):
        tenant, connection_id = fresh("t"), fresh()
        side.store.create(connection(connection_id, tenant))
        side.put_integration(f"{tenant}-i", tenant, connection_id)

        resolved = side.config.get_integration(tenant, f"{tenant}-i")

        assert (resolved.connection_id, resolved.destination.connection_id) == (connection_id, connection_id)

    def test_a_missing_or_another_tenants_connection_is_no_destination(self, side):
        tenant, theirs = fresh("t"), fresh()
        side.store.create(connection(theirs, fresh("t")))
        side.put_integration(f"{tenant}-foreign", tenant, theirs)
        side.put_integration(f"{tenant}-missing", tenant, fresh())

        for integration_id in (f"{tenant}-foreign", f"{tenant}-missing"):
            resolved = side.config.get_integration(tenant, integration_id)
            assert resolved.destination is None
            assert resolved.connection_id is not None

    def test_an_embedded_destination_wins_over_the_reference(self, side):
        tenant, connection_id = fresh("t"), fresh()
        side.store.create(connection(connection_id, tenant))
        embedded = Destination(url="https://legacy.example.com/in")
        side.put_integration(f"{tenant}-i", tenant, connection_id, destination=embedded)

        assert side.config.get_integration(tenant, f"{tenant}-i").destination == embedded
