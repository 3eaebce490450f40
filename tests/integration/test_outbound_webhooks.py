"""Outbound webhooks end to end on moto (stack from template.yaml): subscriptions through the real
AdminApiFunction handler (real admin tokens), events fanned out by the subscription sink onto the
real WebhooksQueue, the real WebhookSenderFunction handler delivering to a real HTTP receiver on
127.0.0.1, which verifies every request with the `standardwebhooks` package unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from hub import wiring
from hub.outbox.events import EventType, OutboxEvent, events_of_record
from tests.aws import REGION, LambdaContext, load_handler
from tests.destinations import Answer, HttpDestination, SeenRequest
from tests.events import admin_event
from tests.integration.conftest import ADMIN_TOKEN, Stack, Tenancy
from tests.pipeline import pump, send

TENANT, OTHER = "t1", "t2"


@dataclass(frozen=True)
class Answered:
    status: int
    body: Any
    headers: dict[str, str]


@dataclass
class Lane:
    """The webhooks lane of the stack: its queue, the sender handler and the scheduler group."""

    stack: Stack
    queue_url: str
    queue_arn: str

    def deliver(self) -> int:
        """Runs the real sender on everything on the webhooks queue; how many jobs it handled."""
        return pump(self.queue_url, self.queue_arn, load_handler("WebhookSenderFunction"))

    def schedules(self) -> list[dict[str, Any]]:
        """The pending retry schedules of the webhooks lane (their Target)."""
        scheduler = boto3.client("scheduler", region_name=REGION)
        group = self.stack.env["HUB_SCHEDULE_GROUP"]
        found = []
        for entry in scheduler.list_schedules(GroupName=group)["Schedules"]:
            schedule = scheduler.get_schedule(Name=entry["Name"], GroupName=group)
            if schedule["Target"]["Arn"] == self.queue_arn:
                found.append(schedule)
        return found

    def fire_schedules(self) -> int:
        """Does what EventBridge Scheduler does when the time comes (moto never fires): each
        schedule's input onto its queue, then the schedule is deleted (ActionAfterCompletion)."""
        scheduler = boto3.client("scheduler", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        fired = self.schedules()
        for schedule in fired:
            sqs.send_message(QueueUrl=self.queue_url, MessageBody=schedule["Target"]["Input"])
            scheduler.delete_schedule(Name=schedule["Name"], GroupName=schedule["GroupName"])
        return len(fired)

    def queued(self) -> list[dict[str, Any]]:
        sqs = boto3.client("sqs", region_name=REGION)
        bodies: list[dict[str, Any]] = []
        while True:
            messages = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get(
                "Messages", []
            )
            if not messages:
                return bodies
            for message in messages:
                bodies.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])


@pytest.fixture
def lane(stack: Stack, tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch) -> Lane:
    # Every read of a subscription sees the last change (a warm instance would within the cache time).
    monkeypatch.setenv("HUB_CONFIG_CACHE_SECONDS", "0")
    wiring.reset()
    url = stack.env["HUB_WEBHOOKS_QUEUE_URL"]
    assert stack.env["HUB_WEBHOOKS_QUEUE_ARN"].endswith(url.rsplit("/", 1)[-1])
    return Lane(stack, url, stack.env["HUB_WEBHOOKS_QUEUE_ARN"])


@pytest.fixture
def api(stack: Stack) -> Any:
    """The real admin handler; `token=` a role name mints a real token of tenant t1 (or t2 with
    `tenant=`) over the API with the bootstrap token."""
    handler = load_handler("AdminApiFunction")
    minted: dict[tuple[str, str], str] = {}

    def token_for(role: str, tenant: str) -> str:
        if (role, tenant) not in minted:
            body = {"label": f"{tenant}-{role}", "role": role, "tenant_id": tenant}
            event = admin_event("POST", "/api/admin/tokens", token=ADMIN_TOKEN, body=body)
            minted[(role, tenant)] = json.loads(handler(event, LambdaContext())["body"])["token"]
        return minted[(role, tenant)]

    def call(
        method: str, path: str, *, role: str | None = None, tenant: str = TENANT, **options: Any
    ) -> Answered:
        token = token_for(role, tenant) if role else ADMIN_TOKEN
        answer = handler(admin_event(method, path, token=token, **options), LambdaContext())
        body = json.loads(answer["body"]) if answer.get("body") else None
        return Answered(answer["statusCode"], body, answer.get("headers", {}))

    return call


