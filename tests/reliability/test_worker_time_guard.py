"""Reliability of the worker's time guard (issue 30) on the local stack: a batch whose invocation
cannot fit its steps returns the untaken ones to the queue; none is lost or sent twice.

The connection is the issue's: a read timeout of 300 s, longer than the worker's whole
invocation (its template Timeout, 210 s). So each invocation runs the first record of its batch
(its read timeout capped to end before the invocation) and returns the others, which come back
as copies and are taken one an invocation. The pipeline queue keeps the template's visibility
timeout (1,260 s): a record of a killed invocation, or one reported failed, would not come back
within these tests - except in the last one, which shortens it on purpose. The worker's SQS calls
go through a proxy (tests/reliability/faults.py) that sees the copies and can refuse them.
Destinations honour our `Idempotency-Key` and count what they applied (worker_support.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack.demo import DEMO_API_KEY, parameter_overrides, seed
from devstack.stack import LocalStack
from tests.aws import function_names, local_stack_on_free_ports
from tests.pipeline import integration, post, wait_for_status
from tests.reliability.faults import AwsFaultProxy
from tests.reliability.worker_support import KeyedDestination, Reply, queue_counts, wait_until

pytestmark = pytest.mark.e2e

WORKER = "PipelineWorkerFunction"
TEMPLATE_VISIBILITY_SECONDS = 1260
#: The issue's connection: its read timeout alone is longer than the worker's invocation.
NEAR_300: dict[str, Any] = {"connect_timeout_seconds": 1, "read_timeout_seconds": 300}
GUARD_LINE = "time guard: records returned to the queue"


@pytest.fixture(scope="module")
def sqs_gate() -> Iterator[AwsFaultProxy]:
    """The worker's SQS calls (its copies; it receives nothing itself) go through this proxy."""
    with AwsFaultProxy() as gate:
        yield gate


@pytest.fixture(scope="module")
def function_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("guard") / "functions.log"


@pytest.fixture(scope="module")
def stack(sqs_gate: AwsFaultProxy, function_log: Path) -> Iterator[LocalStack]:
    # No configuration cache: each test's fresh integration is seen at once.
    env = {name: {"HUB_CONFIG_CACHE_SECONDS": "0"} for name in function_names()}
    env[WORKER].update(sqs_gate.environment("sqs"))
    with local_stack_on_free_ports(
        stack_name="hub-reliability-guard",
        parameter_overrides=parameter_overrides(),
        env_overrides=env,
        function_log=function_log,
    ) as running:
        sqs_gate.upstream = running.aws_endpoint
        seed(running)
        yield running


@pytest.fixture(scope="module")
def api(stack: LocalStack) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {DEMO_API_KEY}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=30, trust_env=False) as client:
        yield client


@pytest.fixture
def destination() -> Iterator[KeyedDestination]:
    with KeyedDestination() as server:
        yield server


@pytest.fixture
def gate(sqs_gate: AwsFaultProxy) -> Iterator[AwsFaultProxy]:
    """The proxy, every fault lifted when the test ends (also when it fails)."""
    sqs_gate.heal()
    yield sqs_gate
    sqs_gate.heal()


def post_together(api: httpx.Client, stack: LocalStack, integration_id: str, count: int) -> list[str]:
    """`count` messages whose steps wait on the queue together: the next receive takes them as
    one batch (BatchSize 5)."""
    with stack.sqs_poller(WORKER).paused():
        ids = [post(api, integration_id) for _ in range(count)]
        assert queue_counts(stack, "PipelineQueue")["ApproximateNumberOfMessages"] == count
    return ids


def copies_of(gate: AwsFaultProxy, ids: list[str], *, refused: bool = False) -> list[dict[str, Any]]:
    """The worker's SendMessage calls that carried one of `ids`' steps back (refused or not)."""
    return [
        call.body
        for call in gate.seen("sqs", "SendMessage")
        if call.refused is refused and json.loads(call.body["MessageBody"]).get("message_id") in ids
    ]


def guard_lines(function_log: Path) -> list[dict[str, Any]]:
    """The worker's lines saying its guard returned records (the file exists once a function
    has run)."""
    if not function_log.exists():
        return []
    lines = function_log.read_text(encoding="utf-8", errors="replace").splitlines()
    parsed = [json.loads(line) for line in lines if line.startswith("{") and GUARD_LINE in line]
    return [line for line in parsed if line.get("message") == GUARD_LINE]


