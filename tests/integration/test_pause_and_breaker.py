"""Destinations that pause and break (issue 12), through the real admin, ingest and worker
handlers on moto, delivering to a real HTTP destination on 127.0.0.1 that counts what it gets by
Idempotency-Key.

- pause holds messages on the connection (retry_pending / held_reason paused): no attempt, no
  retry counted, no schedule; resume releases each exactly once, at the bounded rate;
- the breaker opens against a failing destination (its event item written), holds, sends one
  probe after the cool-down, stays open when the probe fails, closes when the destination is
  back and releases what it held;
- a held message cancelled stops waiting; a viewer cannot pause.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from hub import wiring
from hub.adapters.dynamo import keys
from hub.adapters.dynamo.connection_state import DynamoConnectionStates
from hub.adapters.dynamo.table import Table
from hub.config import settings
from hub.delivery.breaker import release_page_key
from hub.delivery.gate import ConnectionJob, JobKind, probe_schedule_name
from hub.delivery.release import RELEASE_PAGE_LEASE
from hub.domain.retry import RetryPolicy
from hub.domain.tenancy import Integration, IntegrationMode, MessageTypeConfig
from hub.outbox.events import OutboxEvent
from tests.aws import LambdaContext, load_handler
from tests.destinations import Answer, HttpDestination
from tests.events import admin_event
from tests.integration.conftest import ADMIN_TOKEN
from tests.integration.test_connections import CALLERS, Answered, path, rest
from tests.pipeline import schedules, send, status

CONNECTION = "erp"
RATE = 10
#: The documented default.
COOLDOWN = 60


@pytest.fixture
def api(stack) -> Any:
    """The real admin handler; `token="tok-<role>-<t1|t2|platform>"` is a real admin token of
    that role and scope, created over the API at its first use."""
    handler = load_handler("AdminApiFunction")
    minted: dict[str, str] = {}

    def call(method: str, route: str, *, token: str | None = ADMIN_TOKEN, **options: Any) -> Answered:
        if token in CALLERS and token not in minted:
            role, scope = CALLERS[token]
            body = {"label": token, "role": role.value, "tenant_id": scope}
            created = handler(
                admin_event("POST", "/api/admin/tokens", token=ADMIN_TOKEN, body=body), LambdaContext()
            )
            minted[token] = json.loads(created["body"])["token"]
        answer = handler(
            admin_event(method, route, token=minted.get(str(token), token), **options), LambdaContext()
        )
        return Answered(answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None, {})

    return call


@pytest.fixture
def settled(stack, monkeypatch):
    """The documented release rate (a test sees it in real time)."""
    monkeypatch.setenv("HUB_RELEASE_RATE_PER_SECOND", str(RATE))
    settings.cache_clear()
    wiring.reset()
    return stack


@pytest.fixture
def connected(settled, tenancy, api, destination):
    """Connection `erp` (t1) to the destination; the tenancy's integration delivers `order`
    messages (no business keys) through it, retrying automatically (a spent retry would show)."""
    assert api("POST", path(), body=rest(connection_id=CONNECTION, url=destination.url)).status == 201
    integration = Integration(
        integration_id=tenancy.integration_id,
        tenant_id="t1",
        name="erp",
        mode=IntegrationMode.ORCHESTRATION,
        connection_id=CONNECTION,
        message_types={"order": MessageTypeConfig()},
        retry_policy=RetryPolicy(retry_auto_enabled=True, ladder_seconds=(1.0,), retry_max=5),
    )
    Table(settled.table).put(
        {
            **keys.integration_key("t1", integration.integration_id),
            "GSI1PK": keys.tenant_integrations_partition("t1"),
            "GSI1SK": integration.integration_id,
            "item_type": "integration",
            "tenant_id": "t1",
            "connection_id": CONNECTION,
            "version": 1,
            "config_json": integration.model_dump_json(),
        }
    )
    return settled


def order(ingest_api, tenancy, number: int) -> str:
    return send(ingest_api, tenancy, {"order": number}, message_type="order")


def statuses(stack) -> dict[str, dict[str, Any]]:
    """Every message's stored status record, by id (one scan)."""
    return {
        i["message_id"]["S"]: {k: next(iter(v.values())) for k, v in i.items()} for i in stack.message_items()
    }


