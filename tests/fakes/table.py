"""The fakes' one in-memory table: items as plain dicts keyed by (PK, SK), as the hub table
holds them, and one lock that makes every conditional write atomic, as DynamoDB does.

A write is a `Change` (SET / REMOVE / ADD / bounded log append) applied only when its
conditions hold; a failed condition raises `ConditionFailed` with the item as it was (None: no
item), like `ReturnValuesOnConditionCheckFailure=ALL_OLD`. An update of a missing item whose
conditions hold creates it (UpdateItem is an upsert).

What DynamoDB and boto3 refuse before any condition is looked at is refused here too: one
attribute in two clauses of an update (a ValidationException, which the adapter reports as
StorageUnavailable), and a value boto3 cannot serialize - a float, a datetime - (TypeError).
Values are stored the way the DynamoDB adapter stores them: timestamps as fixed-width UTC
strings, epochs as ints, absent rather than None, so `MessageRecord.model_validate(item)`
reads both the same way.
"""

from __future__ import annotations

import copy
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

# The item's stored form (timestamps, epoch seconds, billed size) is the adapter's own codec:
# the fakes share it and implement only the conditions and updates independently.
from hub.adapters.dynamo.messages import LOG_TRIMMED, fitted_log, with_stamp
from hub.adapters.dynamo.table import format_ts, item_size
from hub.errors import StorageUnavailable

Key = tuple[str, str]
Item = dict[str, Any]
#: A condition reads the item as it is (None: no item).
Condition = Callable[[Item | None], bool]

#: The last log entries kept on the message item (hub.adapters.dynamo.messages.MAX_LOG_ENTRIES).
MAX_LOG_ENTRIES = 20


def check_storable(value: Any) -> None:
    """What boto3's serializer takes, at any depth: a float or a datetime (or any other type)
    is a TypeError before a request is sent."""
    if isinstance(value, float):
        raise TypeError("Float types are not supported. Use Decimal types instead.")
    if isinstance(value, Mapping):
        for inner in value.values():
            check_storable(inner)
    elif isinstance(value, list | tuple | set | frozenset):
        for inner in value:
            check_storable(inner)
    elif not isinstance(value, str | bytes | bytearray | bool | int | Decimal) and value is not None:
        raise TypeError(f"Unsupported type {type(value)!r} for value {value!r}")


class ConditionFailed(Exception):
    """A write's condition did not hold; `old` is the item as it was (None: none)."""

    def __init__(self, old: Item | None) -> None:
        super().__init__("condition failed")
        self.old = old


class TransactionCancelled(Exception):
    """A transaction was cancelled; one (code, old item) per entry, in order."""

    def __init__(self, reasons: list[tuple[str, Item | None]]) -> None:
        super().__init__("transaction cancelled")
        self.reasons = reasons