@pytest.fixture
def receiver() -> Iterator[HttpDestination]:
    with HttpDestination() as server:
        yield server


def subscriptions(tenant: str = TENANT, *rest: str) -> str:
    return "/".join([f"/api/admin/tenants/{tenant}/subscriptions", *rest])


def subscribe(api: Any, url: str, **spec: Any) -> dict[str, Any]:
    created = api("POST", subscriptions(), body={"url": url, "event_types": ["message.*"], **spec})
    assert created.status == 201, created.body
    return dict(created.body)


def event(message_id: str = "msg_01hzzzzzzzzzzzzzzzzzzzzzzz", version: int = 2, **fields: Any) -> OutboxEvent:
    values: dict[str, Any] = {
        "id": f"{message_id}:{version}",
        "type": EventType.MESSAGE_SENT,
        "tenant_id": TENANT,
        "occurred_at": datetime.now(UTC),
        "version": version,
        "integration_id": "int_erp",
        "message_id": message_id,
        "status_before": "mapped",
        "status_after": "sent",
        "dest_status": "200",
    }
    return OutboxEvent(**{**values, **fields})


def verified(secret: str, request: SeenRequest) -> dict[str, Any]:
    """What the receiver gets, verified exactly as a subscriber would (raises if it does not)."""
    result: dict[str, Any] = Webhook(secret).verify(request.body, request.headers)
    return result


def items(stack: Stack, prefix: str) -> list[dict[str, Any]]:
    return [i for i in stack.scan() if i["PK"]["S"].startswith(prefix)]


# --- fan-out ----------------------------------------------------------------------------------


def test_the_sink_puts_one_job_per_matching_subscription_and_event_on_the_webhooks_queue(
    api: Any, lane: Lane
) -> None:
    every = subscribe(api, "https://hooks.example.com/all", event_types=["*"])
    sent_only = subscribe(
        api, "https://hooks.example.com/sent", event_types=["message.sent"], integration_ids=["int_erp"]
    )
    disabled = subscribe(api, "https://hooks.example.com/off", event_types=["*"], enabled=False)
    other_tenant = api(
        "POST", subscriptions(OTHER), body={"url": "https://hooks.example.com/t2", "event_types": ["*"]}
    )
    assert other_tenant.status == 201
    sent = event()
    received = event(version=1, type=EventType.MESSAGE_RECEIVED, status_after="received")
    other_integration = event("msg_01hyyyyyyyyyyyyyyyyyyyyyyy", integration_id="int_erp_2")

    # The same event twice in a batch (a redelivered record) goes out once per subscription.
    wiring.subscription_sink().publish([sent, received, other_integration, sent])

    jobs = sorted((j["subscription_id"], j["event"]["id"]) for j in lane.queued())
    assert jobs == sorted(
        [
            (every["subscription_id"], sent.id),
            (every["subscription_id"], received.id),
            (every["subscription_id"], other_integration.id),
            (sent_only["subscription_id"], sent.id),
        ]
    )
    assert disabled["subscription_id"] not in {s for s, _ in jobs}


