"""Lambda's asynchronous invocation, locally: retries per EventInvokeConfig, then the invocation
record on the OnFailure (or OnSuccess) destination (a moto queue; the function is a stand-in)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devstack.async_invoke import AsyncInvokeConfig, AsyncInvoker
from devstack.destinations import Destinations
from devstack.lambda_runtime import InvocationResult
from tests.aws import mocked_aws

ARN = "arn:aws:lambda:us-east-1:123456789012:function:notifier"


@pytest.fixture
def sqs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with mocked_aws(monkeypatch):
        yield boto3.client("sqs", region_name="us-east-1")


def queue(sqs: Any, name: str) -> tuple[str, str]:
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


class Function:
    """Fails its first ``failures`` invocations; signals when it has run ``expected`` times."""

    def __init__(self, failures: int, expected: int) -> None:
        self.failures = failures
        self.calls = 0
        self._expected = expected
        self.finished = threading.Event()

    def __call__(self, logical_id: str, event: dict[str, Any]) -> InvocationResult:
        self.calls += 1
        if self.calls >= self._expected:
            self.finished.set()
        if self.calls <= self.failures:
            return InvocationResult(f"req-{self.calls}", error={"errorType": "Boom", "errorMessage": "no"})
        return InvocationResult(f"req-{self.calls}", payload={"ok": self.calls})


def invoker(sqs: Any, function: Function, config: AsyncInvokeConfig) -> AsyncInvoker:
    return AsyncInvoker(
        function,
        {"Notifier": config},
        {"Notifier": ARN},
        Destinations(sqs, boto3.client("sns", region_name="us-east-1")),
        retry_delays=(0.01, 0.02),
    )


def wait_for_message(sqs: Any, url: str) -> dict[str, Any]:
    messages = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=10).get("Messages", [])
    assert messages, "nothing reached the destination"
    return dict(json.loads(messages[0]["Body"]))


def test_the_config_comes_from_sam_event_invoke_config_with_lambda_defaults() -> None:
    assert AsyncInvokeConfig.from_properties(None) == AsyncInvokeConfig(2, 21_600, None, None)
    config = AsyncInvokeConfig.from_properties(
        {
            "MaximumRetryAttempts": 0,
            "MaximumEventAgeInSeconds": 60,
            "DestinationConfig": {
                "OnFailure": {"Type": "SQS", "Destination": "arn:aws:sqs:us-east-1:123456789012:dlq"},
                "OnSuccess": {"Type": "SNS", "Destination": "arn:aws:sns:us-east-1:123456789012:done"},
            },
        }
    )
    assert config == AsyncInvokeConfig(
        0, 60, "arn:aws:sqs:us-east-1:123456789012:dlq", "arn:aws:sns:us-east-1:123456789012:done"
    )


def test_retries_exhausted_sends_the_invocation_record_after_the_last_attempt(sqs: Any) -> None:
    url, arn = queue(sqs, "failures")
    function = Function(failures=99, expected=3)
    async_invoker = invoker(sqs, function, AsyncInvokeConfig(on_failure_arn=arn))

    async_invoker.invoke("Notifier", {"Records": ["alarm"]})
    record = wait_for_message(sqs, url)

    assert function.calls == 3
    assert record["requestContext"] == {
        "requestId": "req-3",
        "functionArn": f"{ARN}:$LATEST",
        "condition": "RetriesExhausted",
        "approximateInvokeCount": 3,
    }
    assert record["requestPayload"] == {"Records": ["alarm"]}
    assert record["responsePayload"] == {"errorType": "Boom", "errorMessage": "no"}
    assert record["responseContext"]["functionError"] == "Unhandled"


def test_no_retries_configured_means_one_attempt(sqs: Any) -> None:
    url, arn = queue(sqs, "failures")
    function = Function(failures=99, expected=1)
    async_invoker = invoker(sqs, function, AsyncInvokeConfig(maximum_retry_attempts=0, on_failure_arn=arn))

    async_invoker.invoke("Notifier", {})
    record = wait_for_message(sqs, url)

    assert (function.calls, record["requestContext"]["approximateInvokeCount"]) == (1, 1)


def test_an_event_too_old_for_its_next_retry_goes_to_the_destination_as_event_age_exceeded(sqs: Any) -> None:
    url, arn = queue(sqs, "failures")
    function = Function(failures=99, expected=1)
    async_invoker = invoker(
        sqs, function, AsyncInvokeConfig(maximum_event_age_seconds=0.001, on_failure_arn=arn)
    )

    async_invoker.invoke("Notifier", {})
    record = wait_for_message(sqs, url)

    assert function.calls == 1
    assert record["requestContext"]["condition"] == "EventAgeExceeded"


def test_a_retry_that_succeeds_goes_to_on_success_and_not_on_failure(sqs: Any) -> None:
    failures_url, failures_arn = queue(sqs, "failures")
    successes_url, successes_arn = queue(sqs, "successes")
    function = Function(failures=1, expected=2)
    async_invoker = invoker(
        sqs, function, AsyncInvokeConfig(on_failure_arn=failures_arn, on_success_arn=successes_arn)
    )

    async_invoker.invoke("Notifier", {"n": 1})
    record = wait_for_message(sqs, successes_url)

    assert function.calls == 2
    assert record["requestContext"]["condition"] == "Success"
    assert record["responsePayload"] == {"ok": 2}
    assert "functionError" not in record["responseContext"]
    assert sqs.receive_message(QueueUrl=failures_url).get("Messages") is None


def test_stop_cancels_the_retries_not_yet_started(sqs: Any) -> None:
    function = Function(failures=99, expected=99)
    async_invoker = AsyncInvoker(
        function,
        {},
        {"Notifier": ARN},
        Destinations(sqs, boto3.client("sns", region_name="us-east-1")),
        retry_delays=(30.0,),
    )

    async_invoker.invoke("Notifier", {})
    async_invoker.stop()

    assert function.calls == 1
    assert async_invoker._timers == set()
