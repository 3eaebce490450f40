"""The integration store's contract, run against the in-memory fake (tests/fakes/integrations.py)
and the DynamoDB adapter on moto, so the admin use cases' unit tests rely on what the adapter
does: ids taken once, versioned conditional writes, what a replace keeps and clears, deletes
refused by a changed version or a reception meanwhile, listing by id, waiting messages found by
their listed status, and the integration the pipeline reads."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.integrations import DynamoIntegrations, DynamoReceptions
from hub.adapters.dynamo.table import Table
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import Connection, Destination, Integration, IntegrationMode, MessageTypeConfig
from hub.errors import Conflict
from hub.ports import VersionConflict
from tests.contract.backends import Backend
from tests.contract.scenario import NOW, fresh, new_message, refuses_foreign_cursor
from tests.fakes.integrations import FakeIntegrations


def integration(integration_id: str, tenant_id: str = "t1", **changes) -> Integration:
    return Integration.model_validate(
        {"integration_id": integration_id, "tenant_id": tenant_id, "name": "N", **changes}
    )


@pytest.fixture
def store(backend: Backend) -> FakeIntegrations | DynamoIntegrations:
    return backend.integrations


def mark(backend: Backend, store, integration_id: str, at) -> None:
    if backend.name == "fake":
        store.mark_received("t1", integration_id, at)
    else:
        DynamoReceptions(backend.config._table.name).mark_received("t1", integration_id, at)  # type: ignore[union-attr]


def test_a_created_integration_reads_back_at_version_1_and_its_id_is_taken_once(backend, store):
    integration_id = fresh("int")
    created = store.create(integration(integration_id, mode=IntegrationMode.ORCHESTRATION))

    with pytest.raises(Conflict):
        store.create(integration(integration_id, name="again"))
    # Ids are unique within a tenant only: t2's integration of the same id is another one.
    theirs = store.create(integration(integration_id, tenant_id="t2", name="theirs"))

    assert created.version == 1
    assert store.get("t1", integration_id) == created
    assert store.get("t2", integration_id) == theirs
    assert store.get("t1", fresh("int")) is None
    # The item the pipeline reads.
    assert backend.config.get_integration("t1", integration_id) == created.integration
    assert backend.config.get_integration("t2", integration_id) == theirs.integration


def test_a_replace_moves_the_version_on_only_from_the_version_read(backend, store):
    integration_id = fresh("int")
    store.create(integration(integration_id))

    second = store.replace(integration(integration_id, name="M"), 1)
    with pytest.raises(VersionConflict) as stale:
        store.replace(integration(integration_id, name="Lost"), 1)
    with pytest.raises(VersionConflict) as gone:
        store.replace(integration(fresh("int")), 1)

    assert second.version == 2
    assert (stale.value.current, gone.value.current) == (2, None)
    assert store.get("t1", integration_id) == second


def test_a_replace_clears_the_gone_flag_and_keeps_the_reception(backend, store):
    integration_id = fresh("int")
    store.create(integration(integration_id, connection_id="con_1"))
    backend.config.flag_connection_gone(backend.config.get_integration("t1", integration_id), NOW, "410")
    mark(backend, store, integration_id, NOW)

    store.replace(integration(integration_id), 1)

    stored = store.get("t1", integration_id)
    assert stored is not None
    assert stored.integration.connection_gone_at is None
    assert stored.integration.connection_id is None
    assert stored.last_received_at == NOW
    assert backend.config.get_integration("t1", integration_id) == stored.integration


def test_the_adapter_drops_the_gone_status_and_the_reference_attribute(dynamo_table):
    """What a replace leaves of the item beside the configuration (the fake has no items)."""
    store, config = DynamoIntegrations(dynamo_table), DynamoConfigRepository(dynamo_table)
    integration_id = fresh("int")
    store.create(integration(integration_id, connection_id="con_1"))
    config.flag_connection_gone(config.get_integration("t1", integration_id), NOW, "410")

    store.replace(integration(integration_id), 1)

    item = Table(dynamo_table).get(keys.integration_key("t1", integration_id))
    assert item is not None
    assert not {"connection_gone_at", "connection_gone_status", "connection_id"} & set(item)


def test_a_reception_never_moves_back_nor_creates_an_item(backend, store):
    integration_id = fresh("int")
    store.create(integration(integration_id))

    mark(backend, store, integration_id, NOW)
    mark(backend, store, integration_id, NOW - timedelta(minutes=1))
    mark(backend, store, fresh("int"), NOW)

    stored = store.get("t1", integration_id)
    assert stored is not None
    assert stored.last_received_at == NOW


def test_a_delete_needs_the_version_and_the_reception_read(backend, store):
    integration_id = fresh("int")
    store.create(integration(integration_id))
    read = store.get("t1", integration_id)
    assert read is not None
    mark(backend, store, integration_id, NOW)

    with pytest.raises(Conflict):
        store.delete(read)  # a message arrived since it was read
    with pytest.raises(VersionConflict) as stale:
        store.delete(type(read)(read.integration, 7, NOW))
    assert stale.value.current == 1
    reread = store.get("t1", integration_id)
    assert reread is not None
    store.delete(reread)

    assert store.get("t1", integration_id) is None
    with pytest.raises(VersionConflict) as gone:
        store.delete(reread)
    assert gone.value.current is None


def test_a_tenants_integrations_are_listed_by_id_in_pages(backend, store):
    tenant_id = fresh("t")
    for name in ("int_c", "int_a", "int_b"):
        store.create(integration(f"{name}-{tenant_id}", tenant_id=tenant_id))
    store.create(integration(fresh("int"), tenant_id=fresh("t")))

    first = store.list_integrations(tenant_id, 2, None)
    rest = store.list_integrations(tenant_id, 2, first.next_cursor)

    assert [s.integration.integration_id for s in first.integrations] == [
        f"int_a-{tenant_id}",
        f"int_b-{tenant_id}",
    ]
    assert [s.integration.integration_id for s in rest.integrations] == [f"int_c-{tenant_id}"]
    assert rest.next_cursor is None


def test_a_cursor_of_another_tenants_listing_is_refused(store):
    other = fresh("t")
    for n in range(3):
        store.create(integration(f"int-{n}", tenant_id=other))

    refuses_foreign_cursor(lambda owner, cursor: store.list_integrations(owner, 1, cursor), fresh("t"), other)


@pytest.mark.parametrize(
    ("status", "waits"),
    [
        (PipelineStatus.ERROR, True),
        (PipelineStatus.DEAD_LETTER, True),
        (PipelineStatus.RETRY_PENDING, True),
        (PipelineStatus.SENT, False),
    ],
)
def test_waiting_messages_are_those_in_a_listed_status(backend, store, status, waits):
    tenant_id, integration_id = fresh("t"), fresh("int")
    new = new_message(tenant_id=tenant_id, integration_id=integration_id)
    backend.messages.create(new, NOW)
    assert not store.has_waiting_messages(tenant_id, integration_id)

    backend.messages.transition(new.record, status, NOW)

    assert store.has_waiting_messages(tenant_id, integration_id) is waits
    assert not store.has_waiting_messages(tenant_id, fresh("int"))
    assert not store.has_waiting_messages(fresh("t"), integration_id)


def test_a_connections_tenant(backend, store):
    connection_id = fresh("con")
    backend.connections.create(
        Connection(connection_id=connection_id, tenant_id="t1", destination=Destination(url="https://e.x/in"))
    )

    assert store.connection_exists("t1", connection_id) is True
    assert store.connection_exists("t2", connection_id) is False
    assert store.connection_exists("t1", fresh("con")) is False


def test_the_same_integration_from_both(both):
    fake, dynamo = both
    integration_id = fresh("int")
    config = integration(integration_id, message_types={"po": MessageTypeConfig(duplicate_key_fields=("a",))})
    for side in both:
        side.integrations.create(config)
        side.integrations.replace(config.model_copy(update={"name": "again"}), 1)
        mark(side, side.integrations, integration_id, NOW)

    assert fake.integrations.get("t1", integration_id) == dynamo.integrations.get("t1", integration_id)
    assert fake.config.get_integration("t1", integration_id) == dynamo.config.get_integration(
        "t1", integration_id
    )