def items(stack, prefix: str) -> list[dict[str, Any]]:
    return [i for i in stack.scan() if i["PK"]["S"].startswith(prefix)]


def events(stack, kind: str) -> list[dict[str, Any]]:
    """The bodies (as subscribers get them) of the event items of type `kind`."""
    found = [OutboxEvent.model_validate_json(i["event_json"]["S"]).body() for i in items(stack, "EVENT#")]
    return [e for e in found if e["type"] == kind]


def keys_seen(destination: HttpDestination) -> Counter[str]:
    return Counter(r.headers.get("idempotency-key", "") for r in destination.requests)


def run_in_real_time(worker, destination: HttpDestination, wanted: int, timeout: float = 40) -> None:
    """Runs the worker on what is visible now (delays honoured, as SQS does) until the destination
    got `wanted` requests and the queue is empty."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        worker(include_delayed=False, settle=False, max_batches=20)
        if len(destination.requests) >= wanted and not _queued():
            return
        time.sleep(0.05)
    raise AssertionError(f"only {len(destination.requests)} of {wanted} delivered")


def _queued() -> int:
    url = settings().pipeline_queue_url
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesDelayed"]
    )


def probes(stack) -> list[str]:
    """The names of the breaker's probe schedules."""
    return [s["Name"] for s in schedules(stack) if s["Name"].startswith("probe-")]


def fire(stack, prefix: str) -> int:
    """Fires the schedules named `prefix...` (moto stores schedules, never fires them)."""
    fired = [s for s in schedules(stack) if s["Name"].startswith(prefix)]
    for schedule in fired:
        boto3.client("sqs").send_message(QueueUrl=stack.queue_url, MessageBody=schedule["Target"]["Input"])
        boto3.client("scheduler").delete_schedule(GroupName=schedule["GroupName"], Name=schedule["Name"])
    return len(fired)


