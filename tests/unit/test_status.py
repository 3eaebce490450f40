from itertools import product

import pytest

from hub.domain.status import ALLOWED_TRANSITIONS, FINAL_STATUSES, PipelineStatus, can_transition, sources_of

S = PipelineStatus


def test_every_status_has_a_row_in_the_transition_table():
    assert set(ALLOWED_TRANSITIONS) == set(PipelineStatus)


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (S.RECEIVED, S.MAPPED),  # scenario A
        (S.MAPPED, S.SENT),
        (S.MAPPED, S.RETRY_PENDING),  # scenario B: the failed delivery and its retry in one update
        (S.RETRY_PENDING, S.RETRY_PENDING),  # the next retry
        (S.RETRY_PENDING, S.SENT),
        (S.RETRY_PENDING, S.RECEIVED),
        (S.RETRY_PENDING, S.DEAD_LETTER),  # scenario C
        (S.ERROR, S.RECEIVED),  # scenario D: reprocess
        (S.MAPPED, S.RECEIVED),  # reprocess after the execution's step went to the DLQ
        (S.RETRY_PENDING, S.CANCELLED),  # scenario G
        (S.MAPPED, S.RECEIVED_OBSERVED),  # scenario H
        (S.DEAD_LETTER, S.RECEIVED),  # operator reprocess
    ],
)
def test_seed_scenarios_are_allowed(current, target):
    assert can_transition(current, target)


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (S.SENT, S.MAPPED),  # a late step must not regress a delivered message
        (S.SENT, S.ERROR),
        (S.CANCELLED, S.SENT),  # a step arriving after cancel does nothing
        (S.RECEIVED_OBSERVED, S.SENT),  # observability never delivers
        (S.ERROR, S.RETRY_PENDING),  # a decided failure is not rescheduled behind the policy's back
        (S.ERROR, S.DEAD_LETTER),
        (S.CANCELLED, S.RETRY_PENDING),
    ],
)
def test_regressions_are_refused(current, target):
    assert not can_transition(current, target)


def test_sources_of_is_the_inverse_of_the_table():
    for current, target in product(PipelineStatus, repeat=2):
        assert (current in sources_of(target)) == can_transition(current, target)


def test_only_a_rerun_and_a_further_retry_move_to_themselves():
    assert {status for status in PipelineStatus if can_transition(status, status)} == {
        S.RECEIVED,
        S.RETRY_PENDING,
    }


def test_final_statuses_only_leave_through_a_new_run_or_a_decision():
    for status in FINAL_STATUSES:
        assert ALLOWED_TRANSITIONS[status] <= {S.RECEIVED, S.CANCELLED}