def settled(stack: LocalStack) -> bool:
    return not any(queue_counts(stack, "PipelineQueue").values()) and not any(
        queue_counts(stack, "PipelineDLQ").values()
    )


def test_a_batch_short_of_time_returns_its_untaken_steps_and_none_is_lost_or_sent_twice(
    api: httpx.Client,
    stack: LocalStack,
    destination: KeyedDestination,
    gate: AwsFaultProxy,
    function_log: Path,
) -> None:
    """Five steps in one batch towards a connection that needs more than the invocation: the
    first is delivered, the four others go back as copies (same body and attributes) and are
    delivered by the following invocations - within seconds, so not by a redelivery after the
    visibility timeout. The destination applies each order once and is called once per message."""
    destination.script(Reply(delay_seconds=1.0))
    integration_id = integration(stack, destination.url, **NEAR_300)
    before = len(guard_lines(function_log))

    ids = post_together(api, stack, integration_id, 5)

    for message_id in ids:
        assert wait_for_status(api, message_id, "sent")["retry_count"] == 0
    assert {message_id: destination.applied[message_id] for message_id in ids} == dict.fromkeys(ids, 1)
    assert {message_id: len(destination.requests_for(message_id)) for message_id in ids} == dict.fromkeys(
        ids, 1
    )
    copies = copies_of(gate, ids)
    assert copies, "no invocation had to return a step"
    for copy in copies:  # as it came: the step's ids ride in its message attributes too
        step = json.loads(copy["MessageBody"])
        assert copy["MessageAttributes"]["message_id"]["StringValue"] == step["message_id"]
        assert copy["MessageAttributes"]["step"]["StringValue"] == step["step"]
        assert copy.get("DelaySeconds", 0) == 0
    wait_until(lambda: settled(stack), "nothing left on the pipeline queue or its DLQ")
    lines = guard_lines(function_log)[before:]
    assert sum(line["resent"] for line in lines) == len(copies)
    assert {line["reported_failed"] for line in lines} == {0}


def test_copies_the_queue_refuses_are_reported_failed_and_come_back_after_the_visibility_timeout(
    api: httpx.Client,
    stack: LocalStack,
    destination: KeyedDestination,
    gate: AwsFaultProxy,
) -> None:
    """SQS refuses the worker's copies: the untaken steps are reported as batch item failures,
    so SQS keeps them and returns them after the visibility timeout (cut to 5 s here). Once SQS
    takes copies again, each is delivered once; none was lost."""
    destination.script(Reply(delay_seconds=1.0))
    integration_id = integration(stack, destination.url, **NEAR_300)
    queue = stack.resources["PipelineQueue"]
    sqs = stack.client("sqs")
    with stack.sqs_poller(WORKER).paused():
        sqs.set_queue_attributes(QueueUrl=queue, Attributes={"VisibilityTimeout": "5"})
    try:
        gate.fail("sqs", "SendMessage")
        ids = post_together(api, stack, integration_id, 3)
        wait_until(lambda: copies_of(gate, ids, refused=True), "the worker tried to return a step")
        wait_until(lambda: any(destination.applied[m] for m in ids), "the batch's first step was delivered")
        waiting = [m for m in ids if not destination.requests_for(m)]
        assert waiting  # not delivered, nor lost: reported, and in flight until the timeout ends
        gate.heal()

        for message_id in ids:
            wait_for_status(api, message_id, "sent")
    finally:
        gate.heal()
        with stack.sqs_poller(WORKER).paused():
            sqs.set_queue_attributes(
                QueueUrl=queue, Attributes={"VisibilityTimeout": str(TEMPLATE_VISIBILITY_SECONDS)}
            )

    assert {message_id: destination.applied[message_id] for message_id in ids} == dict.fromkeys(ids, 1)
    assert {message_id: len(destination.requests_for(message_id)) for message_id in ids} == dict.fromkeys(
        ids, 1
    )
    wait_until(lambda: settled(stack), "nothing left on the pipeline queue or its DLQ")
