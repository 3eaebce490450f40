"""Tenants: their state, the admin use cases over an in-memory store (with the bodies their
routes parse, and the retention a tenant may keep), and ingest refusing a disabled tenant's keys
from the configuration cache."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hub.admin.access import BOOTSTRAP as OP
from hub.admin.tenants import Keep, TenantAdmin, TenantExists
from hub.api.admin.tenants import NewTenant, TenantChange
from hub.api.http import validated
from hub.config import Settings
from hub.config_cache import CachedConfig
from hub.domain.message import InboundMessage
from hub.domain.tenancy import IntegrationMode, Tenant, TenantState, tenant_accepts_traffic
from hub.errors import NotFound, Unauthorized, ValidationFailed
from hub.ingest.receive import Ingestor
from tests.fakes import FakeClock
from tests.fakes.tenants import FakeTenants
from tests.fakes.world import API_KEY, INTEGRATION, KEYED, World

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class TestTenantState:
    def test_a_tenant_written_before_the_admin_api_is_active_in_observability(self):
        tenant = Tenant.model_validate({"tenant_id": "t1", "name": "T1"})

        assert (tenant.state, tenant.default_mode) == (TenantState.ACTIVE, IntegrationMode.OBSERVABILITY)
        assert tenant_accepts_traffic(tenant)

    def test_only_an_explicitly_disabled_tenant_is_refused(self):
        assert not tenant_accepts_traffic(Tenant(tenant_id="t1", name="T1", active=False))
        # A key whose tenant item is missing (written by hand) keeps working.
        assert tenant_accepts_traffic(None)


@pytest.fixture
def store() -> FakeTenants:
    return FakeTenants()


@pytest.fixture
def admin(store: FakeTenants) -> TenantAdmin:
    return TenantAdmin(store, clock=lambda: NOW)


class TestAdmin:
    def test_create_generates_an_id_and_defaults_to_observability(self, admin, store):
        created = admin.create(None, "ACME", None, OP)

        assert created["tenant_id"].startswith("tnt_")
        assert len(created["tenant_id"]) == 30
        assert (created["default_mode"], created["state"]) == ("observability", "active")
        assert created["created_at"] == created["updated_at"] == "2026-11-30T12:00:00Z"
        assert store.tenants[created["tenant_id"]].name == "ACME"

    def test_an_existing_id_is_tenant_exists_and_unchanged(self, admin, store):
        admin.create("acme", "ACME", IntegrationMode.ORCHESTRATION, OP)

        with pytest.raises(TenantExists) as refused:
            admin.create("acme", "Other", None, OP)

        assert (refused.value.http_status, refused.value.details) == (409, {"tenant_id": "acme"})
        assert store.tenants["acme"].name == "ACME"

    def test_update_changes_only_what_is_given(self, admin):
        admin.create("acme", "ACME", None, OP)

        renamed = admin.update("acme", "ACME Ltda", None, OP)
        moded = admin.update("acme", None, IntegrationMode.ORCHESTRATION, OP)

        assert (renamed["name"], renamed["default_mode"]) == ("ACME Ltda", "observability")
        assert (moded["name"], moded["default_mode"]) == ("ACME Ltda", "orchestration")

    def test_disable_and_enable_are_idempotent(self, store):
        clock = FakeClock(NOW, tick=timedelta(minutes=1))
        admin = TenantAdmin(store, clock=clock)
        admin.create("acme", "ACME", None, OP)

        first = admin.disable("acme", OP)
        second = admin.disable("acme", OP)
        enabled = admin.enable("acme", OP)
        again = admin.enable("acme", OP)

        assert first == second
        assert first["state"] == "disabled"
        assert first["disabled_at"] is not None
        assert (enabled["state"], enabled["disabled_at"]) == ("active", None)
        assert again == enabled

    def test_an_unknown_tenant_is_not_found_everywhere(self, admin):
        for call in (
            lambda: admin.get("nope"),
            lambda: admin.update("nope", "x", None, OP),
            lambda: admin.disable("nope", OP),
            lambda: admin.enable("nope", OP),
        ):
            with pytest.raises(NotFound):
                call()

    def test_the_listing_pages_by_id(self, admin):
        for tenant_id in ("c", "a", "b"):
            admin.create(tenant_id, tenant_id, None, OP)

        first = admin.list_tenants(2, None)
        second = admin.list_tenants(2, first["next_cursor"])

        assert [t["tenant_id"] for t in first["items"]] == ["a", "b"]
        assert ([t["tenant_id"] for t in second["items"]], second["next_cursor"]) == (["c"], None)


class TestIngest:
    def test_a_disabled_tenants_key_is_unauthorized_and_nothing_is_stored(self):
        world = World()
        world.hub.config.put_tenant(Tenant(tenant_id="t1", name="T1", active=False))

        with pytest.raises(Unauthorized, match="tenant is disabled"):
            world.receive({"po_number": "PO-1"})

        assert world.hub.queue.published == []

    def test_a_warm_instance_reads_the_tenant_once_per_cache_time(self):
        world = World()
        seconds = [0.0]
        cached = CachedConfig(world.hub.config, ttl_seconds=30, clock=lambda: seconds[0])
        # The ingestor as wiring builds it: over the configuration cache.
        ingestor = Ingestor(
            cached, world.hub.messages, world.hub.queue, Settings(table_name="f", pipeline_queue_url="f")
        )

        def receive(po: str) -> None:
            ingestor.receive(
                API_KEY,
                InboundMessage(integration_id=INTEGRATION, message_type=KEYED, payload={"po_number": po}),
                None,
                "corr",
            )

        receive("PO-1")
        receive("PO-2")
        assert world.hub.config.tenant_reads == 1

        world.hub.config.put_tenant(Tenant(tenant_id="t1", name="T1", active=False))
        receive("PO-3")  # cached: still active on this instance
        seconds[0] = 31
        with pytest.raises(Unauthorized):
            receive("PO-4")
        assert world.hub.config.tenant_reads == 2


class TestIngestRetention:
    def test_a_message_and_its_payload_are_kept_as_long_as_the_tenants_retention_says(self) -> None:
        world = World(clock=FakeClock(NOW))
        world.hub.config.put_tenant(
            Tenant(tenant_id="t1", name="T1", payload_retention_days=2, message_retention_days=10)
        )
        world.hub.config.tenant_reads = 0

        record, _ = world.send({"po_number": "PO-RET"})

        assert record.expires_at == int((NOW + timedelta(days=10)).timestamp())
        stored = world.record(record.message_id)
        assert stored.expires_at == record.expires_at
        [claim] = [item for (pk, _), item in world.hub.table.items.items() if pk.startswith("FP#")]
        assert claim["expires_at"] == int((NOW + timedelta(days=2)).timestamp())
        # The tenant the admission read (disabled? over its rate?) is the one whose retention applies.
        assert world.hub.config.tenant_reads == 1

    def test_without_its_own_the_platforms_defaults_apply(self) -> None:
        world = World(clock=FakeClock(NOW))

        record, _ = world.send({"po_number": "PO-DEF"})

        assert record.expires_at == int((NOW + timedelta(days=30)).timestamp())
        [claim] = [item for (pk, _), item in world.hub.table.items.items() if pk.startswith("FP#")]
        assert claim["expires_at"] == int((NOW + timedelta(days=7)).timestamp())
        # Past the payload's retention it is purged; the message stays until its own.
        assert world.hub.messages.get_payload(record.message_id, NOW + timedelta(days=7)) is None
        assert world.hub.messages.get_payload(record.message_id, NOW + timedelta(days=6)) is not None


def post(admin: TenantAdmin, body: dict[str, Any]) -> dict[str, Any]:
    """POST /api/admin/tenants as its handler runs it: the body parsed, then the use case."""
    request = validated(NewTenant, body, "request body")
    return admin.create(
        request.tenant_id,
        request.name,
        request.default_mode,
        OP,
        request.rate_limit,
        payload_retention_days=request.payload_retention_days,
        message_retention_days=request.message_retention_days,
    )


def patch(admin: TenantAdmin, tenant_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """PATCH /api/admin/tenants/<tenant_id> by a platform admin, as its handler runs it."""
    request = validated(TenantChange, body, "request body")
    return admin.update(
        tenant_id,
        request.name,
        request.default_mode,
        OP,
        rate_limit=request.rate_limit if request.changes_rate_limit else Keep.KEEP,
        retention=request.retention() if request.changes_retention else None,
    )


def fields_of(error: ValidationFailed) -> set[str]:
    assert (error.http_status, error.code) == (400, "validation_error")
    return {d["field"] for d in error.details}


class TestCreateAndUpdate:
    def test_an_absent_id_is_generated(self, admin):
        created = admin.create(None, "Generated", IntegrationMode.ORCHESTRATION, OP)

        assert created["tenant_id"].startswith("tnt_")
        assert len(created["tenant_id"]) == len("tnt_") + 26
        assert created["default_mode"] == "orchestration"
        assert admin.get(created["tenant_id"]) == created

    def test_name_and_default_mode_change_alone_or_together(self, store):
        admin = TenantAdmin(store, clock=FakeClock(NOW, tick=timedelta(seconds=1)))
        admin.create("t1", "T1", None, OP)

        renamed = admin.update("t1", "Tenant One", None, OP)
        moded = admin.update("t1", None, IntegrationMode.ORCHESTRATION, OP)

        assert (renamed["name"], renamed["default_mode"]) == ("Tenant One", "observability")
        assert (moded["name"], moded["default_mode"]) == ("Tenant One", "orchestration")
        assert moded["updated_at"] >= renamed["updated_at"]
        assert admin.get("t1") == moded

    def test_bad_bodies_are_refused_naming_the_field(self, admin, store):
        admin.create("t1", "T1", None, OP)
        cases = (
            ("POST", {"tenant_id": "has#hash", "name": ""}, {"tenant_id", "name"}),
            ("POST", {"name": "x", "default_mode": "chaos", "extra": 1}, {"default_mode", "extra"}),
            ("POST", {}, {"name"}),
            ("PATCH", {"default_mode": "chaos"}, {"default_mode"}),
            ("PATCH", {}, {""}),
            ("PATCH", {"tenant_id": "t9"}, {"tenant_id"}),
        )
        for method, body, fields in cases:
            with pytest.raises(ValidationFailed) as refused:
                post(admin, body) if method == "POST" else patch(admin, "t1", body)
            assert fields_of(refused.value) == fields, body
        assert list(store.tenants) == ["t1"]
        assert store.tenants["t1"].name == "T1"


class TestRetention:
    def test_a_message_retention_below_the_payload_default_shortens_the_payloads(self, admin):
        created = post(admin, {"tenant_id": "brief", "name": "B", "message_retention_days": 3})

        assert created["retention"] == {"payload_days": 3, "message_days": 3}

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"payload_retention_days": 0}, "payload_retention_days"),
            ({"message_retention_days": 3651}, "message_retention_days"),
            ({"payload_retention_days": "seven"}, "payload_retention_days"),
            ({"payload_retention_days": 1.5}, "payload_retention_days"),
            # Longer than the message's: its own, or the platform's default (30).
            ({"payload_retention_days": 10, "message_retention_days": 5}, "payload_retention_days"),
            ({"payload_retention_days": 31}, "payload_retention_days"),
        ],
    )
    def test_bad_values_are_refused_naming_the_field(self, admin, store, body, field):
        admin.create("t1", "T1", None, OP)

        with pytest.raises(ValidationFailed) as created:
            post(admin, {"tenant_id": "bad", "name": "Bad", **body})
        with pytest.raises(ValidationFailed) as changed:
            patch(admin, "t1", body)

        for refused in (created, changed):
            assert field in fields_of(refused.value), body
        assert "bad" not in store.tenants
        assert admin.get("t1")["retention"] == {"payload_days": 7, "message_days": 30}

    def test_a_change_is_checked_against_what_the_tenant_keeps(self, admin):
        admin.create("t1", "T1", None, OP)
        patch(admin, "t1", {"message_retention_days": 5})

        with pytest.raises(ValidationFailed) as refused:
            patch(admin, "t1", {"payload_retention_days": 6})

        assert fields_of(refused.value) == {"payload_retention_days"}
        assert refused.value.details[0]["problem"] == "exceeds_message_retention"
