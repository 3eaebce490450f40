"""The audit log from the use cases' side (in-memory fakes): each mutating admin use case leaves
one entry in its tenant's log with redacted views and never a secret; a failed write never
fails the change it describes; listing is newest first per tenant."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import pytest

from hub.admin.access import BOOTSTRAP
from hub.admin.api_keys import ApiKeyAdmin
from hub.admin.audit import Audit, AuditEntry, AuditLog, AuditPage
from hub.admin.tenants import TenantAdmin
from hub.domain.tenancy import IntegrationMode, Tenant
from hub.errors import NotFound, StorageUnavailable, ValidationFailed
from tests.fakes.api_keys import FakeApiKeys
from tests.fakes.audit import FakeAuditTrail
from tests.fakes.tenants import FakeTenants

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class BrokenTrail(FakeAuditTrail):
    def record(self, entry: AuditEntry) -> None:
        raise StorageUnavailable("audit log is temporarily unavailable")


def test_tenant_changes_are_logged_with_before_and_after() -> None:
    trail = FakeAuditTrail()
    admin = TenantAdmin(FakeTenants(), clock=lambda: NOW, audit=Audit(trail))

    admin.create("acme", "ACME", None, BOOTSTRAP)
    admin.update("acme", "ACME Corp", IntegrationMode.ORCHESTRATION, BOOTSTRAP)
    admin.disable("acme", BOOTSTRAP)
    admin.disable("acme", BOOTSTRAP)  # a repeat changes nothing and logs nothing
    admin.enable("acme", BOOTSTRAP)

    assert trail.actions("acme") == ["tenant.created", "tenant.updated", "tenant.disabled", "tenant.enabled"]
    updated = trail.entries[1]
    assert updated.before is not None
    assert updated.after is not None
    assert (updated.before["name"], updated.after["name"]) == ("ACME", "ACME Corp")
    assert (updated.actor_token_id, updated.actor_label) == ("bootstrap-admin", "bootstrap admin token")


def test_the_platform_scope_cannot_be_a_tenant_id() -> None:
    admin = TenantAdmin(FakeTenants(), clock=lambda: NOW)

    with pytest.raises(ValidationFailed):
        admin.create("platform", "P", None, BOOTSTRAP)


def test_api_key_entries_never_hold_the_key() -> None:
    trail = FakeAuditTrail()
    admin = ApiKeyAdmin(FakeApiKeys(tenants={"t1"}, integrations={}), clock=lambda: NOW, audit=Audit(trail))

    created = admin.create("t1", "ERP", None, BOOTSTRAP)
    rotated = admin.rotate("t1", created["key_id"], timedelta(hours=1), BOOTSTRAP)
    admin.revoke("t1", rotated["key_id"], BOOTSTRAP)
    admin.revoke("t1", rotated["key_id"], BOOTSTRAP)

    assert trail.actions("t1") == ["api_key.created", "api_key.rotated", "api_key.revoked"]
    logged = json.dumps([(e.target, e.before, e.after) for e in trail.entries])
    assert created["key"] not in logged
    assert rotated["key"] not in logged
    assert trail.entries[1].target == {"key_id": created["key_id"], "new_key_id": rotated["key_id"]}


def test_a_failed_audit_write_is_logged_and_the_change_stands(caplog: pytest.LogCaptureFixture) -> None:
    store = FakeTenants()
    admin = TenantAdmin(store, clock=lambda: NOW, audit=Audit(BrokenTrail()))

    with caplog.at_level(logging.ERROR):
        created = admin.create("acme", "ACME", None, BOOTSTRAP)

    assert store.tenants["acme"].name == created["name"] == "ACME"
    assert "audit entry not stored" in caplog.text


class TestListing:
    def test_a_tenants_log_is_newest_first_in_pages(self) -> None:
        trail, tenants = FakeAuditTrail(), FakeTenants()
        tenants.create(Tenant(tenant_id="t1", name="T1"))
        audit = Audit(trail)
        for minute in range(3):
            audit.record(
                BOOTSTRAP, "t1", f"thing.{minute}", {"id": str(minute)}, NOW + timedelta(minutes=minute)
            )
        audit.record(BOOTSTRAP, "t2", "other.tenant", {}, NOW)
        log = AuditLog(trail, tenants)

        first = log.tenant_log("t1", 2, None)
        second = log.tenant_log("t1", 2, first["next_cursor"])

        assert [e["action"] for e in first["items"] + second["items"]] == ["thing.2", "thing.1", "thing.0"]
        assert second["next_cursor"] is None
        assert first["items"][0]["actor"] == {"token_id": "bootstrap-admin", "label": "bootstrap admin token"}
        assert first["items"][0]["at"] == "2026-11-30T12:02:00Z"

    def test_a_missing_tenant_is_not_found(self) -> None:
        with pytest.raises(NotFound):
            AuditLog(FakeAuditTrail(), FakeTenants()).tenant_log("t9", 10, None)

    def test_the_fake_keeps_the_ports_contract(self) -> None:
        assert isinstance(FakeAuditTrail().list_entries("t1", 1, None), AuditPage)
