"""The local stack does CloudWatch's part (issue 13, "local = cloud"): the EMF documents a
function prints become metrics, and every queue's AWS/SQS metrics are published on a timer.

One fixture stack for the module (ports 0); the SQS metrics every half second instead of every
minute, so the test waits little."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from devstack.stack import LocalStack

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "devstack" / "template.yaml"
T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], timeout: float = 20.0, interval: float = 0.2) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout}s")
        time.sleep(interval)


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with LocalStack(
        template_path=FIXTURE,
        project_root=FIXTURE.parent,
        aws_port=0,
        api_port=0,
        url_port=0,
        echo_port=0,
        stack_name="fxm",
        poll_interval=0.1,
        scheduler_interval=0.5,
        sqs_metrics_interval=0.5,
    ) as running:
        yield running


def values(
    stack: LocalStack, namespace: str, name: str, dimensions: dict[str, str], stat: str
) -> list[float]:
    now = datetime.now(UTC)
    answer = stack.client("cloudwatch").get_metric_data(
        MetricDataQueries=[
            {
                "Id": "q",
                "MetricStat": {
                    "Metric": {
                        "Namespace": namespace,
                        "MetricName": name,
                        "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
                    },
                    "Period": 60,
                    "Stat": stat,
                },
            }
        ],
        StartTime=now - timedelta(minutes=10),
        EndTime=now + timedelta(minutes=1),
    )
    return [float(v) for v in answer["MetricDataResults"][0]["Values"]]


def api_event(path: str, query: dict[str, str]) -> dict[str, Any]:
    return {"rawPath": path, "queryStringParameters": query}


def test_an_emf_document_a_function_prints_becomes_a_metric(stack: LocalStack) -> None:
    assert values(stack, "Fixture", "FixtureCount", {"service": "fx"}, "Sum") == []

    stack.invoke("ApiFunction", api_event("/emf", {"n": "3"}))
    stack.invoke("ApiFunction", api_event("/emf", {"n": "4"}))

    assert stack.emf is not None
    assert stack.emf.wait_idle()
    assert sum(values(stack, "Fixture", "FixtureCount", {"service": "fx"}, "Sum")) == 7
    # The dimension values are the document's: another service's metric is another metric.
    assert values(stack, "Fixture", "FixtureCount", {"service": "other"}, "Sum") == []


def test_every_queue_publishes_its_aws_sqs_metrics(stack: LocalStack) -> None:
    url = stack.resources["StreamFailureQueue"]
    name = url.rsplit("/", 1)[-1]
    stack.client("sqs").send_message(QueueUrl=url, MessageBody="waiting")

    visible = wait_for(
        lambda: [
            v
            for v in values(
                stack, "AWS/SQS", "ApproximateNumberOfMessagesVisible", {"QueueName": name}, "Maximum"
            )
            if v >= 1
        ]
    )
    aged = wait_for(
        lambda: [
            v
            for v in values(stack, "AWS/SQS", "ApproximateAgeOfOldestMessage", {"QueueName": name}, "Maximum")
            if v >= 1
        ]
    )

    assert visible == [1.0]
    assert 1 <= aged[0] < 60
