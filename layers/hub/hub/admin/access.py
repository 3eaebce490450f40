"""Who may do what on the admin API (issue 11): admin tokens carry a role and a scope.

Roles are ordered: a `viewer` reads; an `operator` also reprocesses, cancels, redrives and
pauses; an `admin` also changes configuration, keys, tokens and certificates. A token is scoped
to one tenant or to the platform (every tenant, plus what belongs to no tenant: the tenant list,
the dead-letter queues).

Another tenant's resource answers 404, exactly like a resource that does not exist, so a token
learns nothing about other tenants; a role too low for the action answers 403 `forbidden`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

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


#: The bootstrap token's principal: a platform admin, for the first login (it creates the real
#: tokens). Its hash is deployed with the stack.
BOOTSTRAP = Principal(
    token_id="bootstrap-admin",  # noqa: S106 (an id, not a secret)
    label="bootstrap admin token",
    role=Role.ADMIN,
    tenant_id=None,
)
