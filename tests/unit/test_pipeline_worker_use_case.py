"""The pipeline worker as a use case: real worker, real retry policy, in-memory ports
(tests/fakes, held to the DynamoDB adapters' contract by tests/contract). No moto, no network:
each test runs in about a millisecond."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest

from hub.delivery.port import DeliveryFailed, OutboundRequest
from hub.domain import idempotency
from hub.domain.failure import ErrorClass
from hub.domain.ids import new_id
from hub.domain.message import PipelineStep
from hub.domain.retry import RetryPolicy
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import DuplicateHandling, IntegrationMode
from hub.errors import QueueUnavailable
from hub.pipeline import rules
from hub.pipeline.ports import StepOutcome, StepReport, Taken
from hub.pipeline.retries import retry_schedule_name
from hub.pipeline.worker import OBSERVABILITY_TEXT
from tests.fakes.scheduler import FakeSchedulerUnavailable
from tests.fakes.world import INTEGRATION, KEYED, UNKEYED, World

AUTO = RetryPolicy(retry_auto_enabled=True, retry_max=2, ladder_seconds=(30, 60))
MAINTENANCE = DeliveryFailed(ErrorClass.HTTP_5XX, '{"error": "maintenance"}', dest_status="503")


@pytest.fixture
def world() -> World:
    return World()


def entity_of(po_number: str) -> str:
    values = idempotency.duplicate_key_values({"po_number": po_number}, ("po_number",))
    return rules.entity_key("t1", INTEGRATION, KEYED, values)


class TestHappyPath:
    def test_sent_in_one_step(self, world: World) -> None:
        record, step = world.send({"po_number": "PO-1", "qty": 2})

        report = world.run(step)

        assert report == StepReport(StepOutcome.DONE, "sent")
        final = world.record(record.message_id)
        assert (final.pipeline_status, final.dest_status) == (PipelineStatus.SENT, "200")
        assert world.steps_logged(record.message_id) == [("process", "success"), ("sent", "success")]
        [request] = world.connector.requests
        assert request.idempotency_key == record.message_id
        assert json.loads(request.body) == {"po_number": "PO-1", "qty": 2}
        assert request.content_type == "application/json"
        assert world.hub.queue.published == []
        assert world.hub.executions.live_execution(record.message_id, world.clock.now) is None
        assert (final.version, final.step_seq, final.completed_at) == (3, 1, world.clock.now)

    def test_a_message_without_business_keys_costs_two_writes_of_its_item(self, world: World) -> None:
        record, step = world.send({"n": 1}, UNKEYED)
        writes = world.hub.table.writes

        world.run(step)

        assert world.hub.table.writes - writes == 2  # take + finish
        assert world.record(record.message_id).pipeline_status is PipelineStatus.SENT

    def test_counts_its_steps(self, world: World) -> None:
        _, step = world.send({"po_number": "PO-1"})

        world.run(step)

        assert world.hub.metrics.total("StepSucceeded", step="process") == 1
        assert world.hub.metrics.total("StepSucceeded", step="deliver") == 1
        assert {p.name for p in world.hub.metrics.durations} == {"StepDuration"}

    def test_a_redelivered_step_is_dropped_without_a_second_delivery(self, world: World) -> None:
        _, step = world.send({"po_number": "PO-1"})
        world.run(step)

        again = world.run(step)

        assert again == StepReport(StepOutcome.DROPPED, "duplicate_step")
        assert len(world.connector.requests) == 1
        assert world.hub.metrics.total("DuplicateStepsDropped") == 1

    def test_a_step_of_a_replaced_execution_is_dropped(self, world: World) -> None:
        _, step = world.send({"po_number": "PO-1"})

        report = world.run(step.model_copy(update={"execution_id": "exe_old"}))

        assert report == StepReport(StepOutcome.DROPPED, "stale_execution")
        assert world.connector.requests == []


class TestObservability:
    def test_maps_but_never_calls_the_destination(self, world: World) -> None:
        world.configure(mode=IntegrationMode.OBSERVABILITY)
        record, step = world.send({"po_number": "PO-OBS"})

        report = world.run(step)

        assert report == StepReport(StepOutcome.DONE, "observed")
        final = world.record(record.message_id)
        assert final.pipeline_status is PipelineStatus.RECEIVED_OBSERVED
        assert (final.dest_status, final.dest_status_text) == ("skipped_observability", OBSERVABILITY_TEXT)
        assert world.connector.requests == []
        # The observed entry does not repeat dest_status_text: both entries fit in 1 KB with the
        # item's TTL (issue 29).
        assert world.steps_logged(record.message_id) == [("process", "success"), ("observability", "skipped")]
        assert final.log_trimmed is False
        # Counted for the admin Health view's hourly chart (issue 13).
        assert world.hub.metrics.total("MessagesObserved") == 1


class TestDuplicateHandling:
    def test_reject_marks_the_second_version_and_names_the_first(self, world: World) -> None:
        world.configure(handling=DuplicateHandling.REJECT)
        first, step = world.send({"po_number": "PO-7", "qty": 1})
        world.run(step)
        second, step = world.send({"po_number": "PO-7", "qty": 5})

        report = world.run(step)

        assert report == StepReport(StepOutcome.DONE, "failed")
        rejected = world.record(second.message_id)
        assert rejected.pipeline_status is PipelineStatus.DUPLICATE_REJECTED
        assert rejected.dest_status_text == f"duplicate of {first.message_id}"
        assert world.record(first.message_id).pipeline_status is PipelineStatus.SENT
        assert len(world.connector.requests) == 1

    def test_overwrite_supersedes_the_earlier_version(self, world: World) -> None:
        world.configure(handling=DuplicateHandling.OVERWRITE)
        first, step = world.send({"po_number": "PO-8", "qty": 1})
        world.run(step)
        second, step = world.send({"po_number": "PO-8", "qty": 9})

        world.run(step)

        assert world.record(first.message_id).superseded_by == second.message_id
        assert world.record(second.message_id).pipeline_status is PipelineStatus.SENT
        assert [json.loads(r.body)["qty"] for r in world.connector.requests] == [1, 9]
        assert ("process", "success") in world.steps_logged(second.message_id)

    def test_overwrite_cancels_a_superseded_retry_instead_of_sending_it(self, world: World) -> None:
        world.configure(handling=DuplicateHandling.OVERWRITE, retry_policy=AUTO)
        world.connector.script(MAINTENANCE, world.connector.answers[0])
        first, step = world.send({"po_number": "PO-10", "qty": 1})
        world.run(step)
        second, step = world.send({"po_number": "PO-10", "qty": 2})
        world.run(step)

        [retry] = world.hub.scheduler.fire_all()
        report = world.run(retry)

        assert report == StepReport(StepOutcome.DONE, "superseded")
        cancelled = world.record(first.message_id)
        assert cancelled.pipeline_status is PipelineStatus.CANCELLED
        assert cancelled.dest_status_text == f"superseded by {second.message_id}"
        assert [json.loads(r.body)["qty"] for r in world.connector.requests] == [1, 2]


class TestRetries:
    def test_a_5xx_with_auto_retry_waits_on_a_schedule_for_the_next_sequence(self, world: World) -> None:
        world.configure(retry_policy=AUTO)
        world.connector.script(MAINTENANCE)
        record, step = world.send({"po_number": "PO-R"})

        report = world.run(step)

        assert report == StepReport(StepOutcome.DONE, "retry_scheduled")
        pending = world.record(record.message_id)
        assert pending.pipeline_status is PipelineStatus.RETRY_PENDING
        assert (pending.retry_count, pending.dest_status, pending.last_retry_error_class) == (
            1,
            "503",
            "http_5xx",
        )
        assert pending.next_retry_at == world.clock.now + timedelta(seconds=30)
        assert pending.completed_at is None
        [schedule] = world.hub.scheduler.schedules.values()
        assert schedule.name == retry_schedule_name(record.execution_id, 1)
        assert schedule.at == pending.next_retry_at
        assert (schedule.step.step, schedule.step.attempt) == (PipelineStep.DELIVER, 1)
        assert schedule.step.seq == pending.step_seq == 1
        assert world.hub.executions.live_execution(record.message_id, world.clock.now) == record.execution_id
        assert world.hub.metrics.total("RetriesScheduled", error_class="http_5xx") == 1
        # The waiting item (its index keys, schedule, failure and TTL) passes 1 KB even with its
        # last entry alone: shedding the process step's would save no write unit, so it stays.
        assert world.steps_logged(record.message_id) == [("process", "success"), ("deliver", "failure")]
        assert pending.log_trimmed is False

    def test_the_scheduled_retry_delivers_with_the_same_idempotency_key(self, world: World) -> None:
        world.configure(retry_policy=AUTO)
        world.connector.script(MAINTENANCE, world.connector.answers[0])
        record, step = world.send({"po_number": "PO-R"})
        world.run(step)

        world.settle()

        final = world.record(record.message_id)
        assert final.pipeline_status is PipelineStatus.SENT
        assert [r.idempotency_key for r in world.connector.requests] == [record.message_id] * 2
        assert world.hub.executions.live_execution(record.message_id, world.clock.now) is None

    def test_exhausted_retries_end_in_dead_letter(self, world: World) -> None:
        world.configure(retry_policy=AUTO)
        world.connector.script(MAINTENANCE)
        record, step = world.send({"po_number": "PO-D"})
        world.run(step)

        world.settle()

        final = world.record(record.message_id)
        assert (final.pipeline_status, final.retry_count) == (PipelineStatus.DEAD_LETTER, 2)
        assert len(world.connector.requests) == 3
        assert world.hub.metrics.total("DeadLettered") == 1

    def test_a_redelivered_deciding_step_only_resumes_the_schedule(self, world: World) -> None:
        world.configure(retry_policy=AUTO)
        world.connector.script(MAINTENANCE)
        record, step = world.send({"po_number": "PO-S"})
        world.hub.scheduler.fail(1)

        with pytest.raises(FakeSchedulerUnavailable):
            world.run(step)  # the failure and the decision are written; the schedule is not
        assert world.record(record.message_id).pipeline_status is PipelineStatus.RETRY_PENDING
        assert world.hub.scheduler.schedules == {}

        report = world.run(step)  # SQS redelivers it

        assert report == StepReport(StepOutcome.DONE, "retry_resumed")
        [schedule] = world.hub.scheduler.schedules.values()
        assert schedule.step.seq == world.record(record.message_id).step_seq
        assert len(world.connector.requests) == 1  # no second attempt now

    def test_resuming_an_existing_schedule_keeps_one(self, world: World) -> None:
        world.configure(retry_policy=AUTO)
        world.connector.script(MAINTENANCE)
        _, step = world.send({"po_number": "PO-S"})
        world.run(step)

        world.run(step)

        assert len(world.hub.scheduler.calls) == 2
        assert len(world.hub.scheduler.schedules) == 1
        assert len(world.connector.requests) == 1

    def test_without_auto_retry_a_5xx_is_an_error(self, world: World) -> None:
        world.connector.script(MAINTENANCE)
        record, step = world.send({"po_number": "PO-E"})

        world.run(step)

        final = world.record(record.message_id)
        assert (final.pipeline_status, final.last_retry_error_class) == (PipelineStatus.ERROR, "http_5xx")
        assert world.hub.scheduler.calls == []
        assert world.hub.executions.live_execution(record.message_id, world.clock.now) is None

    def test_a_410_flags_the_connection_gone(self, world: World) -> None:
        world.connector.script(DeliveryFailed(ErrorClass.HTTP_410, "gone", dest_status="410"))
        _, step = world.send({"po_number": "PO-G"})

        world.run(step)

        integration = world.hub.config.get_integration("t1", INTEGRATION)
        assert integration is not None
        assert integration.connection_gone_at == world.clock.now


class TestEntityLock:
    def test_a_busy_entity_reschedules_without_using_an_attempt(self, world: World) -> None:
        record, step = world.send({"po_number": "PO-B"})
        assert world.hub.executions.acquire_lock(
            entity_of("PO-B"), "other-run", world.clock.now, rules.LOCK_LEASE
        )

        report = world.run(step)

        assert report == StepReport(StepOutcome.RESCHEDULED, "entity_busy")
        [again] = world.hub.queue.drain()
        assert (again.step.lock_wait, again.step.attempt, again.step.seq) == (1, 0, step.seq)
        assert again.step.publish_id != step.publish_id
        assert again.delay_seconds == rules.LOCK_WAIT_LADDER_SECONDS[0]
        waiting = world.record(record.message_id)
        assert (waiting.pipeline_status, waiting.lease_owner, waiting.step_seq) == (
            PipelineStatus.RECEIVED,
            None,
            0,
        )
        assert world.connector.requests == []
        assert world.hub.metrics.total("LockContention") == 1

        world.hub.executions.release_lock(entity_of("PO-B"), "other-run")
        assert world.run(again.step) == StepReport(StepOutcome.DONE, "sent")

    def test_the_waits_climb_the_ladder(self, world: World) -> None:
        _, step = world.send({"po_number": "PO-B"})
        world.hub.executions.acquire_lock(entity_of("PO-B"), "other-run", world.clock.now, timedelta(days=1))

        delays = []
        for _ in range(8):
            world.run(step)
            [published] = world.hub.queue.drain()
            delays.append(published.delay_seconds)
            step = published.step

        assert delays == [2, 5, 15, 30, 60, 120, 120, 120]
        assert step.lock_wait == 8

    def test_a_message_leased_by_another_run_is_busy_too(self, world: World) -> None:
        record, step = world.send({"n": 1}, UNKEYED)
        held = world.hub.executions.take(step, "other-run", world.clock.now, rules.LOCK_LEASE)
        assert isinstance(held, Taken)

        report = world.run(step)

        assert report == StepReport(StepOutcome.RESCHEDULED, "entity_busy")
        [again] = world.hub.queue.drain()
        assert again.step.lock_wait == 1
        assert world.record(record.message_id).lease_owner == "other-run"

    def test_the_thirtieth_wait_gives_up_with_lock_timeout(self, world: World) -> None:
        record, step = world.send({"po_number": "PO-T"})
        world.hub.executions.acquire_lock(entity_of("PO-T"), "other-run", world.clock.now, rules.LOCK_LEASE)

        waited = world.run(step.rescheduled("pub_29", lock_wait=rules.MAX_LOCK_WAITS - 1))
        [_] = world.hub.queue.drain()
        gave_up = world.run(step.rescheduled("pub_30", lock_wait=rules.MAX_LOCK_WAITS))

        assert waited.outcome is StepOutcome.RESCHEDULED
        assert gave_up == StepReport(StepOutcome.DONE, "lock_timeout")
        final = world.record(record.message_id)
        assert (final.pipeline_status, final.last_retry_error_class) == (PipelineStatus.ERROR, "lock_timeout")
        assert final.lease_owner is None
        assert world.hub.queue.published == []
        assert world.hub.metrics.total("LockGiveUps") == 1

    def test_lock_timeout_never_fails_a_message_another_run_holds(self, world: World) -> None:
        record, step = world.send({"n": 1}, UNKEYED)
        world.hub.executions.take(step, "other-run", world.clock.now, rules.LOCK_LEASE)

        report = world.run(step.rescheduled("pub_30", lock_wait=rules.MAX_LOCK_WAITS))

        # The other run (a copy of this step) may be delivering: this copy writes nothing and
        # stops waiting; the holder finishes the step.
        assert report == StepReport(StepOutcome.DROPPED, "entity_busy")
        final = world.record(record.message_id)
        assert (final.pipeline_status, final.step_seq, final.lease_owner) == (
            PipelineStatus.RECEIVED,
            0,
            "other-run",
        )

    def test_a_failed_busy_reschedule_gives_the_lease_back(self, world: World) -> None:
        record, step = world.send({"po_number": "PO-Q"})
        world.hub.executions.acquire_lock(entity_of("PO-Q"), "other-run", world.clock.now, rules.LOCK_LEASE)
        world.hub.queue.fail()

        with pytest.raises(QueueUnavailable):
            world.run(step)

        waiting = world.record(record.message_id)
        assert (waiting.lease_owner, waiting.lease_until) == (None, None)
        assert waiting.pipeline_status is PipelineStatus.RECEIVED
        assert world.hub.metrics.total("StepErrors", step="process") == 1
        # SQS redelivers the step: it runs at once, no lease of its own in the way.
        world.hub.queue.fail(0)
        world.hub.executions.release_lock(entity_of("PO-Q"), "other-run")
        assert world.run(step) == StepReport(StepOutcome.DONE, "sent")

    def test_the_last_delivery_of_a_failing_step_releases_the_admission(self, world: World) -> None:
        record, step = world.send({"po_number": "PO-L"})
        world.hub.executions.acquire_lock(entity_of("PO-L"), "other-run", world.clock.now, rules.LOCK_LEASE)
        world.hub.queue.fail()

        with pytest.raises(QueueUnavailable):
            world.run(step, last_delivery=True)

        assert world.hub.executions.live_execution(record.message_id, world.clock.now) is None
        assert world.hub.metrics.total("StepsSentToDLQ") == 1


class TestConcurrentCopies:
    def test_copies_of_one_step_running_at_once_deliver_once(self, world: World) -> None:
        _, step = world.send({"n": 1}, UNKEYED)
        copies = 4
        barrier = threading.Barrier(copies)
        reports: list[StepReport] = []

        def run() -> None:
            barrier.wait(timeout=10)
            reports.append(world.run(step))

        threads = [threading.Thread(target=run) for _ in range(copies)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)

        assert len(world.connector.requests) == 1
        assert sorted(r.reason for r in reports).count("sent") == 1
        # The others found the message leased (rescheduled) or its step done (dropped).
        assert {r.reason for r in reports} - {"sent"} <= {"entity_busy", "duplicate_step"}
        for again in world.hub.queue.drain():
            assert world.run(again.step) == StepReport(StepOutcome.DROPPED, "duplicate_step")


class TestOrphans:
    def test_a_young_orphan_is_checked_again_shortly(self, world: World) -> None:
        _, step = world.send({"po_number": "PO-O"})
        ghost = step.model_copy(update={"message_id": new_id("msg")})

        report = world.run(ghost, sent_at=world.clock.now)

        assert report == StepReport(StepOutcome.RESCHEDULED, "message_not_yet_visible")
        [again] = world.hub.queue.drain()
        assert (again.step.orphan_checks, again.delay_seconds) == (1, rules.ORPHAN_RECHECK_SECONDS)
        assert again.step.message_id == ghost.message_id

    def test_an_orphan_past_the_grace_is_dropped(self, world: World) -> None:
        _, step = world.send({"po_number": "PO-O"})
        ghost = step.model_copy(update={"message_id": new_id("msg")})

        report = world.run(ghost, sent_at=world.clock.now - rules.ORPHAN_GRACE)

        assert report == StepReport(StepOutcome.DROPPED, "orphan")
        assert world.hub.queue.published == []

    def test_rechecks_stop_after_the_last_one(self, world: World) -> None:
        _, step = world.send({"po_number": "PO-O"})
        ghost = step.model_copy(
            update={"message_id": new_id("msg"), "orphan_checks": rules.MAX_ORPHAN_CHECKS}
        )

        report = world.run(ghost, sent_at=world.clock.now)

        assert report == StepReport(StepOutcome.DROPPED, "orphan")

    def test_a_message_that_commits_meanwhile_runs_at_the_recheck(self, world: World) -> None:
        record, step = world.send({"po_number": "PO-O"})
        stored = world.hub.table.items.pop(("MSG#" + record.message_id, "STATUS"))  # not committed yet

        assert world.run(step).outcome is StepOutcome.RESCHEDULED
        world.hub.table.items[(stored["PK"], stored["SK"])] = stored
        [again] = world.hub.queue.drain()

        assert world.run(again.step) == StepReport(StepOutcome.DONE, "sent")


class TestLostLease:
    def test_a_run_whose_lease_was_taken_over_writes_nothing(self, world: World) -> None:
        record, step = world.send({"n": 1}, UNKEYED)

        def slow_destination(_: OutboundRequest) -> None:
            # The destination takes longer than the lease; another run takes the message over.
            later = world.clock.advance(rules.LOCK_LEASE + timedelta(seconds=1))
            taken = world.hub.executions.take(step, "other-run", later, rules.LOCK_LEASE)
            assert isinstance(taken, Taken)

        world.connector.during = slow_destination

        report = world.run(step)

        assert report == StepReport(StepOutcome.DROPPED, "lease_lost")
        current = world.record(record.message_id)
        assert (current.pipeline_status, current.lease_owner) == (PipelineStatus.RECEIVED, "other-run")
        assert world.hub.messages.message_log(record.message_id) == []


class TestBusinessKeysOfXml:
    def test_an_xml_message_records_its_business_key_so_its_retry_takes_the_entity_lease(
        self, world: World
    ) -> None:
        """Ingest cannot read a key out of XML; the process step can, and records it, so the
        scheduled retry serializes on the same entity as a newer version."""
        world.configure(handling=DuplicateHandling.OVERWRITE, retry_policy=AUTO)
        world.connector.script(MAINTENANCE, world.connector.answers[0])
        record, step = world.send("<po_number>PO-X</po_number>")
        assert record.entity_key == ""
        world.run(step)
        pending = world.record(record.message_id)
        assert pending.pipeline_status is PipelineStatus.RETRY_PENDING
        assert pending.entity_key == rules.entity_key("t1", INTEGRATION, KEYED, ['"PO-X"'])
        held = world.hub.executions.acquire_lock(
            pending.entity_key, "newer", world.clock.now, rules.LOCK_LEASE
        )
        assert held

        [retry] = world.hub.scheduler.fire_all()

        assert world.run(retry).reason == "entity_busy"
        assert len(world.connector.requests) == 1

    def test_a_retry_finding_a_newer_holder_of_its_key_is_cancelled_not_sent(self, world: World) -> None:
        world.configure(handling=DuplicateHandling.OVERWRITE, retry_policy=AUTO)
        world.connector.script(MAINTENANCE, world.connector.answers[0])
        first, step = world.send({"po_number": "PO-N"})
        world.run(step)
        # A newer version took the key without (yet) marking this one superseded.
        entity = world.record(first.message_id).entity_key
        world.hub.executions.release_entity(
            world.hub.executions.take_entity(entity, "newer", "msg_newer", world.clock.now, rules.LOCK_LEASE)
            or pytest.fail("the key is free"),
            current="msg_newer",
        )

        [retry] = world.hub.scheduler.fire_all()
        report = world.run(retry)

        assert report == StepReport(StepOutcome.DONE, "superseded")
        assert world.record(first.message_id).pipeline_status is PipelineStatus.CANCELLED
        assert len(world.connector.requests) == 1
