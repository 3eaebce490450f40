"""The one DynamoDB client wrapper: codecs, an update-expression builder, and every call with
one translation of AWS errors.

- a failed condition is an answer, not a failure: `ConditionFailed` carries the item as it was
  (`ReturnValuesOnConditionCheckFailure=ALL_OLD`), so callers never read again to learn why;
- a cancelled transaction is `TransactionCancelled` with each item's reason and old item;
- anything else AWS or botocore raises becomes `StorageUnavailable` (retryable: a 5xx for an
  API, a redelivery for a step), naming the operation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from hub.adapters.aws import best_effort_client, client, error_code
from hub.errors import StorageUnavailable

_ser = TypeSerializer()
_deser = TypeDeserializer()
_MAX_BATCH_ROUNDS = 5
#: Keys per BatchGetItem request (DynamoDB's limit).
BATCH_GET_LIMIT = 100
#: DynamoDB bills a standard write per started KB of the item.
WRITE_UNIT_BYTES = 1024


def format_ts(value: datetime) -> str:
    """Fixed-width UTC timestamp, `YYYY-MM-DDTHH:MM:SS.ffffffZ`: sorts lexically in sort keys.
    Not strftime: its %Y does not pad years below 1000 ("264-11-27..."), which then neither
    sorts nor parses back."""
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def epoch(value: datetime) -> int:
    return int(value.timestamp())


def encode(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _ser.serialize(v) for k, v in item.items() if v is not None}


def decode(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _plain(_deser.deserialize(v)) for k, v in item.items()}


def _plain(value: Any) -> Any:
    """DynamoDB numbers as int (or float), binaries as bytes, recursively."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Binary):
        return bytes(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, set):
        return {_plain(v) for v in value}
    return value


def item_size(item: Mapping[str, Any]) -> int:
    """The item's size as DynamoDB bills it (attribute names plus values; numbers about one
    byte per two digits), for plain Python values as `encode` takes them."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items() if value is not None)


def _value_size(value: Any) -> int:  # noqa: PLR0911 - one exit per DynamoDB type
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, int | float | Decimal):
        return len(str(value).lstrip("-").replace(".", "")) // 2 + 2
    if isinstance(value, Mapping):
        return 3 + sum(len(k.encode()) + _value_size(v) + 1 for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return 3 + sum(_value_size(v) + 1 for v in value)
    return len(str(value).encode())


class ConditionFailed(Exception):
    """The write's condition did not hold; `old` is the item as it was (None: no item)."""

    def __init__(self, old: dict[str, Any] | None) -> None:
        super().__init__("condition failed")
        self.old = old


class TransactionCancelled(Exception):
    """A transaction was cancelled. `reasons` has one entry per item in order: its code
    ("None", "ConditionalCheckFailed", "TransactionConflict", ...) and old item (if returned)."""

    def __init__(self, reasons: list[tuple[str, dict[str, Any] | None]]) -> None:
        super().__init__("transaction cancelled")
        self.reasons = reasons


