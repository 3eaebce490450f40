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
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models import DynamoDBBackend

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


def _stream_kept(transact: Callable[..., Any]) -> Callable[..., Any]:
    """`transact_write_items` whose rollback keeps each table's stream shard."""

    @functools.wraps(transact)
    def kept(
        backend: DynamoDBBackend, transact_items: list[dict[str, Any]], *args: Any, **kwargs: Any
    ) -> Any:
        names = {
            op.get("TableName") for item in transact_items for op in item.values() if isinstance(op, dict)
        }
        shards = {
            name: (table.stream_shard, len(table.stream_shard.items))
            for name, table in backend.tables.items()
            if name in names and table.stream_shard is not None
        }
        try:
            return transact(backend, transact_items, *args, **kwargs)
        except Exception:
            for name, (shard, length) in shards.items():
                restored = backend.tables.get(name)
                if restored is not None and restored.stream_shard is not shard:
                    del shard.items[length:]  # what the cancelled transaction wrote
                    shard.table = restored
                    restored.stream_shard = shard
            raise

    return kept


def make_dynamodb_atomic() -> None:
    """Idempotent: wraps each item operation of moto's DynamoDB backend once (and keeps the
    stream of a table a cancelled transaction rolled back)."""
    for name in _ITEM_OPERATIONS:
        operation = getattr(DynamoDBBackend, name)
        if not getattr(operation, "__hub_serialized__", False):
            if name == "transact_write_items":
                operation = _stream_kept(operation)
            setattr(DynamoDBBackend, name, _serialized(operation))
