"""Tenants, managed by operators (issue 11): create, list, read, update (name, default mode),
disable and enable.

A disabled tenant's API keys and inbound webhooks answer 401 at ingest once its configuration
cache reloads the tenant (HUB_CONFIG_CACHE_SECONDS); its messages are kept, and the admin API
still reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any

from hub.admin.audit import PLATFORM_SCOPE, Audit
from hub.domain.clock import utcnow
from hub.domain.ids import new_id
from hub.domain.rate_limit import Rate
from hub.domain.tenancy import IntegrationMode, Tenant
from hub.errors import Conflict, NotFound, ValidationFailed
from hub.ports import TenantStore

if TYPE_CHECKING:
    from hub.admin.access import Principal

logger = logging.getLogger(__name__)


class TenantExists(Conflict):
    """A tenant with this id already exists; nothing was changed."""

    code = "tenant_exists"


def tenant_view(tenant: Tenant) -> dict[str, Any]:
    """A tenant as the admin API shows it."""
    return {
        "tenant_id": tenant.tenant_id,
        "name": tenant.name,
        "default_mode": tenant.default_mode.value,
        "state": tenant.state.value,
        "created_at": _iso(tenant.created_at),
        "updated_at": _iso(tenant.updated_at),
        "disabled_at": _iso(tenant.disabled_at),
        # null: the stack's default limit (issue 14)
        "rate_limit": tenant.rate_limit.model_dump() if tenant.rate_limit is not None else None,
    }


class Keep(Enum):
    """An update leaves this field as it is (None would clear it)."""

    KEEP = "keep"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


class TenantAdmin:
    """The tenant use cases of the admin API."""

    def __init__(
        self, store: TenantStore, clock: Callable[[], datetime] = utcnow, audit: Audit | None = None
    ) -> None:
        self._store = store
        self._clock = clock
        self._audit = audit or Audit(None)

    def create(
        self,
        tenant_id: str | None,
        name: str,
        default_mode: IntegrationMode | None,
        actor: Principal,
        rate_limit: Rate | None = None,
    ) -> dict[str, Any]:
        """A new active tenant; its id is generated (`tnt_` + 26 characters) unless given.
        TenantExists when the id is taken."""
        if tenant_id == PLATFORM_SCOPE:  # the audit log's partition of actions on no tenant
            raise ValidationFailed(
                "this tenant id is reserved",
                details=[{"field": "tenant_id", "problem": "reserved", "message": "reserved id"}],
            )
        now = self._clock()
        tenant = Tenant(
            tenant_id=tenant_id or new_id("tnt"),
            name=name,
            default_mode=default_mode or IntegrationMode.OBSERVABILITY,
            rate_limit=rate_limit,
            created_at=now,
            updated_at=now,
        )
        try:
            self._store.create(tenant)
        except Conflict as taken:
            raise TenantExists(
                "a tenant with this id exists", details={"tenant_id": tenant.tenant_id}
            ) from taken
        view = tenant_view(tenant)
        self._audit.record(
            actor, tenant.tenant_id, "tenant.created", _target(tenant.tenant_id), now, after=view
        )
        logger.info("tenant created", extra={"tenant_id": tenant.tenant_id, "actor": actor.token_id})
        return view

    def list_tenants(self, limit: int, cursor: str | None) -> dict[str, Any]:
        page = self._store.list_tenants(limit, cursor)
        return {"items": [tenant_view(t) for t in page.tenants], "next_cursor": page.next_cursor}

    def get(self, tenant_id: str) -> dict[str, Any]:
        tenant = self._store.get(tenant_id)
        if tenant is None:
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        return tenant_view(tenant)

    def update(
        self,
        tenant_id: str,
        name: str | None,
        default_mode: IntegrationMode | None,
        actor: Principal,
        rate_limit: Rate | Keep | None = Keep.KEEP,
    ) -> dict[str, Any]:
        """Changes what is given (at least one; the handler checks). `rate_limit` None goes
        back to the stack's default; only a platform admin may change it (the handler checks)."""
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = name
        if default_mode is not None:
            changes["default_mode"] = default_mode.value
        if not isinstance(rate_limit, Keep):
            changes["rate_limit"] = rate_limit
        before = self._store.get(tenant_id)
        if before is None:
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        now = self._clock()
        tenant = self._store.update(tenant_id, changes, now)
        view = tenant_view(tenant)
        self._audit.record(
            actor,
            tenant_id,
            "tenant.updated",
            _target(tenant_id),
            now,
            before=tenant_view(before),
            after=view,
        )
        logger.info(
            "tenant updated",
            extra={"tenant_id": tenant_id, "fields": sorted(changes), "actor": actor.token_id},
        )
        return view

    def disable(self, tenant_id: str, actor: Principal) -> dict[str, Any]:
        """Idempotent: disabling a disabled tenant keeps its first `disabled_at`."""
        return self._set_active(tenant_id, False, actor)

    def enable(self, tenant_id: str, actor: Principal) -> dict[str, Any]:
        """Idempotent: enabling an active tenant changes nothing."""
        return self._set_active(tenant_id, True, actor)

    def _set_active(self, tenant_id: str, active: bool, actor: Principal) -> dict[str, Any]:
        current = self._store.get(tenant_id)
        if current is None:
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        if current.active is active:
            return tenant_view(current)
        now = self._clock()
        changes = {"active": active, "disabled_at": None if active else now}
        tenant = self._store.update(tenant_id, changes, now)
        view = tenant_view(tenant)
        action = "tenant.enabled" if active else "tenant.disabled"
        self._audit.record(
            actor, tenant_id, action, _target(tenant_id), now, before=tenant_view(current), after=view
        )
        logger.info(action.replace(".", " "), extra={"tenant_id": tenant_id, "actor": actor.token_id})
        return view


def _target(tenant_id: str) -> dict[str, str]:
    return {"tenant_id": tenant_id}
