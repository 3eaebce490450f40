"""SQS fair queues on moto's standard queues (issue 30).

On AWS a standard queue is a fair queue for the messages that carry a ``MessageGroupId``: the
group id names the message's tenant (a message without one is a tenant of its own). moto keeps
the group id and returns messages in its own order. Here a ReceiveMessage of a standard queue
orders the visible messages as the AWS documentation ("How Amazon SQS fair queues work", read
2026-12-05; ``docs/decisions/tenant-fairness-sqs-fair-queues.md``) describes:

- a tenant is **noisy** while either holds: it has more than ``CONCURRENCY_SHARE`` (10 %) of the
  queue's in-flight messages and at least ``CONCURRENCY_MIN_IN_FLIGHT`` (30) of its own in
  flight; or it took more than ``PROCESSING_SHARE`` (10 %) of the consumers' processing time of
  the last ``PROCESSING_WINDOW_SECONDS`` (a message's processing time runs from its receive to
  its deletion or its return to the queue; one still in flight counts its time so far);
- it is quiet again once its backlog is drained (none of its messages waits), once it sent
  nothing for ``QUIET_AFTER_SECONDS`` (5 minutes), or once both shares fell back (the processing
  share looks back over its window, so that takes up to a minute);
- a receive returns quiet tenants' messages first, in the queue's order; noisy tenants'
  messages after them, the tenant with the fewest messages in flight first. Nothing is dropped,
  delayed or throttled: a noisy tenant's messages still come when no quiet one waits.

AWS calls its thresholds approximate (a distributed system); here they are exact, and the
processing window (AWS: "recent") is this module's choice. FIFO queues are left as moto has them.
``enabled`` switches the ordering off (moto's own order), for the benchmark's comparison.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

#: More than this share of the queue's in-flight messages ...
CONCURRENCY_SHARE = 0.10
#: ... with at least this many of the tenant's own in flight: noisy.
CONCURRENCY_MIN_IN_FLIGHT = 30
#: More than this share of the consumers' recent processing time: noisy.
PROCESSING_SHARE = 0.10
#: What "recent" processing time covers.
PROCESSING_WINDOW_SECONDS = 60.0
#: A noisy tenant that sent nothing for this long is quiet again.
QUIET_AFTER_SECONDS = 300.0

#: False: receives return moto's own order (fairness off, for the benchmark's comparison).
enabled = True


class QueuedMessage(Protocol):
    """What the ordering reads of a moto message."""

    id: str
    group_id: str | None


def tenant_of(message: QueuedMessage) -> str:
    """The message's tenant: its group id; a message without one is a tenant of its own."""
    return message.group_id if message.group_id else f"\x00{message.id}"


