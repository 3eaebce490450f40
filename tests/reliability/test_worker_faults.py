"""Reliability of the pipeline worker on the local stack (issue 15; seed 004, section 7): a worker
process killed mid-delivery, an answer lost to a timeout, EventBridge Scheduler down when a retry
is decided, an older status arriving after a newer one, and a poison step in a batch.

One stack for the module, its own: the pipeline queue's visibility timeout is cut to 3 s once
started (the template's 1,260 s would make every redelivery wait 21 minutes) and
`PipelineMaxReceiveCount` is 3 (a parameter override: the queue's redrive policy and the worker's
HUB_PIPELINE_MAX_RECEIVES both follow it, as on AWS), so SQS gives a failed step back after 3 s
and a poison step reaches its last receive in about 6. Not 2: a run whose Scheduler call the SDK
retries for seconds may overlap its own redelivery. The worker's Scheduler calls go through a
gate (`AWS_ENDPOINT_URL_SCHEDULER` in its environment only) that the scheduler tests close.
Destinations honour our `Idempotency-Key` and count what they applied (worker_support.py).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest
from standardwebhooks import Webhook

from devstack.demo import (
    DEMO_ADMIN_TOKEN,
    DEMO_API_KEY,
    DEMO_CONNECTION_ID,
    DEMO_INTEGRATION_ID,
    DEMO_TENANT_ID,
    parameter_overrides,
    seed,
)
from devstack.stack import LocalStack
from hub.domain.message import PipelineStep, StepMessage
from tests.aws import function_names, local_stack_on_free_ports
from tests.destinations import HttpDestination
from tests.pipeline import AUTO, integration, poison_integration, post, wait_for_status
from tests.reliability.faults import AwsFaultProxy
from tests.reliability.worker_support import (
    KeyedDestination,
    Reply,
    expire_lease,
    message_item,
    new_status,
    process_gone,
    queue_counts,
    queued_bodies,
    retry_schedules,
    stream_records,
    wait_until,
)

pytestmark = pytest.mark.e2e

WORKER = "PipelineWorkerFunction"
VISIBILITY_TIMEOUT_SECONDS = 3
MAX_RECEIVES = 3


@pytest.fixture(scope="module")
def gate() -> Iterator[AwsFaultProxy]:
    """The worker's EventBridge Scheduler calls go through this proxy (tests/reliability/faults.py)."""
    with AwsFaultProxy() as scheduler_gate:
        yield scheduler_gate


@pytest.fixture(scope="module")
def stack(gate: AwsFaultProxy) -> Iterator[LocalStack]:
    overrides = {**parameter_overrides(), "PipelineMaxReceiveCount": str(MAX_RECEIVES)}
    # No configuration cache: each test's fresh integration is seen at once.
    env = {name: {"HUB_CONFIG_CACHE_SECONDS": "0"} for name in function_names()}
    env[WORKER].update(gate.environment("scheduler"))
    with local_stack_on_free_ports(
        stack_name="hub-reliability-worker", parameter_overrides=overrides, env_overrides=env
    ) as running:
        gate.upstream = running.aws_endpoint
        seed(running)
        warm_up(running)
        # A receive reads the queue's visibility timeout when it starts: one long poll under way
        # would still hand out the next step for 1,260 s. Paused, none is.
        with running.sqs_poller(WORKER).paused():
            running.client("sqs").set_queue_attributes(
                QueueUrl=running.resources["PipelineQueue"],
                Attributes={"VisibilityTimeout": str(VISIBILITY_TIMEOUT_SECONDS)},
            )
        yield running


def warm_up(stack: LocalStack) -> None:
    """One message delivered before the visibility timeout is cut: the worker's first cold start
    (seconds on a busy machine) would outlast 3 s, and SQS would hand the step to a second
    instance that the crash test would then find busy too."""
    headers = {"Authorization": f"Bearer {DEMO_API_KEY}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60, trust_env=False) as client:
        wait_for_status(client, post(client, DEMO_INTEGRATION_ID), "sent")
    wait_until(lambda: not any(queue_counts(stack, "PipelineQueue").values()), "the warm-up settled")


@pytest.fixture(scope="module")
def api(stack: LocalStack) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {DEMO_API_KEY}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=30, trust_env=False) as client:
        yield client


