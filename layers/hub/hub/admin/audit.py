"""The audit log (issue 11): every mutating admin call leaves an entry saying who (the token's id
and label), what (the action and its target), when, and a redacted before/after.

Entries are per tenant, listed newest first; what belongs to no tenant (a DLQ redrive) is
logged under the platform (`PLATFORM_SCOPE`). Before/after are the views the admin API shows,
already masked; `redacted` masks once more any field whose name says it is a secret, so a view
that forgets one never puts it in the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hub.admin.access import Principal

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


class AuditTrail(Protocol):
    def record(self, entry: AuditEntry) -> None:
        """Stores `entry`; StorageUnavailable when it cannot (the caller's change already
        happened: see `Audit.record`)."""


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
