"""Who may do what on the admin API (issue 11): admin tokens carry a role and a scope.

Roles are ordered: a `viewer` reads; an `operator` also reprocesses, cancels, redrives and
pauses; an `admin` also changes configuration, keys, tokens and certificates. A token is scoped
to one tenant or to the platform (every tenant, plus what belongs to no tenant: the tenant list,
the dead-letter queues).

Another tenant's resource answers 404, exactly like a resource that does not exist, so a token
learns nothing about other tenants; a role too low for the action answers 403 `forbidden`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from hub.errors import Forbidden, NotFound


class Role(StrEnum):
    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def covers(self, needed: Role) -> bool:
        """Whether this role may do what `needed` may."""
        return self.rank >= needed.rank


_RANK = {Role.VIEWER: 0, Role.OPERATOR: 1, Role.ADMIN: 2}


@dataclass(frozen=True)
class Principal:
    """The caller of an admin request, from its token."""

    token_id: str
    label: str
    role: Role
    #: None: a platform token.
    tenant_id: str | None

    @property
    def platform(self) -> bool:
        return self.tenant_id is None

    def sees(self, tenant_id: str | None) -> bool:
        """Whether a resource of `tenant_id` (None: of the platform) is visible to this caller."""
        return self.tenant_id is None or self.tenant_id == tenant_id

    def require(self, role: Role, tenant_id: str, *, what: str = "resource") -> None:
        """May this caller act with `role` on a resource of `tenant_id`? NotFound (the same
        answer as a missing `what`) for another tenant's; Forbidden when the role is too low.
        Call it once the resource's tenant is known (from the path, or the stored item)."""
        if self.tenant_id is not None and self.tenant_id != tenant_id:
            raise NotFound(f"{what} not found")
        self._role_covers(role)

    def require_platform(self, role: Role) -> None:
        """For what belongs to no tenant (the tenant list, creating a tenant, the DLQs)."""
        if self.tenant_id is not None:
            raise Forbidden("this action needs a platform token", details={"needs": "platform"})
        self._role_covers(role)

    def _role_covers(self, role: Role) -> None:
        if not self.role.covers(role):
            raise Forbidden(
                f"the token's role ({self.role.value}) may not do this",
                details={"role": self.role.value, "needs": role.value},
            )


class Action(StrEnum):
    """What the operator's page offers, by name (`GET /api/admin/me`'s `can`)."""

    #: Read every view of the token's scope (queue, messages, integrations, audit, ...).
    VIEW = "view"
    #: Run a message type's mapping on a sample payload (no side effect).
    PREVIEW = "preview"
    REPROCESS = "reprocess"
    CANCEL = "cancel"
    #: Pause and resume a connection.
    PAUSE = "pause"
    TEST_CONNECTION = "test_connection"
    #: Enable or disable a webhook subscription, replay its failed deliveries.
    MANAGE_DELIVERIES = "manage_deliveries"
    #: Move a dead-letter lane back to the pipeline (platform).
    REDRIVE = "redrive"
    #: Erase a message, or a tenant's messages by external id or business key (LGPD / GDPR).
    ERASE = "erase"
    #: Create, change and delete integrations, connections, subscriptions; tenant settings.
    CONFIGURE = "configure"
    #: Upload a connection's client certificate.
    MANAGE_CERTIFICATES = "manage_certificates"
    #: Create, rotate and revoke partner API keys and status-callback tokens.
    MANAGE_KEYS = "manage_keys"
    #: Create and revoke admin tokens (never above the creator's role).
    MANAGE_TOKENS = "manage_tokens"
    #: List the tenants (platform).
    LIST_TENANTS = "list_tenants"
    #: Create, disable and enable tenants (platform).
    MANAGE_TENANTS = "manage_tenants"


@dataclass(frozen=True)
class Permission:
    role: Role
    #: Only a platform token may (whatever a tenant token's role).
    platform_only: bool = False


#: The role (and scope) each action needs: the same `require` / `require_platform` calls the
#: admin routes make (tests/integration/test_whoami.py checks a route per action against it).
PERMISSIONS: Mapping[Action, Permission] = {
    Action.VIEW: Permission(Role.VIEWER),
    Action.PREVIEW: Permission(Role.VIEWER),
    Action.REPROCESS: Permission(Role.OPERATOR),
    Action.CANCEL: Permission(Role.OPERATOR),
    Action.PAUSE: Permission(Role.OPERATOR),
    Action.TEST_CONNECTION: Permission(Role.OPERATOR),
    Action.MANAGE_DELIVERIES: Permission(Role.OPERATOR),
    Action.REDRIVE: Permission(Role.OPERATOR, platform_only=True),
    Action.ERASE: Permission(Role.OPERATOR),
    Action.CONFIGURE: Permission(Role.ADMIN),
    Action.MANAGE_CERTIFICATES: Permission(Role.ADMIN),
    Action.MANAGE_KEYS: Permission(Role.ADMIN),
    Action.MANAGE_TOKENS: Permission(Role.ADMIN),
    Action.LIST_TENANTS: Permission(Role.VIEWER, platform_only=True),
    Action.MANAGE_TENANTS: Permission(Role.ADMIN, platform_only=True),
}


