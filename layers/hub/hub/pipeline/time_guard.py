"""The worker's time guard (issue 30): a record of a batch is taken only when the time it may
need fits in what is left of the invocation. An invocation killed by its own timeout fails its
whole batch: SQS returns every record, delivered ones included, after the queue's visibility
timeout (21 minutes), each having spent one of its receives. Pure: the remaining time is a
function the caller gives (the Lambda context's)."""

from __future__ import annotations

from collections.abc import Callable

from hub.domain.tenancy import Destination

#: The seconds left in the worker's invocation, asked when an attempt starts.
TimeLeft = Callable[[], float]

#: Our own calls around one delivery attempt: the take, the payload, the entity lease, the gate,
#: the finishing update, a retry's schedule, the metrics. About ten calls of tens of milliseconds
#: on AWS; the rest is room for the SDK's retries of a throttled or slow call.
FINISH_MARGIN_SECONDS = 5.0
#: A release job's or a bulk job's page: the lease it holds its page under
#: (hub.delivery.release.RELEASE_PAGE_LEASE, hub.admin.bulk.PAGE_LEASE), the time the code
#: already promises a page fits in (a page of up to 100 messages, a few calls each). A run
#: outlasting it is treated as dead by the page's next copy.
PAGE_SECONDS = 120.0
#: The shortest read timeout a capped attempt gets: below it an answer could hardly arrive.
MIN_READ_SECONDS = 1.0


def step_need(destination: Destination | None) -> float:
    """What a step may need: its connection's connect and read timeouts and the margin for our
    writes around the attempt; the margin alone when it calls no destination."""
    if destination is None:
        return FINISH_MARGIN_SECONDS
    return destination.connect_timeout_seconds + destination.read_timeout_seconds + FINISH_MARGIN_SECONDS


def capped_read_timeout(destination: Destination, seconds_left: float) -> float | None:
    """The read timeout an attempt starting now may use so that it ends, connect timeout
    included, `FINISH_MARGIN_SECONDS` before the invocation does (never below
    `MIN_READ_SECONDS`); None when the connection's own read timeout fits."""
    room = seconds_left - FINISH_MARGIN_SECONDS - destination.connect_timeout_seconds
    if destination.read_timeout_seconds <= room:
        return None
    return max(MIN_READ_SECONDS, room)


class TimeGuard:
    """One invocation's guard, asked before each record of its batch, in batch order.

    - The first record always runs, whatever it may need: otherwise a connection whose timeouts
      exceed the whole invocation would never be delivered (its attempt is capped instead,
      `capped_read_timeout`).
    - A later record runs when what it may need fits in the time left.
    - Once a record is returned, every later one is returned too (the batch's order is kept).
    """

    def __init__(self, remaining_ms: Callable[[], int]) -> None:
        self._remaining_ms = remaining_ms
        self.taken = 0
        self.returned = 0

    def seconds_left(self) -> float:
        return self._remaining_ms() / 1000

    def admit(self, need: Callable[[], float]) -> bool:
        """Whether the next record is taken. `need()` (the seconds it may need) is asked only
        when the answer depends on it: not for the first record, nor once returning."""
        if self.returned:
            taken = False
        elif not self.taken:
            taken = True
        else:
            taken = need() <= self.seconds_left()
        if taken:
            self.taken += 1
        else:
            self.returned += 1
        return taken