def test_a_delivered_messages_status_changes_reach_a_subscriber_signed_with_their_version(
    api: Any, lane: Lane, stack: Stack, tenancy: Tenancy, ingest_api: Any, receiver: HttpDestination
) -> None:
    """From the table's own stream: ingest writes the message item, its stream record is the
    event (what the outbox publisher hands the sink)."""
    created = subscribe(api, receiver.url, event_types=["message.received"])
    message_id = send(ingest_api, tenancy, {"po_number": "PO-WH-1"})

    wiring.subscription_sink().publish([e for r in stream_records(stack) for e in events_of_record(r)])
    lane.deliver()

    (request,) = receiver.requests
    body = verified(created["secret"], request)
    assert request.headers["webhook-id"] == f"{message_id}:1"
    assert body["type"] == "message.received"
    assert body["data"]["message_id"] == message_id
    assert body["data"]["version"] == 1  # subscribers order a message's events by it
    assert "payload" not in json.dumps(body)


def stream_records(stack: Stack) -> list[dict[str, Any]]:
    """Every record of the table's stream so far, as Lambda would deliver them."""
    streams = boto3.client("dynamodbstreams", region_name=REGION)
    arn = boto3.client("dynamodb", region_name=REGION).describe_table(TableName=stack.table)["Table"][
        "LatestStreamArn"
    ]
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records += streams.get_records(ShardIterator=iterator)["Records"]
    return records


# --- signatures -------------------------------------------------------------------------------


def test_a_webhook_verifies_with_standardwebhooks_and_carries_the_event_id(
    api: Any, lane: Lane, receiver: HttpDestination
) -> None:
    created = subscribe(api, receiver.url)
    sent = event()
    wiring.subscription_sink().publish([sent])
    lane.deliver()

    (request,) = receiver.requests
    assert verified(created["secret"], request) == json.loads(json.dumps(sent.body()))
    assert request.headers["webhook-id"] == sent.id
    assert request.headers["content-type"] == "application/json"
    with pytest.raises(WebhookVerificationError):
        verified("whsec_" + "A" * 32, request)  # another secret does not verify


def test_a_redelivered_stream_record_sends_the_same_webhook_id_again_never_a_new_one(
    api: Any, lane: Lane, receiver: HttpDestination
) -> None:
    """The publisher crashed after the sink queued the jobs: the stream hands the same record
    again, the sink queues them again, and the receiver sees one id twice (and dedups by it)."""
    created = subscribe(api, receiver.url)
    sent = event()
    wiring.subscription_sink().publish([sent])
    wiring.subscription_sink().publish([sent])
    lane.deliver()

    assert [r.headers["webhook-id"] for r in receiver.requests] == [sent.id, sent.id]
    assert len({json.dumps(verified(created["secret"], r)) for r in receiver.requests}) == 1


def test_during_a_rotation_receivers_knowing_only_the_old_or_only_the_new_secret_both_verify(
    api: Any, lane: Lane, receiver: HttpDestination
) -> None:
    created = subscribe(api, receiver.url)
    old = created["secret"]
    path = subscriptions(TENANT, created["subscription_id"])
    rotated = api("POST", f"{path}/rotate-secret", body={"grace_hours": 24})
    assert rotated.status == 201, rotated.body
    new = rotated.body["secret"]
    assert new != old
    assert new.startswith("whsec_")
    assert [s["secret"] for s in rotated.body["secrets"]] == ["***", "***"]
    assert api("GET", path).body["secrets"][1]["expires_at"] is not None  # the old one, ending

    wiring.subscription_sink().publish([event(version=2)])
    lane.deliver()
    (request,) = receiver.requests
    assert len(request.headers["webhook-signature"].split(" ")) == 2
    assert verified(old, request) == verified(new, request)

    # Retired: only the new secret signs; a receiver still on the old one refuses.
    assert api("POST", f"{path}/retire-secrets").status == 200
    wiring.subscription_sink().publish([event(version=3)])
    lane.deliver()
    later = receiver.requests[1]
    verified(new, later)
    with pytest.raises(WebhookVerificationError):
        verified(old, later)


