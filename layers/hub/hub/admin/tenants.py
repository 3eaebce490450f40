"""Tenants, managed by operators (issue 11): create, list, read, update (name, default mode; the
rate limit and retention: platform admins), disable and enable.

A disabled tenant's API keys and inbound webhooks answer 401 at ingest once its configuration
cache reloads the tenant (HUB_CONFIG_CACHE_SECONDS); its messages are kept, and the admin API
still reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any

from hub.admin.audit import PLATFORM_SCOPE, Audit
from hub.domain.clock import utcnow
from hub.domain.ids import new_id
from hub.domain.rate_limit import Rate
from hub.domain.retention import Retention, check_overrides
from hub.domain.tenancy import IntegrationMode, Tenant
from hub.errors import Conflict, NotFound, ValidationFailed
from hub.ports import TenantStore

if TYPE_CHECKING:
    from hub.admin.access import Principal

logger = logging.getLogger(__name__)


#: The platform's defaults where none are given (the template's PayloadRetentionDays and
#: MessageRetentionDays defaults; wiring passes the deployed ones).
DEFAULT_RETENTION = Retention(payload_days=7, message_days=30)


class TenantExists(Conflict):
    """A tenant with this id already exists; nothing was changed."""

    code = "tenant_exists"


def tenant_view(tenant: Tenant, defaults: Retention = DEFAULT_RETENTION) -> dict[str, Any]:
    """A tenant as the admin API shows it: its own settings (null: the platform's default) and,
    as `retention`, what applies to its messages now (`defaults` where it has none)."""
    effective = tenant.retention(defaults)
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
        # Issue 29: days; null: the platform's default.
        "payload_retention_days": tenant.payload_retention_days,
        "message_retention_days": tenant.message_retention_days,
        "retention": {"payload_days": effective.payload_days, "message_days": effective.message_days},
    }


#: The `problem` of a payload retention longer than the tenant's message retention.
EXCEEDS_MESSAGE_RETENTION = "exceeds_message_retention"


class Keep(Enum):
    """An update leaves this field as it is (None would clear it)."""

    KEEP = "keep"


@dataclass(frozen=True)
class RetentionChange:
    """A tenant's retention as an update gives it: days, None for the platform's default;
    `Keep.KEEP` leaves a field as it is."""

    payload_days: int | Keep | None = Keep.KEEP
    message_days: int | Keep | None = Keep.KEEP

    def changes(self) -> dict[str, int | None]:
        """The model fields an update sets."""
        given = {"payload_retention_days": self.payload_days, "message_retention_days": self.message_days}
        return {name: days for name, days in given.items() if not isinstance(days, Keep)}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


class TenantAdmin:
    """The tenant use cases of the admin API."""

    def __init__(
        self,
        store: TenantStore,
        clock: Callable[[], datetime] = utcnow,
        audit: Audit | None = None,
        *,
        retention: Retention = DEFAULT_RETENTION,
    ) -> None:
        self._store = store
        self._clock = clock
        self._audit = audit or Audit(None)
        self._defaults = retention

    def _view(self, tenant: Tenant) -> dict[str, Any]:
        return tenant_view(tenant, self._defaults)

    def _check_retention(self, payload_days: int | None, message_days: int | None) -> None:
        """ValidationFailed when the tenant's payload would outlive its messages."""
        problems = check_overrides(payload_days, message_days, self._defaults)
        if problems:
            raise ValidationFailed(
                "retention failed validation",
                details=[
                    {"field": "payload_retention_days", "problem": EXCEEDS_MESSAGE_RETENTION, "message": text}
                    for text in problems
                ],
            )

    def create(
        self,
        tenant_id: str | None,
        name: str,
        default_mode: IntegrationMode | None,
        actor: Principal,
        rate_limit: Rate | None = None,
        *,
        payload_retention_days: int | None = None,
        message_retention_days: int | None = None,
    ) -> dict[str, Any]:
        """A new active tenant; its id is generated (`tnt_` + 26 characters) unless given.
        TenantExists when the id is taken; ValidationFailed when its payload retention exceeds
        its message retention (with the platform's default for what it does not set)."""
        if tenant_id == PLATFORM_SCOPE:  # the audit log's partition of actions on no tenant
            raise ValidationFailed(
                "this tenant id is reserved",
                details=[{"field": "tenant_id", "problem": "reserved", "message": "reserved id"}],
            )
        self._check_retention(payload_retention_days, message_retention_days)
        now = self._clock()
        tenant = Tenant(
            tenant_id=tenant_id or new_id("tnt"),
            name=name,
            default_mode=default_mode or IntegrationMode.OBSERVABILITY,
            rate_limit=rate_limit,
            payload_retention_days=payload_retention_days,
            message_retention_days=message_retention_days,
            created_at=now,
            updated_at=now,
        )
        try:
            self._store.create(tenant)
        except Conflict as taken:
            raise TenantExists(
                "a tenant with this id exists", details={"tenant_id": tenant.tenant_id}
            ) from taken
        view = self._view(tenant)
        self._audit.record(
            actor, tenant.tenant_id, "tenant.created", _target(tenant.tenant_id), now, after=view
        )
        logger.info("tenant created", extra={"tenant_id": tenant.tenant_id, "actor": actor.token_id})
        return view

    def list_tenants(self, limit: int, cursor: str | None) -> dict[str, Any]:
        page = self._store.list_tenants(limit, cursor)
        return {"items": [self._view(t) for t in page.tenants], "next_cursor": page.next_cursor}

    def get(self, tenant_id: str) -> dict[str, Any]:
        tenant = self._store.get(tenant_id)
        if tenant is None:
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        return self._view(tenant)

    def update(
        self,
        tenant_id: str,
        name: str | None,
        default_mode: IntegrationMode | None,
        actor: Principal,
        *,
        rate_limit: Rate | Keep | None = Keep.KEEP,
        retention: RetentionChange | None = None,
    ) -> dict[str, Any]:
        """Changes what is given (at least one; the handler checks). `rate_limit` None goes
        back to the stack's default, and so does a retention given as None; only a platform
        admin may change either (the handler checks). ValidationFailed when the tenant's payload
        retention would then exceed its message retention. A new retention applies to messages
        received from then on (a stored message keeps the TTLs it was written with)."""
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
        if retention is not None:
            changes.update(retention.changes())
            self._check_retention(
                changes.get("payload_retention_days", before.payload_retention_days),
                changes.get("message_retention_days", before.message_retention_days),
            )
        now = self._clock()
        tenant = self._store.update(tenant_id, changes, now)
        view = self._view(tenant)
        self._audit.record(
            actor,
            tenant_id,
            "tenant.updated",
            _target(tenant_id),
            now,
            before=self._view(before),
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
            return self._view(current)
        now = self._clock()
        changes = {"active": active, "disabled_at": None if active else now}
        tenant = self._store.update(tenant_id, changes, now)
        view = self._view(tenant)
        action = "tenant.enabled" if active else "tenant.disabled"
        self._audit.record(
            actor, tenant_id, action, _target(tenant_id), now, before=self._view(current), after=view
        )
        logger.info(action.replace(".", " "), extra={"tenant_id": tenant_id, "actor": actor.token_id})
        return view


def _target(tenant_id: str) -> dict[str, str]:
    return {"tenant_id": tenant_id}