@pytest.fixture(scope="module")
def admin(stack: LocalStack) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {DEMO_ADMIN_TOKEN}"}
    url = stack.function_urls["AdminApiFunction"]
    with httpx.Client(base_url=url, headers=headers, timeout=30, trust_env=False) as client:
        yield client


@pytest.fixture
def destination() -> Iterator[KeyedDestination]:
    with KeyedDestination() as server:
        yield server


# --- A. the worker crashes after taking the job ----------------------------------------------


def crash_mid_delivery(
    api: httpx.Client, stack: LocalStack, destination: KeyedDestination, *, idempotent_retries: bool
) -> str:
    """Posts a message whose delivery the destination applies and then holds, SIGKILLs the worker
    process running it, checks that the message waits under the dead run's lease (its SQS
    redelivery refused as busy, nothing sent again), and lets the lease expire (5 minutes,
    fast-forwarded). Returns the message id; the rescheduled step then runs."""
    destination.script(Reply(hold=True), Reply())
    message_id = post(api, integration(stack, destination.url, idempotent_retries=idempotent_retries))
    wait_until(lambda: destination.requests_for(message_id), "the delivery reached the destination")

    killed = stack.crash(WORKER, every=True)

    assert len(killed) == 1
    wait_until(lambda: process_gone(killed[0]), "the worker process is dead")
    held = message_item(stack, message_id)
    assert held["pipeline_status"] == "received"
    assert float(held["lease_until"]) > time.time() + 60  # the dead run's lease, minutes long
    # The batch died with the process, so SQS returns the step after 3 s; the redelivery finds
    # the lease taken and reschedules itself on the lock-wait ladder (a delayed message).
    wait_until(
        lambda: queue_counts(stack, "PipelineQueue")["ApproximateNumberOfMessagesDelayed"] >= 1,
        "the redelivered step waits behind the dead run's lease",
    )
    assert len(destination.requests_for(message_id)) == 1
    assert api.get(f"/api/edi-hub/messages/{message_id}").json()["pipeline_status"] == "received"
    assert expire_lease(stack, message_id, str(held["lease_owner"]))
    return message_id


def test_a_worker_killed_mid_delivery_is_recovered_and_the_destination_applied_it_once(
    api: httpx.Client, stack: LocalStack, destination: KeyedDestination
) -> None:
    """Seed 004: "Trabalhador sofre acidente após reivindicar emprego" - the job becomes
    recoverable after its lease. The destination applied the order and the worker died before
    hearing the answer; once the lease has expired the step runs again with the same
    `Idempotency-Key`, and the destination (which honours it: `idempotent_retries`) applies
    nothing new."""
    message_id = crash_mid_delivery(api, stack, destination, idempotent_retries=True)

    final = wait_for_status(api, message_id, "sent")

    assert final["dest_status"] == "200"
    assert [a.applied for a in destination.requests_for(message_id)] == [True, False]
    assert destination.applied[message_id] == 1
    after = message_item(stack, message_id)
    assert "lease_owner" not in after
    assert "lease_until" not in after
    assert "completed_at" in after  # the execution ended: nothing left alive or held


def test_a_worker_killed_mid_delivery_is_not_resent_to_a_destination_without_idempotent_retries(
    api: httpx.Client, stack: LocalStack, destination: KeyedDestination
) -> None:
    """The same crash towards a connection that does not declare `idempotent_retries`: the hub
    cannot tell whether the dead run's call got through, which is the timeout's uncertainty
    (docs/pipeline.md, Retries), so the message should end `error` + uncertain for an operator, with the
    destination called once - not be sent a second time."""
    message_id = crash_mid_delivery(api, stack, destination, idempotent_retries=False)

    outcome = wait_until(
        lambda: (
            (view := api.get(f"/api/edi-hub/messages/{message_id}").json())["pipeline_status"] != "received"
            and view
        ),
        "the step taken over after the lease ran",
    )

    assert (outcome["pipeline_status"], outcome["uncertain"]) == ("error", True)
    assert len(destination.requests_for(message_id)) == 1


# --- B. the destination applied it, the answer was lost --------------------------------------