def test_secrets_are_sealed_at_rest_and_never_shown_again(api: Any, lane: Lane, stack: Stack) -> None:
    created = subscribe(api, "https://hooks.example.com/x")
    secret = created["secret"]
    assert secret not in json.dumps(api("GET", subscriptions(TENANT, created["subscription_id"])).body)
    assert secret not in json.dumps(api("GET", subscriptions()).body)
    stored = json.dumps(items(stack, "SUBSCRIPTION#"), default=str)
    assert secret not in stored
    assert secret.removeprefix("whsec_") not in stored
    audit = api("GET", f"/api/admin/tenants/{TENANT}/audit").body
    assert secret not in json.dumps(audit)
    assert "subscription.created" in [e["action"] for e in audit["items"]]


# --- failures, retries, replay ----------------------------------------------------------------


def test_a_retry_is_scheduled_on_the_webhooks_queue_and_sends_the_same_webhook_id(
    api: Any, lane: Lane, receiver: HttpDestination
) -> None:
    created = subscribe(api, receiver.url)
    receiver.script(Answer(status=503), Answer(status=200))
    sent = event()
    wiring.subscription_sink().publish([sent])
    lane.deliver()

    (schedule,) = lane.schedules()
    assert schedule["Target"]["RoleArn"] == lane.stack.env["HUB_SCHEDULER_ROLE_ARN"]
    assert json.loads(schedule["Target"]["Input"])["attempt"] == 1
    assert lane.fire_schedules() == 1
    lane.deliver()

    first, second = receiver.requests
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == sent.id
    assert verified(created["secret"], second) == verified(created["secret"], first)
    assert lane.schedules() == []
    failed = api("GET", subscriptions(TENANT, created["subscription_id"], "failed-deliveries"))
    assert failed.body["items"] == []


def test_exhausted_retries_are_a_failed_delivery_an_operator_lists_and_replays_per_event(
    api: Any, lane: Lane, receiver: HttpDestination
) -> None:
    created = subscribe(api, receiver.url)
    path = subscriptions(TENANT, created["subscription_id"])
    receiver.script(Answer(status=500))
    sent = event()
    wiring.subscription_sink().publish([sent])
    lane.deliver()
    while lane.fire_schedules():
        lane.deliver()

    assert len(receiver.requests) == 8  # the first attempt and 7 retries
    assert {r.headers["webhook-id"] for r in receiver.requests} == {sent.id}
    listed = api("GET", f"{path}/failed-deliveries", role="viewer")
    assert listed.status == 200
    (failure,) = listed.body["items"]
    assert (failure["event_id"], failure["error_class"], failure["dest_status"], failure["attempts"]) == (
        sent.id,
        "http_5xx",
        "500",
        8,
    )

    receiver.script(Answer(status=204))
    replayed = api("POST", f"{path}/failed-deliveries/replay", role="operator", body={"event_id": sent.id})
    assert replayed.status == 202, replayed.body
    assert replayed.body["replayed"] == 1
    lane.deliver()

    last = receiver.requests[-1]
    assert last.headers["webhook-id"] == sent.id
    verified(created["secret"], last)
    assert api("GET", f"{path}/failed-deliveries").body["items"] == []  # delivered: cleared
    assert "subscription.replayed" in [
        e["action"] for e in api("GET", f"/api/admin/tenants/{TENANT}/audit").body["items"]
    ]


def test_replay_since_t_sends_every_failure_from_then_newest_listed_first(
    api: Any, lane: Lane, receiver: HttpDestination
) -> None:
    created = subscribe(api, receiver.url)
    path = subscriptions(TENANT, created["subscription_id"])
    receiver.script(Answer(status=400))  # not retryable: failed at once
    before = event("msg_01haaaaaaaaaaaaaaaaaaaaaaa")
    wiring.subscription_sink().publish([before])
    lane.deliver()
    since = datetime.now(UTC)
    after = [event("msg_01hbbbbbbbbbbbbbbbbbbbbbbb"), event("msg_01hcccccccccccccccccccccccc")]
    for one in after:
        wiring.subscription_sink().publish([one])
        lane.deliver()
    listed = api("GET", f"{path}/failed-deliveries", query={"limit": "2"}).body
    assert [f["event_id"] for f in listed["items"]] == [after[1].id, after[0].id]
    assert listed["next_cursor"]
    rest = api("GET", f"{path}/failed-deliveries", query={"limit": "2", "cursor": listed["next_cursor"]})
    assert [f["event_id"] for f in rest.body["items"]] == [before.id]

    receiver.script(Answer(status=200))
    replayed = api("POST", f"{path}/failed-deliveries/replay", body={"since": since.isoformat()})
    assert replayed.status == 202
    assert sorted(replayed.body["event_ids"]) == sorted(e.id for e in after)
    lane.deliver()

    again = [r.headers["webhook-id"] for r in receiver.requests[3:]]
    assert sorted(again) == sorted(e.id for e in after)
    for request in receiver.requests[3:]:
        verified(created["secret"], request)
    remaining = api("GET", f"{path}/failed-deliveries").body["items"]
    assert [f["event_id"] for f in remaining] == [before.id]


