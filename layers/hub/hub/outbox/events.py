"""Outbox events (seed 004, pattern 3; seed 002, the topic of sections 3 and 4.3).

The outbox is the hub table's own stream. A message's status change *is* its event: the stream
record of the message item (NEW_AND_OLD_IMAGES) carries the status before and after, and the
event id is ``<message_id>:<version>``, the same on every redelivery of that record. Events that
are not a message's status (a connection's breaker, a certificate about to expire, an integration
changed, a subscription disabled) are written as event items (``EVENT#<id>`` / ``EVENT``) in the
same transaction as the change they announce, and leave through the same stream.

An event names tenant, integration, message, connection, statuses and classes: never the
payload and never a secret.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from pydantic import ConfigDict, Field

from hub.domain.model import HubModel
from hub.domain.status import PipelineStatus


class EventType(StrEnum):
    MESSAGE_RECEIVED = "message.received"
    MESSAGE_MAPPED = "message.mapped"
    MESSAGE_SENT = "message.sent"
    MESSAGE_ERROR = "message.error"
    MESSAGE_RETRY_SCHEDULED = "message.retry_scheduled"
    MESSAGE_DEAD_LETTERED = "message.dead_lettered"
    MESSAGE_RETRY_CANCELLED = "message.retry_cancelled"
    MESSAGE_OBSERVED = "message.observed"
    MESSAGE_DUPLICATE_REJECTED = "message.duplicate_rejected"
    MESSAGE_DELIVERY_STATUS_CHANGED = "message.delivery_status_changed"
    CONNECTION_CERTIFICATE_EXPIRING = "connection.certificate_expiring"
    CONNECTION_CIRCUIT_OPENED = "connection.circuit_opened"
    CONNECTION_CIRCUIT_CLOSED = "connection.circuit_closed"
    CONNECTION_GONE = "connection.gone"
    CONNECTION_PAUSED = "connection.paused"
    CONNECTION_RESUMED = "connection.resumed"
    INTEGRATION_UPDATED = "integration.updated"
    SUBSCRIPTION_DISABLED = "subscription.disabled"


S = PipelineStatus

#: The event a message's new status announces.
STATUS_EVENTS: Mapping[PipelineStatus, EventType] = {
    S.RECEIVED: EventType.MESSAGE_RECEIVED,
    S.MAPPED: EventType.MESSAGE_MAPPED,
    S.SENT: EventType.MESSAGE_SENT,
    S.ERROR: EventType.MESSAGE_ERROR,
    S.RETRY_PENDING: EventType.MESSAGE_RETRY_SCHEDULED,
    S.DEAD_LETTER: EventType.MESSAGE_DEAD_LETTERED,
    S.CANCELLED: EventType.MESSAGE_RETRY_CANCELLED,
    S.RECEIVED_OBSERVED: EventType.MESSAGE_OBSERVED,
    S.DUPLICATE_REJECTED: EventType.MESSAGE_DUPLICATE_REJECTED,
}

#: Event item keys: ``EVENT#<event id>`` / ``EVENT`` (hub.adapters.dynamo.keys lists them).
EVENT_PREFIX = "EVENT#"
EVENT_SK = "EVENT"
MESSAGE_PREFIX = "MSG#"
MESSAGE_SK = "STATUS"

#: A change of any of these on the message item is an event. The status is the event in the
#: common case; the same status again is one when a retry was scheduled again (`retry_count`),
#: a new execution started (an operator's reprocess of a message left in `received`), or a
#: destination confirmed further (`delivery_status`, pattern 5). Takes, lease give-backs and log
#: trims change none of them: they bump the version but announce nothing.
ANNOUNCED_FIELDS = ("pipeline_status", "retry_count", "execution_id", "delivery_status")


class OutboxEvent(HubModel):
    """One event, as every sink sees it. `id` is stable across redeliveries of its stream
    record: subscribers deduplicate by it (it is the Standard Webhooks `webhook-id`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    type: EventType
    tenant_id: str
    occurred_at: datetime
    #: The message item's version (its events are ordered by it); 0 for an event item.
    version: int = 0
    integration_id: str | None = None
    message_id: str | None = None
    message_type: str | None = None
    connection_id: str | None = None
    subscription_id: str | None = None
    status_before: str | None = None
    status_after: str | None = None
    dest_status: str | None = None
    error_class: str | None = None
    retry_count: int | None = None
    next_retry_at: str | None = None
    uncertain: bool | None = None
    delivery_status: str | None = None
    #: What an event item adds (days to expiry, breaker figures, reason): scalars only.
    details: dict[str, str | int | float | bool | None] = Field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The JSON a subscriber receives (Standard Webhooks' `type`/`timestamp`/`data`
        envelope): the event's fields, unset ones left out."""
        data = self.model_dump(mode="json", exclude={"id", "type", "occurred_at"}, exclude_none=True)
        if not data.get("details"):
            data.pop("details", None)
        return {
            "id": self.id,
            "type": self.type.value,
            "timestamp": self.model_dump(mode="json", include={"occurred_at"})["occurred_at"],
            "data": data,
        }


def message_event_id(message_id: str, version: int) -> str:
    return f"{message_id}:{version}"


def message_event(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> OutboxEvent | None:
    """The event a change of a message item announces, or None when it announces none (see
    ANNOUNCED_FIELDS). `old` is None for the item's creation."""
    if old is not None and all(old.get(f) == new.get(f) for f in ANNOUNCED_FIELDS):
        return None
    status = PipelineStatus(str(new["pipeline_status"]))
    before = old or {}
    only_confirmed = old is not None and all(
        before.get(f) == new.get(f) for f in ANNOUNCED_FIELDS if f != "delivery_status"
    )
    kind = EventType.MESSAGE_DELIVERY_STATUS_CHANGED if only_confirmed else STATUS_EVENTS[status]
    message_id = str(new["message_id"])
    version = int(new.get("version", 0))
    failed = status in (S.ERROR, S.RETRY_PENDING, S.DEAD_LETTER)
    return OutboxEvent(
        id=message_event_id(message_id, version),
        type=kind,
        tenant_id=str(new["tenant_id"]),
        # A confirmation happened when the hub recorded it, not at the last status change.
        occurred_at=_timestamp(
            (new.get("delivery_status_at") if only_confirmed else None)
            or new.get("updated_at")
            or new["received_at"]
        ),
        version=version,
        integration_id=str(new["integration_id"]),
        message_id=message_id,
        message_type=_text(new.get("message_type")),
        status_before=_text(old.get("pipeline_status")) if old is not None else None,
        status_after=status.value,
        dest_status=_text(new.get("dest_status")),
        error_class=_text(new.get("last_retry_error_class")) if failed else None,
        retry_count=int(new["retry_count"]) if new.get("retry_count") else None,
        next_retry_at=_text(new.get("next_retry_at")) if status is S.RETRY_PENDING else None,
        uncertain=True if new.get("uncertain") else None,
        delivery_status=_text(new.get("delivery_status")),
    )


def item_event(new: Mapping[str, Any]) -> OutboxEvent:
    """The event an event item carries (written with the change it announces)."""
    return OutboxEvent.model_validate_json(str(new["event_json"]))


_deserializer = TypeDeserializer()


def _plain(image: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if image is None:
        return None
    return {k: _deserializer.deserialize(_binary(v)) for k, v in image.items()}


def _binary(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """Lambda delivers a binary attribute base64-encoded (a fingerprint claim's payload)."""
    if isinstance(value.get("B"), str):
        return {"B": base64.b64decode(value["B"])}
    return value


def events_of_record(record: Mapping[str, Any]) -> list[OutboxEvent]:
    """The events of one DynamoDB stream record as Lambda delivers it (typed attribute values).
    A record of any other item, or a change that announces nothing, has none."""
    if record.get("eventName") not in ("INSERT", "MODIFY"):
        return []
    change = record.get("dynamodb") or {}
    new = _plain(change.get("NewImage"))
    if new is None:
        return []
    pk, sk = str(new.get("PK", "")), str(new.get("SK", ""))
    if pk.startswith(EVENT_PREFIX) and sk == EVENT_SK:
        return [item_event(new)] if record.get("eventName") == "INSERT" else []
    if pk.startswith(MESSAGE_PREFIX) and sk == MESSAGE_SK:
        event = message_event(_plain(change.get("OldImage")), new)
        return [event] if event is not None else []
    return []


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _timestamp(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
