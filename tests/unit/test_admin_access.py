"""Roles and scopes of admin tokens (hub.admin.access)."""

from __future__ import annotations

import pytest

from hub.admin.access import BOOTSTRAP, PERMISSIONS, Principal, Role, allowed_actions, whoami
from hub.errors import Forbidden, NotFound


def _token(role: Role, tenant_id: str | None) -> Principal:
    return Principal(token_id="tok_x", label="x", role=role, tenant_id=tenant_id)


@pytest.mark.parametrize(
    ("held", "needed", "allowed"),
    [
        (Role.VIEWER, Role.VIEWER, True),
        (Role.VIEWER, Role.OPERATOR, False),
        (Role.VIEWER, Role.ADMIN, False),
        (Role.OPERATOR, Role.VIEWER, True),
        (Role.OPERATOR, Role.OPERATOR, True),
        (Role.OPERATOR, Role.ADMIN, False),
        (Role.ADMIN, Role.OPERATOR, True),
        (Role.ADMIN, Role.ADMIN, True),
    ],
)
def test_a_role_covers_the_roles_below_it(held: Role, needed: Role, allowed: bool) -> None:
    principal = _token(held, "t1")
    if allowed:
        principal.require(needed, "t1")
    else:
        with pytest.raises(Forbidden) as refused:
            principal.require(needed, "t1")
        assert refused.value.details == {"role": held.value, "needs": needed.value}


def test_another_tenants_resource_is_not_found_even_for_an_admin() -> None:
    with pytest.raises(NotFound) as missing:
        _token(Role.ADMIN, "t1").require(Role.VIEWER, "t2", what="integration")
    assert missing.value.message == "integration not found"


def test_another_tenant_beats_a_low_role_so_nothing_is_learned() -> None:
    with pytest.raises(NotFound):
        _token(Role.VIEWER, "t1").require(Role.ADMIN, "t2")


def test_a_platform_token_reaches_every_tenant_and_the_platform() -> None:
    platform = _token(Role.OPERATOR, None)
    platform.require(Role.OPERATOR, "any-tenant")
    platform.require_platform(Role.OPERATOR)
    with pytest.raises(Forbidden):
        platform.require_platform(Role.ADMIN)


def test_a_tenant_token_never_acts_on_the_platform() -> None:
    with pytest.raises(Forbidden) as refused:
        _token(Role.ADMIN, "t1").require_platform(Role.VIEWER)
    assert refused.value.http_status == 403
    assert refused.value.code == "forbidden"


def test_the_bootstrap_token_is_a_platform_admin() -> None:
    assert BOOTSTRAP.platform
    assert BOOTSTRAP.role is Role.ADMIN
    BOOTSTRAP.require_platform(Role.ADMIN)


class TestAllowedActions:
    """What `GET /api/admin/me` says each token may do (hub.admin.access.allowed_actions)."""

    def test_a_viewer_reads_and_previews_only(self) -> None:
        can = allowed_actions(_token(Role.VIEWER, "t1"))
        assert {action for action, allowed in can.items() if allowed} == {"view", "preview"}

    def test_an_operator_also_acts_on_messages_and_connections_but_configures_nothing(self) -> None:
        can = allowed_actions(_token(Role.OPERATOR, "t1"))
        assert {action for action, allowed in can.items() if allowed} == {
            "view",
            "preview",
            "reprocess",
            "cancel",
            "erase",
            "pause",
            "test_connection",
            "manage_deliveries",
        }

    def test_a_tenant_admin_does_everything_but_the_platforms_actions(self) -> None:
        can = allowed_actions(_token(Role.ADMIN, "t1"))
        assert {action for action, allowed in can.items() if not allowed} == {
            "redrive",
            "list_tenants",
            "manage_tenants",
        }

    def test_a_platform_operator_redrives_and_lists_tenants_but_manages_none(self) -> None:
        can = allowed_actions(_token(Role.OPERATOR, None))
        assert (can["redrive"], can["list_tenants"]) == (True, True)
        assert (can["manage_tenants"], can["configure"], can["manage_tokens"]) == (False, False, False)

    def test_the_bootstrap_token_may_do_everything(self) -> None:
        assert all(allowed_actions(BOOTSTRAP).values())

    @pytest.mark.parametrize("role", list(Role))
    @pytest.mark.parametrize("tenant_id", ["t1", None])
    def test_the_answer_is_what_require_decides(self, role: Role, tenant_id: str | None) -> None:
        """The mapping and the routes' checks cannot drift: each action's permission run
        through `require` / `require_platform` gives the same yes or no."""
        principal = _token(role, tenant_id)
        can = allowed_actions(principal)
        for action, needs in PERMISSIONS.items():
            try:
                if needs.platform_only:
                    principal.require_platform(needs.role)
                else:
                    principal.require(needs.role, tenant_id or "t1")
            except Forbidden:
                allowed = False
            else:
                allowed = True
            assert can[action.value] is allowed, action

    def test_whoami_shows_the_token_never_its_secret(self) -> None:
        assert whoami(_token(Role.OPERATOR, "t1")) == {
            "token_id": "tok_x",
            "label": "x",
            "role": "operator",
            "tenant_id": "t1",
            "platform": False,
            "can": allowed_actions(_token(Role.OPERATOR, "t1")),
        }
