"""The local stack's event sources behave like Lambda's: asynchronous (SNS) invocations are
retried and then reach their on-failure destination; SQS sources run 5 batches at once from
the start, scale up while there is a backlog, and respect ScalingConfig.MaximumConcurrency and
reserved concurrency (a fixture template; every wait polls against a deadline).
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from devstack.stack import LocalStack
from tests.integration.devstack.test_devstack_stack import wait_for
from tests.pipeline import expire_visibility
from tests.reliability.worker_support import process_gone
from tests.serving import serving_thread

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "devstack" / "sources.yaml"
MAX_INSTANCES = 6


class Barrier:
    """A 127.0.0.1 server the barrier function posts each message to; it answers when the
    message's group (the body before "-") is released, and counts what is in flight."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.in_flight: dict[str, int] = defaultdict(int)
        self.peak: dict[str, int] = defaultdict(int)
        self.done: dict[str, int] = defaultdict(int)
        self._released: dict[str, threading.Event] = defaultdict(threading.Event)
        barrier = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
                barrier.hold(body.split("-", 1)[0])
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def hold(self, group: str) -> None:
        with self._lock:
            self.in_flight[group] += 1
            self.peak[group] = max(self.peak[group], self.in_flight[group])
            released = self._released[group]
        released.wait(60)
        with self._lock:
            self.in_flight[group] -= 1
            self.done[group] += 1

    def release(self, group: str) -> None:
        with self._lock:
            released = self._released[group]
        released.set()

    def release_all(self) -> None:
        with self._lock:
            events = list(self._released.values())
        for event in events:
            event.set()


@pytest.fixture(scope="module")
def barrier() -> Iterator[Barrier]:
    barrier = Barrier()
    thread = serving_thread(barrier.server)
    thread.start()
    yield barrier
    barrier.release_all()
    barrier.server.shutdown()
    barrier.server.server_close()


@pytest.fixture(scope="module")
def stack(barrier: Barrier) -> Iterator[LocalStack]:
    with LocalStack(
        template_path=FIXTURE,
        project_root=FIXTURE.parent,
        aws_port=0,
        api_port=0,
        url_port=0,
        echo_port=0,
        stack_name="src",
        poll_interval=0.1,
        max_instances=MAX_INSTANCES,
        async_retry_delays=(0.2, 0.4),
        env_overrides={"*": {"BARRIER_URL": barrier.url}},
    ) as running:
        yield running
        barrier.release_all()  # let held batches finish before the stack stops


def send(stack: LocalStack, queue: str, bodies: list[str]) -> None:
    sqs = stack.client("sqs")
    for body in bodies:
        sqs.send_message(QueueUrl=stack.resources[queue], MessageBody=body)


# --- SQS concurrency --------------------------------------------------------------------------


def test_an_sqs_source_starts_with_five_batches_in_flight_and_scales_up_on_a_backlog(
    stack: LocalStack, barrier: Barrier
) -> None:
    poller = stack.sqs_poller("BarrierFunction")
    assert poller.concurrency.floor == 5  # Lambda's starting concurrency
    send(stack, "BarrierQueue", [f"barrier-{n}" for n in range(9)])

    wait_for(lambda: barrier.in_flight["barrier"] >= 5, timeout=60)
    # Every batch is held and the queue still has messages: one more poller at a time, up to
    # the local instance limit.
    wait_for(lambda: barrier.in_flight["barrier"] == MAX_INSTANCES, timeout=60)
    barrier.release("barrier")
    wait_for(lambda: barrier.done["barrier"] == 9, timeout=60)

    assert barrier.peak["barrier"] == MAX_INSTANCES
    assert poller.concurrency.peak == MAX_INSTANCES


def test_maximum_concurrency_caps_the_batches_in_flight(stack: LocalStack, barrier: Barrier) -> None:
    send(stack, "CappedQueue", [f"capped-{n}" for n in range(5)])

    wait_for(lambda: barrier.in_flight["capped"] == 2, timeout=60)
    barrier.release("capped")
    wait_for(lambda: barrier.done["capped"] == 5, timeout=60)

    assert barrier.peak["capped"] == 2
    assert stack.sqs_poller("CappedFunction").concurrency.cap == 2


def test_reserved_concurrency_caps_the_batches_in_flight(stack: LocalStack, barrier: Barrier) -> None:
    send(stack, "ReservedQueue", [f"reserved-{n}" for n in range(5)])

    wait_for(lambda: barrier.in_flight["reserved"] == 3, timeout=60)
    barrier.release("reserved")
    wait_for(lambda: barrier.done["reserved"] == 5, timeout=60)

    assert barrier.peak["reserved"] == 3
    assert stack.sqs_poller("ReservedFunction").concurrency.cap == 3


