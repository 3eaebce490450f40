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

import time
import uuid
from collections.abc import Iterator

import pytest

from devstack.demo import DEMO_MESSAGE_TYPE, DEMO_TENANT_ID, demo_body, parameter_overrides, pointed_at, seed
from devstack.stack import LocalStack
from hub.adapters.dynamo import keys
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.retry import RetryPolicy
from hub.domain.tenancy import Destination, Integration, IntegrationMode, MessageTypeConfig
from tests.aws import function_names, local_stack_on_free_ports
from tests.pipeline import wait_for_status

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e-unexpected-errors")]

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


def damaged_certificate_integration(local_stack: LocalStack) -> str:
    """An integration of the demo tenant whose destination needs the client certificate of a
    connection whose stored certificate item lost its sealed fields."""
    integration_id = f"int_e2e_{uuid.uuid4().hex[:8]}"
    connection_id = f"conn_{uuid.uuid4().hex[:8]}"
    table = local_stack.resources["HubTable"]
    local_stack.client("dynamodb").put_item(
        TableName=table,
        Item={
            **{
                name: {"S": value}
                for name, value in keys.certificate_key(DEMO_TENANT_ID, connection_id).items()
            },
            "item_type": {"S": "client_certificate"},
            "tenant_id": {"S": DEMO_TENANT_ID},
            "connection_id": {"S": connection_id},
        },
    )
    with pointed_at(local_stack):
        DynamoConfigRepository(table).put_integration(
            Integration(
                integration_id=integration_id,
                tenant_id=DEMO_TENANT_ID,
                name=integration_id,
                mode=IntegrationMode.ORCHESTRATION,
                message_types={DEMO_MESSAGE_TYPE: MessageTypeConfig()},
                destination=Destination(url=local_stack.echo_url, client_certificate_id=connection_id),
                # Auto retry on: an internal failure is still never scheduled.
                retry_policy=RetryPolicy(retry_auto_enabled=True, retry_max=3, ladder_seconds=(1,)),
            )
        )
    return integration_id


def dlq_depth(local_stack: LocalStack) -> int:
    attributes = local_stack.client("sqs").get_queue_attributes(
        QueueUrl=local_stack.resources["PipelineDLQ"], AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def test_a_step_raising_on_every_receive_ends_in_error_internal_in_the_error_tab(api, admin, local_stack):
    integration_id = damaged_certificate_integration(local_stack)
    body = {**demo_body(), "integration_id": integration_id}
    body["payload"] = {**body["payload"], "po_number": f"PO-{uuid.uuid4().hex[:8]}"}
    answer = api.post("/api/edi-hub/receive-message", json=body)
    assert answer.status_code == 202, answer.text
    message_id = answer.json()["message_id"]

    # Two receives 2 s apart take seconds; the bound only stops a hung run (a loaded machine
    # slows the local stack's pollers, it must not fail the test).
    failed = wait_for_status(api, message_id, "error", timeout=240)

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
    deadline = time.monotonic() + 120
    while dlq_depth(local_stack) == 0 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert dlq_depth(local_stack) == 1
    # Nothing reached the destination; no retry was scheduled.
    assert not [r for r in local_stack.echo.requests if r.headers.get("idempotency-key") == message_id]
    schedules = local_stack.client("scheduler").list_schedules(
        GroupName=local_stack.resources["HubScheduleGroup"]
    )["Schedules"]
    assert [s["Name"] for s in schedules if s["Name"].startswith("retry-")] == []
