"""Outbound webhooks (issue 12; the `webhooks` lane): the sink that fans events out to a
tenant's subscriptions, and the sender that delivers one (subscription, event) signed per
Standard Webhooks, retries it durably and records what it gives up on.

- Fan-out: the subscription sink turns each event into one queue message per matching
  subscription (SendMessageBatch). A tenant's enabled subscriptions are remembered per instance
  for the configuration cache time, so an event of a tenant with no subscription costs no
  request at all past the first lookup. No write per event: the same event twice (a
  redelivered stream record) is sent twice with the same `webhook-id`, which receivers
  deduplicate by.
- Delivery: `webhook-id` is the event id on every attempt (retries and replays included);
  `webhook-timestamp` is the attempt's time (receivers refuse one 5 minutes off).
- Failures are classified as deliveries' are (hub.domain.failure through hub.delivery); a
  webhook is idempotent for its receiver (the id), so an uncertain outcome (a timeout) is
  retried. Retryable ones wait on EventBridge Scheduler (`WEBHOOK_RETRY_POLICY`, the
  Standard Webhooks / Svix schedule); the rest, and exhausted ones, become a failed delivery an
  operator sees and replays. `410 Gone` disables the subscription (conditional update) and
  writes a `subscription.disabled` event in the same transaction.
- Ordering: not held. Each event carries the message item's `version`; a subscriber orders a
  message's events by it (a retried earlier event can arrive after a later one).
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from pydantic import ConfigDict

from hub.config_cache import TtlCache
from hub.delivery.port import DeliveryFailed
from hub.domain.clock import utcnow
from hub.domain.failure import ErrorClass
from hub.domain.model import HubModel
from hub.domain.retry import RetryOutcome, RetryPolicy, decide, is_retryable
from hub.outbox.events import EventType, OutboxEvent
from hub.outbox.signing import webhook_headers
from hub.outbox.subscriptions import Subscription

logger = logging.getLogger(__name__)

#: Retries of a webhook: the Standard Webhooks / Svix schedule (5 s, 5 min, 30 min, 2 h, 5 h,
#: 10 h, 10 h; about 28 h in all), never earlier than a Retry-After.
WEBHOOK_RETRY_POLICY = RetryPolicy(
    retry_auto_enabled=True,
    retry_max=7,
    ladder_seconds=(5, 300, 1800, 7200, 18000, 36000),
    retry_max_age_seconds=30 * 3600,
    retry_dead_letter=True,
)
#: What a failed delivery records instead of an error class when the subscription was disabled
#: (by an operator, or a 410) while the event waited: replayable once it is enabled again.
SUBSCRIPTION_DISABLED = "subscription_disabled"
USER_AGENT = "IntegrationHub-Webhooks/1"


class WebhookJob(HubModel):
    """One queue message of the webhooks lane: an event for one subscription, and where its
    delivery stands. The same `event.id` on every attempt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subscription_id: str
    event: OutboxEvent
    #: Retries already made (0: the first attempt).
    attempt: int = 0
    #: When this run's first attempt was made (the retry window counts from it).
    first_attempt_at: datetime | None = None
    #: "stream" for the fan-out's run; a new id per operator replay (its own schedules).
    run_id: str = "stream"
    #: An operator's replay: a success clears the failed delivery.
    replay: bool = False


class FailedWebhook(HubModel):
    """A delivery the sender gave up on (or could not make): visible and replayable."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subscription_id: str
    tenant_id: str
    event: OutboxEvent
    failed_at: datetime
    #: An ErrorClass value, or SUBSCRIPTION_DISABLED.
    error_class: str
    dest_status: str | None = None
    detail: str = ""
    #: Attempts made in the run that failed.
    attempts: int = 1
    replayed_at: datetime | None = None


@dataclass(frozen=True)
class FailurePage:
    items: list[FailedWebhook]
    next_cursor: str | None


# --- ports ------------------------------------------------------------------------------------


class SubscriptionDirectory(Protocol):
    def enabled_for_tenant(self, tenant_id: str) -> list[Subscription]:
        """The tenant's enabled subscriptions (secrets not opened)."""
        ...


class SubscriptionSource(Protocol):
    def for_delivery(self, tenant_id: str, subscription_id: str) -> Subscription | None:
        """The tenant's subscription with its secrets opened; None when there is none."""
        ...

    def current(self, tenant_id: str, subscription_id: str) -> Subscription | None:
        """As `for_delivery`, but as stored now: a remembered copy is read again."""
        ...

    def disable(self, subscription: Subscription, reason: str, event: OutboxEvent, now: datetime) -> bool:
        """Disables `subscription` if it is still enabled, writing `event` in the same
        transaction; False when it was disabled (or deleted) already."""
        ...


class WebhookQueue(Protocol):
    def send(self, jobs: Sequence[WebhookJob]) -> None:
        """Puts every job on the webhooks queue, or raises QueueUnavailable."""
        ...


