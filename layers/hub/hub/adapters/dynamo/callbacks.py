"""Delivery-status callbacks (pattern 5) on the hub table.

- a connection's credential: ``CONNECTION#<id>`` / ``CALLBACK``, the token's SHA-256 only (and
  the previous token's during a rotation's grace); minting is conditional on the token it
  replaces, so two concurrent mints cannot both believe they won;
- every callback as received: ``MSG#<message>`` / ``CALLBACK#<received_at>#<callback_id>``, with
  a TTL, written before the projection moves (so a callback answered 2xx is always recorded);
- the projection: `delivery_status` / `delivery_status_at` on the message item, advanced in ONE
  conditional UpdateItem whose condition is the set of statuses the new one may replace
  (hub.domain.delivery_status.sources_of) and no step's lease on the item, with ``ADD version
  1``: concurrent callbacks are
  serialized by DynamoDB and none can regress it; the change leaves through the table's stream
  as `message.delivery_status_changed` (hub.outbox.events).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import decode_cursor, encode_cursor
from hub.adapters.dynamo.messages import record_from
from hub.adapters.dynamo.table import ConditionFailed, Table, Update, epoch, format_ts
from hub.domain.delivery_status import CallbackCredential, DeliveryStatus, sources_of
from hub.domain.message import MessageRecord
from hub.errors import Conflict, NotFound
from hub.ports import CallbackPage, ReceivedCallback

#: How long a callback record is kept (TTL): long enough to settle a dispute about a delivery;
#: never longer than its message (callback_expires_at).
CALLBACK_RETENTION = timedelta(days=90)
_TABLE_KEY = frozenset({"PK", "SK"})


def advance_update(tenant_id: str, status: DeliveryStatus, now: datetime) -> Update | None:
    """The one conditional update that moves a message's projection to `status`, or None when
    nothing may ever be replaced by it."""
    sources = sources_of(status)
    if not sources:
        return None
    update = Update().set(delivery_status=status.value, delivery_status_at=format_ts(now)).add("version")
    update.where(f"{update.name('tenant_id')} = {update.value(tenant_id)}")
    current = update.name("delivery_status")
    allowed = []
    if DeliveryStatus.PENDING in sources:
        allowed.append(f"attribute_not_exists({current})")
    stored = sorted(s.value for s in sources if s is not DeliveryStatus.PENDING)
    if stored:
        allowed.append(f"{current} IN ({', '.join(update.value(v) for v in stored)})")
    update.where(" OR ".join(allowed))
    # Not while a step holds the message (mid-delivery): the outbox publisher's stream filter
    # drops records of a leased message item (a take announces nothing), so an advance written
    # under a lease would never leave as its event. The caller answers 503; the resend advances.
    update.where(f"attribute_not_exists({update.name('lease_owner')})")
    return update


def callback_item(received: ReceivedCallback) -> dict[str, Any]:
    received_at = format_ts(received.received_at)
    return {
        **keys.callback_record_key(received.message_id, received_at, received.callback_id),
        "item_type": "status_callback",
        "message_id": received.message_id,
        "tenant_id": received.tenant_id,
        "connection_id": received.connection_id,
        "callback_id": received.callback_id,
        "status": received.status.value,
        "received_at": received_at,
        "occurred_at": format_ts(received.occurred_at) if received.occurred_at else None,
        "detail": received.detail,
        "external_ref": received.external_ref,
        "expires_at": callback_expires_at(received),
    }


def callback_expires_at(received: ReceivedCallback) -> int:
    """A callback record's TTL: CALLBACK_RETENTION, but never after its message's (issue 29)."""
    kept = epoch(received.received_at + CALLBACK_RETENTION)
    return kept if received.message_expires_at is None else min(kept, received.message_expires_at)


def credential_item(credential: CallbackCredential) -> dict[str, Any]:
    return {
        **keys.callback_credential_key(credential.tenant_id, credential.connection_id),
        "item_type": "callback_credential",
        "connection_id": credential.connection_id,
        "tenant_id": credential.tenant_id,
        "token_id": credential.token_id,
        "token_sha256": credential.token_sha256,
        "prefix": credential.prefix,
        "minted_at": format_ts(credential.minted_at),
        "previous_sha256": credential.previous_sha256,
        "previous_until": format_ts(credential.previous_until) if credential.previous_until else None,
    }


def credential_from(item: dict[str, Any]) -> CallbackCredential:
    return CallbackCredential.model_validate(item)


class DynamoStatusCallbacks:
    """hub.ports.DeliveryStatusStore and CallbackCredentialStore over the hub table."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "message storage")

    # --- the partner API ------------------------------------------------------------------------

    def message(self, message_id: str) -> MessageRecord | None:
        item = self._table.get(keys.message_key(message_id))
        return record_from(item) if item else None

    def credential(self, tenant_id: str, connection_id: str) -> CallbackCredential | None:
        item = self._table.get(keys.callback_credential_key(tenant_id, connection_id))
        return credential_from(item) if item else None

    def record_callback(self, received: ReceivedCallback) -> None:
        # Its sort key holds a new random id: a put never meets an earlier callback.
        self._table.put(callback_item(received))

    def advance(
        self, record: MessageRecord, status: DeliveryStatus, now: datetime
    ) -> tuple[MessageRecord, bool]:
        """The message after the callback, and whether its projection moved (when it did not, the
        message as it was: its `lease_owner` tells a refusal under a step's lease)."""
        update = advance_update(record.tenant_id, status, now)
        if update is None:
            return record, False
        try:
            return record_from(self._table.update(keys.message_key(record.message_id), update)), True
        except ConditionFailed as refused:
            old = refused.old
            if not old or old.get("tenant_id") != record.tenant_id:
                raise NotFound("message not found") from refused
            return record_from(old), False

    def callbacks(self, message_id: str, limit: int, cursor: str | None) -> CallbackPage:
        """The message's callbacks, newest first, one Query page."""
        partition = keys.message_key(message_id)["PK"]
        request: dict[str, Any] = {
            "KeyConditionExpression": "PK = :pk AND begins_with(SK, :prefix)",
            "ExpressionAttributeValues": {
                ":pk": {"S": partition},
                ":prefix": {"S": keys.CALLBACK_RECORD_PREFIX},
            },
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if cursor:
            start = decode_cursor(
                cursor,
                lambda key: key["PK"] == partition and key["SK"].startswith(keys.CALLBACK_RECORD_PREFIX),
                _TABLE_KEY,
            )
            request["ExclusiveStartKey"] = {name: {"S": value} for name, value in start.items()}
        items, last = self._table.query(**request)
        rows = [
            {
                name: item.get(name)
                for name in ("callback_id", "status", "received_at", "occurred_at", "detail", "external_ref")
            }
            for item in items
        ]
        return CallbackPage(rows=rows, next_cursor=encode_cursor(last) if last else None)

    # --- the admin API --------------------------------------------------------------------------

    def get(self, tenant_id: str, connection_id: str) -> CallbackCredential | None:
        return self.credential(tenant_id, connection_id)

    def save(self, credential: CallbackCredential, replacing: str | None) -> None:
        """Stores `credential` if the stored one is still `replacing` (a token hash; None: none
        stored). Conflict when another mint or a revoke came first."""
        if replacing is None:
            condition, values = "attribute_not_exists(PK)", None
        else:
            condition, values = "token_sha256 = :replacing", {":replacing": replacing}
        try:
            self._table.put(credential_item(credential), condition=condition, values=values)
        except ConditionFailed as lost:
            raise Conflict("the callback token changed meanwhile; try again") from lost

    def revoke(self, tenant_id: str, connection_id: str) -> bool:
        """Deletes the connection's credential (every token of it); False when there was none."""
        try:
            self._table.delete(
                keys.callback_credential_key(tenant_id, connection_id), condition="attribute_exists(PK)"
            )
        except ConditionFailed:
            return False
        return True