class TestPause:
    def test_pause_holds_100_messages_and_resume_delivers_each_once_at_the_bounded_rate(
        self, connected, tenancy, api, ingest_api, worker, destination
    ):
        paused = api(
            "POST",
            f"/api/admin/connections/{CONNECTION}/pause",
            query={"tenant_id": "t1"},
            token="tok-operator-t1",
        )
        assert paused.status == 200, paused.body
        assert paused.body["paused"] is True
        assert [e["data"]["connection_id"] for e in events(connected, "connection.paused")] == [CONNECTION]

        ids = [order(ingest_api, tenancy, n) for n in range(100)]
        worker()

        # Accepted and processed up to delivery, then waiting on the connection.
        assert destination.requests == []
        stored = statuses(connected)
        for message_id in ids:
            held = stored[message_id]
            assert held["pipeline_status"] == "retry_pending"
            assert (held["held_reason"], held["held_on"]) == ("paused", CONNECTION)
            assert not {"retry_count", "next_retry_at"} & set(held)  # no retry spent
        assert schedules(connected) == []  # waits on the connection, not on a schedule each
        assert len(items(connected, f"HELD#t1#{CONNECTION}")) == 100
        waiting = api("GET", "/api/admin/queue", query={"tenant_id": "t1", "tab": "waiting", "limit": "100"})
        assert {row["message_id"] for row in waiting.body["items"]} == set(ids)
        view = api("GET", f"/api/admin/messages/{ids[0]}")
        assert view.body["held_reason"] == "paused"
        assert view.body["log"][-1]["status"] == "held"

        started = time.monotonic()
        resumed = api(
            "POST",
            f"/api/admin/connections/{CONNECTION}/resume",
            query={"tenant_id": "t1"},
            token="tok-operator-t1",
        )
        assert (resumed.status, resumed.body["paused"]) == (200, False)
        assert len(events(connected, "connection.resumed")) == 1
        # SQS delivers at least once: the release job arrives twice; each message still goes once.
        generation = DynamoConnectionStates(connected.table).get("t1", CONNECTION).release_generation
        duplicate = ConnectionJob(
            job=JobKind.RELEASE, connection_id=CONNECTION, tenant_id="t1", generation=generation
        )
        boto3.client("sqs").send_message(
            QueueUrl=connected.queue_url, MessageBody=duplicate.model_dump_json()
        )
        run_in_real_time(worker, destination, 100)

        assert keys_seen(destination) == Counter(dict.fromkeys(ids, 1))
        stored = statuses(connected)
        assert {stored[m]["pipeline_status"] for m in ids} == {"sent"}
        assert all("held_reason" not in stored[m] for m in ids)
        assert items(connected, f"HELD#t1#{CONNECTION}") == []
        # Bounded: by t seconds after the resume, at most RATE * (t + 1) had arrived.
        arrivals = sorted(r.arrived - started for r in destination.requests)
        for index, at in enumerate(arrivals):
            assert index + 1 <= RATE * (int(at) + 1), (index, at)
        assert arrivals[-1] >= 100 / RATE - 1

    def test_a_release_page_left_claimed_by_a_dead_run_is_released_when_the_claim_runs_out(
        self, connected, tenancy, api, ingest_api, worker, destination
    ):
        """A release run killed mid-page leaves its claim: the job's next copy (SQS redelivers it,
        maybe before the claim ends) must come back later, not drop the page (the soak's
        30-second visibility stranded two held messages that way)."""
        api("POST", f"/api/admin/connections/{CONNECTION}/pause", query={"tenant_id": "t1"})
        ids = [order(ingest_api, tenancy, n) for n in range(3)]
        worker()
        assert destination.requests == []
        states = DynamoConnectionStates(connected.table)
        generation = states.get("t1", CONNECTION).release_generation + 1
        # The run that died: it claimed the resume's first page, with 3 s of its claim left.
        dead_run_at = datetime.now(UTC) - RELEASE_PAGE_LEASE + timedelta(seconds=3)

        resumed = api("POST", f"/api/admin/connections/{CONNECTION}/resume", query={"tenant_id": "t1"})
        assert resumed.status == 200, resumed.body
        assert states.get("t1", CONNECTION).release_generation == generation
        page = release_page_key(generation, None)
        claim = states.claim_release_page(
            "t1", CONNECTION, generation, page, now=dead_run_at, lease=RELEASE_PAGE_LEASE
        )
        assert claim.claimed
        worker(include_delayed=False, settle=False, max_batches=5)
        assert destination.requests == []  # the page is the dead run's until its claim ends
        assert _queued() == 1  # the job waits for it, delayed

        run_in_real_time(worker, destination, 3)

        assert keys_seen(destination) == Counter(dict.fromkeys(ids, 1))
        assert {status(connected, m)["pipeline_status"] for m in ids} == {"sent"}
        assert items(connected, f"HELD#t1#{CONNECTION}") == []

    def test_a_held_message_cancelled_stops_waiting(
        self, connected, tenancy, api, ingest_api, worker, destination
    ):
        api("POST", f"/api/admin/connections/{CONNECTION}/pause", query={"tenant_id": "t1"})
        message_id = order(ingest_api, tenancy, 1)
        worker()
        assert status(connected, message_id)["held_reason"] == "paused"

        cancelled = api("POST", f"/api/admin/messages/{message_id}/cancel-retry", token="tok-operator-t1")
        assert cancelled.status == 200, cancelled.body
        assert items(connected, f"HELD#t1#{CONNECTION}") == []

        api("POST", f"/api/admin/connections/{CONNECTION}/resume", query={"tenant_id": "t1"})
        worker()
        assert destination.requests == []
        final = status(connected, message_id)
        assert (final["pipeline_status"], final.get("held_reason")) == ("cancelled", None)

    def test_only_operators_of_its_tenant_pause_and_resume(self, connected, api):
        route = f"/api/admin/connections/{CONNECTION}/pause"
        refused = api("POST", route, query={"tenant_id": "t1"}, token="tok-viewer-t1")
        assert (refused.status, refused.body["error"]["code"]) == (403, "forbidden")
        foreign = api("POST", route, query={"tenant_id": "t1"}, token="tok-admin-t2")
        missing = api("POST", "/api/admin/connections/nope/pause", query={"tenant_id": "t1"})
        assert foreign.status == missing.status == 404
        assert foreign.body["error"]["message"] == missing.body["error"]["message"]
        assert (
            api(
                "GET",
                f"/api/admin/connections/{CONNECTION}/state",
                query={"tenant_id": "t1"},
                token="tok-viewer-t1",
            ).body["paused"]
            is False
        )

        assert api("POST", route, query={"tenant_id": "t1"}, token="tok-operator-t1").status == 200
        again = api(
            "POST", route, query={"tenant_id": "t1"}, token="tok-operator-t1"
        )  # already paused: nothing changes
        assert (again.status, again.body["paused"]) == (200, True)
        assert len(events(connected, "connection.paused")) == 1
        audit = api("GET", "/api/admin/tenants/t1/audit").body["items"]
        assert [e["action"] for e in audit].count("connection.paused") == 1


