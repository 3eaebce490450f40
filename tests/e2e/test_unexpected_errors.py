"""A step that raises something unexpected on every receive (issue 10, item 5), on the local stack:
SQS redelivers it until its last receive, where the worker moves the message to `error` /
`internal`; the partner's status and the admin `error` tab show it, and the step lands in the DLQ
(whose alarm watches its depth).

The cause is stored data the worker cannot read, reached through production code paths only: the
integration's destination names a client certificate whose stored item is damaged (fields
missing, as after a hand edit or a partial restore). Only the worker reads certificate items, so
the door accepts the message and the step raises `KeyError` on every receive. The issue's own
examples (NaN, deep nesting) are refused at the door once items 3 and 4 are fixed.

This module runs its own stack: the template's receive count (10) and visibility timeout (1260 s)
would take 3.5 hours, so the stack gets `PipelineMaxReceiveCount=2` as a parameter override (the
queue's redrive policy and the worker's HUB_PIPELINE_MAX_RECEIVES both follow it, as on AWS) and
its pipeline queue a 2-second visibility timeout once started. template.yaml is unchanged."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devstack.demo import DEMO_TENANT_ID, parameter_overrides, seed
from devstack.stack import LocalStack
from tests.aws import function_names, local_stack_on_free_ports
from tests.pipeline import poison_integration, post, wait_for_status
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

MAX_RECEIVES = 2
VISIBILITY_TIMEOUT_SECONDS = 2


@pytest.fixture(scope="module")
def local_stack() -> Iterator[LocalStack]:
    """This module's stack (it replaces the conftest one): two receives, two seconds apart."""
    overrides = {**parameter_overrides(), "PipelineMaxReceiveCount": str(MAX_RECEIVES)}
    no_cache = {name: {"HUB_CONFIG_CACHE_SECONDS": "0"} for name in function_names()}
    with local_stack_on_free_ports(
        stack_name="hub-e2e-internal", parameter_overrides=overrides, env_overrides=no_cache
    ) as stack:
        # A receive reads the queue's visibility timeout when it starts, and the worker's pollers
        # long-poll from the moment the stack is up: change it while they hold their receives,
        # once the long polls under way have ended, or a message that arrives within one long
        # poll is hidden for the template's 21 minutes.
        with stack.sqs_poller("PipelineWorkerFunction").paused():
            stack.client("sqs").set_queue_attributes(
                QueueUrl=stack.resources["PipelineQueue"],
                Attributes={"VisibilityTimeout": str(VISIBILITY_TIMEOUT_SECONDS)},
            )
        seed(stack)
        yield stack


def dlq_depth(local_stack: LocalStack) -> int:
    attributes = local_stack.client("sqs").get_queue_attributes(
        QueueUrl=local_stack.resources["PipelineDLQ"], AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def test_a_step_raising_on_every_receive_ends_in_error_internal_in_the_error_tab(api, admin, local_stack):
    message_id = post(api, poison_integration(local_stack, local_stack.echo_url))

    # Two receives 2 s apart take seconds alone; on a loaded machine as long as the stack works.
    failed = wait_for_status(api, message_id, "error")

    # The partner's view tells the truth: the hub failed, not the destination.
    assert failed["last_retry_error_class"] == "internal"
    assert failed["dest_status"] is None
    assert "dest_status_text" not in failed  # issue 27: the partner sees no answer text
    assert failed["retry_count"] == 0
    assert failed["next_retry_at"] is None
    # The admin error tab lists it.
    tab = admin.get("/api/admin/queue", params={"tenant_id": DEMO_TENANT_ID, "tab": "error"})
    assert tab.status_code == 200, tab.text
    [row] = [r for r in tab.json()["items"] if r["message_id"] == message_id]
    assert (row["pipeline_status"], row["last_retry_error_class"]) == ("error", "internal")
    assert row["uncertain"] is True  # it raised inside the connector: the hub cannot tell
    # The message's log says which step failed, and how, once.
    view = admin.get(f"/api/admin/messages/{message_id}").json()
    assert view["dest_status_text"] == "internal error (KeyError)"
    failures = [e for e in view["log"] if e.get("status") == "failure"]
    assert [(e["step"], e["error_class"]) for e in failures] == [("process", "internal")]
    # The step still failed its last receive: SQS moves it to the DLQ (the alarm's queue).
    assert wait_for(lambda: dlq_depth(local_stack), "the step in the pipeline DLQ") == 1
    # Nothing reached the destination; no retry was scheduled.
    assert not [r for r in local_stack.echo.requests if r.headers.get("idempotency-key") == message_id]
    schedules = local_stack.client("scheduler").list_schedules(
        GroupName=local_stack.resources["HubScheduleGroup"]
    )["Schedules"]
    assert [s["Name"] for s in schedules if s["Name"].startswith("retry-")] == []