def test_410_gone_disables_the_subscription_and_emits_subscription_disabled(
    api: Any, lane: Lane, stack: Stack, receiver: HttpDestination
) -> None:
    created = subscribe(api, receiver.url)
    path = subscriptions(TENANT, created["subscription_id"])
    receiver.script(Answer(status=410))
    wiring.subscription_sink().publish([event(version=2), event(version=3)])
    lane.deliver()

    assert len(receiver.requests) == 1  # the second job found the subscription disabled
    view = api("GET", path).body
    assert view["enabled"] is False
    assert "410" in view["disabled_reason"]
    assert view["version"] == 2
    (item,) = items(stack, "EVENT#subscription.disabled:")
    disabled = OutboxEvent.model_validate_json(item["event_json"]["S"])
    assert (disabled.type, disabled.subscription_id, disabled.tenant_id) == (
        EventType.SUBSCRIPTION_DISABLED,
        created["subscription_id"],
        TENANT,
    )
    failures = api("GET", f"{path}/failed-deliveries").body["items"]
    assert {f["error_class"] for f in failures} == {"http_410", "subscription_disabled"}
    assert lane.schedules() == []
    # No more jobs for it; a replay waits until it is enabled again.
    wiring.subscription_sink().publish([event(version=4)])
    assert lane.queued() == []
    refused = api("POST", f"{path}/failed-deliveries/replay", body={"since": "2020-01-01T00:00:00Z"})
    assert (refused.status, refused.body["error"]["code"]) == (409, "subscription_disabled")
    assert api("POST", f"{path}/enable", role="operator").body["enabled"] is True


def test_a_replay_right_after_enabling_again_is_delivered_not_refused_by_a_warm_cache(
    api: Any, lane: Lane, receiver: HttpDestination
) -> None:
    """Issue 28, point 7: the warm sender remembered the subscription as disabled (its 30 s
    cache); the operator enabled it and replayed at once. Each event reaches the subscriber once."""
    created = subscribe(api, receiver.url)
    path = subscriptions(TENANT, created["subscription_id"])
    receiver.script(Answer(status=410), Answer(200), Answer(200))
    wiring.subscription_sink().publish([event(version=2), event(version=3)])
    lane.deliver()  # 410: disabled; the second job read the (now cached) disabled subscription
    assert api("GET", path).body["enabled"] is False

    assert api("POST", f"{path}/enable", role="operator").body["enabled"] is True
    replayed = api("POST", f"{path}/failed-deliveries/replay", body={"since": "2020-01-01T00:00:00Z"})
    assert replayed.status == 202, replayed.body
    lane.deliver()

    delivered = [json.loads(r.body)["data"]["version"] for r in receiver.requests[1:]]
    assert sorted(delivered) == [2, 3]
    assert api("GET", f"{path}/failed-deliveries").body["items"] == []


# --- configuration through the admin API ------------------------------------------------------


