"""Erasure's deletes (hub.admin.erasure) on the hub table: one DeleteItem per item the message
left, its item last; a Query of its own partition finds the satellites there (no Scan)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.messages import record_from
from hub.adapters.dynamo.table import ConditionFailed, Table, epoch
from hub.domain.idempotency import idempotency_key_hash
from hub.domain.message import MessageRecord


class DynamoErasure:
    """hub.admin.erasure.ErasureStore over the hub table."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "message storage")

    def message(self, message_id: str) -> MessageRecord | None:
        item = self._table.get(keys.message_key(message_id))
        return record_from(item) if item else None

    def erase(self, record: MessageRecord, now: datetime) -> None:
        message_id, tenant_id, integration_id = record.message_id, record.tenant_id, record.integration_id
        named = {":m": message_id}
        if record.fingerprint:
            # The payload: content-addressed, so whichever message holds the claim now loses it.
            self._table.delete(keys.fingerprint_claim_key(tenant_id, integration_id, record.fingerprint))
        if record.idempotency_key:
            key_hash = idempotency_key_hash(record.idempotency_key)
            self._delete_if(
                keys.idempotency_claim_key(tenant_id, integration_id, key_hash), "message_id = :m", named
            )
        if record.entity_key:
            # Only while it names this message and no run holds its lease (a run of another
            # message of the key gives it back, then a later message takes the key afresh).
            self._delete_if(
                keys.business_key(record.entity_key),
                "message_id = :m AND (attribute_not_exists(lease_owner) OR lease_until < :now)",
                {**named, ":now": epoch(now)},
            )
        if record.held_on:
            self._table.delete(keys.held_key(tenant_id, record.held_on, message_id))
        message = keys.message_key(message_id)
        for key in list(self._partition(message["PK"])):
            if key["SK"] != message["SK"]:
                self._table.delete(key)
        self._table.delete(message)

    def _delete_if(self, key: Mapping[str, str], condition: str, values: Mapping[str, Any]) -> None:
        try:
            self._table.delete(key, condition, values)
        except ConditionFailed:
            return  # gone, or another message's now: not this message's to erase

    def _partition(self, partition: str) -> Iterator[dict[str, str]]:
        """The keys of every item of `partition` (the message, its callbacks, its pointer)."""
        request: dict[str, Any] = {
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": partition}},
            "ProjectionExpression": "PK, SK",
        }
        while True:
            items, last = self._table.query(**request)
            yield from ({"PK": item["PK"], "SK": item["SK"]} for item in items)
            if last is None:
                return
            request["ExclusiveStartKey"] = {name: {"S": value} for name, value in last.items()}
