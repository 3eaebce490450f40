"""Outbox event items: an event that is not a message's status change is written in the same
transaction as the change it announces (hub.outbox.events), and leaves through the stream."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.table import ConditionFailed, Table, epoch
from hub.outbox.events import OutboxEvent

#: An event item only has to outlive the stream's 24 h retention.
EVENT_ITEM_TTL = timedelta(days=1)


def event_item(event: OutboxEvent, now: datetime) -> dict[str, Any]:
    return {
        **keys.event_key(event.id),
        "item_type": "event",
        "tenant_id": event.tenant_id,
        "event_type": event.type.value,
        "event_json": event.model_dump_json(exclude_none=True),
        "expires_at": epoch(now + EVENT_ITEM_TTL),
    }


def event_put(table: Table, event: OutboxEvent, now: datetime) -> dict[str, Any]:
    """The transaction entry that writes `event`'s item; the same event id twice is refused, so
    a retried transaction cannot announce a change twice."""
    return table.put_entry(event_item(event, now), condition="attribute_not_exists(PK)")


def put_event(table: Table, event: OutboxEvent, now: datetime) -> bool:
    """An event with no other write to join (its change is already durable elsewhere, e.g. a
    webhook answered 410). False: an event with this id was written already."""
    try:
        table.put(event_item(event, now), condition="attribute_not_exists(PK)")
    except ConditionFailed:
        return False
    return True
