"""The connection jobs the pipeline worker runs beside its steps (issue 12).

- release: one page of the connection's held set (`release_page_size`: five seconds' worth at
  the release rate); each still-held message gets its deliver step, SQS-delayed so that at most
  `rate_per_second` become visible per second (`release_plan`); its pointer is deleted; the next
  page is a job delayed until this page's last second. It stops when the connection holds again
  (paused, breaker open) or a newer release generation started (a second resume).
- probe: the open breaker's cool-down passed: one held message is sent; its delivery claims the
  probe (hub.delivery.gate). With nothing held, the next delivery to arrive probes.

Exactly once: a released step expects the sequence the hold left (`held_step`); a second copy
(the job redelivered, a release racing a self-release) finds it passed and is dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from hub.delivery.breaker import (
    RELEASE_DONE,
    Circuit,
    ConnectionState,
    PageClaim,
    release_page_key,
    release_page_size,
    release_plan,
)
from hub.delivery.gate import ConnectionJob, JobKind, JobQueue, first_valid, held_step, still_held
from hub.domain.clock import utcnow
from hub.domain.message import MessageRecord

logger = logging.getLogger(__name__)

#: Pointers read to find the probe's message.
_PROBE_LOOKAHEAD = 10
_MAX_SQS_DELAY = 900
#: How long a release job holds its page: longer than a page takes. A copy of the job that finds
#: the page held comes back when this runs out, so a run that died with the page cannot strand it
#: (whatever the pipeline queue's visibility timeout).
RELEASE_PAGE_LEASE = timedelta(seconds=120)


class HeldPointerLike(Protocol):
    @property
    def message_id(self) -> str: ...
    @property
    def seq(self) -> int: ...


class HeldSet(Protocol):
    def get(self, tenant_id: str, connection_id: str) -> ConnectionState: ...
    def held_page(
        self, tenant_id: str, connection_id: str, limit: int, cursor: str | None
    ) -> tuple[Sequence[HeldPointerLike], str | None]: ...
    def held_messages(self, message_ids: Sequence[str]) -> dict[str, MessageRecord]: ...
    def unhold(self, tenant_id: str, connection_id: str, message_id: str, seq: int | None = None) -> None: ...
    def claim_release_page(
        self,
        tenant_id: str,
        connection_id: str,
        generation: int,
        page: str,
        *,
        now: datetime,
        lease: timedelta,
    ) -> PageClaim: ...
    def advance_release(self, tenant_id: str, connection_id: str, page: str, following: str) -> None: ...


class JobRunner(Protocol):
    def run(self, job: ConnectionJob) -> str: ...


class Releaser:
    def __init__(
        self,
        held: HeldSet,
        queue: JobQueue,
        *,
        rate_per_second: int = 10,
        clock: Callable[[], datetime] = utcnow,
        drainer: JobRunner | None = None,
    ) -> None:
        self._held = held
        self._queue = queue
        self._rate = max(1, rate_per_second)
        self._clock = clock
        self._drainer = drainer

    def run(self, job: ConnectionJob) -> str:
        """Runs `job` once; what it did (for the log). Raises on an outage (SQS redelivers it;
        a page released twice delivers each message once)."""
        if job.job is JobKind.DRAIN:
            # Messages held for the connection's limits (issue 30, hub.delivery.drain).
            return self._drainer.run(job) if self._drainer is not None else "no_drainer"
        state = self._held.get(job.tenant_id, job.connection_id)
        ids = {"connection_id": job.connection_id, "job": job.job.value, "generation": job.generation}
        if job.job is JobKind.RELEASE:
            if state.holding is not None or state.release_generation != job.generation:
                logger.info("release stopped", extra={**ids, "held_reason": state.holding})
                return "stopped"
            page = release_page_key(job.generation, job.cursor)
            now = self._clock()
            claim = self._held.claim_release_page(
                job.tenant_id, job.connection_id, job.generation, page, now=now, lease=RELEASE_PAGE_LEASE
            )
            if claim.busy_until is not None:
                # Held by another run: if that run died with it, nobody else would release the
                # page, so this copy comes back once the claim has run out (a done page drops it).
                self._again_at(job, claim.busy_until, now)
                logger.info("release page busy: job delayed until its claim ends", extra=ids)
                return "busy"
            if not claim.claimed:
                logger.info("release page done: duplicate job dropped", extra=ids)
                return "duplicate"
            released = self._release_page(job, page)
            logger.info("held messages released", extra={**ids, "released": released})
            return "released"
        return self._probe(job, state, ids)

    def _release_page(self, job: ConnectionJob, page: str) -> int:
        cid = job.connection_id
        pointers, cursor = self._held.held_page(job.tenant_id, cid, release_page_size(self._rate), job.cursor)
        records = self._held.held_messages([p.message_id for p in pointers])
        ready = [
            record
            for p in pointers
            if still_held(record := records.get(p.message_id), cid, p.seq) and record is not None
        ]
        plan = release_plan(len(ready), self._rate)
        for record, delay in zip(ready, plan.delays, strict=True):
            self._queue.publish(held_step(record), delay_seconds=delay)
        for pointer in pointers:
            self._held.unhold(job.tenant_id, cid, pointer.message_id, pointer.seq)
        if cursor is not None:
            later = job.model_copy(update={"cursor": cursor})
            self._queue.publish_job(later, delay_seconds=min(plan.next_page_delay, _MAX_SQS_DELAY))
        # After the next page's job is out: a crash before this leaves the page claimed until its
        # lease ends, and the redelivered job releases it again (each message still once).
        following = release_page_key(job.generation, cursor) if cursor else f"{job.generation}:{RELEASE_DONE}"
        self._held.advance_release(job.tenant_id, job.connection_id, page, following)
        return len(ready)

    def _again_at(self, job: ConnectionJob, at: datetime, now: datetime) -> None:
        """Sends `job` again, to run just after `at` (SQS delays by at most 15 minutes)."""
        wait = int((at - now).total_seconds()) + 1
        self._queue.publish_job(job, delay_seconds=min(max(wait, 1), _MAX_SQS_DELAY))

    def _probe(self, job: ConnectionJob, state: ConnectionState, ids: Mapping[str, object]) -> str:
        if state.circuit is not Circuit.OPEN or state.opened_count != job.generation:
            return "stale"
        now = self._clock()
        if state.probe_at is not None and state.probe_at > now:
            self._again_at(job, state.probe_at, now)
            return "early"
        pointers, _ = self._held.held_page(job.tenant_id, job.connection_id, _PROBE_LOOKAHEAD, None)
        records = self._held.held_messages([p.message_id for p in pointers])
        record = first_valid([(p.message_id, p.seq) for p in pointers], records, job.connection_id)
        if record is None:
            logger.info("nothing held to probe with: the next delivery probes", extra=ids)
            return "nothing_held"
        self._queue.publish(held_step(record))
        logger.info("probe sent", extra={**ids, "message_id": record.message_id})
        return "probe_sent"