@pytest.mark.parametrize("idempotent_retries", [True, False])
def test_an_answer_lost_to_a_timeout_is_never_applied_twice(
    api: httpx.Client, stack: LocalStack, destination: KeyedDestination, idempotent_retries: bool
) -> None:
    """The destination applies the order but answers after the hub's read timeout. With
    `idempotent_retries` the hub retries with the same key and the destination applies nothing
    twice; without it the outcome is unknown, so the message is `error` + uncertain and is not
    sent again (an operator reconciles it)."""
    destination.script(Reply(delay_seconds=1.5), Reply())
    options = {"read_timeout_seconds": 0.5, "idempotent_retries": idempotent_retries}
    message_id = post(api, integration(stack, destination.url, AUTO, **options))

    if idempotent_retries:
        final = wait_for_status(api, message_id, "sent")
        assert (final["retry_count"], final["last_retry_error_class"]) == (1, "timeout")
        assert [a.applied for a in destination.requests_for(message_id)] == [True, False]
    else:
        final = wait_for_status(api, message_id, "error")
        assert (final["last_retry_error_class"], final["uncertain"]) == ("timeout", True)
        assert final["next_retry_at"] is None
        assert retry_schedules(stack, message_id) == []  # nothing left that could send it
        assert [a.applied for a in destination.requests_for(message_id)] == [True]
    assert destination.applied[message_id] == 1


# --- C. the scheduler is down when a retry is decided ----------------------------------------


def refused_creates(gate: AwsFaultProxy) -> int:
    """CreateSchedule calls the proxy refused so far."""
    return sum(call.refused for call in gate.seen("scheduler", "CreateSchedule"))


def test_scheduler_down_when_a_retry_is_decided_neither_sends_early_nor_loses_the_retry(
    api: httpx.Client, stack: LocalStack, destination: KeyedDestination, gate: AwsFaultProxy
) -> None:
    """The worker writes `retry_pending` (with the retry's time) and then creates the retry's
    schedule; Scheduler answers 503 (the SDK retries, then gives up). The step then fails and SQS
    keeps it; its redelivery finds the retry already decided and only creates the schedule
    (hub.pipeline.worker, "resume"; ConflictException if an earlier attempt got through). While
    Scheduler is down nothing calls the destination, even after the retry's time has passed."""
    destination.script(Reply(503), Reply())
    integration_id = integration(stack, destination.url, AUTO)
    gate.fail("scheduler")
    try:
        message_id = post(api, integration_id)
        pending = wait_for_status(api, message_id, "retry_pending")
        due = datetime.fromisoformat(pending["next_retry_at"])
        wait_until(lambda: refused_creates(gate) >= 1, "the worker tried to schedule the retry")
        # Time-based on purpose: the retry's own time passes while Scheduler is down.
        time.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds()) + 0.1)
        assert retry_schedules(stack, message_id) == []
        assert len(destination.requests_for(message_id)) == 1
    finally:
        gate.heal()

    final = wait_for_status(api, message_id, "sent")

    assert (final["retry_count"], final["last_retry_error_class"]) == (1, "http_5xx")
    first, retry = destination.requests_for(message_id)
    assert retry.at >= due  # never before the retry's time
    assert (first.applied, retry.applied) == (False, True)
    assert any(not call.refused for call in gate.seen("scheduler", "CreateSchedule"))


def test_a_scheduler_outage_longer_than_the_steps_receives_waits_in_the_dlq_until_a_redrive(
    api: httpx.Client,
    admin: httpx.Client,
    stack: LocalStack,
    destination: KeyedDestination,
    gate: AwsFaultProxy,
) -> None:
    """Scheduler stays down through every receive of the deciding step: the step lands in the
    pipeline DLQ (whose alarm calls an operator) while the message waits in `retry_pending`,
    its decision stored. Nothing is sent meanwhile; once Scheduler is back, a DLQ redrive
    resumes the retry (docs/pipeline.md, "an outage ... a redrive after the outage resumes the step")."""
    destination.script(Reply(503), Reply())
    integration_id = integration(stack, destination.url, AUTO)
    gate.fail("scheduler")
    try:
        message_id = post(api, integration_id)
        dead = wait_until(lambda: queued_bodies(stack, "PipelineDLQ"), "the deciding step reaches the DLQ")
        assert [body["message_id"] for body in dead] == [message_id]
        waiting = api.get(f"/api/edi-hub/messages/{message_id}").json()
        assert (waiting["pipeline_status"], waiting["retry_count"]) == ("retry_pending", 1)
        assert retry_schedules(stack, message_id) == []
        assert len(destination.requests_for(message_id)) == 1
    finally:
        gate.heal()

    redriven = admin.post("/api/admin/dlq/pipeline/redrive")

    assert redriven.status_code == 200, redriven.text
    final = wait_for_status(api, message_id, "sent")
    assert final["retry_count"] == 1
    assert destination.applied[message_id] == 1
    assert len(destination.requests_for(message_id)) == 2


