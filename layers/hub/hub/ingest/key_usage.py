"""The day an API key was last used, recorded without a write per request.

DynamoDB writes are the hub's main cost, so ingest does not write on every accepted request: a
warm instance records a key's use at most once per UTC day (it remembers the days it recorded),
and not at all when the key it read already says today. The write is conditional (only when the
stored day differs), so instances racing on a day cost one successful write, and best effort: a
failure is logged (by key id, never the key) and not retried that day; the request goes on.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from hub.domain.tenancy import ApiKey
from hub.ports import KeyUseStore

logger = logging.getLogger(__name__)


class KeyUsage:
    def __init__(self, store: KeyUseStore, max_entries: int = 10_000) -> None:
        self._store = store
        self._max = max_entries
        #: key hash -> the last day this instance recorded (or tried to).
        self._recorded: dict[str, str] = {}

    def seen(self, key: ApiKey, now: datetime) -> None:
        """Records that `key` was accepted at `now`. Never raises."""
        day = now.astimezone(UTC).date().isoformat()
        if key.last_used_day == day or self._recorded.get(key.key_hash) == day:
            return
        if len(self._recorded) >= self._max:
            self._recorded.clear()
        # Remembered before the write: a failing write is not tried again on every request.
        self._recorded[key.key_hash] = day
        try:
            self._store.record_use(key.key_hash, day)
        except Exception:  # best effort: recording use must never fail an ingest
            logger.warning("api key use not recorded", extra={"key_id": key.key_id}, exc_info=True)
