"""Pages of the GSI1 listings (admin queue tabs, API keys, tenants) and their opaque cursors: a
page's LastEvaluatedKey as base64url JSON. A cursor coming back is checked to be one the same
listing gives out (its own partition, keys consistent with each other), so it can never open
another tenant's partition nor make DynamoDB refuse the query."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hub.adapters.dynamo.table import Table
from hub.errors import CursorMismatch, ValidationFailed

#: The attributes of a GSI1 LastEvaluatedKey: the table's key and the index's.
CURSOR_KEYS = frozenset({"PK", "SK", "GSI1PK", "GSI1SK"})
#: The cursor's field naming the filters it was given out under (hub.ports.QueueFilter).
SCOPE = "q"


def encode_cursor(key: Mapping[str, Any]) -> str:
    raw = json.dumps(dict(key), separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(
    cursor: str,
    belongs: Callable[[dict[str, str]], bool],
    shape: frozenset[str] = CURSOR_KEYS,
    *,
    scope: str | None = None,
) -> dict[str, str]:
    """The start key `cursor` stands for, when it has the key's `shape` (a GSI1 key's unless
    told) and `belongs` to the listing; 400 `validation_error` (field `cursor`) otherwise. With
    a `scope` (the listing's filters, issue 13) the cursor must carry the same one: a cursor of
    the same listing under other filters is 422 `cursor_mismatch`."""
    invalid = ValidationFailed(
        "cursor is not valid", details=[{"field": "cursor", "problem": "invalid_cursor"}]
    )
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError as exc:
        raise invalid from exc
    expected = shape | {SCOPE} if scope is not None else shape
    if not isinstance(key, dict) or set(key) != expected or not all(isinstance(v, str) for v in key.values()):
        raise invalid
    given = key.pop(SCOPE, None)
    if not belongs(key):
        raise invalid
    if given != scope:
        raise CursorMismatch(
            "cursor was given out for other filters; start again without it",
            details=[{"field": "cursor", "problem": "other_filters"}],
        )
    return key


@dataclass(frozen=True)
class SortRange:
    """Bounds of an index's sort key, both inclusive (a caller wanting `< until` on keys
    `<fixed-width time>#<id>` passes the bare time: no key equals it)."""

    low: str | None = None
    high: str | None = None


def index_page(
    table: Table,
    partition: str,
    limit: int,
    cursor: str | None,
    belongs: Callable[[dict[str, str]], bool],
    *,
    newest_first: bool = True,
    index: str = "GSI1",
    sort_key: str | None = None,
    sort_range: SortRange | None = None,
    equals: Mapping[str, str] | None = None,
    scope: str | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """One Query page of `index` (`<index>PK` and `sort_key`, `<index>SK` unless told)
    `partition` from `cursor` (checked: same partition and `belongs`; same `scope` when given),
    with the cursor of the next page (None on the last). `sort_range` narrows the sort key;
    `equals` filters on projected attributes after the read (a page then may come back short,
    with a cursor: it never reads more than `limit` index items)."""
    pk, sk = f"{index}PK", sort_key or f"{index}SK"
    names = {"#pk": pk}
    values: dict[str, Any] = {":pk": {"S": partition}}
    condition = "#pk = :pk"
    low, high = (sort_range.low, sort_range.high) if sort_range else (None, None)
    if low is not None:
        values[":low"] = {"S": low}
    if high is not None:
        values[":high"] = {"S": high}
    if low is not None or high is not None:
        names["#sk"] = sk
        condition += {
            (True, True): " AND #sk BETWEEN :low AND :high",
            (True, False): " AND #sk >= :low",
            (False, True): " AND #sk <= :high",
        }[(low is not None, high is not None)]
    request: dict[str, Any] = {
        "IndexName": index,
        "KeyConditionExpression": condition,
        "ScanIndexForward": not newest_first,
        "Limit": limit,
    }
    if equals:
        clauses = []
        for n, (attribute, wanted) in enumerate(sorted(equals.items())):
            names[f"#f{n}"] = attribute
            values[f":f{n}"] = {"S": wanted}
            clauses.append(f"#f{n} = :f{n}")
        request["FilterExpression"] = " AND ".join(clauses)
    request["ExpressionAttributeNames"] = names
    request["ExpressionAttributeValues"] = values
    if cursor:
        shape = frozenset({"PK", "SK", pk, sk})
        start = decode_cursor(cursor, lambda key: key[pk] == partition and belongs(key), shape, scope=scope)
        request["ExclusiveStartKey"] = {name: {"S": value} for name, value in start.items()}
    rows, last = table.query(**request)
    if not last:
        return rows, None
    return rows, encode_cursor({**last, SCOPE: scope} if scope is not None else last)


def items_of(table: Table, rows: list[dict[str, Any]], sort_key: str) -> list[dict[str, Any]]:
    """The table items (`PK` of each row, `sort_key`) of index rows that project only keys, in
    the rows' order; one BatchGetItem, none for no rows. Items gone meanwhile are left out."""
    if not rows:
        return []
    found = table.batch_get([{"PK": row["PK"], "SK": sort_key} for row in rows])
    return [item for row in rows if (item := found.get((row["PK"], sort_key))) is not None]
