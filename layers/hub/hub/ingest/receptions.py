"""When an integration last received a message, recorded without a write per message: what the
admin API reads to refuse deleting an integration whose messages may still be in flight.

Like API key use (hub.ingest.key_usage), a warm instance records an integration's reception at
most once per `MARK_EVERY` (it remembers when it last did), so the cost is per integration and
instance and window, never per message. The stored time is therefore at most `MARK_EVERY` older
than the last reception; the admin API allows for that (hub.admin.integrations). Best effort: a
failed write is logged and not retried within the window; the request goes on.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Protocol

logger = logging.getLogger(__name__)

#: How often one instance records that an integration received messages.
MARK_EVERY = timedelta(minutes=5)


class ReceptionStore(Protocol):
    def mark_received(self, tenant_id: str, integration_id: str, at: datetime) -> None:
        """Sets the integration's `last_received_at` to `at` (never creates an item)."""
        ...


class Receptions:
    def __init__(
        self, store: ReceptionStore, every: timedelta = MARK_EVERY, max_entries: int = 10_000
    ) -> None:
        self._store = store
        self._every = every
        self._max = max_entries
        #: `<tenant>#<integration id>` -> when this instance last recorded (or tried to).
        self._marked: dict[str, datetime] = {}

    def seen(self, tenant_id: str, integration_id: str, now: datetime) -> None:
        """Records that the tenant's `integration_id` received a message at `now`. Never raises."""
        marked = f"{tenant_id}#{integration_id}"
        last = self._marked.get(marked)
        if last is not None and now - last < self._every:
            return
        if len(self._marked) >= self._max:
            self._marked.clear()
        # Remembered before the write: a failing write is not tried again on every message.
        self._marked[marked] = now
        try:
            self._store.mark_received(tenant_id, integration_id, now)
        except Exception:  # best effort: recording must never fail an ingest
            logger.warning(
                "integration reception not recorded", extra={"integration_id": integration_id}, exc_info=True
            )