def test_put_with_if_match_and_another_tenants_subscription_is_404(api: Any, lane: Lane) -> None:
    created = subscribe(api, "https://hooks.example.com/a", description="ERP events")
    path = subscriptions(TENANT, created["subscription_id"])
    read = api("GET", path)
    assert read.headers["ETag"] == '"1"'
    spec = {"url": "https://hooks.example.com/b", "event_types": ["message.sent", "connection.*"]}
    changed = api("PUT", path, body=spec, headers={"if-match": '"1"'})
    assert changed.status == 200, changed.body
    assert (changed.body["version"], changed.body["url"]) == (2, "https://hooks.example.com/b")
    stale = api("PUT", path, body=spec, headers={"if-match": '"1"'})
    assert stale.status == 412
    assert api("PUT", path, body={**spec, "secret": created["secret"]}).status == 400

    elsewhere = api("GET", subscriptions(OTHER, created["subscription_id"]))
    assert (elsewhere.status, elsewhere.body["error"]["code"]) == (404, "not_found")
    other_admin = api("GET", path, role="admin", tenant=OTHER)
    assert other_admin.status == 404
    assert api("DELETE", path, role="admin", tenant=OTHER).status == 404
    assert api("DELETE", path, headers={"if-match": '"2"'}).status == 204
    assert api("GET", path).status == 404


def test_a_subscription_id_is_unique_within_its_tenant_only(
    api: Any, lane: Lane, receiver: HttpDestination
) -> None:
    """Issue 27, point 7: t2 creating t1's subscription id is simply another subscription (not
    409); each tenant's events go to its own one, signed with its own secret; t2's update and
    delete leave t1's alone; an id only t1 has answers t2 exactly as a never-existing one."""
    spec = {"subscription_id": "sub_same", "event_types": ["message.*"]}
    mine = api("POST", subscriptions(TENANT), body={**spec, "url": receiver.url})
    assert mine.status == 201, mine.body
    for method, options in (
        ("GET", {}),
        ("PUT", {"body": {"url": receiver.url, "event_types": ["*"]}}),
        ("DELETE", {}),
    ):
        theirs = api(method, subscriptions(OTHER, "sub_same"), **options)
        never = api(method, subscriptions(OTHER, "sub_never"), **options)
        assert theirs.status == never.status == 404
        assert theirs.body == json.loads(json.dumps(never.body).replace("sub_never", "sub_same"))
    again = api("POST", subscriptions(TENANT), body={**spec, "url": receiver.url})
    assert (again.status, again.body["error"]["code"]) == (409, "subscription_exists")

    with HttpDestination() as other_receiver:
        theirs = api("POST", subscriptions(OTHER), body={**spec, "url": other_receiver.url})
        assert (theirs.status, theirs.body["tenant_id"]) == (201, OTHER)
        wiring.subscription_sink().publish(
            [event(), event("msg_01hyyyyyyyyyyyyyyyyyyyyyyy", tenant_id=OTHER, integration_id="int_other")]
        )
        lane.deliver()

        (to_mine,) = receiver.requests
        (to_theirs,) = other_receiver.requests
        assert (
            verified(mine.body["secret"], to_mine)["data"]["message_id"] == "msg_01hzzzzzzzzzzzzzzzzzzzzzzz"
        )
        assert (
            verified(theirs.body["secret"], to_theirs)["data"]["message_id"]
            == "msg_01hyyyyyyyyyyyyyyyyyyyyyyy"
        )

    changed = api(
        "PUT",
        subscriptions(OTHER, "sub_same"),
        # Another host: the signing secret is bound to the receiver, so the move rotates it.
        body={"url": "https://hooks.example.com/t2", "event_types": ["*"], "rotate_secret": True},
    )
    assert (changed.status, changed.body["version"]) == (200, 2)
    assert api("GET", subscriptions(TENANT, "sub_same")).body["url"] == receiver.url
    assert api("DELETE", subscriptions(OTHER, "sub_same")).status == 204
    assert api("GET", subscriptions(OTHER, "sub_same")).status == 404
    assert api("GET", subscriptions(TENANT, "sub_same")).body["version"] == 1