@dataclass
class FairShare:
    """One queue's view of its tenants: what each has in flight, the processing time each
    took recently, which are noisy. Fed by the queue's sends, receives and completions; asked
    for the order of a receive. Thread-safe (moto serves requests on several threads)."""

    clock: Callable[[], float] = time.monotonic
    #: message id -> (tenant, when it was received)
    _in_flight: dict[str, tuple[str, float]] = field(default_factory=dict)
    #: (ended at, tenant, seconds of processing), oldest first
    _done: deque[tuple[float, str, float]] = field(default_factory=deque)
    _last_send: dict[str, float] = field(default_factory=dict)
    _noisy: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def sent(self, tenant: str) -> None:
        with self._lock:
            self._last_send[tenant] = self.clock()

    def received(self, messages: Iterable[QueuedMessage]) -> None:
        """These messages were just handed to a consumer (a new receive of one still counted
        as in flight ends the earlier one: its visibility ran out)."""
        now = self.clock()
        with self._lock:
            for message in messages:
                self._end(message.id, now)
                self._in_flight[message.id] = (tenant_of(message), now)

    def ended(self, message_id: str) -> None:
        """The message was deleted, or went back to the queue (visibility changed or ran out)."""
        with self._lock:
            self._end(message_id, self.clock())

    def _end(self, message_id: str, now: float) -> None:
        entry = self._in_flight.pop(message_id, None)
        if entry is not None:
            tenant, since = entry
            self._done.append((now, tenant, now - since))

    def in_flight(self) -> Counter[str]:
        with self._lock:
            return Counter(tenant for tenant, _ in self._in_flight.values())

    def noisy(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._noisy)

    def order(self, waiting: Sequence[QueuedMessage], still_in_flight: Callable[[str], bool]) -> list[Any]:
        """`waiting` (the queue's visible messages, in its order) in the order a receive hands
        them out. `still_in_flight(id)` tells whether a message counted as in flight still is
        (not deleted, not visible again); those that are not end first."""
        now = self.clock()
        with self._lock:
            for message_id in [m for m in self._in_flight if not still_in_flight(m)]:
                self._end(message_id, now)
            while self._done and self._done[0][0] < now - PROCESSING_WINDOW_SECONDS:
                self._done.popleft()
            in_flight = Counter(tenant for tenant, _ in self._in_flight.values())
            backlog = {tenant_of(message) for message in waiting}
            self._noisy = self._detect(in_flight, backlog, now)
            if not self._noisy:
                return list(waiting)
            noisy = self._noisy
        ranked = sorted(
            range(len(waiting)),
            key=lambda i: (1, in_flight[t], i) if (t := tenant_of(waiting[i])) in noisy else (0, 0, i),
        )
        return [waiting[i] for i in ranked]

    def _detect(self, in_flight: Counter[str], backlog: set[str], now: float) -> set[str]:
        total_in_flight = sum(in_flight.values())
        spent: dict[str, float] = {}
        for _, tenant, seconds in self._done:
            spent[tenant] = spent.get(tenant, 0.0) + seconds
        for tenant, since in self._in_flight.values():
            spent[tenant] = spent.get(tenant, 0.0) + now - since
        total_spent = sum(spent.values())
        noisy = set()
        for tenant in backlog:  # only waiting messages are ordered
            if now - self._last_send.get(tenant, now) >= QUIET_AFTER_SECONDS:
                continue  # sent nothing for 5 minutes: quiet again
            crowding = (
                in_flight[tenant] >= CONCURRENCY_MIN_IN_FLIGHT
                and in_flight[tenant] > CONCURRENCY_SHARE * total_in_flight
            )
            slow = total_spent > 0 and spent.get(tenant, 0.0) > PROCESSING_SHARE * total_spent
            if crowding or slow:
                noisy.add(tenant)
        return noisy


# --- moto ----------------------------------------------------------------------------------

_ORDERING = threading.local()


def install() -> None:
    """Idempotent: moto's standard queues order their receives fairly (see the module)."""
    from moto.sqs.models import Queue, SQSBackend  # noqa: PLC0415 - moto only where it runs

    if getattr(SQSBackend.receive_message, "__hub_fair__", False):
        return
    receive = SQSBackend.receive_message
    delete = Queue.delete_message
    add = Queue.add_message
    visible_messages = Queue.messages

    def share_of(queue: Any) -> FairShare:
        share = queue.__dict__.get("_hub_fair_share")
        if share is None:
            share = queue.__dict__.setdefault("_hub_fair_share", FairShare())
        return share

    def fair_receive(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        queue = self.get_queue(queue_name)
        if queue.fifo_queue or not enabled:
            return receive(self, queue_name, *args, **kwargs)
        share = share_of(queue)
        _ORDERING.queue = queue
        try:
            result = receive(self, queue_name, *args, **kwargs)
        finally:
            _ORDERING.queue = None
        share.received(result)
        return result

    def fair_messages(queue: Any) -> list[Any]:
        waiting: list[Any] = visible_messages.fget(queue)  # type: ignore[attr-defined]
        stored: list[Any] = queue._messages
        if getattr(_ORDERING, "queue", None) is not queue:
            return waiting
        live = {m.id: m for m in stored}
        return share_of(queue).order(
            waiting, lambda message_id: message_id in live and not live[message_id].visible
        )

    def tracked_delete(queue: Any, receipt_handle: str) -> None:
        gone = [m.id for m in queue._messages if m.had_receipt_handle(receipt_handle)]
        delete(queue, receipt_handle)
        if not queue.fifo_queue:
            for message_id in gone:
                share_of(queue).ended(message_id)

    def tracked_add(queue: Any, message: Any) -> None:
        add(queue, message)
        if not queue.fifo_queue:
            share_of(queue).sent(tenant_of(message))

    fair_receive.__hub_fair__ = True  # type: ignore[attr-defined]
    SQSBackend.receive_message = fair_receive  # type: ignore[method-assign]
    Queue.messages = property(fair_messages)  # type: ignore[method-assign,assignment]
    Queue.delete_message = tracked_delete  # type: ignore[method-assign,assignment]
    Queue.add_message = tracked_add  # type: ignore[method-assign,assignment]