# --- D. an older status after a newer one ----------------------------------------------------


@pytest.fixture
def subscriber(admin: httpx.Client) -> Iterator[tuple[HttpDestination, str]]:
    """A webhook subscription of the demo tenant to the demo integration's message events."""
    with HttpDestination() as receiver:
        created = admin.post(
            f"/api/admin/tenants/{DEMO_TENANT_ID}/subscriptions",
            json={
                "url": receiver.url,
                "event_types": ["message.*"],
                "integration_ids": [DEMO_INTEGRATION_ID],
            },
        )
        assert created.status_code == 201, created.text
        subscription = created.json()
        try:
            yield receiver, str(subscription["secret"])
        finally:
            admin.delete(
                f"/api/admin/tenants/{DEMO_TENANT_ID}/subscriptions/{subscription['subscription_id']}"
            )


def webhook_events(receiver: HttpDestination, secret: str, message_id: str) -> list[dict]:
    """Every delivery of the message's events, verified, in arrival order (duplicates kept)."""
    events = []
    for request in list(receiver.requests):
        event = Webhook(secret).verify(request.body, request.headers)
        assert request.headers["webhook-id"] == event["id"]
        if event["data"].get("message_id") == message_id:
            events.append(event)
    return events


def test_a_redelivered_stream_record_of_an_older_status_regresses_nothing(
    api: httpx.Client, stack: LocalStack, subscriber: tuple[HttpDestination, str]
) -> None:
    """Lambda delivers a stream batch at least once: the publisher gets the message's older
    record (received) again after the newer one (sent). The message stays `sent`, and the
    subscriber gets the same event again - same id, the older version - never a new one."""
    receiver, secret = subscriber
    message_id = post(api, DEMO_INTEGRATION_ID)
    wait_for_status(api, message_id, "sent")
    wait_until(lambda: len(webhook_events(receiver, secret, message_id)) >= 2, "received and sent announced")
    before = {e["id"]: e for e in webhook_events(receiver, secret, message_id)}
    # The INSERT: the take that follows it is still `received` but carries a lease (filtered out).
    [older] = [r for r in stream_records(stack, message_id) if r["eventName"] == "INSERT"]
    assert new_status(older) == "received"

    replayed = stack.invoke("OutboxPublisherFunction", {"Records": [older]})

    assert replayed == {"batchItemFailures": []}
    by_type = {e["type"]: e for e in before.values()}
    received_id = by_type["message.received"]["id"]
    wait_until(
        lambda: [e["id"] for e in webhook_events(receiver, secret, message_id)].count(received_id) >= 2,
        "the redelivered event reaches the subscriber",
    )
    events = webhook_events(receiver, secret, message_id)
    assert {e["id"] for e in events} == set(before)  # a duplicate to drop by id, nothing new
    repeats = [e for e in events if e["id"] == received_id]
    assert {e["data"]["version"] for e in repeats} == {by_type["message.received"]["data"]["version"]}
    # Consumers order a message's events by version: the late copy cannot pass for the newest.
    assert repeats[-1]["data"]["version"] < by_type["message.sent"]["data"]["version"]
    assert api.get(f"/api/edi-hub/messages/{message_id}").json()["pipeline_status"] == "sent"


def test_a_redelivered_older_step_after_the_message_was_sent_is_dropped(
    api: httpx.Client, stack: LocalStack, destination: KeyedDestination
) -> None:
    """SQS delivers at least once: the message's first step arrives again after the message was
    sent. It is dropped (step dedup, conditional status updates): no second call, no regression."""
    message_id = post(api, integration(stack, destination.url))
    sent = wait_for_status(api, message_id, "sent")
    item = message_item(stack, message_id)
    stale = StepMessage(
        message_id=message_id,
        tenant_id=DEMO_TENANT_ID,
        integration_id=str(item["integration_id"]),
        step=PipelineStep.PROCESS,
        execution_id=str(item["execution_id"]),
        correlation_id="redelivered",
        publish_id=f"pub_{uuid.uuid4().hex}",
        seq=0,
    )

    stack.client("sqs").send_message(
        QueueUrl=stack.resources["PipelineQueue"], MessageBody=stale.model_dump_json()
    )

    wait_until(lambda: not any(queue_counts(stack, "PipelineQueue").values()), "the stale step was consumed")
    assert len(destination.requests_for(message_id)) == 1
    view = api.get(f"/api/edi-hub/messages/{message_id}").json()
    assert (view["pipeline_status"], view["updated_at"]) == ("sent", sent["updated_at"])
    assert message_item(stack, message_id)["version"] == item["version"]