def test_roles_viewer_reads_operator_replays_admin_configures(api: Any, lane: Lane) -> None:
    body = {"url": "https://hooks.example.com/a", "event_types": ["*"]}
    assert api("POST", subscriptions(), role="viewer", body=body).status == 403
    assert api("POST", subscriptions(), role="operator", body=body).status == 403
    created = api("POST", subscriptions(), role="admin", body=body)
    assert created.status == 201
    path = subscriptions(TENANT, created.body["subscription_id"])
    assert api("GET", path, role="viewer").status == 200
    assert api("POST", f"{path}/rotate-secret", role="operator").status == 403
    assert api("POST", f"{path}/disable", role="viewer").status == 403
    assert api("POST", f"{path}/disable", role="operator", body={"reason": "maintenance"}).status == 200
    assert api("GET", path).body["disabled_reason"] == "maintenance"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"url": "ftp://hooks.example.com/x", "event_types": ["*"]}, "url"),
        ({"url": "https://hooks.example.com/x", "event_types": ["message.nope"]}, "event_types"),
        ({"url": "https://hooks.example.com/x", "event_types": ["*"], "secret": "whsec_short"}, "secret"),
    ],
)
def test_a_subscription_that_cannot_work_is_refused(api: Any, lane: Lane, spec: Any, field: str) -> None:
    refused = api("POST", subscriptions(), body=spec)
    assert refused.status == 400
    assert field in json.dumps(refused.body["error"]["details"])


def test_a_given_secret_signs_and_an_operator_disable_emits_subscription_disabled(
    api: Any, lane: Lane, stack: Stack, receiver: HttpDestination
) -> None:
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    created = subscribe(api, receiver.url, secret=secret)
    assert created["secret"] == secret
    wiring.subscription_sink().publish([event()])
    lane.deliver()
    verified(secret, receiver.requests[0])
    path = subscriptions(TENANT, created["subscription_id"])
    assert api("POST", f"{path}/disable").status == 200
    assert len(items(stack, "EVENT#subscription.disabled:")) == 1
    assert api("POST", f"{path}/disable").body["version"] == 2  # again: nothing changes


def test_replay_of_an_unknown_event_is_404(api: Any, lane: Lane) -> None:
    created = subscribe(api, "https://hooks.example.com/a")
    path = subscriptions(TENANT, created["subscription_id"])
    missing = api("POST", f"{path}/failed-deliveries/replay", body={"event_id": "msg_x:1"})
    assert missing.status == 404
    both = api(
        "POST",
        f"{path}/failed-deliveries/replay",
        body={"event_id": "msg_x:1", "since": (datetime.now(UTC) - timedelta(days=1)).isoformat()},
    )
    assert both.status == 400
    # Found by fuzzing (issue 15): `since` as the document says, RFC 3339 with an offset; a
    # number was read as Unix seconds, a time before year 1 in UTC failed the lookup (500).
    for since in (1700000000, "0001-01-01T00:00:00+01:00"):
        bad = api("POST", f"{path}/failed-deliveries/replay", body={"since": since})
        assert (bad.status, bad.body["error"]["code"]) == (400, "validation_error")


# --- hubctl against the real admin API --------------------------------------------------------


