"""Admin tokens (hub.admin.tokens): who may create, list and revoke which, what authenticates,
and what the audit log gets - over in-memory fakes."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import pytest

from hub.admin.access import BOOTSTRAP, Principal, Role
from hub.admin.audit import PLATFORM_SCOPE, Audit
from hub.admin.tokens import ADMIN_TOKEN_PREFIX, Authenticator, TokenAdmin
from hub.domain.tenancy import Tenant
from hub.errors import Forbidden, NotFound, Unauthorized
from tests.fakes.admin_tokens import FakeAdminTokens
from tests.fakes.audit import FakeAuditTrail
from tests.fakes.tenants import FakeTenants

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
BOOTSTRAP_TOKEN = "hub_admin_bootstrap-for-unit-tests"


class World:
    def __init__(self) -> None:
        self.tokens = FakeAdminTokens()
        self.tenants = FakeTenants()
        self.trail = FakeAuditTrail()
        for tenant_id in ("t1", "t2"):
            self.tenants.create(Tenant(tenant_id=tenant_id, name=tenant_id.upper()))
        self.admin = TokenAdmin(self.tokens, self.tenants, Audit(self.trail), clock=lambda: NOW)
        digest = hashlib.sha256(BOOTSTRAP_TOKEN.encode()).hexdigest()
        self.auth = Authenticator(lambda: digest, self.tokens, self.tenants)

    def token(self, role: Role, tenant_id: str | None, by: Principal = BOOTSTRAP) -> tuple[str, Principal]:
        created = self.admin.create(by, tenant_id, f"{role.value} of {tenant_id}", role)
        return created["token"], self.auth.principal(created["token"])


@pytest.fixture
def world() -> World:
    return World()


class TestCreate:
    def test_the_token_is_shown_once_and_stored_only_as_its_hash(self, world: World) -> None:
        created = world.admin.create(BOOTSTRAP, "t1", "ci pipeline", Role.OPERATOR)

        raw = created["token"]
        assert raw.startswith(ADMIN_TOKEN_PREFIX)
        assert created["prefix"] == raw[:16]
        assert (created["role"], created["tenant_id"], created["state"]) == ("operator", "t1", "active")
        assert created["created_by"] == BOOTSTRAP.token_id
        stored = world.tokens.get(created["token_id"])
        assert stored is not None
        assert stored.token_hash == hashlib.sha256(raw.encode()).hexdigest()
        assert raw not in repr(stored)

    def test_a_tenant_admin_creates_tokens_of_its_tenant_up_to_its_own_role(self, world: World) -> None:
        _, t1_admin = world.token(Role.ADMIN, "t1")

        for role in Role:
            assert world.admin.create(t1_admin, "t1", "x", role)["tenant_id"] == "t1"

    def test_a_tenant_admin_cannot_create_for_another_tenant_or_the_platform(self, world: World) -> None:
        _, t1_admin = world.token(Role.ADMIN, "t1")

        with pytest.raises(NotFound):
            world.admin.create(t1_admin, "t2", "x", Role.VIEWER)
        with pytest.raises(Forbidden):
            world.admin.create(t1_admin, None, "x", Role.VIEWER)

    @pytest.mark.parametrize("role", [Role.VIEWER, Role.OPERATOR])
    def test_below_admin_no_token_can_be_created(self, world: World, role: Role) -> None:
        _, caller = world.token(role, "t1")

        with pytest.raises(Forbidden) as refused:
            world.admin.create(caller, "t1", "x", Role.VIEWER)
        assert refused.value.details == {"role": role.value, "needs": "admin"}

    def test_never_a_role_above_the_creators(self) -> None:
        # Only admins create tokens today, so the ceiling is checked on a principal built for it.
        world = World()
        odd = Principal(token_id="tok_odd", label="odd", role=Role.OPERATOR, tenant_id=None)
        admin = TokenAdmin(world.tokens, world.tenants, Audit(None), clock=lambda: NOW)
        with pytest.raises(Forbidden):
            admin.create(odd, "t1", "x", Role.ADMIN)

    def test_platform_tokens_only_by_a_platform_admin(self, world: World) -> None:
        _, platform_operator = world.token(Role.OPERATOR, None)
        _, platform_admin = world.token(Role.ADMIN, None)

        with pytest.raises(Forbidden):
            world.admin.create(platform_operator, None, "x", Role.VIEWER)
        assert world.admin.create(platform_admin, None, "x", Role.ADMIN)["tenant_id"] is None

    def test_a_missing_tenant_is_not_found(self, world: World) -> None:
        with pytest.raises(NotFound):
            world.admin.create(BOOTSTRAP, "t9", "x", Role.VIEWER)

    def test_the_audit_entry_never_holds_the_token(self, world: World) -> None:
        created = world.admin.create(BOOTSTRAP, "t1", "ci", Role.VIEWER)
        platform = world.admin.create(BOOTSTRAP, None, "ops", Role.ADMIN)

        (entry,) = [e for e in world.trail.entries if e.scope == "t1"]
        assert (entry.action, entry.target, entry.actor_token_id) == (
            "admin_token.created",
            {"token_id": created["token_id"]},
            "bootstrap-admin",
        )
        assert world.trail.actions(PLATFORM_SCOPE) == ["admin_token.created"]
        stored = json.dumps([(e.before, e.after) for e in world.trail.entries])
        assert created["token"] not in stored
        assert platform["token"] not in stored


class TestAuthenticate:
    def test_the_bootstrap_token_is_a_platform_admin(self, world: World) -> None:
        assert world.auth.principal(BOOTSTRAP_TOKEN) == BOOTSTRAP

    def test_a_stored_token_is_its_role_and_scope(self, world: World) -> None:
        created = world.admin.create(BOOTSTRAP, "t1", "viewer", Role.VIEWER)

        principal = world.auth.principal(created["token"])

        assert principal == Principal(
            token_id=created["token_id"], label="viewer", role=Role.VIEWER, tenant_id="t1"
        )

    @pytest.mark.parametrize("presented", ["", "hub_adm_unknown", "not-a-token", BOOTSTRAP_TOKEN + "x"])
    def test_anything_else_is_unauthorized(self, world: World, presented: str) -> None:
        with pytest.raises(Unauthorized):
            world.auth.principal(presented)

    def test_a_revoked_token_is_unauthorized_at_once(self, world: World) -> None:
        raw, principal = world.token(Role.ADMIN, "t1")

        world.admin.revoke(BOOTSTRAP, principal.token_id)

        with pytest.raises(Unauthorized):
            world.auth.principal(raw)

    def test_a_disabled_tenants_token_is_unauthorized_until_it_is_enabled(self, world: World) -> None:
        raw, _ = world.token(Role.ADMIN, "t1")
        world.tenants.update("t1", {"active": False}, NOW)

        with pytest.raises(Unauthorized):
            world.auth.principal(raw)
        world.tenants.update("t1", {"active": True}, NOW)
        assert world.auth.principal(raw).tenant_id == "t1"

    def test_without_a_bootstrap_secret_only_stored_tokens_work(self, world: World) -> None:
        raw, _ = world.token(Role.VIEWER, None)
        auth = Authenticator(lambda: "", world.tokens, world.tenants)

        with pytest.raises(Unauthorized):
            auth.principal(BOOTSTRAP_TOKEN)
        assert auth.principal(raw).role is Role.VIEWER


class TestListAndRevoke:
    def test_listing_is_per_scope_newest_first_and_never_shows_a_token(self, world: World) -> None:
        first = world.admin.create(BOOTSTRAP, "t1", "a", Role.VIEWER)
        second = world.admin.create(BOOTSTRAP, "t1", "b", Role.ADMIN)
        world.admin.create(BOOTSTRAP, "t2", "c", Role.VIEWER)

        listed = world.admin.list_tokens(BOOTSTRAP, "t1", 10, None)

        ids = [t["token_id"] for t in listed["items"]]
        # Token ids sort by creation time (two made in one millisecond: by their random part).
        assert sorted(ids, reverse=True) == ids
        assert set(ids) == {first["token_id"], second["token_id"]}
        assert all("token" not in t and "token_hash" not in t for t in listed["items"])
        assert world.admin.list_tokens(BOOTSTRAP, None, 10, None)["items"] == []

    def test_a_tenant_token_lists_only_its_tenant(self, world: World) -> None:
        _, t1_viewer = world.token(Role.VIEWER, "t1")

        assert world.admin.list_tokens(t1_viewer, "t1", 10, None)["items"]
        with pytest.raises(NotFound):
            world.admin.list_tokens(t1_viewer, "t2", 10, None)
        with pytest.raises(Forbidden):
            world.admin.list_tokens(t1_viewer, None, 10, None)

    def test_revoking_is_idempotent_and_audited_once(self, world: World) -> None:
        created = world.admin.create(BOOTSTRAP, "t1", "a", Role.VIEWER)

        first = world.admin.revoke(BOOTSTRAP, created["token_id"])
        again = world.admin.revoke(BOOTSTRAP, created["token_id"])

        assert first == again
        assert (first["state"], first["revoked_at"]) == ("revoked", "2026-11-30T12:00:00Z")
        assert world.trail.actions("t1") == ["admin_token.created", "admin_token.revoked"]

    def test_another_scopes_token_is_not_found_and_a_low_role_is_forbidden(self, world: World) -> None:
        _, t1_admin = world.token(Role.ADMIN, "t1")
        _, t1_operator = world.token(Role.OPERATOR, "t1")
        t2_token = world.admin.create(BOOTSTRAP, "t2", "x", Role.VIEWER)["token_id"]
        platform_token = world.admin.create(BOOTSTRAP, None, "x", Role.VIEWER)["token_id"]

        for token_id in (t2_token, platform_token, "tok_missing"):
            with pytest.raises(NotFound):
                world.admin.revoke(t1_admin, token_id)
        with pytest.raises(Forbidden):
            world.admin.revoke(t1_operator, t1_admin.token_id)
        assert world.admin.revoke(t1_admin, t1_operator.token_id)["state"] == "revoked"


def test_stored_tokens_work_while_the_bootstrap_secret_cannot_be_read(world: World) -> None:
    from hub.errors import ServiceUnavailable  # noqa: PLC0415

    raw, _ = world.token(Role.VIEWER, "t1")

    def unreadable() -> str:
        raise ServiceUnavailable("secrets are temporarily unavailable")

    auth = Authenticator(unreadable, world.tokens, world.tenants)
    assert auth.principal(raw).tenant_id == "t1"
    with pytest.raises(ServiceUnavailable):
        auth.principal(BOOTSTRAP_TOKEN)