def test_a_late_callback_with_an_older_delivery_status_regresses_nothing(
    api: httpx.Client, admin: httpx.Client, stack: LocalStack
) -> None:
    """The destination's confirmations arrive out of order: `read`, then a late `delivered` and
    `accepted` (older). They are recorded, move nothing, and announce nothing."""
    minted = admin.post(
        f"/api/admin/tenants/{DEMO_TENANT_ID}/connections/{DEMO_CONNECTION_ID}/callback-token"
    )
    assert minted.status_code == 201, minted.text
    token = minted.json()["token"]
    message_id = post(api, DEMO_INTEGRATION_ID)
    wait_for_status(api, message_id, "sent")

    def callback(status: str, occurred_at: str) -> httpx.Response:
        return api.post(
            f"/api/edi-hub/status-callback/{message_id}",
            json={"status": status, "occurred_at": occurred_at},
            headers={"Authorization": f"Bearer {token}"},
        )

    newer = callback("read", "2026-12-01T10:05:00+00:00")
    version = message_item(stack, message_id)["version"]
    late = [
        callback("delivered", "2026-12-01T10:01:00+00:00"),
        callback("accepted", "2026-12-01T10:00:00+00:00"),
    ]

    assert (newer.status_code, newer.json()["advanced"]) == (202, True)
    assert [(a.status_code, a.json()["advanced"], a.json()["delivery_status"]) for a in late] == [
        (200, False, "read"),
        (200, False, "read"),
    ]
    view = api.get(f"/api/edi-hub/messages/{message_id}").json()
    assert (view["pipeline_status"], view["delivery_status"]) == ("sent", "read")
    assert message_item(stack, message_id)["version"] == version  # no change, so no outbox event


# --- E. a poison step in a batch -------------------------------------------------------------


def test_a_poison_step_ends_error_internal_and_the_rest_of_its_batch_is_delivered(
    api: httpx.Client, admin: httpx.Client, stack: LocalStack, destination: KeyedDestination
) -> None:
    """A step that raises on every receive shares its SQS batch with two healthy ones. The batch
    reports only the poison as failed (partial batch response), so the others are delivered at
    once; the poison comes back each visibility timeout and on its last receive the message
    becomes `error` / `internal`, in the admin error tab, and its step goes to the DLQ."""
    poison_id = poison_integration(stack, destination.url)
    healthy_id = integration(stack, destination.url)
    with stack.sqs_poller(WORKER).paused():  # the three steps wait together, one receive takes them
        poison = post(api, poison_id)
        healthy = [post(api, healthy_id), post(api, healthy_id)]
        assert queue_counts(stack, "PipelineQueue")["ApproximateNumberOfMessages"] == 3

    for message_id in healthy:
        assert wait_for_status(api, message_id, "sent")["retry_count"] == 0
        assert destination.applied[message_id] == 1
    failed = wait_for_status(api, poison, "error")

    assert (failed["last_retry_error_class"], failed["dest_status"]) == ("internal", None)
    assert failed["next_retry_at"] is None
    tab = admin.get("/api/admin/queue", params={"tenant_id": DEMO_TENANT_ID, "tab": "error"})
    assert tab.status_code == 200, tab.text
    [row] = [r for r in tab.json()["items"] if r["message_id"] == poison]
    assert (row["pipeline_status"], row["last_retry_error_class"]) == ("error", "internal")
    dead = wait_until(lambda: queued_bodies(stack, "PipelineDLQ"), "the poison step reaches the DLQ")
    assert [body["message_id"] for body in dead] == [poison]
    assert destination.requests_for(poison) == []
    assert all(len(destination.requests_for(m)) == 1 for m in healthy)
