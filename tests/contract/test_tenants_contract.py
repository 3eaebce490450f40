"""The tenant store's contract, run against the in-memory fake (tests/fakes/tenants.py) and the
DynamoDB adapter on moto, so the admin use cases' unit tests rely on what the adapter does; and
the configuration repositories' tenant read, which ingest uses to refuse a disabled tenant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hub.adapters.dynamo.tenants import DynamoTenants
from hub.domain.tenancy import IntegrationMode, Tenant
from hub.errors import Conflict, NotFound, ValidationFailed
from tests.contract import scenario
from tests.contract.backends import BACKENDS, Backend, either
from tests.contract.scenario import all_pages
from tests.fakes.tenants import FakeTenants

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> FakeTenants | DynamoTenants:
    return either(request, FakeTenants, DynamoTenants)


def fresh(prefix: str = "t") -> str:
    return scenario.fresh(prefix)


def tenant(tenant_id: str, **changes) -> Tenant:
    return Tenant(tenant_id=tenant_id, name="N", created_at=NOW, updated_at=NOW, **changes)


def test_a_created_tenant_reads_back_and_its_id_is_taken_once(store):
    tenant_id = fresh()
    store.create(tenant(tenant_id, default_mode=IntegrationMode.ORCHESTRATION))

    with pytest.raises(Conflict):
        store.create(tenant(tenant_id))

    assert store.get(tenant_id) == tenant(tenant_id, default_mode=IntegrationMode.ORCHESTRATION)
    assert store.get(fresh()) is None


def test_an_update_sets_the_changes_and_updated_at_and_a_missing_tenant_is_not_found(store):
    tenant_id = fresh()
    store.create(tenant(tenant_id))
    later = NOW + timedelta(minutes=5)

    disabled = store.update(tenant_id, {"active": False, "disabled_at": later, "name": "M"}, later)
    enabled = store.update(tenant_id, {"active": True, "disabled_at": None}, later)

    assert (disabled.active, disabled.disabled_at, disabled.name, disabled.updated_at) == (
        False,
        later,
        "M",
        later,
    )
    assert (enabled.active, enabled.disabled_at, enabled.name) == (True, None, "M")
    assert store.get(tenant_id) == enabled
    with pytest.raises(NotFound):
        store.update(fresh(), {"name": "x"}, later)


def test_the_listing_pages_by_tenant_id(store):
    prefix = fresh("list")
    mine = [f"{prefix}-{n}" for n in ("c", "a", "b")]
    for tenant_id in mine:
        store.create(tenant(tenant_id))

    seen = [t.tenant_id for t in all_pages(lambda cursor: store.list_tenants(2, cursor), "tenants", 2)]

    assert seen == sorted(set(seen))
    assert [t for t in seen if t.startswith(prefix)] == sorted(mine)


def test_a_cursor_the_listing_did_not_give_out_is_refused(store):
    with pytest.raises(ValidationFailed):
        store.list_tenants(2, "bm90IGEgY3Vyc29y")


def test_the_configuration_repository_reads_a_disabled_tenant(backend: Backend):
    tenant_id = fresh()
    backend.config.put_tenant(tenant(tenant_id, active=False, disabled_at=NOW))

    read = backend.config.get_tenant(tenant_id)

    assert read is not None
    assert (read.active, read.disabled_at, read.default_mode) == (False, NOW, IntegrationMode.OBSERVABILITY)
    assert backend.config.get_tenant(fresh()) is None
