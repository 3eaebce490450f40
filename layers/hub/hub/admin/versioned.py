"""What the admin API's tenant resources share (connections, subscriptions, integrations; and a
connection's pause): found only within the path's tenant, versioned writes, and one audit entry
with one log line per change.

- Another tenant's resource is exactly as missing as one that does not exist: 404
  `<kind> not found`, naming the id.
- `If-Match` with another version than the stored one is 412 naming `current_version`; so is a
  conditional write that lost to another (the store's `VersionConflict`), or 404 when the
  resource is gone meanwhile.
- A change is audited (`<kind>.<verb>`, the target `{"<kind>_id": id}`, the views before and
  after) and logged at INFO as `<kind> <verb>` with the tenant, the id and the actor's token.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from hub.errors import HubError, NotFound, PreconditionFailed
from hub.ports import VersionConflict

if TYPE_CHECKING:
    from hub.admin.access import Principal
    from hub.admin.audit import Audit

T = TypeVar("T")


class Versioned:
    """One kind of resource (`kind`: "connection", "subscription", "integration"): its errors,
    and its audit entries and log lines (on the use case's `logger`)."""

    def __init__(self, kind: str, audit: Audit, logger: logging.Logger) -> None:
        self.kind = kind
        #: The target's key in audit entries, log lines and error details.
        self.id_field = f"{kind}_id"
        self._audit = audit
        self._logger = logger

    def missing(self, resource_id: str) -> NotFound:
        return NotFound(f"{self.kind} not found", details={self.id_field: resource_id})

    def owned(self, stored: T | None, tenant_of: Callable[[T], str], tenant_id: str, resource_id: str) -> T:
        """`stored` when it is `tenant_id`'s (`tenant_of` reads its tenant); else `missing`."""
        if stored is None or tenant_of(stored) != tenant_id:
            raise self.missing(resource_id)
        return stored

    def check(self, resource_id: str, version: int, if_match: int | None) -> None:
        """412 when the caller's `If-Match` names another version than the stored `version`."""
        if if_match is not None and if_match != version:
            raise self.stale(resource_id, version)

    @contextmanager
    def writing(self, resource_id: str) -> Iterator[None]:
        """Around a write at the version read: the store's VersionConflict raised as `stale`."""
        try:
            yield
        except VersionConflict as lost:
            raise self.stale(resource_id, lost.current) from lost

    def stale(self, resource_id: str, current: int | None) -> HubError:
        """What a lost versioned write means: the stored version is `current` (412), or the
        resource is gone (None: 404)."""
        if current is None:
            return self.missing(resource_id)
        return PreconditionFailed(
            f"the {self.kind} changed since it was read: read it again", details={"current_version": current}
        )

    def record(
        self,
        principal: Principal,
        action: str,
        tenant_id: str,
        resource_id: str,
        at: datetime,
        *,
        before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
        **logged: Any,
    ) -> None:
        """The audit entry of `action` on the resource, and its log line (with `logged` beside
        the tenant, the id and the actor)."""
        self._audit.record(
            principal, tenant_id, action, {self.id_field: resource_id}, at, before=before, after=after
        )
        self._logger.info(
            action.replace(".", " "),
            extra={"tenant_id": tenant_id, self.id_field: resource_id, **logged, "actor": principal.token_id},
        )
