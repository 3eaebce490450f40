"""Erasure (issue 29): an LGPD / GDPR request to delete what the hub keeps of one message, or of
every message of a tenant carrying an external id or a business key - before their retention
would. Operators and admins; audited, with ids only.

Erasing a message deletes its payload (its fingerprint claim), its Idempotency-Key claim and
business-key item when they still name it, its place in a connection's held set, every item of
its partition (the status callbacks, the correlation pointer, a payload item of old) and, last,
the message item itself: a failure part-way leaves the message, so the same call again finishes
the job. The payload is content-addressed (the fingerprint covers the payload's hash): another
message of the same integration with the very same payload loses it too - right for personal
data; that message keeps its metadata and ends `payload_purged` if it still had to run.

A step of an erased message finds no message (its take fails: an orphan) and is dropped; a
delivery under way at that moment may still reach the destination, but its finish finds the
message gone and writes nothing back. A message past its retention that DynamoDB has not
deleted yet is erased like any other (it still holds its data).

The audit entry names the message ids, the actor and how they were found (`by`), never the
external id or business-key value, nor anything of the payload.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from hub.admin.access import Role
from hub.admin.audit import Audit
from hub.admin.bulk import MessageFinder
from hub.admin.search import SearchKind
from hub.domain.clock import utcnow
from hub.domain.message import MessageRecord
from hub.errors import NotFound

if TYPE_CHECKING:
    from hub.admin.access import Principal
    from hub.domain.tenancy import Tenant

logger = logging.getLogger(__name__)

#: The most messages one call erases; `more` says the caller should call again.
ERASE_BATCH = 100
#: The search pages one call reads at most (a page may hold rows of messages already gone).
MAX_SEARCH_PAGES = 5


class ErasedBy(StrEnum):
    """What names the messages of an erasure by value (the search's kinds of the same names)."""

    EXTERNAL_ID = "external_id"
    BUSINESS_KEY = "business_key"


class ErasureStore(Protocol):
    def message(self, message_id: str) -> MessageRecord | None:
        """The message as stored now (a consistent read), past its retention or not."""
        ...

    def erase(self, record: MessageRecord, now: datetime) -> None:
        """Deletes everything the hub keeps of the message (the module's docstring), the message
        item last. Idempotent: what is gone already is skipped."""
        ...


class Tenants(Protocol):
    def get_tenant(self, tenant_id: str) -> Tenant | None: ...


class Erasure:
    """The erasure use cases of the admin API."""

    def __init__(
        self,
        store: ErasureStore,
        finder: MessageFinder,
        tenants: Tenants,
        audit: Audit | None = None,
        *,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._store = store
        self._finder = finder
        self._tenants = tenants
        self._audit = audit or Audit(None)
        self._clock = clock

    def erase_message(self, message_id: str, actor: Principal) -> dict[str, Any]:
        """Erases one message: NotFound for a missing one or another tenant's (the same answer),
        Forbidden below the operator role. `{"erased": [message_id], "more": false}`."""
        record = self._store.message(message_id)
        if record is None or not actor.sees(record.tenant_id):
            raise NotFound("message not found", details={"message_id": message_id})
        actor.require(Role.OPERATOR, record.tenant_id, what="message")
        now = self._clock()
        self._store.erase(record, now)
        self._audit.record(
            actor,
            record.tenant_id,
            "message.erased",
            {"message_id": message_id},
            now,
            before=_facts(record),
            after={"erased": True},
        )
        logger.info("message erased", extra={"message_id": message_id, "actor": actor.token_id})
        return {"erased": [message_id], "more": False}

    def erase_by(self, tenant_id: str, by: ErasedBy, value: str, actor: Principal) -> dict[str, Any]:
        """Erases the tenant's messages the search finds by `value` as `by` says (newest
        received first, past their retention too), at most ERASE_BATCH: `{"erased": [ids],
        "more": bool}`; while `more`, the caller calls again. NotFound for a tenant that does not
        exist (or another tenant's, for a tenant's token). A business key finds the message
        holding it now (hub.admin.search): erasing it frees the key, so a call again finds none.
        One audit entry per call, even when nothing was found (the request was handled)."""
        actor.require(Role.OPERATOR, tenant_id, what="tenant")
        if self._tenants.get_tenant(tenant_id) is None:
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        now = self._clock()
        erased: list[str] = []
        cursor: str | None = None
        more = False
        for _ in range(MAX_SEARCH_PAGES):
            page = self._finder.search(
                tenant_id,
                value,
                SearchKind(by.value),
                limit=ERASE_BATCH - len(erased),
                cursor=cursor,
                include_expired=True,
            )
            for row in page.rows:
                record = self._store.message(str(row["message_id"]))
                if record is None or record.tenant_id != tenant_id:
                    continue  # erased meanwhile (the index lags its items), or not this tenant's
                self._store.erase(record, now)
                erased.append(record.message_id)
            cursor = page.next_cursor
            more = cursor is not None
            if not more or len(erased) >= ERASE_BATCH:
                break
        self._audit.record(
            actor,
            tenant_id,
            "messages.erased",
            {"tenant_id": tenant_id, "by": by.value},
            now,
            after={"message_ids": erased, "count": len(erased), "more": more},
        )
        logger.info(
            "messages erased",
            extra={"tenant_id": tenant_id, "by": by.value, "count": len(erased), "actor": actor.token_id},
        )
        return {"erased": erased, "more": more}


def _facts(record: MessageRecord) -> dict[str, Any]:
    """What the audit keeps of an erased message: ids and its state, nothing a partner sent."""
    return {
        "integration_id": record.integration_id,
        "message_type": record.message_type,
        "pipeline_status": record.pipeline_status.value,
        "execution_id": record.execution_id,
    }
