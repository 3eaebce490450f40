"""The outbox publisher (OutboxPublisherFunction, functions/outbox_publisher): the table's
stream to outbound webhook jobs (the webhooks lane) and the EventBridge bus (when the stack has
one)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from hub.config import Settings
from hub.wiring.registry import once, settings_of

if TYPE_CHECKING:
    from hub.outbox.ports import EventSink
    from hub.outbox.publisher import Publisher
    from hub.outbox.webhooks import SubscriptionSink


class OutboxSettings(Settings):
    """The webhooks lane's queue (the subscription sink sends its jobs there). The bus is
    optional: without HUB_EVENT_BUS_NAME no event goes to EventBridge."""

    webhooks_queue_url: str = Field(min_length=1)


SETTINGS = OutboxSettings
settings = settings_of(SETTINGS, "the outbox publisher")


#: The cold start's check (the handler calls it at import): a missing or malformed variable
#: fails the init, named, instead of the first request.
init = settings


@once
def outbox_publisher() -> Publisher:
    from hub.outbox.publisher import Publisher

    return Publisher(outbox_sinks())


def outbox_sinks() -> list[EventSink]:
    """Where the publisher hands events: outbound webhook subscriptions, then the EventBridge
    bus (when the stack has one)."""
    s = settings()
    sinks: list[EventSink] = [subscription_sink()]
    if s.event_bus_name:
        from hub.adapters.event_bus import EventBridgeSink

        sinks.append(EventBridgeSink(s.event_bus_name, s.bus_event_types.split(",")))
    return sinks


@once
def subscription_sink() -> SubscriptionSink:
    """Events to webhook jobs: a tenant's subscriptions remembered for the config cache time."""
    from hub.adapters.dynamo.subscriptions import DynamoSubscriptions
    from hub.adapters.webhook_queue import SqsWebhookQueue
    from hub.outbox.webhooks import SubscriptionSink

    s = settings()
    return SubscriptionSink(
        DynamoSubscriptions(s.table_name), SqsWebhookQueue(s.webhooks_queue_url), s.config_cache_seconds
    )