@dataclass
class Update:
    """Builds one UpdateItem expression: SET, REMOVE and ADD clauses with generated names and
    values, and a condition. `names` is shared by all clauses and the condition."""

    sets: dict[str, Any] = field(default_factory=dict)
    removes: list[str] = field(default_factory=list)
    adds: dict[str, int | frozenset[str]] = field(default_factory=dict)
    raw_sets: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)

    def name(self, attribute: str) -> str:
        alias = f"#{attribute}"
        self.names[alias] = attribute
        return alias

    def value(self, value: Any) -> str:
        alias = f":v{len(self.values)}"
        self.values[alias] = value
        return alias

    def set(self, **fields: Any) -> Update:
        """SET each field; a None value REMOVEs it instead."""
        for attribute, value in fields.items():
            if value is None:
                self.remove(attribute)
            else:
                self.sets[attribute] = value
        return self

    def remove(self, *attributes: str) -> Update:
        self.removes += [a for a in attributes if a not in self.removes]
        return self

    def add(self, attribute: str, amount: int | frozenset[str] = 1) -> Update:
        """ADD `amount` to a number, or the strings of a set to a string set."""
        self.adds[attribute] = amount
        return self

    def set_expression(self, expression: str) -> Update:
        """A SET clause written by hand (e.g. list_append); use `name` and `value` for it."""
        self.raw_sets.append(expression)
        return self

    def where(self, condition: str) -> Update:
        """ANDs `condition` (use `name` / `value` for its names and values)."""
        self.conditions.append(f"({condition})")
        return self

    def expression(self) -> str:
        sets = [f"{self.name(a)} = {self.value(v)}" for a, v in self.sets.items()] + self.raw_sets
        parts = []
        if sets:
            parts.append("SET " + ", ".join(sets))
        if self.removes:
            parts.append("REMOVE " + ", ".join(self.name(a) for a in self.removes))
        if self.adds:
            parts.append("ADD " + ", ".join(f"{self.name(a)} {self.value(n)}" for a, n in self.adds.items()))
        return " ".join(parts)

    def condition(self) -> str | None:
        return " AND ".join(self.conditions) or None

    def applied(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """`item` as this update would leave it (for its size before it is sent): the SETs, the
        REMOVEs and the ADDs (numbers, string sets). Clauses written by hand (`set_expression`)
        are not evaluated: their attributes keep the values they have in `item`."""
        after = {name: value for name, value in item.items() if name not in self.removes}
        after.update(self.sets)
        for name, amount in self.adds.items():
            current = after.get(name)
            if isinstance(amount, frozenset):
                after[name] = frozenset(current or ()) | amount
            else:
                after[name] = (current if isinstance(current, int) else 0) + amount
        return after


class Table:
    """One DynamoDB table. `what` names the storage in errors ("message storage"). A
    `best_effort` table makes one attempt per call with short timeouts (hub.adapters.aws), for
    writes a request must never wait long for."""

    def __init__(self, name: str, what: str = "storage", *, best_effort: bool = False) -> None:
        self.name = name
        self._what = what
        self._best_effort = best_effort

    def _client(self) -> Any:
        return best_effort_client("dynamodb") if self._best_effort else client("dynamodb")

    def _unavailable(self, operation: str, exc: Exception) -> StorageUnavailable:
        error = StorageUnavailable(
            f"{self._what} is temporarily unavailable", details={"operation": operation}
        )
        error.__cause__ = exc
        return error

    def get(self, key: Mapping[str, str], *, consistent: bool = True) -> dict[str, Any] | None:
        try:
            answer = self._client().get_item(TableName=self.name, Key=encode(key), ConsistentRead=consistent)
        except (BotoCoreError, ClientError) as exc:
            raise self._unavailable("GetItem", exc) from exc
        found = answer.get("Item")
        return decode(found) if found else None

    def batch_get(
        self,
        keys: Sequence[Mapping[str, str]],
        *,
        projection: Sequence[str] | None = None,
        consistent: bool = True,
    ) -> dict[tuple[str, str], dict[str, Any]]:
        """BatchGetItem (consistent unless told), following UnprocessedKeys; items by (PK, SK).
        With a `projection`, only those attributes (and the keys) are read. A key asked twice is
        asked once (DynamoDB refuses duplicates); more than 100 keys (its limit per request)
        take one request per 100."""
        unique = list({(k["PK"], k["SK"]): k for k in keys}.values())
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for start in range(0, len(unique), BATCH_GET_LIMIT):
            found.update(self._batch_get(unique[start : start + BATCH_GET_LIMIT], projection, consistent))
        return found

    def _batch_get(
        self, keys: Sequence[Mapping[str, str]], projection: Sequence[str] | None, consistent: bool
    ) -> dict[tuple[str, str], dict[str, Any]]:
        found: dict[tuple[str, str], dict[str, Any]] = {}
        wanted: dict[str, Any] = {"Keys": [encode(k) for k in keys], "ConsistentRead": consistent}
        if projection is not None:
            attributes = ["PK", "SK", *(a for a in projection if a not in ("PK", "SK"))]
            wanted["ProjectionExpression"] = ", ".join(f"#p{n}" for n in range(len(attributes)))
            wanted["ExpressionAttributeNames"] = {f"#p{n}": a for n, a in enumerate(attributes)}
        request: dict[str, Any] = {self.name: wanted}
        try:
            for _ in range(_MAX_BATCH_ROUNDS):
                answer = self._client().batch_get_item(RequestItems=request)
                for raw in answer.get("Responses", {}).get(self.name, []):
                    item = decode(raw)
                    found[(item["PK"], item["SK"])] = item
                request = answer.get("UnprocessedKeys") or {}
                if not request:
                    return found
        except (BotoCoreError, ClientError) as exc:
            raise self._unavailable("BatchGetItem", exc) from exc
        raise StorageUnavailable(f"{self._what} is throttling reads", details={"operation": "BatchGetItem"})

    def put(
        self,
        item: Mapping[str, Any],
        condition: str | None = None,
        values: Mapping[str, Any] | None = None,
        names: Mapping[str, str] | None = None,
    ) -> None:
        """Raises ConditionFailed (with the old item) when `condition` does not hold."""
        request = _conditioned({"TableName": self.name, "Item": encode(item)}, condition, values, names)
        self._write("put_item", "PutItem", request)

    def update(self, key: Mapping[str, str], update: Update) -> dict[str, Any]:
        """Applies `update`; the item as it is afterwards. Raises ConditionFailed (with the old
        item, None when there was none) when its condition does not hold."""
        request = {**self.update_entry(key, update)["Update"], "ReturnValues": "ALL_NEW"}
        answer = self._write("update_item", "UpdateItem", request)
        return decode(answer.get("Attributes") or {})

    def delete(
        self,
        key: Mapping[str, str],
        condition: str | None = None,
        values: Mapping[str, Any] | None = None,
        names: Mapping[str, str] | None = None,
    ) -> None:
        """Raises ConditionFailed (with the old item, None when there was none) when `condition`
        does not hold."""
        request = _conditioned({"TableName": self.name, "Key": encode(key)}, condition, values, names)
        self._write("delete_item", "DeleteItem", request)

    def _write(self, method: str, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = getattr(self._client(), method)(**request)
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                old = exc.response.get("Item")
                raise ConditionFailed(decode(old) if old else None) from exc
            raise self._unavailable(operation, exc) from exc
        except BotoCoreError as exc:
            raise self._unavailable(operation, exc) from exc
        return answer

    def put_entry(
        self, item: Mapping[str, Any], condition: str | None = None, values: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """One Put of a transaction (see `transact`); a failed condition returns the old item."""
        return {"Put": _conditioned({"TableName": self.name, "Item": encode(item)}, condition, values)}

    def delete_entry(
        self, key: Mapping[str, str], condition: str | None = None, values: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """One Delete of a transaction (see `transact`); a failed condition returns the old item."""
        return {"Delete": _conditioned({"TableName": self.name, "Key": encode(key)}, condition, values)}

    def update_entry(self, key: Mapping[str, str], update: Update) -> dict[str, Any]:
        """One Update of a transaction (see `transact`); a failed condition returns the old item."""
        entry: dict[str, Any] = {
            "TableName": self.name,
            "Key": encode(key),
            "UpdateExpression": update.expression(),
        }
        # The expression and the condition share the names and values: sent with or without one.
        entry = _conditioned(entry, update.condition(), None)
        if update.names:
            entry["ExpressionAttributeNames"] = update.names
        if update.values:
            entry["ExpressionAttributeValues"] = encode(update.values)
        return {"Update": entry}

    def transact(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """TransactWriteItems: all or nothing. Raises TransactionCancelled with each entry's
        reason and old item."""
        try:
            self._client().transact_write_items(TransactItems=list(entries))
        except ClientError as exc:
            if error_code(exc) != "TransactionCanceledException":
                raise self._unavailable("TransactWriteItems", exc) from exc
            reasons = [
                (str(r.get("Code", "None")), decode(r["Item"]) if r.get("Item") else None)
                for r in exc.response.get("CancellationReasons", [])
            ]
            raise TransactionCancelled(reasons) from exc
        except BotoCoreError as exc:
            raise self._unavailable("TransactWriteItems", exc) from exc

    def query(self, **request: Any) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """One Query page: decoded items and the decoded LastEvaluatedKey (None on the last)."""
        try:
            answer = self._client().query(TableName=self.name, **request)
        except (BotoCoreError, ClientError) as exc:
            raise self._unavailable("Query", exc) from exc
        last = answer.get("LastEvaluatedKey")
        return [decode(i) for i in answer.get("Items", [])], decode(last) if last else None

    def count(self, **request: Any) -> tuple[int, int, dict[str, Any] | None]:
        """One Query page with `Select=COUNT` (no item is returned): how many items matched
        (after any FilterExpression), how many were read, and the decoded LastEvaluatedKey (None
        on the last page)."""
        try:
            answer = self._client().query(TableName=self.name, Select="COUNT", **request)
        except (BotoCoreError, ClientError) as exc:
            raise self._unavailable("Query", exc) from exc
        last = answer.get("LastEvaluatedKey")
        return int(answer.get("Count", 0)), int(answer.get("ScannedCount", 0)), decode(last) if last else None


def _conditioned(
    request: dict[str, Any],
    condition: str | None,
    values: Mapping[str, Any] | None,
    names: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`request` (a write, or one entry of a transaction) with its condition, when it has one: a
    failed condition returns the old item (`ConditionFailed.old`, a cancellation's reason); the
    condition's values and names go with it."""
    if condition:
        request["ConditionExpression"] = condition
        request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        if values:
            request["ExpressionAttributeValues"] = encode(values)
        if names:
            request["ExpressionAttributeNames"] = dict(names)
    return request
