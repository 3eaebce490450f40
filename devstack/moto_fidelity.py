"""Make moto's DynamoDB as atomic as DynamoDB itself.

DynamoDB applies each write, conditional checks included, atomically, and a TransactWriteItems
all-or-nothing. moto (5.2) runs them as plain Python on whichever thread serves the request:
two concurrent conditional puts can both pass their check, and a reader can see half of a
transaction. The hub's idempotency depends on that atomicity, so the local stack, the
integration tests and the benchmark serialize moto's DynamoDB item operations with one lock.
This changes moto's concurrency, not its behaviour; our code is untouched.

A cancelled TransactWriteItems must also leave the table's stream as it was. moto (5.2) rolls a
cancelled transaction back by putting a deep copy of each table back in place, and the copy has
a copy of the stream shard: every shard iterator taken before (the stream pollers' ones) then
reads the discarded shard and never sees another record, so after the first idempotency
conflict the outbox publisher silently stopped locally. The rollback here keeps the original
stream shard (without the records the cancelled transaction added), as DynamoDB does: a
cancelled transaction writes nothing and emits no stream record.

That deep copy is also of the *whole* table, stream records included, before every
transaction: each ingest cost time and memory in proportion to everything stored so far (the
soak's 10,000 messages slowed to ~1 message/s and grew moto's process past 10 GB). Under the
lock above nothing else runs meanwhile, so the backup here is of what the transaction names: a
copy of each item it targets (or its absence) and the stream's length, put back on
cancellation. moto's own copy is turned into the table itself, so its rollback is a no-op.
"""

from __future__ import annotations

import copy
import functools
import threading
import types
from collections.abc import Callable
from typing import Any

import moto.dynamodb.models as moto_dynamodb
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table

_LOCK = threading.RLock()
_ITEM_OPERATIONS = (
    "put_item",
    "get_item",
    "update_item",
    "delete_item",
    "query",
    "scan",
    "transact_write_items",
)


def _serialized(operation: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(operation)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            return operation(*args, **kwargs)

    locked.__hub_serialized__ = True  # type: ignore[attr-defined]
    return locked


def _deepcopy_but_tables(value: Any, memo: Any = None) -> Any:
    """moto's `copy.deepcopy` in its DynamoDB backend, except that a table "copies" to itself:
    its transaction rollback then puts each table back unchanged (see `_item_backup`)."""
    return value if isinstance(value, Table) else copy.deepcopy(value, memo)


Slot = tuple[Table, DynamoType, DynamoType | None]


def _slot(backend: DynamoDBBackend, operation: dict[str, Any]) -> Slot | None:
    table = backend.tables.get(str(operation.get("TableName")))
    key = operation.get("Key") or operation.get("Item")
    if table is None or not isinstance(key, dict) or table.hash_key_attr not in key:
        return None  # moto refuses the transaction itself, before writing
    range_attr = table.range_key_attr
    if range_attr is not None and range_attr not in key:
        return None
    return table, DynamoType(key[table.hash_key_attr]), DynamoType(key[range_attr]) if range_attr else None


def _put_back(slot: Slot, item: Any) -> None:
    table, hash_value, range_value = slot
    if range_value is None:
        if item is None:
            table.items.pop(hash_value, None)
        else:
            table.items[hash_value] = item
    elif item is None:
        table.items.get(hash_value, {}).pop(range_value, None)
        if hash_value in table.items and not table.items[hash_value]:
            del table.items[hash_value]
    else:
        table.items[hash_value][range_value] = item


def _item_backup(transact: Callable[..., Any]) -> Callable[..., Any]:
    """`transact_write_items` that backs up only the items it names and the stream's length,
    and puts them back when the transaction is cancelled (no record of it stays in the stream)."""

    @functools.wraps(transact)
    def backed_up(
        backend: DynamoDBBackend, transact_items: list[dict[str, Any]], *args: Any, **kwargs: Any
    ) -> Any:
        saved: dict[tuple[int, Any, Any], tuple[Slot, Any]] = {}
        streams: dict[int, tuple[Any, int]] = {}
        for entry in transact_items:
            for operation in entry.values():
                slot = _slot(backend, operation) if isinstance(operation, dict) else None
                if slot is None:
                    continue
                table, hash_value, range_value = slot
                found = table.get_item(hash_value, range_value)
                saved.setdefault((id(table), hash_value, range_value), (slot, copy.deepcopy(found)))
                if table.stream_shard is not None:
                    streams.setdefault(id(table), (table.stream_shard, len(table.stream_shard.items)))
        try:
            return transact(backend, transact_items, *args, **kwargs)
        except Exception:
            for slot, item in saved.values():
                _put_back(slot, item)
            for shard, length in streams.values():
                del shard.items[length:]  # what the cancelled transaction wrote
            raise

    return backed_up


def make_dynamodb_atomic() -> None:
    """Idempotent: wraps each item operation of moto's DynamoDB backend once (and keeps the
    stream of a table a cancelled transaction rolled back)."""
    for name in _ITEM_OPERATIONS:
        operation = getattr(DynamoDBBackend, name)
        if not getattr(operation, "__hub_serialized__", False):
            if name == "transact_write_items":
                operation = _item_backup(operation)
            setattr(DynamoDBBackend, name, _serialized(operation))
    moto_dynamodb.copy = types.SimpleNamespace(deepcopy=_deepcopy_but_tables)  # type: ignore[assignment]