def allowed_actions(principal: Principal) -> dict[str, bool]:
    """Every action, and whether `principal` may take it within its own scope: what the page
    offers (it offers nothing the API would refuse with 403)."""
    return {
        action.value: principal.role.covers(needs.role) and (principal.platform or not needs.platform_only)
        for action, needs in PERMISSIONS.items()
    }


def whoami(principal: Principal) -> dict[str, Any]:
    """`GET /api/admin/me`: the token's identity, scope and what it may do (never the token)."""
    return {
        "token_id": principal.token_id,
        "label": principal.label,
        "role": principal.role.value,
        "tenant_id": principal.tenant_id,
        "platform": principal.platform,
        "can": allowed_actions(principal),
    }


#: The bootstrap token's principal: a platform admin, for the first login (it creates the real
#: tokens). Its hash is deployed with the stack.
BOOTSTRAP = Principal(
    token_id="bootstrap-admin",  # noqa: S106 (an id, not a secret)
    label="bootstrap admin token",
    role=Role.ADMIN,
    tenant_id=None,
)


# --- what each admin route declares (issue 27, point 8) -------------------------------------


class Scope(StrEnum):
    """Where a route's permission is checked, and against what."""

    #: No token at all (nothing the admin API routes today; the page is served before routing).
    PUBLIC = "public"
    #: Any valid admin token, whatever its role and scope (who am I, the OpenAPI document).
    ANY_TOKEN = "any_token"  # noqa: S105 (a scope's name, not a secret)
    #: Only a platform token, with at least `role` (a tenant's token is 403 whatever its role).
    PLATFORM = "platform"
    #: The request names the tenant (`tenant_from`): checked before the route runs.
    TENANT = "tenant"
    #: The use case checks `role`, once it knows the tenant: from the stored item (a message, a
    #: connection, an admin token), or by its own rule (a null tenant meaning the platform).
    #: Declared all the same, so the authorization matrix test holds the use case to it.
    USE_CASE = "use_case"


class TenantFrom(StrEnum):
    """Which part of the request names the tenant of a TENANT route (its `tenant_id` field, in
    the model the route parses that part with)."""

    PATH = "path"
    QUERY = "query"
    BODY = "body"


@dataclass(frozen=True)
class Access:
    """One route's permission: the role it needs and the scope it is checked in."""

    scope: Scope
    role: Role | None = None
    tenant_from: TenantFrom | None = None
    #: What a caller of another tenant is told is missing (`<what> not found`, 404).
    what: str = "resource"

    def __post_init__(self) -> None:
        needs_role = self.scope in (Scope.PLATFORM, Scope.TENANT, Scope.USE_CASE)
        if needs_role != (self.role is not None):
            raise ValueError(f"a {self.scope.value} route {'needs' if needs_role else 'takes no'} role")
        if (self.scope is Scope.TENANT) != (self.tenant_from is not None):
            raise ValueError("tenant_from is for (and required by) tenant routes")


def public() -> Access:
    return Access(Scope.PUBLIC)


def any_token() -> Access:
    return Access(Scope.ANY_TOKEN)


def platform(role: Role) -> Access:
    return Access(Scope.PLATFORM, role)


def tenant(role: Role, *, tenant_from: TenantFrom = TenantFrom.PATH, what: str = "tenant") -> Access:
    return Access(Scope.TENANT, role, tenant_from, what)


def by_use_case(role: Role, *, what: str) -> Access:
    return Access(Scope.USE_CASE, role, what=what)


F = TypeVar("F", bound=Callable[..., Any])

_ACCESS = "__hub_access__"


def requires(access: Access) -> Callable[[F], F]:
    """Declares a route's permission on its handler (hub.api.admin.guard enforces it)."""

    def mark(handler: F) -> F:
        setattr(handler, _ACCESS, access)
        return handler

    return mark


def declared(handler: Callable[..., Any]) -> Access | None:
    """The permission `handler` declares; None when it declares none."""
    found = getattr(handler, _ACCESS, None)
    return found if isinstance(found, Access) else None
