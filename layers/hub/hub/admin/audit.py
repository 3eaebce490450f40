"""The audit log (issue 11): every mutating admin call leaves an entry saying who (the token's id
and label), what (the action and its target), when, and a redacted before/after.

Entries are per tenant, listed newest first; what belongs to no tenant (a DLQ redrive) is
logged under the platform (`PLATFORM_SCOPE`). Before/after are the views the admin API shows,
already masked; `redacted` masks once more any field whose name says it is a secret, so a view
that forgets one never puts it in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from hub.errors import HubError, NotFound

if TYPE_CHECKING:
    from hub.admin.access import Principal
    from hub.ports import TenantStore

logger = logging.getLogger(__name__)

#: The audit partition of actions on no tenant.
PLATFORM_SCOPE = "platform"
MASK = "***"
_SECRET_WORDS = ("secret", "password", "token", "api_key", "private", "pkcs12", "pfx", "credential")


@dataclass(frozen=True)
class AuditEntry:
    #: The tenant whose log holds the entry, or PLATFORM_SCOPE.
    scope: str
    actor_token_id: str
    actor_label: str
    #: e.g. "integration.updated", "api_key.revoked", "message.reprocessed".
    action: str
    #: What was acted on, e.g. {"integration_id": "int_1"}.
    target: Mapping[str, str]
    at: datetime
    before: Mapping[str, Any] | None = None
    after: Mapping[str, Any] | None = None
    #: Set by the store (time-ordered); empty until stored.
    entry_id: str = field(default="")


@dataclass(frozen=True)
class AuditPage:
    """One page of a scope's log, newest first."""

    entries: list[AuditEntry]
    #: Opaque; None on the last page.
    next_cursor: str | None


class AuditTrail(Protocol):
    def record(self, entry: AuditEntry) -> None:
        """Stores `entry`; StorageUnavailable when it cannot (the caller's change already
        happened: see `Audit.record`)."""

    def list_entries(self, scope: str, limit: int, cursor: str | None) -> AuditPage:
        """The scope's entries, newest first. ValidationFailed for a cursor this listing did
        not give out (another scope's included)."""
        ...


def redacted(view: Any) -> Any:
    """`view` with every value under a secret-sounding key masked, at any depth."""
    if isinstance(view, Mapping):
        return {
            str(k): (MASK if _secret_key(str(k)) and v not in (None, "", [], {}) else redacted(v))
            for k, v in view.items()
        }
    if isinstance(view, list | tuple):
        return [redacted(v) for v in view]
    return view


def _secret_key(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS) and not lowered.endswith(("_id", "_prefix", "_at"))


def entry(
    principal: Principal,
    scope: str,
    action: str,
    target: Mapping[str, str],
    at: datetime,
    *,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
) -> AuditEntry:
    """An entry by `principal`, with before/after redacted."""
    return AuditEntry(
        scope=scope,
        actor_token_id=principal.token_id,
        actor_label=principal.label,
        action=action,
        target=dict(target),
        at=at,
        before=redacted(before) if before is not None else None,
        after=redacted(after) if after is not None else None,
    )


def audit_view(stored: AuditEntry) -> dict[str, Any]:
    """An entry as the admin API lists it."""
    return {
        "entry_id": stored.entry_id,
        "at": stored.at.isoformat().replace("+00:00", "Z"),
        "actor": {"token_id": stored.actor_token_id, "label": stored.actor_label},
        "action": stored.action,
        "target": dict(stored.target),
        "before": stored.before,
        "after": stored.after,
    }


class Audit:
    """What a use case holds to write the log.

    The change an entry describes has already happened when it is written (a second store, no
    transaction across them), so a failed write is logged as an error and never raised: a 5xx
    would tell the caller to resend a change that was made (a second API key, a second
    reprocess). None (tests, tools): nothing is recorded.
    """

    def __init__(self, trail: AuditTrail | None) -> None:
        self._trail = trail

    def record(
        self,
        principal: Principal,
        scope: str,
        action: str,
        target: Mapping[str, str],
        at: datetime,
        *,
        before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
    ) -> None:
        if self._trail is None:
            return
        try:
            self._trail.record(entry(principal, scope, action, target, at, before=before, after=after))
        except HubError as failed:
            logger.error(
                "audit entry not stored",
                extra={"action": action, "scope": scope, "target": dict(target), "code": failed.code},
            )


class AuditLog:
    """Reading the log (the admin API's audit routes)."""

    def __init__(self, trail: AuditTrail, tenants: TenantStore) -> None:
        self._trail = trail
        self._tenants = tenants

    def tenant_log(self, tenant_id: str, limit: int, cursor: str | None) -> dict[str, Any]:
        """A tenant's entries, newest first; NotFound for a tenant that does not exist."""
        if self._tenants.get(tenant_id) is None:
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        return {"tenant_id": tenant_id, **self._page(tenant_id, limit, cursor)}

    def platform_log(self, limit: int, cursor: str | None) -> dict[str, Any]:
        """Entries of actions on no tenant (DLQ redrives, platform tokens), newest first."""
        return self._page(PLATFORM_SCOPE, limit, cursor)

    def _page(self, scope: str, limit: int, cursor: str | None) -> dict[str, Any]:
        page = self._trail.list_entries(scope, limit, cursor)
        return {"items": [audit_view(e) for e in page.entries], "next_cursor": page.next_cursor}
