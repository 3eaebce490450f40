"""The search's reads (hub.admin.search): point lookups in one BatchGetItem, GSI3 in one Query,
the rows in one BatchGetItem. Never a Scan."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.status_index import QUEUE_ROW_FIELDS, queue_row
from hub.adapters.dynamo.table import Table, epoch
from hub.admin.search import IndexSlice, Named, PointKeys, SearchedMessage, SearchKind

#: What a match is checked against, besides the row; and the message's TTL (issue 29).
_MATCH_FIELDS = ("tenant_id", "correlation_id", "idempotency_key", "entity_key", "expires_at")
_MESSAGE_FIELDS = (*QUEUE_ROW_FIELDS, *_MATCH_FIELDS)
#: A claim's and a business key's: the message they name (and a claim's end, `expires_at`).
#: Read with the message fields in the same request (one projection for every key of a
#: BatchGetItem).
_NAMED_FIELDS = _MESSAGE_FIELDS


def searched(item: Mapping[str, Any]) -> SearchedMessage:
    """A stored message item (its row and match fields) as the search reads it."""
    return SearchedMessage(
        message_id=str(item["message_id"]),
        tenant_id=str(item.get("tenant_id", "")),
        integration_id=str(item.get("integration_id", "")),
        received_at=str(item.get("received_at", "")),
        row=queue_row(item),
        external_id=item.get("external_id"),
        correlation_id=item.get("correlation_id"),
        idempotency_key=item.get("idempotency_key"),
        entity_key=item.get("entity_key"),
        expires_at=int(item["expires_at"]) if item.get("expires_at") is not None else None,
    )


class DynamoMessageSearch:
    """hub.admin.search.MessageSearchStore over the hub table."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "message storage")

    def named(self, wanted: PointKeys, now: datetime) -> Named:
        kinds: list[tuple[SearchKind, keys.Key]] = []
        if wanted.message_id is not None:
            kinds.append((SearchKind.MESSAGE_ID, keys.message_key(wanted.message_id)))
        kinds += [
            (SearchKind.IDEMPOTENCY_KEY, keys.idempotency_claim_key(wanted.tenant_id, integration_id, digest))
            for integration_id, digest in wanted.claims
        ]
        kinds += [(SearchKind.BUSINESS_KEY, keys.business_key(entity)) for entity in wanted.entities]
        found = self._table.batch_get([key for _, key in kinds], projection=_NAMED_FIELDS, consistent=False)
        named = Named()
        for kind, key in kinds:
            item = found.get((key["PK"], key["SK"]))
            if item is None or not item.get("message_id"):
                continue  # a business key only locked, never held, names none
            if kind is SearchKind.IDEMPOTENCY_KEY and int(item.get("expires_at", 0)) <= epoch(now):
                continue  # TTL deletes late: an expired claim no longer counts (as for ingest)
            message_id = str(item["message_id"])
            named.ids.setdefault(message_id, set()).add(kind)
            if kind is SearchKind.MESSAGE_ID:
                named.messages[message_id] = searched(item)
        return named

    def by_value(self, tenant_id: str, value: str, received_at_most: str | None, limit: int) -> IndexSlice:
        condition = "GSI3PK = :pk"
        values: dict[str, Any] = {":pk": {"S": keys.lookup_partition(tenant_id, value)}}
        if received_at_most is not None:
            condition += " AND #at <= :at"
            values[":at"] = {"S": received_at_most}
        request: dict[str, Any] = {
            "IndexName": "GSI3",
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if received_at_most is not None:
            request["ExpressionAttributeNames"] = {"#at": keys.LOOKUP_SORT_KEY}
        rows, last = self._table.query(**request)
        return IndexSlice(
            # A message item's row or its correlation pointer's: both in the message's partition.
            rows=[(keys.message_id_of(row["PK"]), str(row[keys.LOOKUP_SORT_KEY])) for row in rows],
            more=last is not None,
        )

    def messages(self, message_ids: Collection[str]) -> dict[str, SearchedMessage]:
        found = self._table.batch_get(
            [keys.message_key(message_id) for message_id in message_ids],
            projection=_MESSAGE_FIELDS,
            consistent=False,
        )
        return {str(item["message_id"]): searched(item) for item in found.values() if item.get("message_id")}
