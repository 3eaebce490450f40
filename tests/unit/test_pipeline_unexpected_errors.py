"""A step that keeps raising something nothing classified (issue 10, item 5): SQS redelivers it
until its last receive, where the message moves to `error` / `internal` (the exception's type
only), visible in the `error` tab and the partner's status; the step still fails, so it lands in
the DLQ. Real worker and retry policy on the in-memory fakes."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from hub.adapters.dynamo import keys
from hub.delivery.port import DeliveryFailed
from hub.domain import idempotency
from hub.domain.failure import ErrorClass
from hub.domain.retry import RetryPolicy, is_retryable
from hub.domain.status import PipelineStatus
from hub.errors import QueueUnavailable
from hub.pipeline import rules
from hub.pipeline.ports import StepOutcome, StepReport
from tests.fakes import FakeHub, FakeMetrics
from tests.fakes.connector import OK
from tests.fakes.messages import message_key
from tests.fakes.world import INTEGRATION, KEYED, UNKEYED, World

AUTO = RetryPolicy(retry_auto_enabled=True, retry_max=3, ladder_seconds=(30,))
#: An exception whose text quotes payload data, as e.g. a KeyError or a ValueError may.
LEAKY = KeyError("cpf 123.456.789-09 of jose@example.com")


@pytest.fixture
def world() -> World:
    return World()


def stored(world: World, message_id: str) -> dict[str, object]:
    item = world.hub.table.get(message_key(message_id))
    assert item is not None
    return item


def test_internal_is_a_class_of_its_own_and_never_retryable() -> None:
    assert ErrorClass("internal") is ErrorClass.INTERNAL
    assert not is_retryable(ErrorClass.INTERNAL, idempotent_retries=True)


class TestBeforeTheLastReceive:
    def test_the_step_raises_for_sqs_to_redeliver_and_the_message_keeps_its_status(
        self, world: World
    ) -> None:
        world.connector.script(LEAKY)
        record, step = world.send({"n": 1}, UNKEYED)

        with pytest.raises(KeyError):
            world.run(step)

        waiting = world.record(record.message_id)
        assert waiting.pipeline_status is PipelineStatus.RECEIVED
        assert (waiting.last_retry_error_class, waiting.lease_owner) == (None, None)
        assert world.hub.executions.live_execution(record.message_id, world.clock.now) == record.execution_id
        # The redelivery runs the step again.
        world.connector.script(world.connector.answers[0], world.connector.answers[0])
        with pytest.raises(KeyError):
            world.run(step)
        assert len(world.connector.requests) == 2


class TestOnTheLastReceive:
    def test_the_message_ends_in_error_internal_and_the_step_still_fails(self, world: World) -> None:
        world.configure(retry_policy=AUTO)  # auto retry on: internal is still never scheduled
        world.connector.script(LEAKY)
        record, step = world.send({"n": 1}, UNKEYED)

        with pytest.raises(KeyError):  # the batch item fails: SQS moves the step to the DLQ
            world.run(step, last_delivery=True)

        final = world.record(record.message_id)
        assert final.pipeline_status is PipelineStatus.ERROR
        assert final.last_retry_error_class == "internal"
        assert final.dest_status_text == "internal error (KeyError)"
        assert final.dest_status is None  # no destination answer beside it
        assert final.uncertain is True  # the connector was called: it may have the message
        assert final.step_seq == 1
        assert final.completed_at == world.clock.now
        assert world.hub.executions.live_execution(record.message_id, world.clock.now) is None
        [*_, entry] = world.hub.messages.message_log(record.message_id)
        assert {k: entry[k] for k in ("step", "status", "error_class", "detail", "uncertain")} == {
            "step": "process",
            "status": "failure",
            "error_class": "internal",
            "detail": "internal error (KeyError)",
            "uncertain": True,
        }
        item = stored(world, record.message_id)
        # In the admin `error` tab (GSI1 is the tabs' index).
        index = keys.status_index_keys("t1", "error", str(item["updated_at"]), record.message_id)
        assert (item["GSI1PK"], item["GSI1SK"]) == (index["GSI1PK"], index["GSI1SK"])
        # The reason is the exception's type alone: nothing of its text.
        text = json.dumps(item, default=str)
        assert "123.456.789-09" not in text
        assert "jose@example.com" not in text
        assert world.hub.scheduler.calls == []
        assert world.hub.metrics.total("StepsSentToDLQ") == 1
        assert world.hub.metrics.total("StepErrors", step="process") == 1

    def test_a_damaged_payload_fails_before_the_destination_is_called(self, world: World) -> None:
        record, step = world.send({"n": 1}, UNKEYED)
        item = stored(world, record.message_id)
        world.hub.table.put({**item, "payload": '{"n": 1'})  # stored data the hub cannot read

        with pytest.raises(json.JSONDecodeError):
            world.run(step, last_delivery=True)

        final = world.record(record.message_id)
        assert (final.pipeline_status, final.last_retry_error_class) == (PipelineStatus.ERROR, "internal")
        assert final.dest_status_text == "internal error (JSONDecodeError)"
        assert final.uncertain is False
        assert world.connector.requests == []

    def test_a_scheduled_retry_raising_ends_in_error_not_retry_pending(self, world: World) -> None:
        world.configure(retry_policy=AUTO)
        world.connector.script(DeliveryFailed(ErrorClass.HTTP_5XX, "busy", dest_status="503"), LEAKY)
        record, step = world.send({"po_number": "PO-R"})
        world.run(step)
        [retry] = world.hub.scheduler.fire_all()

        with pytest.raises(KeyError):
            world.run(retry, last_delivery=True)

        final = world.record(record.message_id)
        assert final.pipeline_status is PipelineStatus.ERROR
        assert (final.last_retry_error_class, final.retry_count) == ("internal", 1)
        assert (final.dest_status, final.next_retry_at) == (None, None)
        assert world.steps_logged(record.message_id)[-1] == ("deliver", "failure")
        assert world.hub.executions.live_execution(record.message_id, world.clock.now) is None
        assert len(world.hub.scheduler.calls) == 1  # only the 503's retry

    def test_the_step_redriven_from_the_dlq_is_dropped_and_a_reprocess_is_admitted(
        self, world: World
    ) -> None:
        world.connector.script(LEAKY)
        record, step = world.send({"n": 1}, UNKEYED)
        with pytest.raises(KeyError):
            world.run(step, last_delivery=True)
        world.connector.script(OK)
        world.clock.advance(timedelta(minutes=10))

        # `error` is final: the step's copy in the DLQ, redriven, calls nobody.
        assert world.run(step) == StepReport(StepOutcome.DROPPED, "duplicate_step")
        assert len(world.connector.requests) == 1
        # The way out is the operator's reprocess, admitted at once.
        failed = world.record(record.message_id)
        restarted = world.hub.messages.restart(
            failed, "exe_reprocess", world.clock.now, rules.ADMISSION_ABANDONED_AFTER
        )
        assert restarted is not None
        assert restarted.pipeline_status is PipelineStatus.RECEIVED


class TestWhatIsNotInternal:
    def test_an_outage_on_the_last_receive_leaves_the_status_for_a_redrive(self, world: World) -> None:
        """A busy entity whose reschedule cannot be published: the queue is down, not the hub
        broken. The message stays `received` (a redrive after the outage resumes it)."""
        record, step = world.send({"po_number": "PO-Q"})
        values = idempotency.duplicate_key_values({"po_number": "PO-Q"}, ("po_number",))
        entity = rules.entity_key("t1", INTEGRATION, KEYED, values)
        world.hub.executions.acquire_lock(entity, "other-run", world.clock.now, rules.LOCK_LEASE)
        world.hub.queue.fail()

        with pytest.raises(QueueUnavailable):
            world.run(step, last_delivery=True)

        waiting = world.record(record.message_id)
        assert (waiting.pipeline_status, waiting.last_retry_error_class) == (PipelineStatus.RECEIVED, None)
        assert world.hub.executions.live_execution(record.message_id, world.clock.now) is None
        assert world.hub.metrics.total("StepsSentToDLQ") == 1

    def test_a_step_raising_after_its_outcome_was_written_changes_nothing(self) -> None:
        """The finish released the lease: the failure after it finds the lease gone."""

        class FailingAfterSent(FakeMetrics):
            def count(self, name: str, value: float = 1, **dimensions: str) -> None:
                super().count(name, value, **dimensions)
                if name == "StepSucceeded" and dimensions.get("step") == "deliver":
                    raise RuntimeError("metrics sink broken")

        world = World(hub=FakeHub(metrics=FailingAfterSent()))
        record, step = world.send({"n": 1}, UNKEYED)

        with pytest.raises(RuntimeError):
            world.run(step, last_delivery=True)

        final = world.record(record.message_id)
        assert (final.pipeline_status, final.last_retry_error_class) == (PipelineStatus.SENT, None)
        assert len(world.connector.requests) == 1
