"""Outbound webhooks without I/O: Standard Webhooks signatures, subscription matching, the
subscription sink's fan-out and cache, and the sender's decisions (in-memory ports)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from standardwebhooks import Webhook

from hub.delivery.port import DeliveryFailed
from hub.domain.failure import ErrorClass
from hub.outbox.events import EventType, OutboxEvent
from hub.outbox.signing import signature, webhook_headers
from hub.outbox.subscriptions import (
    SigningSecret,
    Subscription,
    SubscriptionSpec,
    check_pattern,
    check_url,
    new_secret,
    secret_key,
    type_matches,
)
from hub.outbox.webhooks import (
    SUBSCRIPTION_DISABLED,
    CachedSubscriptions,
    FailedWebhook,
    FailurePage,
    Outcome,
    SubscriptionSink,
    WebhookJob,
    WebhookSender,
    body_bytes,
    schedule_name,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_the_standard_webhooks_test_vector() -> None:
    sig = signature(VECTOR_SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}')
    assert sig == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_every_current_secret_signs_and_each_one_alone_verifies() -> None:
    old, new = new_secret(), new_secret()
    body = b'{"type":"message.sent"}'
    timestamp = int(datetime.now(UTC).timestamp())
    headers = webhook_headers([new, old], "msg_1:2", timestamp, body)
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):
        assert Webhook(secret).verify(body, headers) == {"type": "message.sent"}


@pytest.mark.parametrize("bad", ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_!!!", "whsec_AAAA", ""])
def test_a_secret_is_whsec_and_24_to_64_bytes(bad: str) -> None:
    with pytest.raises(ValueError, match="secret"):
        secret_key(bad)
    assert len(secret_key(new_secret())) == 24


@pytest.mark.parametrize(
    ("patterns", "event_type", "matched"),
    [
        (["*"], "connection.gone", True),
        (["message.*"], "message.sent", True),
        (["message.*"], "messages.sent", False),
        (["message.*"], "connection.gone", False),
        (["message.sent"], "message.sent", True),
        (["message.sent"], "message.sent_later", False),
        (["connection.*", "message.error"], "message.error", True),
    ],
)
def test_event_type_patterns(patterns: list[str], event_type: str, matched: bool) -> None:
    assert type_matches(patterns, event_type) is matched


@pytest.mark.parametrize("pattern", ["*", "message.*", "subscription.*", "message.sent"])
def test_known_patterns_are_taken(pattern: str) -> None:
    assert check_pattern(pattern) == pattern


@pytest.mark.parametrize("pattern", ["message.nope", "nope.*", "message*", "", "**"])
def test_a_pattern_that_can_never_match_is_refused(pattern: str) -> None:
    with pytest.raises(ValueError, match="unknown event type"):
        check_pattern(pattern)


@pytest.mark.parametrize(
    ("url", "taken"),
    [
        ("https://hooks.example.com/x", True),
        ("http://127.0.0.1:8080/hook", True),
        ("ftp://hooks.example.com/x", False),
        ("https:///nohost", False),
        ("https://[::1/x", False),
    ],
)
def test_a_subscription_url_is_http_s_with_a_host(url: str, taken: bool) -> None:
    """The shape only: which hosts and schemes may be reached is the egress policy's
    (tests/unit/test_egress_rules.py)."""
    if taken:
        assert check_url(url) == url
    else:
        with pytest.raises(ValueError, match="http"):
            check_url(url)


def test_a_spec_sorts_and_dedupes_its_patterns_and_integrations() -> None:
    spec = SubscriptionSpec(
        url="https://h.example.com",
        event_types=["message.sent", "*", "message.sent"],
        integration_ids=["b", "a", "a"],
    )
    assert (spec.event_types, spec.integration_ids) == (["*", "message.sent"], ["a", "b"])


def event(**fields: Any) -> OutboxEvent:
    values: dict[str, Any] = {
        "id": "msg_1:2",
        "type": EventType.MESSAGE_SENT,
        "tenant_id": "t1",
        "occurred_at": NOW,
        "version": 2,
        "integration_id": "int_a",
        "message_id": "msg_1",
    }
    return OutboxEvent(**{**values, **fields})


def subscription(**fields: Any) -> Subscription:
    values: dict[str, Any] = {
        "subscription_id": "sub_1",
        "tenant_id": "t1",
        "url": "https://h.example.com",
        "event_types": ("message.*",),
        "secrets": (SigningSecret(secret_id="whs_1", created_at=NOW, value=VECTOR_SECRET),),
    }
    return Subscription(**{**values, **fields})


def test_a_subscription_wants_its_tenants_enabled_matching_events_of_its_integrations() -> None:
    assert subscription().wants(event())
    assert not subscription(enabled=False).wants(event())
    assert not subscription().wants(event(tenant_id="t2"))
    assert not subscription().wants(event(type=EventType.CONNECTION_GONE))
    assert subscription(integration_ids=("int_a",)).wants(event())
    assert not subscription(integration_ids=("int_b",)).wants(event())
    # An event naming no integration does not match an integration filter.
    gone = event(type=EventType.CONNECTION_GONE, integration_id=None)
    assert subscription(event_types=("*",)).wants(gone)
    assert not subscription(event_types=("*",), integration_ids=("int_a",)).wants(gone)


def test_an_expired_secret_stops_signing() -> None:
    old = SigningSecret(
        secret_id="whs_0", created_at=NOW - timedelta(days=1), expires_at=NOW, value="whsec_old"
    )
    fresh = SigningSecret(secret_id="whs_1", created_at=NOW, value="whsec_new")
    s = subscription(secrets=(old, fresh))
    assert s.signing_values(NOW - timedelta(seconds=1)) == ["whsec_new", "whsec_old"]
    assert s.signing_values(NOW) == ["whsec_new"]


def test_the_body_carries_the_version_subscribers_order_by_and_never_changes() -> None:
    body = body_bytes(event())
    assert body == body_bytes(event())
    assert b'"version":2' in body
    assert b'"id":"msg_1:2"' in body


# --- the sink ---------------------------------------------------------------------------------


class Directory:
    def __init__(self, by_tenant: dict[str, list[Subscription]]) -> None:
        self.by_tenant = by_tenant
        self.lookups: list[str] = []

    def enabled_for_tenant(self, tenant_id: str) -> list[Subscription]:
        self.lookups.append(tenant_id)
        return [s for s in self.by_tenant.get(tenant_id, []) if s.enabled]


class Queue:
    def __init__(self) -> None:
        self.sent: list[list[WebhookJob]] = []

    def send(self, jobs: Sequence[WebhookJob]) -> None:
        self.sent.append(list(jobs))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_tenant_without_subscriptions_costs_one_lookup_per_cache_period_and_no_send() -> None:
    directory, queue, clock = Directory({}), Queue(), Clock()
    sink = SubscriptionSink(directory, queue, cache_seconds=30, clock=clock)
    for version in range(100):
        sink.publish([event(id=f"msg_1:{version}", version=version)])
    assert (directory.lookups, queue.sent) == (["t1"], [])
    clock.now = 31
    sink.publish([event()])
    assert directory.lookups == ["t1", "t1"]


def test_the_sink_fans_out_one_job_per_matching_subscription_and_event() -> None:
    subs = [
        subscription(subscription_id="sub_all", event_types=("*",)),
        subscription(subscription_id="sub_err", event_types=("message.error",)),
        subscription(subscription_id="sub_b", integration_ids=("int_b",)),
    ]
    queue = Queue()
    sink = SubscriptionSink(Directory({"t1": subs}), queue, cache_seconds=30)
    sent, error = event(), event(id="msg_2:3", type=EventType.MESSAGE_ERROR, message_id="msg_2")
    sink.publish([sent, error, sent])
    (batch,) = queue.sent
    assert [(j.subscription_id, j.event.id) for j in batch] == [
        ("sub_all", "msg_1:2"),
        ("sub_all", "msg_2:3"),
        ("sub_err", "msg_2:3"),
    ]
    assert {j.attempt for j in batch} == {0}


# --- the sender -------------------------------------------------------------------------------


class Source:
    def __init__(self, subscription: Subscription | None) -> None:
        self.subscription = subscription
        self.disabled: list[OutboxEvent] = []

    def for_delivery(self, tenant_id: str, subscription_id: str) -> Subscription | None:
        return self.subscription

    def current(self, tenant_id: str, subscription_id: str) -> Subscription | None:
        return self.subscription

    def disable(self, subscription: Subscription, reason: str, event: OutboxEvent, now: datetime) -> bool:
        self.disabled.append(event)
        return True


class Poster:
    def __init__(self, *answers: int | DeliveryFailed) -> None:
        self.answers = list(answers)
        self.posts: list[tuple[str, bytes, dict[str, str]]] = []

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        self.posts.append((url, body, headers))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, DeliveryFailed):
            raise answer
        return answer


class Scheduler:
    def __init__(self) -> None:
        self.scheduled: list[tuple[WebhookJob, datetime, str]] = []
        self.tenants: list[str | None] = []

    def send_at(self, body: str, at: datetime, name: str, *, tenant_id: str | None = None) -> None:
        self.scheduled.append((WebhookJob.model_validate_json(body), at, name))
        self.tenants.append(tenant_id)


class Failures:
    def __init__(self) -> None:
        self.recorded: list[FailedWebhook] = []
        self.cleared: list[str] = []

    def record(self, failure: FailedWebhook) -> None:
        self.recorded.append(failure)

    def get(self, tenant_id: str, subscription_id: str, event_id: str) -> FailedWebhook | None:
        return None

    def clear(self, tenant_id: str, subscription_id: str, event_id: str) -> None:
        self.cleared.append(event_id)

    def mark_replayed(self, tenant_id: str, subscription_id: str, event_id: str, at: datetime) -> None:
        return None

    def list_failures(
        self, tenant_id: str, subscription_id: str, limit: int, cursor: str | None
    ) -> FailurePage:
        return FailurePage(self.recorded, None)

    def since(self, tenant_id: str, subscription_id: str, since: datetime) -> Iterator[FailedWebhook]:
        return iter(self.recorded)


def sender(source: Source, poster: Poster) -> tuple[WebhookSender, Scheduler, Failures]:
    scheduler, failures = Scheduler(), Failures()
    return (
        WebhookSender(source, poster, scheduler, failures, clock=lambda: NOW, rand=lambda: 1.0),
        scheduler,
        failures,
    )


def test_a_sent_webhook_is_signed_for_the_attempts_time() -> None:
    poster = Poster(200)
    run, _, _ = sender(Source(subscription()), poster)
    assert run.deliver(WebhookJob(subscription_id="sub_1", event=event())) is Outcome.SENT
    (_, body, headers) = poster.posts[0]
    assert headers["webhook-timestamp"] == str(int(NOW.timestamp()))
    assert headers["webhook-signature"] == signature(VECTOR_SECRET, "msg_1:2", int(NOW.timestamp()), body)


def test_a_retryable_failure_is_scheduled_with_the_same_event_and_the_next_attempt() -> None:
    failure = DeliveryFailed(ErrorClass.HTTP_5XX, "busy", dest_status="503")
    run, scheduler, failures = sender(Source(subscription()), Poster(failure))
    job = WebhookJob(subscription_id="sub_1", event=event())
    assert run.deliver(job) is Outcome.RETRY_SCHEDULED
    ((following, at, name),) = scheduler.scheduled
    assert (following.event, following.attempt, following.first_attempt_at) == (job.event, 1, NOW)
    assert at == NOW + timedelta(seconds=5)
    assert name == schedule_name(following)
    assert scheduler.tenants == [job.event.tenant_id]  # the retry's MessageGroupId (issue 30)
    assert failures.recorded == []


def test_a_warm_senders_remembered_disabled_subscription_is_read_again_before_refusing() -> None:
    """Issue 28, point 7: an operator enabled the subscription and replayed at once, while this
    sender still remembered it as disabled (its configuration cache): what is stored decides."""
    source = Source(subscription(enabled=False, disabled_reason="410 Gone"))
    cached = CachedSubscriptions(source, ttl_seconds=30, clock=lambda: 0.0)
    assert cached.for_delivery("t1", "sub_1") is not None  # remembered: disabled
    source.subscription = subscription()  # enabled by the operator, in another process
    poster, failures = Poster(200), Failures()
    run = WebhookSender(cached, poster, Scheduler(), failures, clock=lambda: NOW, rand=lambda: 1.0)

    assert run.deliver(WebhookJob(subscription_id="sub_1", event=event(), replay=True)) is Outcome.SENT
    assert len(poster.posts) == 1
    assert failures.recorded == []


def test_a_subscription_still_disabled_when_read_again_is_refused_without_a_post() -> None:
    source = Source(subscription(enabled=False, disabled_reason="410 Gone"))
    poster = Poster(200)
    run, _, failures = sender(source, poster)

    assert run.deliver(WebhookJob(subscription_id="sub_1", event=event())) is Outcome.FAILED
    assert poster.posts == []
    assert len(failures.recorded) == 1


def test_a_timeout_is_retried_since_receivers_deduplicate_by_webhook_id() -> None:
    timeout = DeliveryFailed(ErrorClass.TIMEOUT, "slow", uncertain=True)
    run, _, _ = sender(Source(subscription()), Poster(timeout))
    assert run.deliver(WebhookJob(subscription_id="sub_1", event=event())) is Outcome.RETRY_SCHEDULED


def test_retry_after_is_a_floor() -> None:
    throttled = DeliveryFailed(ErrorClass.HTTP_429, "slow down", retry_after_seconds=600)
    run, scheduler, _ = sender(Source(subscription()), Poster(throttled))
    run.deliver(WebhookJob(subscription_id="sub_1", event=event()))
    assert scheduler.scheduled[0][1] == NOW + timedelta(seconds=600)


def test_a_4xx_or_the_last_retry_is_a_failed_delivery() -> None:
    refused = DeliveryFailed(ErrorClass.HTTP_4XX, "bad", dest_status="400")
    run, scheduler, failures = sender(Source(subscription()), Poster(refused))
    assert run.deliver(WebhookJob(subscription_id="sub_1", event=event())) is Outcome.FAILED
    busy = DeliveryFailed(ErrorClass.HTTP_5XX, "busy", dest_status="500")
    run, scheduler, failures = sender(Source(subscription()), Poster(busy))
    last = WebhookJob(subscription_id="sub_1", event=event(), attempt=7, first_attempt_at=NOW)
    assert run.deliver(last) is Outcome.FAILED
    assert scheduler.scheduled == []
    assert (failures.recorded[0].error_class, failures.recorded[0].attempts) == ("http_5xx", 8)


def test_410_disables_with_a_subscription_disabled_event_and_records_the_failure() -> None:
    gone = DeliveryFailed(ErrorClass.HTTP_410, "gone", dest_status="410")
    source = Source(subscription(version=4))
    run, scheduler, failures = sender(source, Poster(gone))
    assert run.deliver(WebhookJob(subscription_id="sub_1", event=event())) is Outcome.GONE
    (disabled,) = source.disabled
    assert (disabled.type, disabled.id) == (
        EventType.SUBSCRIPTION_DISABLED,
        "subscription.disabled:t1:sub_1:5",
    )
    assert scheduler.scheduled == []
    assert failures.recorded[0].error_class == "http_410"


def test_a_disabled_subscription_records_instead_of_sending_and_a_deleted_one_drops() -> None:
    poster = Poster(200)
    run, _, failures = sender(Source(subscription(enabled=False)), poster)
    assert run.deliver(WebhookJob(subscription_id="sub_1", event=event())) is Outcome.FAILED
    assert failures.recorded[0].error_class == SUBSCRIPTION_DISABLED
    run, _, failures = sender(Source(None), poster)
    assert run.deliver(WebhookJob(subscription_id="sub_1", event=event())) is Outcome.DROPPED
    assert (poster.posts, failures.recorded) == ([], [])


def test_a_successful_replay_clears_its_failure_and_replays_have_their_own_schedules() -> None:
    run, _, failures = sender(Source(subscription()), Poster(200))
    job = WebhookJob(subscription_id="sub_1", event=event(), run_id="run_1", replay=True)
    run.deliver(job)
    assert failures.cleared == ["msg_1:2"]
    assert schedule_name(job) != schedule_name(job.model_copy(update={"run_id": "run_2"}))
    assert len(schedule_name(job)) <= 64
