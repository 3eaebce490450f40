"""Releasing messages held for a connection's limits (issue 30), oldest first, as capacity frees.

A delivery over its connection's limits is held like a paused one (`retry_pending`,
`held_reason` `rate_limited` / `concurrency_limited`, a pointer in the connection's held set,
which sorts by message id: by receipt), then makes sure a **drain** runs: one per connection,
a lease on the connection's limit item (hub.adapters.dynamo.connection_limits). While it runs,
new deliveries to the connection are held behind the waiting ones (arrival order).

Each run of the drain job reads the limit item, releases as many of the oldest held messages as
the connection can take now and over the next second (`capacity`; a released delivery that
finds the rate a few hundred ms short waits for it inline, hub.delivery.gate), and comes back a
second later while any are left. With none left it gives its lease back, then looks once more:
a hold that came in between either saw the lease (and its pointer is seen now) or took a lease
of its own. A paused connection or an open breaker stops the drain: resume or close releases
the whole held set as before. A run that dies leaves the lease to run out (`DRAIN_LEASE_MS`);
the next hold starts a new drain.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Protocol

from hub.delivery.breaker import ConnectionState
from hub.delivery.gate import (
    DRAIN_LEASE_MS,
    KICK,
    ConnectionJob,
    ConnectionLimits,
    JobQueue,
    drain_ids,
    drain_job,
    held_step,
    seconds_of,
    start_drain,
    still_held,
)
from hub.delivery.limits import LimitState, capacity
from hub.delivery.release import HeldSet
from hub.domain.delivery_limits import DeliveryLimits
from hub.domain.ids import new_id

logger = logging.getLogger(__name__)

#: A drain waits at most this long between runs (a slot freed while messages wait hands off at
#: once, in the worker that freed it; a full connection is looked at again within a second, for
#: slots whose deliveries began before the drain and end without a write).
MAX_DRAIN_WAIT_SECONDS = 5
#: Messages one run releases at most (a connection without limits any more: all of them, a page
#: a second).
MAX_RELEASE_PER_RUN = 100


class LimitsSource(Protocol):
    def limits_of(self, tenant_id: str, connection_id: str) -> DeliveryLimits | None:
        """The connection's declared limits as stored now (None: none, or no such connection)."""
        ...


class Drainer:
    def __init__(
        self,
        held: HeldSet,
        leases: ConnectionLimits,
        source: LimitsSource,
        queue: JobQueue,
        *,
        clock_ms: Callable[[], int],
    ) -> None:
        self._held = held
        self._leases = leases
        self._source = source
        self._queue = queue
        self._clock_ms = clock_ms

    def run(self, job: ConnectionJob) -> str:
        tenant, connection = job.tenant_id, job.connection_id
        run, which = drain_ids(job)
        ids = {"connection_id": connection, "job": job.job.value}
        lease = self._leases.get(tenant, connection)
        now = self._clock_ms()
        if lease.drain_run != run or not lease.draining(now) or which not in {KICK, lease.drain_next}:
            # The drain ended (or died: the next hold starts another), or this job is a copy, or
            # one a crash-retry replaced.
            return "superseded"
        state: ConnectionState = self._held.get(tenant, connection)
        if state.holding is not None:
            # Paused or breaker open: resume / close releases the whole held set.
            self._leases.end_drain(tenant, connection, run=run)
            logger.info("drain stopped", extra={**ids, "held_reason": state.holding.value})
            return "stopped"
        room, wait = self._room(tenant, connection, lease, now)
        if which == KICK:
            # A freed slot: release into it now; the chain goes on as it was.
            if room > 0:
                self._release(tenant, connection, room)
            return "kicked"
        # The next job goes out before this one is marked run: a run that dies after this point
        # is continued by it; one that dies before is run again by SQS (and replaces it).
        following = new_id("dj")
        self._queue.publish_job(
            drain_job(tenant, connection, run, following),
            delay_seconds=min(MAX_DRAIN_WAIT_SECONDS, max(1, seconds_of(wait))),
        )
        if not self._leases.run_drain(
            tenant, connection, run=run, job=which, following=following, now_ms=now, lease_ms=DRAIN_LEASE_MS
        ):
            return "superseded"
        released = self._release(tenant, connection, room) if room > 0 else 0
        pointers, _ = self._held.held_page(tenant, connection, 1, None)
        if pointers:
            logger.info("held messages released", extra={**ids, "released": released})
            return "released"
        self._leases.end_drain(tenant, connection, run=run)
        late, _ = self._held.held_page(tenant, connection, 1, None)
        if late:
            start_drain(self._leases, self._queue, tenant, connection, now_ms=self._clock_ms(), wait_ms=0)
        logger.info("drain done", extra={**ids, "released": released})
        return "done"

    def _room(self, tenant: str, connection: str, state: LimitState, now: int) -> tuple[int, int]:
        """How many to release now, and the ms until the next run, from the limit item `state`
        as this run read it."""
        limits = self._source.limits_of(tenant, connection)
        if limits is None or not limits.limited:
            return MAX_RELEASE_PER_RUN, 1000  # the limits were removed: all of them, a page a second
        if limits.max_concurrency is not None:
            # Slots are not given back when no one waits: whose holders are over (one read)?
            state = self._leases.settled(state, now)
        room, wait = capacity(limits, state, now)
        if limits.rate_per_second is not None:
            # And the next second's: a released delivery a few hundred ms early waits inline.
            room += math.floor(limits.rate_per_second)
            if limits.max_concurrency is not None:
                room = min(room, limits.max_concurrency - state.in_flight(now))
        return max(0, min(room, MAX_RELEASE_PER_RUN)), wait

    def _release(self, tenant: str, connection: str, room: int) -> int:
        pointers, _ = self._held.held_page(tenant, connection, room, None)
        records = self._held.held_messages([p.message_id for p in pointers])
        released = 0
        for pointer in pointers:
            record = records.get(pointer.message_id)
            if record is not None and still_held(record, connection, pointer.seq):
                self._queue.publish(held_step(record))
                released += 1
            self._held.unhold(tenant, connection, pointer.message_id, pointer.seq)
        return released