class TestBreaker:
    def test_opens_holds_probes_once_and_closes_when_the_destination_is_back(
        self, connected, tenancy, ingest_api, worker, destination
    ):
        destination.script(Answer(status=503))
        ids = [order(ingest_api, tenancy, n) for n in range(30)]
        worker()

        # Ten failures out of ten attempts: open, announced in the same transaction.
        [opened] = events(connected, "connection.circuit_opened")
        assert opened["data"]["connection_id"] == CONNECTION
        assert opened["data"]["details"]["failures"] == 10
        assert len(destination.requests) == 10
        failed = {m for m in ids if "held_reason" not in status(connected, m)}
        held = [m for m in ids if m not in failed]
        assert len(failed) == 10
        # Open: the rest wait on the connection - no attempt, no retry, no schedule of their own.
        assert {status(connected, m)["held_reason"] for m in held} == {"circuit_open"}
        assert all("retry_count" not in status(connected, m) for m in held)
        names = sorted(s["Name"] for s in schedules(connected))
        assert len([n for n in names if n.startswith("retry-")]) == 10  # the failed attempts' own
        assert [n for n in names if n.startswith("probe-")] == [probe_schedule_name("t1", CONNECTION, 1)]

        # After the cool-down, one probe; it fails: still open, the next cool-down doubled.
        cooldown_passes(connected)
        assert fire(connected, "probe-") == 1
        worker()
        assert len(destination.requests) == 11
        [probe] = [m for m in held if "held_reason" not in status(connected, m)]
        assert status(connected, probe)["retry_count"] == "1"  # a real attempt: its own retry
        failed.add(probe)
        held.remove(probe)
        state = DynamoConnectionStates(connected.table).get("t1", CONNECTION)
        assert (state.circuit.value, state.cooldown_seconds) == ("open", 2 * COOLDOWN)
        assert events(connected, "connection.circuit_closed") == []
        assert {status(connected, m)["held_reason"] for m in held} == {"circuit_open"}
        assert probes(connected) == [probe_schedule_name("t1", CONNECTION, 2)]

        # The destination is back: the next probe closes the breaker, the held ones follow.
        destination.script(Answer(status=200))
        cooldown_passes(connected)
        assert fire(connected, "probe-") == 1
        run_in_real_time(worker, destination, 11 + 19)
        assert len(events(connected, "connection.circuit_closed")) == 1
        assert DynamoConnectionStates(connected.table).get("t1", CONNECTION).circuit.value == "closed"
        assert {status(connected, m)["pipeline_status"] for m in held} == {"sent"}
        assert all(keys_seen(destination)[m] == 1 for m in held)
        assert items(connected, f"HELD#t1#{CONNECTION}") == []

        # The messages whose attempts failed (the first probe's too) retry on their own schedules.
        assert fire(connected, "retry-") == 11
        worker()
        assert {status(connected, m)["pipeline_status"] for m in failed} == {"sent"}
        assert len(destination.requests) == 11 + 19 + 11

    def test_an_opening_whose_answer_was_lost_still_schedules_the_first_probe(
        self, connected, tenancy, ingest_api, worker, destination, resend_once
    ):
        """The transaction that opens the breaker is applied, its answer lost, and the SDK sends
        it again with the same client token: DynamoDB (and the local stack's moto) answers
        success and writes nothing, so the opening is not taken for another instance's."""
        destination.script(Answer(status=503))
        ids = [order(ingest_api, tenancy, n) for n in range(12)]
        resent = resend_once(lambda body: "circuit_opened" in json.dumps(body), "TransactWriteItems")
        worker()

        assert len(resent) == 1
        assert len(events(connected, "connection.circuit_opened")) == 1
        assert DynamoConnectionStates(connected.table).get("t1", CONNECTION).circuit.value == "open"
        assert probes(connected) == [probe_schedule_name("t1", CONNECTION, 1)]
        assert len([m for m in ids if status(connected, m).get("held_reason") == "circuit_open"]) == 2

    def test_a_failed_probe_whose_answer_was_lost_still_schedules_the_next_probe(
        self, connected, tenancy, ingest_api, worker, destination, resend_once
    ):
        destination.script(Answer(status=503))
        ids = [order(ingest_api, tenancy, n) for n in range(12)]
        worker()
        assert probes(connected) == [probe_schedule_name("t1", CONNECTION, 1)]
        cooldown_passes(connected)
        # The probe fails; the update that reopens the breaker is applied, its answer lost and
        # the SDK sends it again, which finds the probe already given back.
        resent = resend_once(_is_reopen)
        assert fire(connected, "probe-") == 1
        worker()

        assert len(resent) == 1
        state = DynamoConnectionStates(connected.table).get("t1", CONNECTION)
        assert (state.circuit.value, state.cooldown_seconds, state.probe_message) == (
            "open",
            2 * COOLDOWN,
            None,
        )
        # Not read as another's: the next probe is scheduled, so the held ones are not left waiting.
        assert probes(connected) == [probe_schedule_name("t1", CONNECTION, 2)]
        # Ten attempts opened it, the eleventh was the probe: the twelfth still waits, held.
        assert len([m for m in ids if status(connected, m).get("held_reason") == "circuit_open"]) == 1


def _is_reopen(body: dict[str, Any]) -> bool:
    """The UpdateItem that gives a failed probe back and sets the next probe time."""
    names = json.dumps(body.get("ExpressionAttributeNames", {}))
    return "REMOVE" in body.get("UpdateExpression", "") and "probe_message" in names and "cooldown" in names


def cooldown_passes(stack) -> None:
    """The open breaker's cool-down is over: its stored `probe_at` moves to a second ago (time
    travel, as `expire_visibility` does for SQS; the worker reads the state as stored)."""
    state = DynamoConnectionStates(stack.table).get("t1", CONNECTION)
    assert state.probe_at is not None
    assert state.probe_at > datetime.now(UTC)
    past = (datetime.now(UTC) - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    boto3.client("dynamodb").update_item(
        TableName=stack.table,
        Key={"PK": {"S": f"CONNSTATE#t1#{CONNECTION}"}, "SK": {"S": "STATE"}},
        UpdateExpression="SET probe_at = :past",
        ExpressionAttributeValues={":past": {"S": past}},
    )
