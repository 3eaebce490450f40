"""Pages of the GSI1 listings (admin queue tabs, API keys, tenants) and their opaque cursors: a
page's LastEvaluatedKey as base64url JSON. A cursor coming back is checked to be one the same
listing gives out (its own partition, keys consistent with each other), so it can never open
another tenant's partition nor make DynamoDB refuse the query."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

from hub.adapters.dynamo.table import Table
from hub.errors import ValidationFailed

#: The attributes of a GSI1 LastEvaluatedKey: the table's key and the index's.
CURSOR_KEYS = frozenset({"PK", "SK", "GSI1PK", "GSI1SK"})


def encode_cursor(key: Mapping[str, Any]) -> str:
    raw = json.dumps(dict(key), separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(
    cursor: str, belongs: Callable[[dict[str, str]], bool], shape: frozenset[str] = CURSOR_KEYS
) -> dict[str, str]:
    """The start key `cursor` stands for, when it has the key's `shape` (a GSI1 key's unless
    told) and `belongs` to the listing; 400 `validation_error` (field `cursor`) otherwise."""
    invalid = ValidationFailed(
        "cursor is not valid", details=[{"field": "cursor", "problem": "invalid_cursor"}]
    )
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError as exc:
        raise invalid from exc
    if (
        not isinstance(key, dict)
        or set(key) != shape
        or not all(isinstance(v, str) for v in key.values())
        or not belongs(key)
    ):
        raise invalid
    return key


def index_page(
    table: Table,
    partition: str,
    limit: int,
    cursor: str | None,
    belongs: Callable[[dict[str, str]], bool],
    *,
    newest_first: bool = True,
) -> tuple[list[dict[str, Any]], str | None]:
    """One Query page of GSI1 `partition` from `cursor` (checked: same partition and `belongs`),
    with the cursor of the next page (None on the last)."""
    request: dict[str, Any] = {
        "IndexName": "GSI1",
        "KeyConditionExpression": "GSI1PK = :pk",
        "ExpressionAttributeValues": {":pk": {"S": partition}},
        "ScanIndexForward": not newest_first,
        "Limit": limit,
    }
    if cursor:
        start = decode_cursor(cursor, lambda key: key["GSI1PK"] == partition and belongs(key))
        request["ExclusiveStartKey"] = {name: {"S": value} for name, value in start.items()}
    rows, last = table.query(**request)
    return rows, encode_cursor(last) if last else None


def items_of(table: Table, rows: list[dict[str, Any]], sort_key: str) -> list[dict[str, Any]]:
    """The table items (`PK` of each row, `sort_key`) of index rows that project only keys, in
    the rows' order; one BatchGetItem, none for no rows. Items gone meanwhile are left out."""
    if not rows:
        return []
    found = table.batch_get([{"PK": row["PK"], "SK": sort_key} for row in rows])
    return [item for row in rows if (item := found.get((row["PK"], sort_key))) is not None]