class WebhookScheduler(Protocol):
    def send_at(self, body: str, at: datetime, name: str, *, tenant_id: str | None = None) -> None:
        """Puts `body` on the webhooks queue at `at`, once per `name`, as a message of
        `tenant_id` (its MessageGroupId, issue 30)."""
        ...


class FailedDeliveries(Protocol):
    def record(self, failure: FailedWebhook) -> None: ...

    def get(self, tenant_id: str, subscription_id: str, event_id: str) -> FailedWebhook | None: ...

    def clear(self, tenant_id: str, subscription_id: str, event_id: str) -> None: ...

    def mark_replayed(self, tenant_id: str, subscription_id: str, event_id: str, at: datetime) -> None: ...

    def list_failures(
        self, tenant_id: str, subscription_id: str, limit: int, cursor: str | None
    ) -> FailurePage:
        """Newest first."""
        ...

    def since(self, tenant_id: str, subscription_id: str, since: datetime) -> Iterator[FailedWebhook]:
        """Every failure recorded at or after `since`, oldest first."""
        ...


class WebhookPoster(Protocol):
    def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        """POSTs once; the 2xx status, or DeliveryFailed with its class."""
        ...


# --- the sink ---------------------------------------------------------------------------------


class SubscriptionSink:
    """hub.outbox.ports.EventSink: one webhooks-queue message per (matching subscription, event)."""

    name = "webhook-subscriptions"

    def __init__(
        self,
        directory: SubscriptionDirectory,
        queue: WebhookQueue,
        cache_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._directory = directory
        self._queue = queue
        self._subscriptions: TtlCache[list[Subscription]] = TtlCache(cache_seconds, clock=clock)

    def subscriptions_of(self, tenant_id: str) -> list[Subscription]:
        return self._subscriptions.get(tenant_id, lambda: self._directory.enabled_for_tenant(tenant_id))

    def publish(self, events: Sequence[OutboxEvent]) -> None:
        jobs: list[WebhookJob] = []
        seen: set[tuple[str, str]] = set()
        for event in events:
            for subscription in self.subscriptions_of(event.tenant_id):
                pair = (subscription.subscription_id, event.id)
                if pair in seen or not subscription.wants(event):
                    continue
                seen.add(pair)
                jobs.append(WebhookJob(subscription_id=subscription.subscription_id, event=event))
        if jobs:
            self._queue.send(jobs)


# --- the sender -------------------------------------------------------------------------------


class Outcome(StrEnum):
    SENT = "sent"
    RETRY_SCHEDULED = "retry_scheduled"
    FAILED = "failed"
    #: 410 Gone: the subscription is disabled.
    GONE = "gone"
    #: The subscription was deleted (or is another tenant's): nothing to deliver to.
    DROPPED = "dropped"


def body_bytes(event: OutboxEvent) -> bytes:
    """The request body: the event's JSON, the same bytes on every attempt."""
    return json.dumps(event.body(), separators=(",", ":"), ensure_ascii=False).encode()


def schedule_name(job: WebhookJob) -> str:
    """Deterministic per (subscription, event, run, attempt): a rerun of the same decision never
    schedules twice; a replay (a new run) never meets an earlier run's schedule."""
    raw = f"{job.event.tenant_id}|{job.subscription_id}|{job.event.id}|{job.run_id}|{job.attempt}".encode()
    return "wh-" + hashlib.sha256(raw).hexdigest()[:48]


def disabled_event(subscription: Subscription, reason: str, now: datetime) -> OutboxEvent:
    """The `subscription.disabled` event of the change that disables `subscription` (its next
    version): one id per disable."""
    version = subscription.version + 1
    return OutboxEvent(
        id=f"subscription.disabled:{subscription.tenant_id}:{subscription.subscription_id}:{version}",
        type=EventType.SUBSCRIPTION_DISABLED,
        tenant_id=subscription.tenant_id,
        occurred_at=now,
        subscription_id=subscription.subscription_id,
        details={"reason": reason},
    )


class WebhookSender:
    """Delivers one job (the webhooks lane's consumer)."""

    def __init__(
        self,
        subscriptions: SubscriptionSource,
        poster: WebhookPoster,
        scheduler: WebhookScheduler,
        failures: FailedDeliveries,
        *,
        policy: RetryPolicy = WEBHOOK_RETRY_POLICY,
        clock: Callable[[], datetime] = utcnow,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._subscriptions = subscriptions
        self._poster = poster
        self._scheduler = scheduler
        self._failures = failures
        self._policy = policy
        self._clock = clock
        self._rand = rand

    def deliver(self, job: WebhookJob) -> Outcome:
        now = self._clock()
        event = job.event
        # The job's event names the tenant: subscription ids are unique within a tenant only.
        subscription = self._subscriptions.for_delivery(event.tenant_id, job.subscription_id)
        if subscription is None or subscription.tenant_id != event.tenant_id:
            self._log("webhook dropped: no such subscription", job)
            return Outcome.DROPPED
        if not subscription.enabled:
            # A remembered "disabled" may be older than an operator's enable (then a replay at
            # once): what is stored now decides, at one more read for a disabled one only.
            subscription = self._subscriptions.current(event.tenant_id, job.subscription_id)
            if subscription is None or subscription.tenant_id != event.tenant_id:
                self._log("webhook dropped: no such subscription", job)
                return Outcome.DROPPED
        if not subscription.enabled:
            self._record(job, now, SUBSCRIPTION_DISABLED, None, subscription.disabled_reason or "")
            return Outcome.FAILED
        secrets = subscription.signing_values(now)
        body = body_bytes(event)
        headers = {
            **webhook_headers(secrets, event.id, int(now.timestamp()), body),
            "content-type": "application/json",
            "user-agent": USER_AGENT,
        }
        try:
            status = self._poster.post(subscription.url, body, headers)
        except DeliveryFailed as failure:
            return self._failed(job, subscription, failure, now)
        if job.replay:
            self._failures.clear(subscription.tenant_id, subscription.subscription_id, event.id)
        self._log("webhook sent", job, dest_status=str(status))
        return Outcome.SENT

    def _failed(
        self, job: WebhookJob, subscription: Subscription, failure: DeliveryFailed, now: datetime
    ) -> Outcome:
        if failure.error_class is ErrorClass.HTTP_410:
            reason = "the receiver answered 410 Gone"
            self._subscriptions.disable(subscription, reason, disabled_event(subscription, "gone", now), now)
            self._record(job, now, failure.error_class.value, failure.dest_status, failure.dest_status_text)
            self._log("webhook subscription gone: disabled", job, dest_status=failure.dest_status)
            return Outcome.GONE
        retryable = is_retryable(
            failure.error_class,
            fault_code=failure.fault_code,
            uncertain=failure.uncertain,
            idempotent_retries=True,
        )
        first = job.first_attempt_at or now
        decision = decide(
            self._policy,
            retryable=retryable,
            retry_count=job.attempt,
            received_at=first,
            now=now,
            retry_after_seconds=failure.retry_after_seconds,
            rand=self._rand,
        )
        if decision.outcome is RetryOutcome.SCHEDULE and decision.next_retry_at is not None:
            following = job.model_copy(update={"attempt": job.attempt + 1, "first_attempt_at": first})
            self._scheduler.send_at(
                following.model_dump_json(),
                decision.next_retry_at,
                schedule_name(following),
                tenant_id=following.event.tenant_id,
            )
            self._log(
                "webhook retry scheduled",
                job,
                error_class=failure.error_class.value,
                next_retry_at=decision.next_retry_at.isoformat(),
            )
            return Outcome.RETRY_SCHEDULED
        self._record(job, now, failure.error_class.value, failure.dest_status, failure.dest_status_text)
        self._log(
            "webhook failed", job, error_class=failure.error_class.value, dest_status=failure.dest_status
        )
        return Outcome.FAILED

    def _record(
        self, job: WebhookJob, now: datetime, error_class: str, dest_status: str | None, detail: str
    ) -> None:
        self._failures.record(
            FailedWebhook(
                subscription_id=job.subscription_id,
                tenant_id=job.event.tenant_id,
                event=job.event,
                failed_at=now,
                error_class=error_class,
                dest_status=dest_status,
                detail=detail[:300],
                attempts=job.attempt + 1,
            )
        )

    @staticmethod
    def _log(text: str, job: WebhookJob, **extra: str | None) -> None:
        logger.info(
            text,
            extra={
                "tenant_id": job.event.tenant_id,
                "subscription_id": job.subscription_id,
                "event_id": job.event.id,
                "event_type": job.event.type.value,
                "attempt": job.attempt,
                **extra,
            },
        )


class CachedSubscriptions:
    """A SubscriptionSource that remembers a subscription (secrets opened: one KMS Decrypt per
    secret and cache period) for the configuration cache time; a disable forgets it."""

    def __init__(
        self, inner: SubscriptionSource, ttl_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._inner = inner
        self._cache: TtlCache[Subscription | None] = TtlCache(ttl_seconds, clock=clock)

    def for_delivery(self, tenant_id: str, subscription_id: str) -> Subscription | None:
        return self._cache.get(
            f"{tenant_id}#{subscription_id}", lambda: self._inner.for_delivery(tenant_id, subscription_id)
        )

    def current(self, tenant_id: str, subscription_id: str) -> Subscription | None:
        self._cache.forget(f"{tenant_id}#{subscription_id}")
        return self._inner.current(tenant_id, subscription_id)

    def disable(self, subscription: Subscription, reason: str, event: OutboxEvent, now: datetime) -> bool:
        self._cache.forget(f"{subscription.tenant_id}#{subscription.subscription_id}")
        return self._inner.disable(subscription, reason, event, now)
