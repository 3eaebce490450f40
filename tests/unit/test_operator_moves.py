"""An operator's reprocess and cancel (hub.admin.operations) over the in-memory fakes, the
messages moved by the real worker (tests/fakes/world.py): a reprocess is refused while an
execution of the message is alive and a repeated click creates nothing; a message its
destination accepted is sent again only with force; a dead-lettered message can be cancelled
but a sent one cannot. The handler's answers, and the refusal made by the DynamoDB update's own
condition: tests/integration/test_operator_actions.py."""

from __future__ import annotations

from typing import Any

import pytest

from hub.admin.access import BOOTSTRAP
from hub.admin.operations import AlreadyDelivered, ExecutionInFlight, NotCancellable, Operations
from hub.delivery.port import DeliveryFailed
from hub.domain.failure import ErrorClass
from hub.domain.retry import RetryPolicy
from hub.domain.status import PipelineStatus
from tests.fakes.connector import OK
from tests.fakes.operations import fake_operations
from tests.fakes.world import World

AUTO = RetryPolicy(retry_auto_enabled=True, retry_max=5)
MAINTENANCE = DeliveryFailed(ErrorClass.HTTP_5XX, '{"error": "maintenance"}', dest_status="503")


@pytest.fixture
def world() -> World:
    return World()


def operations(world: World) -> Operations:
    return fake_operations(world.hub, clock=world.clock)


def received(world: World, po: str) -> str:
    """A message received (its first step on the queue, not run yet); its id."""
    return world.receive({"po_number": po}).record.message_id


def audit_events(world: World, message_id: str) -> list[dict[str, Any]]:
    """Operator actions in the message's log (kept on the message item)."""
    return [e for e in world.hub.messages.message_log(message_id) if "event" in e]


class TestReprocess:
    def test_refused_while_an_execution_is_in_flight_and_a_repeated_click_creates_nothing(self, world):
        world.connector.script(MAINTENANCE)  # auto retry off: the product default
        message_id = received(world, "PO-FLIGHT")
        ops = operations(world)

        # The first execution is still queued: it is alive.
        with pytest.raises(ExecutionInFlight) as refused:
            ops.reprocess(message_id, BOOTSTRAP)
        assert (refused.value.http_status, refused.value.code) == (409, "execution_in_flight")

        world.settle()  # the first execution fails and finishes: error
        assert world.record(message_id).pipeline_status is PipelineStatus.ERROR
        ops.reprocess(message_id, BOOTSTRAP)
        with pytest.raises(ExecutionInFlight) as second:
            ops.reprocess(message_id, BOOTSTRAP)

        assert second.value.http_status == 409
        steps = world.hub.queue.drain()
        assert len(steps) == 1
        assert steps[0].step.execution_id == world.record(message_id).execution_id

    def test_a_delivered_message_is_sent_again_only_with_force(self, world):
        message_id = received(world, "PO-TWICE")
        world.settle()
        assert world.record(message_id).pipeline_status is PipelineStatus.SENT
        ops = operations(world)

        for _ in range(2):  # refused, and refused again
            with pytest.raises(AlreadyDelivered) as refused:
                ops.reprocess(message_id, BOOTSTRAP)
            assert (refused.value.http_status, refused.value.code) == (409, "already_delivered")
            assert refused.value.details == {"message_id": message_id, "pipeline_status": "sent"}
        assert world.hub.queue.drain() == []
        assert world.record(message_id).pipeline_status is PipelineStatus.SENT
        assert audit_events(world, message_id) == []

        forced = ops.reprocess(message_id, BOOTSTRAP, force=True)

        assert forced.pipeline_status is PipelineStatus.RECEIVED
        world.settle()
        assert world.record(message_id).pipeline_status is PipelineStatus.SENT
        assert len(world.connector.requests) == 2
        [event] = audit_events(world, message_id)
        assert (event["event"], event["forced"]) == ("message.reprocessed", True)


class TestCancelRetry:
    def test_a_dead_lettered_message_can_be_cancelled_but_a_sent_one_cannot(self, world):
        world.configure(retry_policy=AUTO.model_copy(update={"retry_max": 0}))
        world.connector.script(MAINTENANCE, OK)
        dead = received(world, "PO-DL")
        world.settle()
        sent = received(world, "PO-OK")
        world.settle()
        assert world.record(dead).pipeline_status is PipelineStatus.DEAD_LETTER
        ops = operations(world)

        cancelled = ops.cancel_retry(dead, BOOTSTRAP)
        with pytest.raises(NotCancellable) as refused:
            ops.cancel_retry(sent, BOOTSTRAP)

        assert cancelled.pipeline_status is PipelineStatus.CANCELLED
        assert world.record(dead).pipeline_status is PipelineStatus.CANCELLED
        assert (refused.value.http_status, refused.value.code) == (409, "not_cancellable")
        assert refused.value.details["pipeline_status"] == "sent"