def hubctl_on(stack: Stack, *argv: str, environ: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Runs hubctl with its HTTP requests answered by the real admin handler (bootstrap token)."""
    import io  # noqa: PLC0415

    import httpx  # noqa: PLC0415

    from hubctl.client import AdminClient  # noqa: PLC0415
    from hubctl.main import Context, run  # noqa: PLC0415

    handler = load_handler("AdminApiFunction")

    def answer(request: httpx.Request) -> httpx.Response:
        headers = {k: v for k, v in request.headers.items() if k in ("if-match",)}
        query = dict(request.url.params) or None
        body = json.loads(request.content) if request.content else None
        got = handler(
            admin_event(
                request.method, request.url.path, token=ADMIN_TOKEN, body=body, query=query, headers=headers
            ),
            LambdaContext(),
        )
        return httpx.Response(
            got["statusCode"], content=got.get("body") or b"", headers=got.get("headers", {})
        )

    out, err = io.StringIO(), io.StringIO()

    def context(args: Any) -> Context:
        client = lambda: AdminClient("http://admin.test", ADMIN_TOKEN, transport=httpx.MockTransport(answer))  # noqa: E731
        return Context(args, client, out=out, err=err, environ=environ or {})

    code = run(list(argv), context)
    return code, out.getvalue(), err.getvalue()


SUBSCRIPTION_FILE = """
kind: Subscription
tenant: t1
id: sub_erp_events
spec:
  url: ${HOOK_URL}
  event_types: [message.sent, message.dead_lettered]
  integration_ids: [int_erp]
  description: ERP status events
"""


def test_hubctl_applies_a_subscription_file_then_finds_it_unchanged(
    lane: Lane, stack: Stack, tmp_path: Any, receiver: HttpDestination
) -> None:
    path = tmp_path / "subscription.yaml"
    path.write_text(SUBSCRIPTION_FILE)
    environ = {"HOOK_URL": receiver.url}

    code, out, err = hubctl_on(stack, "apply", "-f", str(path), environ=environ)
    assert code == 0, err
    assert "+ Subscription t1/sub_erp_events (create)" in out
    secret = next(line.split(": ", 1)[1] for line in out.splitlines() if line.strip().startswith("secret:"))
    assert "only time" in err

    code, out, _ = hubctl_on(stack, "apply", "-f", str(path), environ=environ)
    assert (code, out.strip()) == (0, "= Subscription t1/sub_erp_events (unchanged)")

    path.write_text(SUBSCRIPTION_FILE.replace("message.dead_lettered", "message.error"))
    code, out, err = hubctl_on(stack, "apply", "-f", str(path), environ=environ)
    assert code == 0, err
    assert "~ Subscription t1/sub_erp_events (update, version 1)" in out

    # The secret shown at creation signs what the subscription receives.
    wiring.subscription_sink().publish([event()])
    lane.deliver()
    verified(secret, receiver.requests[0])


def test_hubctl_subscriptions_commands(lane: Lane, stack: Stack, receiver: HttpDestination) -> None:
    code, out, err = hubctl_on(
        stack,
        "-o",
        "json",
        "subscriptions",
        "create",
        "--tenant",
        "t1",
        "--url",
        receiver.url,
        "--event",
        "*",
    )
    assert code == 0, err
    created = json.loads(out)
    sub = created["subscription_id"]
    code, out, _ = hubctl_on(stack, "subscriptions", "list", "--tenant", "t1")
    assert sub in out
    code, out, err = hubctl_on(stack, "-o", "json", "subscriptions", "rotate", sub, "--tenant", "t1")
    assert code == 0, err
    rotated = json.loads(out)
    assert len(rotated["secrets"]) == 2

    receiver.script(Answer(status=422))
    sent = event()
    wiring.subscription_sink().publish([sent])
    lane.deliver()
    verified(rotated["secret"], receiver.requests[0])
    verified(created["secret"], receiver.requests[0])
    code, out, _ = hubctl_on(stack, "subscriptions", "failed", sub, "--tenant", "t1")
    assert sent.id in out
    assert "http_4xx" in out

    receiver.script(Answer(status=200))
    code, out, err = hubctl_on(stack, "subscriptions", "replay", sub, "--tenant", "t1", "--event", sent.id)
    assert code == 0, err
    lane.deliver()
    assert receiver.requests[-1].headers["webhook-id"] == sent.id
    assert hubctl_on(stack, "subscriptions", "replay", sub, "--tenant", "t1")[0] == 2  # --event or --since
    code, out, _ = hubctl_on(
        stack, "-o", "json", "subscriptions", "disable", sub, "--tenant", "t1", "--reason", "x"
    )
    assert json.loads(out)["enabled"] is False
    assert hubctl_on(stack, "subscriptions", "delete", sub, "--tenant", "t1")[0] == 0
    assert hubctl_on(stack, "subscriptions", "show", sub, "--tenant", "t1")[0] == 1
