"""Make moto's DynamoDB as atomic as DynamoDB itself.

DynamoDB applies each write, conditional checks included, atomically, and a TransactWriteItems
all-or-nothing. moto (5.2) runs them as plain Python on whichever thread serves the request:
two concurrent conditional puts can both pass their check, and a reader can see half of a
transaction. The hub's idempotency depends on that atomicity, so the local stack, the
integration tests and the benchmark serialize moto's DynamoDB item operations with one lock.
Each DynamoDB request is handled whole under that lock, not just its backend call: moto's
handler goes on reading the live item the backend returned (UpdateItem deep-copies it for its
old values, every answer serializes it), and another request's update changing that item
meanwhile failed the copy ("dictionary changed size during iteration", seen with two workers
taking one step). This changes moto's concurrency, not its behaviour; our code is untouched.

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

Two more costs grew with what was stored and slowed the soak's pipeline to half a message per
second after ~2,000 messages (py-spy on moto's process), without changing any answer:

- a Query on an index went through every item of the table, sorted (``Table.all_items``), to
  find the few of one partition key. DynamoDB reads one partition. An index here keeps, per
  index and partition-key value, the primary keys of the items written with it (built on the
  first such Query, then kept up on each put and update); the Query runs moto's own code over
  those items only (their current version, stale entries dropped), in moto's order;
- each message a ReceiveMessage returned asked for the queue's ``MessageRetentionPeriod``
  through ``get_queue_attributes``, which computes every attribute three times, each count
  going through every message in the queue. The retention check here reads the attribute.

Two more were per request, whatever was stored (py-spy on the soak's moto, ~17 % of its CPU):

- ``Queue.attributes`` computed every attribute (the three message counts among them) on each
  read, and moto reads it for one value: a SendMessage for ``ContentBasedDeduplication``, a
  GetQueueAttributes naming attributes three times per name. It is now a read-only mapping
  whose values are computed when read, with the same keys, order and values;
- the server resolved each request's service by listing moto's package directory and trying
  every service's URL pattern (``get_backend_for_host``). The answer depends on the host
  name only, so it is remembered per host; and each action listed its response class's
  methods through ``inspect.getmembers``, now listed once per class.

Every request also marks its access key used in IAM, and each lookup of a service's backends
checked that they were registered by comparing them, through a Python ``__eq__`` and
``__len__``, with every registered service's (``BackendDict._create_account_specific_backend``;
~5 % of the integration tests' CPU). A lookup of an account that exists, on backends that are
registered (the same object), returns at once; anything else goes to moto's code as before.

The largest per-request cost left was moto's response serializer (a third of the soak's moto
CPU, py-spy sampling the thread holding the GIL): for each member of each structure, a
DynamoDB attribute value's ten among them, it asked six alias providers, new objects each
time, which names the member may have on the Python object. Those names depend on the
object's class, the member's name and its botocore shape (with the structure it is in), all
fixed: they are remembered per (picker, class, member, shape), unless the object carries
aliases of its own (an instance ``Meta``), which is asked every time as before.

One behaviour moto lacks, which the hub relies on after a lost answer: DynamoDB runs a
TransactWriteItems once per ``ClientRequestToken`` (botocore fills one in and keeps it across
its resends). A resend within 10 minutes of a successful one answers success and writes
nothing; one with other parameters is refused (``IdempotentParameterMismatchException``). moto
ran the resend again, and its conditions, met by the first, cancelled it: the caller read its
own write as another's (a breaker opened with no probe scheduled). Here successful tokens are
remembered for those 10 minutes.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import threading
import time
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import moto.core.responses as moto_responses
import moto.dynamodb.models as moto_dynamodb
from moto.core.base_backend import BackendDict
from moto.core.responses import ActionResult
from moto.core.serialize import AttributePicker, AttributePickerContext, XFormedAttributePicker
from moto.core.utils import camelcase_to_underscores, unix_time
from moto.dynamodb.exceptions import ERROR_TYPE_PREFIX, DynamodbException
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table
from moto.dynamodb.responses import DynamoHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from moto.sqs.models import Message, Queue, SQSBackend

from devstack import fair_queues

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
    _indexed(table, item)


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
    """Idempotent: wraps each item operation of moto's DynamoDB backend, and the handling of each
    DynamoDB request, once (and keeps the stream of a table a cancelled transaction rolled
    back); index queries read one partition,
    SQS reads the queue attributes it asks for, the server resolves a host's service and lists a
    response class's actions once, and the serializer remembers each member's possible names
    (see the module's docstring); standard queues order their receives as SQS fair queues do
    (devstack.fair_queues, issue 30)."""
    for owner, name in [
        *((DynamoDBBackend, name) for name in _ITEM_OPERATIONS),
        (DynamoHandler, "call_action"),
    ]:
        operation = getattr(owner, name)
        if not getattr(operation, "__hub_serialized__", False):
            if name == "transact_write_items":
                operation = _item_backup(operation)
            if name == "update_item":
                operation = _indexing_update(operation)
            setattr(owner, name, _serialized(operation))
    moto_dynamodb.copy = types.SimpleNamespace(deepcopy=_deepcopy_but_tables)  # type: ignore[assignment]
    if not getattr(Table.query, "__hub_indexed__", False):
        Table.put_item = _indexing_put(Table.put_item)  # type: ignore[method-assign]
        Table.query = _index_query(Table.query)  # type: ignore[method-assign]
    SQSBackend.is_message_valid_based_on_retention_period = _within_retention  # type: ignore[method-assign,assignment]
    if not isinstance(Queue.__dict__["attributes"], _LazyQueueAttributesProperty):
        Queue.attributes = _LazyQueueAttributesProperty()  # type: ignore[method-assign,assignment]
    if not hasattr(moto_responses.method_names_from_class, "cache_info"):
        moto_responses.method_names_from_class = functools.cache(moto_responses.method_names_from_class)
    for picker in (AttributePicker, XFormedAttributePicker):
        if not getattr(picker.__dict__["get_possible_keys"], "__hub_remembered__", False):
            picker.get_possible_keys = _remembered_keys(picker.__dict__["get_possible_keys"])  # type: ignore[method-assign,assignment]
    transact = DynamoHandler.transact_write_items
    if not getattr(transact, "__hub_idempotent__", False):
        DynamoHandler.transact_write_items = _idempotent_transaction(transact)  # type: ignore[method-assign,assignment]
    lookup = DomainDispatcherApplication.get_backend_for_host
    if not getattr(lookup, "__hub_remembered__", False):
        DomainDispatcherApplication.get_backend_for_host = _remembered(lookup)  # type: ignore[method-assign]
    create = BackendDict._create_account_specific_backend
    if not getattr(create, "__hub_fast__", False):
        BackendDict._create_account_specific_backend = _known_account_first(create)  # type: ignore[method-assign,assignment]
    fair_queues.install()


def _known_account_first(create: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    """moto's lookup, skipped when it would do nothing: the account exists and these backends
    are the registered object itself."""

    @functools.wraps(create)
    def known_first(backends: Any, account_id: str) -> None:
        if dict.__contains__(backends, account_id) and any(
            registered is backends
            for registered in BackendDict._instances  # type: ignore[misc]
        ):
            return
        create(backends, account_id)

    known_first.__hub_fast__ = True  # type: ignore[attr-defined]
    return known_first


# --- Index queries: one partition's items, not the whole table --------------------------------

#: Per table (the attribute holding it): index name -> partition-key value -> primary keys.
_INDEX_ATTRIBUTE = "_hub_index_partitions"
PrimaryKey = tuple[DynamoType, DynamoType | None]
Partitions = dict[str, dict[DynamoType, set[PrimaryKey]]]


def _partition_attributes(table: Table) -> dict[str, str]:
    """Each index with one partition-key attribute: its name -> that attribute."""
    out: dict[str, str] = {}
    for index in table.all_indexes():
        hash_keys = [key["AttributeName"] for key in index.schema if key["KeyType"] == "HASH"]
        if len(hash_keys) == 1:
            out[index.name] = hash_keys[0]
    return out


def _add(table: Table, partitions: Partitions, item: Item) -> None:
    for name, attribute in _partition_attributes(table).items():
        value = item.attrs.get(attribute)
        if value is not None:
            partitions.setdefault(name, {}).setdefault(value, set()).add((item.hash_key, item.range_key))


def _indexed(table: Table, item: Item | None) -> None:
    """After a write: the item under its index partitions (once the table's index is built)."""
    partitions: Partitions | None = getattr(table, _INDEX_ATTRIBUTE, None)
    if partitions is not None and item is not None:
        _add(table, partitions, item)


def _partitions(table: Table) -> Partitions:
    partitions: Partitions | None = getattr(table, _INDEX_ATTRIBUTE, None)
    if partitions is None:
        partitions = {}
        for item in table.all_items():
            _add(table, partitions, item)
        setattr(table, _INDEX_ATTRIBUTE, partitions)
    return partitions


def _live(table: Table, key: PrimaryKey) -> Item | None:
    hash_value, range_value = key
    found: Any = table.items.get(hash_value)
    if found is None or table.range_key_attr is None:
        return found
    return found.get(range_value)


def _indexing_put(put: Callable[..., Item]) -> Callable[..., Item]:
    @functools.wraps(put)
    def indexing(table: Table, *args: Any, **kwargs: Any) -> Item:
        item = put(table, *args, **kwargs)
        _indexed(table, item)
        return item

    return indexing


def _indexing_update(update: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(update)
    def indexing(
        backend: DynamoDBBackend, table_name: str, key: dict[str, Any], *args: Any, **kwargs: Any
    ) -> Any:
        try:
            return update(backend, table_name, key, *args, **kwargs)
        finally:  # an update that failed half-way may still have changed the item
            slot = _slot(backend, {"TableName": table_name, "Key": key})
            if slot is not None:
                table, hash_value, range_value = slot
                _indexed(table, _live(table, (hash_value, range_value)))

    return indexing


def _index_query(query: Callable[..., Any]) -> Callable[..., Any]:
    """`Table.query` on an index, over the items of the queried partition only."""
    signature = inspect.signature(query)

    @functools.wraps(query)
    def partition_query(table: Table, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(table, *args, **kwargs).arguments
        index_name = str(bound.get("index_name") or "")
        attribute = _partition_attributes(table).get(index_name) if index_name else None
        conditions = dict(bound.get("hash_key_conditions") or [])
        if attribute is None or attribute not in conditions:
            return query(table, *args, **kwargs)
        value = conditions[attribute]
        keys = _partitions(table).get(index_name, {}).get(value, set())
        items: list[Item] = []
        for key in list(keys):
            item = _live(table, key)
            current = item.attrs.get(attribute) if item is not None else None
            if item is None or current is None or current != value:  # (DynamoType != None raises)
                keys.discard(key)  # deleted, out of the index, or moved to another partition since
            else:
                items.append(item)
        items.sort(key=lambda x: (x.hash_key, x.range_key) if x.range_key else x.hash_key)
        table.all_items = lambda: items  # type: ignore[method-assign]
        try:
            return query(table, *args, **kwargs)
        finally:
            del table.all_items

    partition_query.__hub_indexed__ = True  # type: ignore[attr-defined]
    return partition_query


# --- TransactWriteItems: once per ClientRequestToken -----------------------------------------

#: DynamoDB's idempotency window for a transaction's client token.
TOKEN_WINDOW_SECONDS = 600.0
#: Token -> (when it succeeded, its other parameters as JSON), oldest first.
_TOKENS: dict[str, tuple[float, str]] = {}


class IdempotentParameterMismatch(DynamodbException):
    def __init__(self) -> None:
        super().__init__(
            ERROR_TYPE_PREFIX + "IdempotentParameterMismatchException",
            message="The request uses the same client token as a previous, but non-identical request.",
        )


def _idempotent_transaction(
    transact: Callable[[DynamoHandler], ActionResult],
) -> Callable[[DynamoHandler], ActionResult]:
    @functools.wraps(transact)
    def once(handler: DynamoHandler) -> ActionResult:
        token = handler.body.get("ClientRequestToken")
        if not token:
            return transact(handler)
        request = json.dumps(
            {k: v for k, v in handler.body.items() if k != "ClientRequestToken"},
            sort_keys=True,
            default=repr,  # binary attribute values arrive as bytes
        )
        with _LOCK:
            now = time.monotonic()
            while _TOKENS:
                oldest = next(iter(_TOKENS))
                if now - _TOKENS[oldest][0] <= TOKEN_WINDOW_SECONDS:
                    break
                del _TOKENS[oldest]
            seen = _TOKENS.get(token)
            if seen is not None:
                if seen[1] != request:
                    raise IdempotentParameterMismatch()
                return ActionResult({"ConsumedCapacity": [], "ItemCollectionMetrics": {}})
            answer = transact(handler)
            _TOKENS[token] = (time.monotonic(), request)  # the window runs from its completion
            return answer

    once.__hub_idempotent__ = True  # type: ignore[attr-defined]
    return once


# --- SQS: the retention check without every queue attribute -----------------------------------


def _within_retention(backend: SQSBackend, queue_name: str, message: Message) -> bool:
    """moto's check, reading the one attribute it needs (same answer)."""
    retention = int(getattr(backend.get_queue(queue_name), "message_retention_period"))  # noqa: B009
    return retention + message.sent_timestamp / 1000 > unix_time()  # type: ignore[operator]


# --- SQS: a queue's attributes, each computed when read ---------------------------------------


class QueueAttributes(Mapping[str, Any]):
    """What moto's ``Queue.attributes`` returns (same keys in the same order, same values), each
    value computed when it is read: the message counts go through every message."""

    def __init__(self, queue: Queue) -> None:
        self._queue = queue
        names = list(queue.BASE_ATTRIBUTES)
        if queue.fifo_queue:
            names += queue.FIFO_ATTRIBUTES
        if queue.kms_master_key_id:  # type: ignore[attr-defined]
            names += queue.KMS_ATTRIBUTES
        self._names = dict.fromkeys(names)

    def __getitem__(self, name: str) -> Any:
        if name not in self._names:
            raise KeyError(name)
        queue = self._queue
        if name == "RedrivePolicy" and queue.redrive_policy:
            return json.dumps(queue.redrive_policy)
        value = getattr(queue, camelcase_to_underscores(name))
        return str(value).lower() if isinstance(value, bool) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


#: moto's own property, for the fidelity test's comparison.
moto_queue_attributes = Queue.__dict__["attributes"]


class _LazyQueueAttributesProperty:
    def __get__(self, queue: Queue | None, owner: type[Queue]) -> Any:
        return self if queue is None else QueueAttributes(queue)


# --- The server: one service lookup per host name ---------------------------------------------


def _remembered(lookup: Callable[[DomainDispatcherApplication, str | None], Any]) -> Callable[..., Any]:
    known: dict[str | None, Any] = {}

    @functools.wraps(lookup)
    def get_backend_for_host(dispatcher: DomainDispatcherApplication, host: str | None) -> Any:
        if host in known:
            return known[host]
        backend = lookup(dispatcher, host)
        if len(known) < 1024:  # a bound: a request's Host header is the caller's to choose
            known[host] = backend
        return backend

    get_backend_for_host.__hub_remembered__ = True  # type: ignore[attr-defined]
    return get_backend_for_host


# --- The serializer: a member's possible names, once per class, member and shape -------------

#: Entries kept before the memo starts over (shapes are botocore's cached model objects).
_KEYS_BOUND = 100_000


def _remembered_keys(
    possible_keys: Callable[[AttributePicker, AttributePickerContext], Iterable[str]],
) -> Callable[[AttributePicker, AttributePickerContext], tuple[str, ...]]:
    known: dict[tuple[Any, ...], tuple[str, ...]] = {}

    @functools.wraps(possible_keys)
    def get_possible_keys(picker: AttributePicker, context: AttributePickerContext) -> tuple[str, ...]:
        obj = context.obj
        if "Meta" in getattr(obj, "__dict__", ()):  # aliases of this object's own
            return tuple(possible_keys(picker, context))
        shape = context.shape
        memo = (
            type(picker),
            tuple(picker.alias_providers),
            type(obj),
            context.key,
            shape,
            getattr(shape, "parent", None),
        )
        keys = known.get(memo)
        if keys is None:
            keys = tuple(possible_keys(picker, context))
            if len(known) >= _KEYS_BOUND:
                known.clear()
            known[memo] = keys
        return keys

    get_possible_keys.__hub_remembered__ = True  # type: ignore[attr-defined]
    return get_possible_keys
