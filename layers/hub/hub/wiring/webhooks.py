"""The webhook sender (WebhookSenderFunction, functions/webhook_sender): the webhooks lane's
consumer - subscriptions with their secrets opened, httpx under the egress policy, retries on
EventBridge Scheduler back to the webhooks queue."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from hub.config import Settings
from hub.wiring import common
from hub.wiring.registry import once, settings_of

if TYPE_CHECKING:
    from hub.delivery.egress import EgressPolicy
    from hub.outbox.webhooks import WebhookSender


class WebhookSenderSettings(Settings):
    """Its retries: the schedule group, the webhooks queue's ARN (the schedules' target), the
    role Scheduler sends with and the schedules' DLQ. The KMS key is optional (without one,
    subscription secrets are stored in clear)."""

    schedule_group: str = Field(min_length=1)
    webhooks_queue_arn: str = Field(min_length=1)
    scheduler_role_arn: str = Field(min_length=1)
    schedules_dlq_arn: str = Field(min_length=1)


SETTINGS = WebhookSenderSettings
settings = settings_of(SETTINGS, "the webhook sender")


#: The cold start's check (the handler calls it at import): a missing or malformed variable
#: fails the init, named, instead of the first request.
init = settings


@once
def webhook_sender() -> WebhookSender:
    """The webhooks lane's consumer: subscriptions with their secrets opened (cached), httpx,
    retries on EventBridge Scheduler back to the webhooks queue."""
    from hub.adapters.dynamo.subscriptions import DynamoSubscriptions, DynamoWebhookFailures
    from hub.adapters.scheduler import EventBridgeRetryScheduler
    from hub.delivery.webhook import HttpWebhookPoster
    from hub.outbox.webhooks import CachedSubscriptions, WebhookSender

    s = settings()
    source = DynamoSubscriptions(s.table_name, common.data_keys(s), opens=True)
    return WebhookSender(
        CachedSubscriptions(source, s.config_cache_seconds),
        HttpWebhookPoster(egress_policy()),
        EventBridgeRetryScheduler(
            s.schedule_group, s.webhooks_queue_arn, s.scheduler_role_arn, dead_letter_arn=s.schedules_dlq_arn
        ),
        DynamoWebhookFailures(s.table_name),
    )


@once
def egress_policy() -> EgressPolicy:
    """The one egress policy of this process (template EgressAllowedCidrs): the posts'."""
    return common.egress_policy(settings())
