"""Recovery after an outage with a bulk job (issue 28, point 3), on the local stack: 500 messages (100
in `make test`, tests/reliability/sizes.py) dead-lettered by a destination that was down, one bulk
reprocess, the pipeline worker killed while it runs the job's page - and each message applied by the
destination exactly once, counted by the hub's own `Idempotency-Key` (the message id), each acted on
by the job once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from devstack.demo import DEMO_ADMIN_TOKEN, DEMO_API_KEY, DEMO_TENANT_ID, parameter_overrides, seed
from devstack.stack import LocalStack
from hub.adapters.dynamo import keys
from hub.domain.retry import RetryPolicy
from tests.aws import function_names, local_stack_on_free_ports
from tests.reliability.sizes import proof_size
from tests.reliability.worker_support import (
    KeyedDestination,
    Reply,
    expire_lease,
    integration,
    message_items,
    post,
    process_gone,
    wait_until,
)

pytestmark = pytest.mark.e2e

WORKER = "PipelineWorkerFunction"
VISIBILITY_TIMEOUT_SECONDS = 3
N = proof_size(100, 500)
#: Dead-lettered at the first failure: the outage's messages wait for the operator.
DEAD_AT_ONCE = RetryPolicy(retry_auto_enabled=True, retry_max=0)


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    env = {name: {"HUB_CONFIG_CACHE_SECONDS": "0"} for name in function_names()}
    # 25 per second: a page is 125 messages, so the job spans four pages in about 20 s.
    env[WORKER]["HUB_RELEASE_RATE_PER_SECOND"] = "25"
    with local_stack_on_free_ports(
        stack_name="hub-reliability-bulk", parameter_overrides=parameter_overrides(), env_overrides=env
    ) as running:
        seed(running)
        # A killed batch comes back after 3 s, not 21 minutes (no long poll may be under way while
        # the timeout changes: paused, none is).
        with running.sqs_poller(WORKER).paused():
            running.client("sqs").set_queue_attributes(
                QueueUrl=running.resources["PipelineQueue"],
                Attributes={"VisibilityTimeout": str(VISIBILITY_TIMEOUT_SECONDS)},
            )
        yield running


def client(url: str, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60, trust_env=False
    )


def job_item(stack: LocalStack, job_id: str) -> dict[str, Any]:
    key = {name: {"S": value} for name, value in keys.bulk_job_key(DEMO_TENANT_ID, job_id).items()}
    found = stack.client("dynamodb").get_item(
        TableName=stack.resources["HubTable"], Key=key, ConsistentRead=True
    )
    return found.get("Item", {})


def expire_page_lease(stack: LocalStack, job_id: str) -> None:
    """The killed run's page lease (120 s) run out, fast-forwarded like a message's lease."""
    key = {name: {"S": value} for name, value in keys.bulk_job_key(DEMO_TENANT_ID, job_id).items()}
    stack.client("dynamodb").update_item(
        TableName=stack.resources["HubTable"],
        Key=key,
        UpdateExpression="SET page_lease_until = :past",
        ConditionExpression="attribute_exists(page_lease_until)",
        ExpressionAttributeValues={":past": {"N": "1"}},
    )


def statuses(stack: LocalStack, message_ids: list[str]) -> set[str]:
    return {item["pipeline_status"] for item in message_items(stack, message_ids)}


class Progress:
    """Every message sent in the end: a delivery killed with its worker leaves its message leased
    for 5 minutes (hub.pipeline.rules.LOCK_LEASE), so when nothing moved for a while the leases of
    the messages not yet sent are run out (fast-forwarded, as the worker-fault tests do). A lease
    whose owner moved on between the read and the write is left alone: that run is progress."""

    def __init__(self, stack: LocalStack, message_ids: list[str]) -> None:
        self._stack, self._ids = stack, message_ids
        self._sent, self._since = -1, time.monotonic()

    def all_sent(self) -> bool:
        items = message_items(self._stack, self._ids)
        sent = sum(item["pipeline_status"] == "sent" for item in items)
        if sent != self._sent:
            self._sent, self._since = sent, time.monotonic()
        elif time.monotonic() - self._since > 15:
            for item in items:
                if item["pipeline_status"] != "sent" and "lease_owner" in item:
                    expire_lease(self._stack, item["PK"].removeprefix("MSG#"), item["lease_owner"])
            self._since = time.monotonic()
        return sent == len(self._ids)


@pytest.mark.timeout(1200)
def test_dead_letters_recovered_by_one_job_through_a_worker_crash_each_applied_once(stack):
    with KeyedDestination() as destination:
        destination.script(Reply(status=503))  # the outage
        integration_id = integration(stack, destination.url, DEAD_AT_ONCE, idempotent_retries=True)
        with client(stack.api_url, DEMO_API_KEY) as api, ThreadPoolExecutor(8) as pool:
            ids = list(pool.map(lambda _: post(api, integration_id), range(N)))
        wait_until(
            lambda: statuses(stack, ids) == {"dead_letter"},
            "every message dead-lettered by the outage",
            timeout=600,
            interval=2,
        )
        assert destination.applied == {}
        destination.script(Reply(status=200))  # the destination is back

        with client(stack.function_urls["AdminApiFunction"], DEMO_ADMIN_TOKEN) as admin:
            created = admin.post(
                "/api/admin/bulk-jobs",
                json={
                    "tenant_id": DEMO_TENANT_ID,
                    "action": "reprocess",
                    "filter": {"tab": "dead_letter", "integration_id": integration_id},
                },
                headers={"Idempotency-Key": f"recover-{integration_id}"},
            )
            assert created.status_code == 202, created.text
            job_id = created.json()["job_id"]

            # The first page has written its matches and started acting on them: kill every
            # busy worker now, the one running the page among them.
            wait_until(
                lambda: "planned_page" in job_item(stack, job_id), "the first page started", timeout=120
            )
            killed = stack.crash(WORKER, busy=True, every=True)
            assert killed, "no worker was busy with the page"
            for pid in killed:
                wait_until(lambda pid=pid: process_gone(pid), "the killed worker is gone", timeout=10)
            interrupted = job_item(stack, job_id)
            assert interrupted["page"]["N"] == "0"  # the page's counts were never recorded
            expire_page_lease(stack, job_id)

            def finished() -> bool:
                job = admin.get(f"/api/admin/bulk-jobs/{job_id}", params={"tenant_id": DEMO_TENANT_ID}).json()
                return job["state"] != "running"

            wait_until(finished, "the job ran to its end", timeout=600, interval=1)

            wait_until(Progress(stack, ids).all_sent, "every message delivered", timeout=600, interval=2)
            job = admin.get(f"/api/admin/bulk-jobs/{job_id}", params={"tenant_id": DEMO_TENANT_ID}).json()
            with ThreadPoolExecutor(8) as pool:
                views = list(pool.map(lambda m: admin.get(f"/api/admin/messages/{m}").json(), ids))

    assert (job["state"], job["matched"], job["done"], job["skipped"], job["failed"]) == (
        "completed",
        N,
        N,
        0,
        0,
    )
    # Exactly once at the destination, by the hub's Idempotency-Key (the message id).
    assert destination.applied == dict.fromkeys(ids, 1)
    # And the job acted on each message once: one bulk entry in each message's timeline.
    for view in views:
        assert [e.get("bulk_job") for e in view["log"] if e.get("bulk_job")] == [job_id]
