"""Pipeline statuses and the only transitions allowed between them (seed 000, states;
seed 004, pattern 5: status moves as monotonic transitions, never as arbitrary updates).

The repository enforces this table with a conditional update, so a stale or out-of-order
step can never regress a message.
"""

from __future__ import annotations

from enum import StrEnum
from types import MappingProxyType


class PipelineStatus(StrEnum):
    RECEIVED = "received"
    MAPPED = "mapped"
    SENT = "sent"
    ERROR = "error"
    RETRY_PENDING = "retry_pending"
    DEAD_LETTER = "dead_letter"
    CANCELLED = "cancelled"
    RECEIVED_OBSERVED = "received_observed"
    DUPLICATE_REJECTED = "duplicate_rejected"


S = PipelineStatus

#: from-status -> statuses it may move to. An operator's reprocess starts a new execution from
#: `received` (also from `received` / `mapped` when the last execution died and left it there);
#: everything else only moves forward. A failed delivery goes straight to its outcome in one
#: update: `error`, `retry_pending` (another retry: also from `retry_pending`) or `dead_letter`.
ALLOWED_TRANSITIONS: MappingProxyType[PipelineStatus, frozenset[PipelineStatus]] = MappingProxyType(
    {
        S.RECEIVED: frozenset(
            {
                S.RECEIVED,
                S.MAPPED,
                S.SENT,
                S.ERROR,
                # Mapping and delivery run in one step: a failed first attempt goes straight on.
                S.RETRY_PENDING,
                S.DEAD_LETTER,
                S.RECEIVED_OBSERVED,
                S.DUPLICATE_REJECTED,
                S.CANCELLED,
            }
        ),
        S.MAPPED: frozenset(
            {S.RECEIVED, S.SENT, S.ERROR, S.RETRY_PENDING, S.DEAD_LETTER, S.RECEIVED_OBSERVED, S.CANCELLED}
        ),
        S.ERROR: frozenset({S.RECEIVED, S.CANCELLED}),
        # A scheduled retry runs the deliver step again: straight to its outcome.
        # (`received_observed`: the integration was switched to observability meanwhile.)
        S.RETRY_PENDING: frozenset(
            {S.RECEIVED, S.SENT, S.CANCELLED, S.ERROR, S.RETRY_PENDING, S.DEAD_LETTER, S.RECEIVED_OBSERVED}
        ),
        S.DEAD_LETTER: frozenset({S.RECEIVED, S.CANCELLED}),
        S.CANCELLED: frozenset({S.RECEIVED}),
        S.SENT: frozenset({S.RECEIVED}),
        S.RECEIVED_OBSERVED: frozenset({S.RECEIVED}),
        S.DUPLICATE_REJECTED: frozenset({S.RECEIVED}),
    }
)

#: Statuses where no step of the current execution is expected to run any more.
FINAL_STATUSES = frozenset(
    {S.SENT, S.ERROR, S.DEAD_LETTER, S.CANCELLED, S.RECEIVED_OBSERVED, S.DUPLICATE_REJECTED}
)


#: Statuses a failure holds a message in (the admin queue's Waiting, Dead-letter and Errors tabs).
#: Only in these is the last failed attempt's error class the message's current state (issue 28):
#: once it is sent, reprocessed or cancelled, that class is history, kept in the attempt's log
#: entry (the message view's timeline), and admin rows show none.
FAILING_STATUSES = frozenset({S.RETRY_PENDING, S.DEAD_LETTER, S.ERROR})


def current_error_class(status: PipelineStatus | str | None, error_class: str | None) -> str | None:
    """`error_class` when a message in `status` still fails with it, else None."""
    return error_class if status in FAILING_STATUSES else None


def can_transition(current: PipelineStatus, target: PipelineStatus) -> bool:
    """True when `current -> target` is in the transition table."""
    return target in ALLOWED_TRANSITIONS[current]


def sources_of(target: PipelineStatus) -> frozenset[PipelineStatus]:
    """Every status from which `target` may be reached: the condition of the update."""
    return frozenset(src for src, targets in ALLOWED_TRANSITIONS.items() if target in targets)
