"""A run that died mid-step (a killed worker, Lambda's timeout) never gave its lease back; the
step's redelivery takes the message over once the lease expires (seed 004: "the job becomes
recoverable after its lease"). The dead run may have called the destination already, so the
takeover is the timeout's uncertainty: sent again only to a connection that declares it drops
repeated Idempotency-Keys, otherwise `error` + uncertain for an operator. Real worker on the
in-memory fakes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hub.domain.message import StepMessage
from hub.domain.status import PipelineStatus
from hub.pipeline import rules
from hub.pipeline.ports import Taken
from hub.pipeline.steps import INTERRUPTED_ATTEMPT
from tests.fakes.connector import OK
from tests.fakes.world import UNKEYED, World


def dead_run(world: World, idempotent_retries: bool) -> tuple[str, StepMessage]:
    """A message whose first step was taken by a run that then died (nothing finished), the
    lease now expired; the step to redeliver."""
    integration = world.configure()
    assert integration.destination is not None
    destination = integration.destination.model_copy(update={"idempotent_retries": idempotent_retries})
    world.hub.config.put_integration(integration.model_copy(update={"destination": destination}))
    record, step = world.send({"n": 1}, UNKEYED)
    taken = world.hub.executions.take(step, "run-that-died", world.clock.now, rules.LOCK_LEASE)
    assert isinstance(taken, Taken)
    assert taken.interrupted is False
    world.clock.advance(rules.LOCK_LEASE + timedelta(seconds=1))
    return record.message_id, step


@pytest.fixture
def world() -> World:
    return World()


def test_without_idempotent_retries_the_takeover_is_uncertain_and_nothing_is_sent(world: World) -> None:
    message_id, step = dead_run(world, idempotent_retries=False)

    world.run(step)

    final = world.record(message_id)
    assert (final.pipeline_status, final.uncertain) == (PipelineStatus.ERROR, True)
    assert final.last_retry_error_class == "timeout"
    assert final.dest_status_text == INTERRUPTED_ATTEMPT
    assert (final.lease_owner, final.retry_count) == (None, 0)
    assert world.connector.requests == []
    assert world.hub.scheduler.fire_all() == []  # no retry: an operator reconciles


def test_with_idempotent_retries_the_takeover_sends_again_under_the_same_key(world: World) -> None:
    message_id, step = dead_run(world, idempotent_retries=True)
    world.connector.script(OK)

    world.run(step)

    final = world.record(message_id)
    assert final.pipeline_status is PipelineStatus.SENT
    assert [r.idempotency_key for r in world.connector.requests] == [message_id]


def test_a_step_run_after_a_finished_one_is_not_a_takeover(world: World) -> None:
    """Control: an ordinary run (no lease left behind) calls the destination."""
    integration = world.configure()
    assert integration.destination is not None
    assert integration.destination.idempotent_retries is False
    record, step = world.send({"n": 2}, UNKEYED)

    world.run(step)

    assert world.record(record.message_id).pipeline_status is PipelineStatus.SENT
    assert len(world.connector.requests) == 1
