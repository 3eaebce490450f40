"""The execution guards on the message item (hub.pipeline.ports.Executions): the same answers
from the in-memory fake and from the DynamoDB adapter."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from hub.adapters.dynamo.table import WRITE_UNIT_BYTES, epoch, item_size
from hub.domain.ids import new_id
from hub.domain.message import MAX_LOG_ENTRIES
from hub.domain.status import PipelineStatus
from hub.errors import TransitionNotAllowed
from hub.pipeline.ports import EntityHold, LeaseLost, Outcome, Refusal, Refused, Taken
from hub.pipeline.rules import RECENT_COMPLETION
from tests.contract.backends import Backend
from tests.contract.scenario import (
    DAY,
    LEASE,
    NOW,
    created,
    new_message,
    retry_pending,
    sent,
    step_of,
    taken,
)


def refusal(answer: Taken | Refusal) -> Refused:
    assert isinstance(answer, Refusal), answer
    return answer.reason


class TestTakeAndFinish:
    def test_take_leases_the_message_and_finish_closes_the_execution(self, backend: Backend) -> None:
        record = created(backend)
        assert (record.version, record.step_seq) == (1, 0)

        held = taken(backend, record, "run-1")

        assert held.owner == "run-1"
        assert (held.record.version, held.record.step_seq) == (2, 0)
        assert held.record.lease_owner == "run-1"
        assert held.record.lease_until == epoch(NOW + LEASE)
        assert held.record.active_at == epoch(NOW)
        assert held.inline_payload is None  # on the fingerprint claim (issue 29)
        assert backend.executions.payload(held.record, NOW) == '{"po_number":"PO-1"}'
        assert held.log == ()

        later = NOW + timedelta(seconds=2)
        done = backend.executions.finish(held, sent(), later)

        assert done.pipeline_status is PipelineStatus.SENT
        assert (done.version, done.step_seq) == (3, 1)
        assert (done.lease_owner, done.lease_until) == (None, None)
        assert done.completed_at == later
        assert done.updated_at == later
        assert done.dest_status == "200"
        item = backend.item(record.message_id)
        assert item is not None
        assert "lease_owner" not in item
        assert "lease_until" not in item
        assert "GSI1PK" not in item
        assert [(e["step"], e["status"], e["at"]) for e in item["log"]] == [
            ("sent", "success", "2026-11-30T12:00:02.000000Z")
        ]
        assert backend.executions.live_execution(record.message_id, later) is None

    def test_a_finish_that_does_not_close_keeps_the_execution_alive(self, backend: Backend) -> None:
        record = created(backend)

        pending = backend.executions.finish(taken(backend, record), retry_pending(), NOW)

        assert pending.pipeline_status is PipelineStatus.RETRY_PENDING
        assert pending.completed_at is None
        assert (pending.version, pending.step_seq, pending.retry_count) == (3, 1, 1)
        assert pending.next_retry_at == NOW + timedelta(minutes=1)
        item = backend.item(record.message_id)
        assert item is not None
        assert item["GSI1PK"] == "TENANT#t1#STATUS#retry_pending"
        assert backend.executions.live_execution(record.message_id, NOW) == record.execution_id

    def test_an_outcome_without_a_target_only_moves_the_sequence(self, backend: Backend) -> None:
        record = created(backend)

        done = backend.executions.finish(taken(backend, record), Outcome(None, closes=False), NOW)

        assert done.pipeline_status is PipelineStatus.RECEIVED
        assert (done.version, done.step_seq, done.completed_at) == (3, 1, None)

    def test_a_finish_outside_the_transition_table_writes_nothing(self, backend: Backend) -> None:
        record = created(backend)
        held = taken(backend, record)
        before = backend.item(record.message_id)

        with pytest.raises(TransitionNotAllowed):
            backend.executions.finish(
                Taken(held.record.model_copy(update={"pipeline_status": PipelineStatus.SENT}), "run-1", None),
                Outcome(PipelineStatus.ERROR),
                NOW,
            )

        assert backend.item(record.message_id) == before

    # (A datetime in a log entry is written as text, like the entry's own `at`.)
    @pytest.mark.parametrize("value", [1.5], ids=["float"])
    def test_a_value_boto3_cannot_store_is_refused_before_any_write(
        self, backend: Backend, value: object
    ) -> None:
        record = created(backend)
        held = taken(backend, record)
        before = backend.item(record.message_id)

        with pytest.raises(TypeError):
            backend.executions.finish(
                held, Outcome(PipelineStatus.SENT, log=[{"step": "sent", "x": value}]), NOW
            )

        assert backend.item(record.message_id) == before

    def test_the_log_keeps_the_last_entries_that_fit_one_write_unit(self, backend: Backend) -> None:
        """At most MAX_LOG_ENTRIES, and fewer when the item would pass the write unit it could
        stay within (25 entries do not fit 1 KB): the newest kept, the item marked."""
        record = created(backend)
        first = backend.executions.finish(taken(backend, record), retry_pending(), NOW)
        held = backend.executions.take(step_of(first, step="deliver"), "run-2", NOW, LEASE)
        assert isinstance(held, Taken)

        done = backend.executions.finish(held, sent(entries=25), NOW)

        log = backend.messages.message_log(record.message_id)
        assert 1 < len(log) < MAX_LOG_ENTRIES
        assert [e["n"] for e in log] == list(range(25 - len(log), 25))
        stored = backend.item(record.message_id)
        assert stored is not None
        assert item_size(stored) <= WRITE_UNIT_BYTES
        assert done.log_trimmed is True


class TestRefusals:
    def test_a_second_take_while_leased_is_busy(self, backend: Backend) -> None:
        record = created(backend)
        taken(backend, record, "run-1")

        answer = backend.executions.take(step_of(record), "run-2", NOW + timedelta(seconds=1), LEASE)

        assert refusal(answer) is Refused.BUSY
        assert isinstance(answer, Refusal)
        assert answer.current is not None
        assert answer.current.lease_owner == "run-1"

    def test_the_lease_holds_until_its_last_second(self, backend: Backend) -> None:
        record = created(backend)
        taken(backend, record, "run-1")

        at_expiry = backend.executions.take(step_of(record), "run-2", NOW + LEASE, LEASE)
        after = backend.executions.take(step_of(record), "run-2", NOW + LEASE + timedelta(seconds=1), LEASE)

        assert refusal(at_expiry) is Refused.BUSY
        assert isinstance(after, Taken)
        assert after.record.lease_owner == "run-2"
        assert after.record.version == 3

    def test_a_take_over_an_expired_lease_says_its_run_was_interrupted(self, backend: Backend) -> None:
        """A lease nobody gave back means its run died mid-step: the take that overrides it says
        so (the step may have reached the destination); a take after a finish or a release,
        or the first one, does not."""
        record = created(backend)
        first = taken(backend, record, "run-1")
        assert first.interrupted is False

        later = NOW + LEASE + timedelta(seconds=1)
        second = backend.executions.take(step_of(record), "run-2", later, LEASE)
        assert isinstance(second, Taken)
        assert second.interrupted is True
        backend.executions.release(second, later)

        third = backend.executions.take(step_of(record), "run-3", later, LEASE)
        assert isinstance(third, Taken)
        assert third.interrupted is False
        done = backend.executions.finish(third, sent(), later)
        assert done.lease_owner is None
        item = backend.item(record.message_id)
        assert item is not None
        assert "taken_from" not in item

    def test_a_finish_by_the_run_whose_lease_was_taken_over_is_lease_lost(self, backend: Backend) -> None:
        record = created(backend)
        first = taken(backend, record, "run-1")
        later = NOW + LEASE + timedelta(seconds=1)
        second = backend.executions.take(step_of(record), "run-2", later, LEASE)
        assert isinstance(second, Taken)

        with pytest.raises(LeaseLost) as lost:
            backend.executions.finish(first, sent(), later)

        assert lost.value.current is not None
        assert lost.value.current.lease_owner == "run-2"
        stored = backend.messages.get(record.message_id)
        assert stored is not None
        assert (stored.pipeline_status, stored.version, stored.step_seq) == (PipelineStatus.RECEIVED, 3, 0)

    def test_a_redelivered_step_after_finish_is_a_duplicate(self, backend: Backend) -> None:
        record = created(backend)
        step = step_of(record)
        held = backend.executions.take(step, "run-1", NOW, LEASE)
        assert isinstance(held, Taken)
        backend.executions.finish(held, sent(), NOW)

        answer = backend.executions.take(step, "run-2", NOW + timedelta(seconds=1), LEASE)

        assert refusal(answer) is Refused.DUPLICATE_STEP
        assert isinstance(answer, Refusal)
        assert answer.current is not None
        assert answer.current.step_seq == 1

    def test_a_step_of_another_execution_is_stale(self, backend: Backend) -> None:
        record = created(backend)

        answer = backend.executions.take(step_of(record, execution_id="exe_other"), "run-1", NOW, LEASE)

        assert refusal(answer) is Refused.STALE_EXECUTION

    def test_a_late_step_after_completion_is_recently_completed_then_finished(self, backend: Backend) -> None:
        record = created(backend)
        done = backend.executions.finish(taken(backend, record), sent(), NOW)
        late = step_of(done)  # the sequence the message expects now
        assert late.seq == 1

        within = backend.executions.take(late, "run-2", NOW + RECENT_COMPLETION - timedelta(seconds=1), LEASE)
        beyond = backend.executions.take(late, "run-3", NOW + RECENT_COMPLETION, LEASE)

        assert refusal(within) is Refused.RECENTLY_COMPLETED
        assert refusal(beyond) is Refused.EXECUTION_FINISHED

    def test_a_step_of_a_missing_message_is_an_orphan(self, backend: Backend) -> None:
        ghost = new_message().record

        answer = backend.executions.take(step_of(ghost), "run-1", NOW, LEASE)

        assert answer == Refusal(Refused.ORPHAN)
        assert backend.item(ghost.message_id) is None

    def test_a_step_naming_another_tenant_is_an_orphan(self, backend: Backend) -> None:
        record = created(backend)

        answer = backend.executions.take(step_of(record, tenant_id="t2"), "run-1", NOW, LEASE)

        assert answer == Refusal(Refused.ORPHAN)

    def test_concurrent_takes_have_exactly_one_winner(self, backend: Backend) -> None:
        record = created(backend)
        racers = 6
        barrier = threading.Barrier(racers)
        answers: list[Taken | Refusal] = []

        def race(n: int) -> None:
            barrier.wait(timeout=10)
            answers.append(backend.executions.take(step_of(record), f"run-{n}", NOW, LEASE))

        threads = [threading.Thread(target=race, args=(n,)) for n in range(racers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)

        assert len(answers) == racers
        assert sum(isinstance(a, Taken) for a in answers) == 1
        assert {a.reason for a in answers if isinstance(a, Refusal)} == {Refused.BUSY}
        stored = backend.messages.get(record.message_id)
        assert stored is not None
        assert stored.version == 2


class TestReleases:
    def test_release_gives_the_lease_back_and_only_for_its_owner(self, backend: Backend) -> None:
        record = created(backend)
        held = taken(backend, record, "run-1")
        impostor = Taken(held.record, "run-x", None)

        backend.executions.release(impostor, NOW)
        still = backend.messages.get(record.message_id)
        backend.executions.release(held, NOW)
        freed = backend.messages.get(record.message_id)

        assert still is not None
        assert (still.lease_owner, still.version) == ("run-1", 2)
        assert freed is not None
        assert (freed.lease_owner, freed.version, freed.step_seq) == (None, 3, 0)
        assert isinstance(backend.executions.take(step_of(record), "run-2", NOW, LEASE), Taken)

    def test_release_admission_lets_another_execution_in(self, backend: Backend) -> None:
        record = created(backend)
        held = taken(backend, record, "run-1")
        assert not backend.executions.admit(record.message_id, "exe_next", NOW, DAY)

        backend.executions.release(held, NOW)  # the failing run gives its own lease back first
        backend.executions.release_admission(record.message_id, record.execution_id, NOW)

        item = backend.item(record.message_id)
        assert item is not None
        assert item["active_at"] == 0
        assert "lease_owner" not in item
        assert "completed_at" not in item
        assert backend.executions.live_execution(record.message_id, NOW) is None
        assert backend.executions.admit(record.message_id, "exe_next", NOW, DAY)
        assert backend.executions.live_execution(record.message_id, NOW) == "exe_next"
        admitted = backend.messages.get(record.message_id)
        assert admitted is not None
        assert (admitted.step_seq, admitted.version, admitted.active_at) == (1, 5, epoch(NOW))

    def test_release_admission_under_another_runs_live_lease_changes_nothing(self, backend: Backend) -> None:
        """A copy of a step failing for the last time must not offer the message to a reprocess
        while another run of it is mid-delivery."""
        record = created(backend)
        taken(backend, record, "run-1")
        before = backend.item(record.message_id)

        backend.executions.release_admission(record.message_id, record.execution_id, NOW)

        assert backend.item(record.message_id) == before
        assert not backend.executions.admit(record.message_id, "exe_next", NOW, DAY)

    def test_admission_is_refused_under_a_live_lease_even_when_idle_looking(self, backend: Backend) -> None:
        record = created(backend)
        taken(backend, record, "run-1", now=NOW)

        assert not backend.executions.admit(
            record.message_id, "exe_2", NOW + timedelta(minutes=1), timedelta(0)
        )
        assert backend.executions.admit(
            record.message_id, "exe_2", NOW + LEASE + timedelta(seconds=1), timedelta(0)
        )

    def test_fail_unleased_never_writes_under_a_live_lease(self, backend: Backend) -> None:
        record = created(backend)
        taken(backend, record, "run-1")
        outcome = Outcome(PipelineStatus.ERROR, {"last_retry_error_class": "lock_timeout"})

        assert backend.executions.fail_unleased(step_of(record), record, outcome, NOW) is None
        assert backend.messages.get(record.message_id).pipeline_status is PipelineStatus.RECEIVED  # type: ignore[union-attr]

    def test_release_admission_of_another_execution_changes_nothing(self, backend: Backend) -> None:
        record = created(backend)
        before = backend.item(record.message_id)

        backend.executions.release_admission(record.message_id, "exe_other", NOW)
        backend.executions.release_admission(new_id("msg"), record.execution_id, NOW)

        assert backend.item(record.message_id) == before

    def test_admission_is_refused_while_live_and_taken_over_after_a_day_idle(self, backend: Backend) -> None:
        record = created(backend)

        refused = backend.executions.admit(record.message_id, "exe_2", NOW + DAY, DAY)
        admitted = backend.executions.admit(record.message_id, "exe_2", NOW + DAY + timedelta(seconds=1), DAY)

        assert not refused
        assert admitted
        assert backend.executions.live_execution(record.message_id, NOW + DAY) == "exe_2"
        assert not backend.executions.admit(new_id("msg"), "exe_3", NOW, DAY)

    def test_admission_after_completion_is_immediate(self, backend: Backend) -> None:
        record = created(backend)
        backend.executions.finish(taken(backend, record), sent(), NOW)

        assert backend.executions.admit(record.message_id, "exe_2", NOW, DAY)
        item = backend.item(record.message_id)
        assert item is not None
        assert "completed_at" not in item
        assert item["step_seq"] == 2

    def test_fail_unleased_writes_only_for_the_expected_sequence(self, backend: Backend) -> None:
        record = created(backend)
        step = step_of(record)
        outcome = Outcome(
            PipelineStatus.ERROR,
            {"dest_status_text": "lock", "last_retry_error_class": "lock_timeout"},
            [{"step": "process", "status": "failure"}],
        )

        failed = backend.executions.fail_unleased(step, record, outcome, NOW)
        again = backend.executions.fail_unleased(step, record, outcome, NOW)

        assert failed is not None
        assert (failed.pipeline_status, failed.step_seq, failed.completed_at) == (
            PipelineStatus.ERROR,
            1,
            NOW,
        )
        assert again is None
        with pytest.raises(ValueError, match="must move the status"):
            backend.executions.fail_unleased(step, record, Outcome(None), NOW)

    def test_mark_superseded_only_marks_an_existing_message(self, backend: Backend) -> None:
        record = created(backend)
        ghost = new_id("msg")

        backend.executions.mark_superseded(record.message_id, "msg_newer")
        backend.executions.mark_superseded(ghost, "msg_newer")

        stored = backend.messages.get(record.message_id)
        assert stored is not None
        assert (stored.superseded_by, stored.version) == ("msg_newer", 2)
        assert backend.item(ghost) is None


class TestEntityLease:
    def test_the_first_taker_claims_the_key_and_holds_it_against_others(self, backend: Backend) -> None:
        entity = f"int_contract#purchase_order#{new_id('bk')}"

        first = backend.executions.take_entity(entity, "run-a", "msg_a", NOW, LEASE)
        busy = backend.executions.take_entity(entity, "run-b", "msg_b", NOW, LEASE)
        again = backend.executions.take_entity(entity, "run-a", "msg_a", NOW, LEASE)

        assert first == EntityHold(entity=entity, owner="run-a", holder=None)
        assert busy is None
        assert again == EntityHold(entity=entity, owner="run-a", holder=None)

    def test_release_without_current_keeps_the_first_holder(self, backend: Backend) -> None:
        entity = f"int_contract#purchase_order#{new_id('bk')}"
        first = backend.executions.take_entity(entity, "run-a", "msg_a", NOW, LEASE)
        assert first is not None

        backend.executions.release_entity(first)
        second = backend.executions.take_entity(entity, "run-b", "msg_b", NOW, LEASE)

        assert second == EntityHold(entity=entity, owner="run-b", holder="msg_a")

    def test_release_with_current_hands_the_key_on(self, backend: Backend) -> None:
        entity = f"int_contract#purchase_order#{new_id('bk')}"
        first = backend.executions.take_entity(entity, "run-a", "msg_a", NOW, LEASE)
        assert first is not None
        backend.executions.release_entity(first)
        second = backend.executions.take_entity(entity, "run-b", "msg_b", NOW, LEASE)
        assert second is not None

        backend.executions.release_entity(second, "msg_b")
        third = backend.executions.take_entity(entity, "run-c", "msg_c", NOW, LEASE)

        assert third is not None
        assert third.holder == "msg_b"

    def test_release_by_someone_else_changes_nothing(self, backend: Backend) -> None:
        entity = f"int_contract#purchase_order#{new_id('bk')}"
        backend.executions.take_entity(entity, "run-a", "msg_a", NOW, LEASE)

        backend.executions.release_entity(EntityHold(entity, "run-x", None), "msg_x")

        item = backend.entity_item(entity)
        assert item is not None
        assert (item["lease_owner"], item["message_id"]) == ("run-a", "msg_a")
        assert backend.executions.take_entity(entity, "run-b", "msg_b", NOW, LEASE) is None

    def test_an_expired_entity_lease_is_taken_over(self, backend: Backend) -> None:
        entity = f"int_contract#purchase_order#{new_id('bk')}"
        backend.executions.take_entity(entity, "run-a", "msg_a", NOW, LEASE)

        at_expiry = backend.executions.take_entity(entity, "run-b", "msg_b", NOW + LEASE, LEASE)
        after = backend.executions.take_entity(
            entity, "run-b", "msg_b", NOW + LEASE + timedelta(seconds=1), LEASE
        )

        assert at_expiry is None
        assert after == EntityHold(entity=entity, owner="run-b", holder="msg_a")

    def test_a_lock_without_a_key_claim(self, backend: Backend) -> None:
        entity = f"int_contract#purchase_order#{new_id('bk')}"

        assert backend.executions.acquire_lock(entity, "op-1", NOW, LEASE)
        assert backend.executions.acquire_lock(entity, "op-1", NOW, LEASE)  # its own again
        assert not backend.executions.acquire_lock(entity, "op-2", NOW, LEASE)
        assert backend.executions.take_entity(entity, "run-a", "msg_a", NOW, LEASE) is None
        backend.executions.release_lock(entity, "op-2")  # not its lock: nothing happens
        assert not backend.executions.acquire_lock(entity, "op-2", NOW, LEASE)
        backend.executions.release_lock(entity, "op-1")

        hold = backend.executions.take_entity(entity, "run-a", "msg_a", NOW, LEASE)
        assert hold == EntityHold(entity=entity, owner="run-a", holder=None)