# --- SNS: asynchronous invocation -------------------------------------------------------------


def attempts(stack: LocalStack, message: str) -> int:
    item = (
        stack.client("dynamodb")
        .get_item(
            TableName=stack.resources["RecordTable"],
            Key={"PK": {"S": "attempts"}, "SK": {"S": message}},
            ConsistentRead=True,
        )
        .get("Item")
    )
    return int(item["attempts"]["N"]) if item else 0


def failure_records(stack: LocalStack) -> list[dict[str, Any]]:
    sqs = stack.client("sqs")
    queue_url = stack.resources["AsyncFailureQueue"]
    found: list[dict[str, Any]] = []
    while True:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return found
        for message in messages:
            found.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def failure_record_for(stack: LocalStack, message: str) -> dict[str, Any]:
    """The on-failure record of the invocation for SNS message ``message``, once it is there."""
    kept: list[dict[str, Any]] = []

    def probe() -> dict[str, Any] | None:
        kept.extend(failure_records(stack))
        return next((r for r in kept if r["requestPayload"]["Records"][0]["Sns"]["Message"] == message), None)

    return wait_for(probe, timeout=60)


def test_a_failing_sns_invocation_is_retried_twice_then_goes_to_the_on_failure_destination(
    stack: LocalStack,
) -> None:
    stack.client("sns").publish(TopicArn=stack.resources["FlakyTopic"], Message="always-fail")

    record = failure_record_for(stack, "always-fail")

    assert attempts(stack, "always-fail") == 3
    assert record["version"] == "1.0"
    assert record["timestamp"].endswith("Z")
    context = record["requestContext"]
    assert context["condition"] == "RetriesExhausted"
    assert context["approximateInvokeCount"] == 3
    assert context["functionArn"] == stack.attributes[("FlakyFunction", "Arn")] + ":$LATEST"
    assert context["requestId"]
    (sns_record,) = record["requestPayload"]["Records"]
    assert sns_record["EventSource"] == "aws:sns"
    assert sns_record["Sns"]["Message"] == "always-fail"
    assert record["responseContext"] == {
        "statusCode": 200,
        "executedVersion": "$LATEST",
        "functionError": "Unhandled",
    }
    assert record["responsePayload"]["errorType"] == "RuntimeError"
    assert record["responsePayload"]["errorMessage"] == "always-fail: attempt 3"


def test_an_sns_invocation_that_fails_once_succeeds_on_the_retry_and_sends_nothing(
    stack: LocalStack,
) -> None:
    stack.client("sns").publish(TopicArn=stack.resources["FlakyTopic"], Message="fail-once")

    wait_for(lambda: attempts(stack, "fail-once") >= 2, timeout=60)

    # A failure record would have been sent before the retry that succeeded.
    assert attempts(stack, "fail-once") == 2
    assert [
        r
        for r in failure_records(stack)
        if r["requestPayload"]["Records"][0]["Sns"]["Message"] == "fail-once"
    ] == []


# --- Faults the reliability suite injects (tests/reliability) --------------------------------


def visible(stack: LocalStack, queue: str) -> int:
    attributes = stack.client("sqs").get_queue_attributes(
        QueueUrl=stack.resources[queue], AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def test_crash_kills_the_running_instance_and_its_batch_comes_back(
    stack: LocalStack, barrier: Barrier
) -> None:
    assert stack.crash("ReservedFunction", every=True) == []  # nothing running: nothing to kill
    send(stack, "ReservedQueue", ["crash-1"])
    wait_for(lambda: barrier.in_flight["crash"] == 1, timeout=60)

    killed = stack.crash("ReservedFunction", every=True)

    assert len(killed) == 1
    wait_for(lambda: process_gone(killed[0]), timeout=10)
    # The invocation failed with its instance, so the batch was not deleted: once its visibility
    # timeout is over (cut short here) the message runs again, on a new instance.
    wait_for(lambda: expire_visibility(stack.resources["ReservedQueue"]) == 1, timeout=10)
    wait_for(lambda: barrier.in_flight["crash"] == 2, timeout=60)
    barrier.release("crash")
    wait_for(lambda: barrier.done["crash"] == 2, timeout=60)
    with pytest.raises(KeyError):
        stack.crash("NoSuchFunction")


def test_a_paused_sqs_source_receives_nothing_until_resumed(stack: LocalStack, barrier: Barrier) -> None:
    poller = stack.sqs_poller("CappedFunction")

    with poller.paused():
        send(stack, "CappedQueue", ["paused-1", "paused-2"])
        assert poller.poll() is False  # a poll while paused receives nothing
        assert visible(stack, "CappedQueue") == 2

    barrier.release("paused")
    wait_for(lambda: barrier.done["paused"] == 2, timeout=60)
    assert visible(stack, "CappedQueue") == 0