@dataclass
class Change:
    """One UpdateItem: SET (None removes), REMOVE, ADD, a log append, and ANDed conditions."""

    sets: dict[str, Any] = field(default_factory=dict)
    removes: set[str] = field(default_factory=set)
    adds: dict[str, int | frozenset[str]] = field(default_factory=dict)
    conditions: list[Condition] = field(default_factory=list)
    #: (the log as the caller read it, the stamped entries to add)
    log: tuple[Sequence[Mapping[str, Any]], list[dict[str, Any]]] | None = None
    #: SET name = if_not_exists(name, value)
    defaults: dict[str, Any] = field(default_factory=dict)
    #: SET name = if_not_exists(source, value), `source` as it was before the update
    copies: dict[str, tuple[str, Any]] = field(default_factory=dict)
    #: The log append is fitted to the item's write units (the finishing update's budget).
    fitted: bool = False

    def set(self, **fields: Any) -> Change:
        """SET each field; None REMOVEs it instead (as the adapter's Update does: setting and
        removing one attribute in the same change is an overlap, refused)."""
        for name, value in fields.items():
            if value is None:
                self.remove(name)
            else:
                self.sets[name] = value
        return self

    def remove(self, *names: str) -> Change:
        self.removes.update(names)
        return self

    def add(self, name: str, amount: int | frozenset[str] = 1) -> Change:
        self.adds[name] = amount
        return self

    def set_if_absent(self, **fields: Any) -> Change:
        self.defaults.update(fields)
        return self

    def copy_from(self, name: str, source: str, default: Any) -> Change:
        self.copies[name] = (source, default)
        return self

    def where(self, condition: Condition) -> Change:
        self.conditions.append(condition)
        return self

    def append_log(
        self,
        read: Sequence[Mapping[str, Any]],
        entries: Sequence[Mapping[str, Any]],
        now: datetime,
        stamp: Mapping[str, Any] | None = None,
        *,
        fitted: bool = False,
    ) -> Change:
        """Adds `entries` stamped `at` (their own, else `now`), a status move's `stamp` on the
        last (as the adapter's append_log); `read` is the log as the caller last read it: when
        the two overflow the bound, the trimmed list is written whole (as the adapter does).
        `fitted`: entries are shed to keep the item within its write units, by the adapter's
        own rule (hub.adapters.dynamo.messages.fitted_log)."""
        self.fitted = fitted
        stamped = [
            {
                "at": format_ts(now),
                **{k: format_ts(v) if isinstance(v, datetime) else v for k, v in e.items() if v is not None},
            }
            for e in with_stamp(entries, stamp)
        ]
        if stamped:
            self.log = (read, stamped)
        return self

    def validate(self) -> None:
        """What DynamoDB refuses before looking at the item: an attribute in two clauses."""
        named = [
            *self.sets,
            *self.defaults,
            *self.copies,
            *(["log"] if self.log else []),
            *self.removes,
            *self.adds,
        ]
        overlapping = sorted(name for name, times in Counter(named).items() if times > 1)
        if overlapping:
            raise StorageUnavailable(
                "storage is temporarily unavailable",
                details={"operation": "UpdateItem", "overlapping_paths": overlapping},
            )
        for value in [*self.sets.values(), *self.defaults.values(), *(self.log[1] if self.log else [])]:
            check_storable(value)

    def holds(self, item: Item | None) -> bool:
        return all(condition(item) for condition in self.conditions)

    def apply(self, item: Item) -> None:
        before = item_size(item)
        # Every operand reads the item as it was before the update (as DynamoDB evaluates it).
        copied = {name: item.get(source, default) for name, (source, default) in self.copies.items()}
        item.update(copy.deepcopy(copied))
        for name, value in self.defaults.items():
            item.setdefault(name, copy.deepcopy(value))
        for name, value in self.sets.items():
            item[name] = copy.deepcopy(value)
        for name in self.removes:
            item.pop(name, None)
        for name, amount in self.adds.items():
            if isinstance(amount, frozenset):  # a string set, as DynamoDB's ADD of one
                item[name] = set(item.get(name) or ()) | amount
            else:
                item[name] = int(item.get(name, 0)) + amount
        if self.log is not None:
            read, stamped = self.log
            if self.fitted:
                rest = {k: v for k, v in item.items() if k != "log"}
                log, cut = fitted_log(rest, read, stamped, before=before)
                if cut:
                    item["log"] = copy.deepcopy(log)
                    item[LOG_TRIMMED] = True
                    return
            if len(read) + len(stamped) > MAX_LOG_ENTRIES:
                item["log"] = copy.deepcopy([*read, *stamped][-MAX_LOG_ENTRIES:])
            else:
                # An append without reading (read == []) that overflows is trimmed by the
                # adapter's second update (hub.adapters.dynamo.messages.trimmed).
                item["log"] = [*item.get("log", []), *copy.deepcopy(stamped)][-MAX_LOG_ENTRIES:]


class FakeTable:
    """Items by (PK, SK). Every read returns a copy; every write runs under one lock."""

    def __init__(self) -> None:
        self.items: dict[Key, Item] = {}
        self.lock = threading.RLock()
        #: How many writes were applied (a write whose condition failed is not counted).
        self.writes = 0

    def get(self, key: Key) -> Item | None:
        with self.lock:
            item = self.items.get(key)
            return copy.deepcopy(item) if item is not None else None

    def put(self, item: Mapping[str, Any]) -> None:
        check_storable(dict(item))
        with self.lock:
            self.items[(item["PK"], item["SK"])] = copy.deepcopy(dict(item))
            self.writes += 1

    def delete(self, key: Key) -> None:
        with self.lock:
            if self.items.pop(key, None) is not None:
                self.writes += 1

    def update(self, key: Key, change: Change) -> Item:
        """Applies `change` when its conditions hold; the item as it is afterwards."""
        change.validate()
        with self.lock:
            old = self.items.get(key)
            if not change.holds(old):
                raise ConditionFailed(copy.deepcopy(old) if old is not None else None)
            item = copy.deepcopy(old) if old is not None else {"PK": key[0], "SK": key[1]}
            change.apply(item)
            self.items[key] = item
            self.writes += 1
            return copy.deepcopy(item)

    def transact(self, puts: Sequence[tuple[Mapping[str, Any], Condition]]) -> None:
        """Puts every item, or none when any condition fails (TransactionCancelled naming, per
        entry, "ConditionalCheckFailed" with the old item, or "None")."""
        for item, _ in puts:
            check_storable(dict(item))
        with self.lock:
            reasons: list[tuple[str, Item | None]] = []
            for item, condition in puts:
                old = self.items.get((item["PK"], item["SK"]))
                if condition(old):
                    reasons.append(("None", None))
                else:
                    reasons.append(("ConditionalCheckFailed", copy.deepcopy(old) if old else None))
            if any(code != "None" for code, _ in reasons):
                raise TransactionCancelled(reasons)
            for item, _ in puts:
                self.items[(item["PK"], item["SK"])] = copy.deepcopy(dict(item))
            self.writes += 1
