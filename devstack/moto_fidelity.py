"""Make moto's DynamoDB as atomic as DynamoDB itself.

DynamoDB applies each write, conditional checks included, atomically, and a TransactWriteItems
all-or-nothing. moto (5.2) runs them as plain Python on whichever thread serves the request:
two concurrent conditional puts can both pass their check, and a reader can see half of a
transaction. The hub's idempotency depends on that atomicity, so the local stack, the
integration tests and the benchmark serialize moto's DynamoDB item operations with one lock.
This changes moto's concurrency, not its behaviour; our code is untouched.
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


def make_dynamodb_atomic() -> None:
    """Idempotent: wraps each item operation of moto's DynamoDB backend once."""
    for name in _ITEM_OPERATIONS:
        operation = getattr(DynamoDBBackend, name)
        if not getattr(operation, "__hub_serialized__", False):
            setattr(DynamoDBBackend, name, _serialized(operation))
