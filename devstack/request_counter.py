"""Counts the AWS requests the embedded moto server receives, by (service, operation, caller).

``RequestCounter`` is a WSGI middleware in front of moto's dispatcher. It names each request
the way AWS bills it:

- JSON protocol (DynamoDB, DynamoDB Streams, SQS): the ``X-Amz-Target`` header
  (``DynamoDB_20120810.PutItem``, ``AmazonSQS.SendMessage``);
- query protocol: the ``Action`` form field (or query-string parameter);
- REST protocols (EventBridge Scheduler, ...): method + path matched against botocore's own
  service model (``POST /schedules/{Name}`` is ``CreateSchedule``).

The service is the SigV4 signing name from ``Authorization`` (or the target's prefix); the
caller is the SDK app id in the User-Agent (``AWS_SDK_UA_APP_ID``, ``app/<id>``), "" without
one, so a benchmark can tell each function's calls from the local runtime's own.

Besides counting, it keeps what capacity and billing depend on: for DynamoDB the items each
request reads or writes with their size (DynamoDB's item-size rules, from the request and,
for reads, from the response) by capacity kind, plus estimated writes to global secondary
indexes of tables registered with ``watch_indexes``; for SQS the messages per request, empty
receives and 64 KB billing chunks. ``request_units`` turns capacity into request units.

The request body is read once and put back as a fresh stream, so moto reads it unchanged.
Counting never fails a request: a body it cannot parse is counted without sizes.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import logging
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any
from urllib.parse import parse_qs

logger = logging.getLogger(__name__)

KB = 1024
SQS_BILLING_CHUNK = 64 * KB

# Capacity kinds: how DynamoDB on-demand bills an item read or written.
WRITE = "write"  # 1 WRU per KB
TRANSACTIONAL_WRITE = "transactional_write"  # 2 WRU per KB
INDEX_WRITE = "index_write"  # 1 WRU per KB of the projected item, per index entry written
STRONG_READ = "strongly_consistent_read"  # 1 RRU per 4 KB
EVENTUAL_READ = "eventually_consistent_read"  # 0.5 RRU per 4 KB
TRANSACTIONAL_READ = "transactional_read"  # 2 RRU per 4 KB

_READ_FACTORS = {STRONG_READ: 1.0, EVENTUAL_READ: 0.5, TRANSACTIONAL_READ: 2.0}
_WRITE_FACTORS = {WRITE: 1.0, TRANSACTIONAL_WRITE: 2.0, INDEX_WRITE: 1.0}

_TARGET_SERVICES = {
    "DynamoDB_20120810": "dynamodb",
    "DynamoDBStreams_20120810": "dynamodbstreams",
    "AmazonSQS": "sqs",
}
_CREDENTIAL_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/[^/]+/([^/]+)/aws4_request")
_APP_ID = re.compile(r"(?:^|\s)app/(\S+)")
_ATTEMPT = re.compile(r"attempt=(\d+)")
_UPDATE_CLAUSE = re.compile(r"\b(SET|REMOVE|ADD|DELETE)\b", re.IGNORECASE)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@dataclass(frozen=True, order=True)
class RequestKey:
    """One billed operation: ``dynamodb:PutItem`` from caller ``IngestApiFunction``."""

    service: str
    operation: str
    caller: str = ""

    @property
    def name(self) -> str:
        return f"{self.service}:{self.operation}"


@dataclass
class OperationStats:
    """What the counter saw for one ``RequestKey``."""

    requests: int = 0
    retries: int = 0  # SDK attempts after the first (billed like any request)
    errors: int = 0  # HTTP status >= 400
    # DynamoDB items read or written (batch and transaction entries each count); EventBridge
    # entries put
    items: int = 0
    strongly_consistent_items: int = 0  # DynamoDB items read with ConsistentRead
    messages: int = 0  # SQS messages sent, received, deleted or changed
    empty_receives: int = 0  # SQS ReceiveMessage answered with no message
    sqs_billed_requests: int = 0  # SQS bills each 64 KB chunk of a request as one request
    request_bytes: int = 0
    capacity: Counter[tuple[str, int]] = field(default_factory=Counter)  # (kind, KB rounded up)
    #: Index entries written (estimated, see ``watch_indexes``), by index name: how many, not
    #: their units (those are in ``capacity`` as INDEX_WRITE).
    index_writes: Counter[str] = field(default_factory=Counter)

    def merge(self, other: OperationStats) -> None:
        self.requests += other.requests
        self.retries += other.retries
        self.errors += other.errors
        self.items += other.items
        self.strongly_consistent_items += other.strongly_consistent_items
        self.messages += other.messages
        self.empty_receives += other.empty_receives
        self.sqs_billed_requests += other.sqs_billed_requests
        self.request_bytes += other.request_bytes
        self.capacity.update(other.capacity)
        self.index_writes.update(other.index_writes)

    def copy(self) -> OperationStats:
        return replace(self, capacity=Counter(self.capacity), index_writes=Counter(self.index_writes))


def request_units(capacity: Mapping[tuple[str, int], int]) -> tuple[float, float]:
    """(read request units, write request units) for DynamoDB on-demand: a read is billed per
    4 KB (strong 1, eventual 0.5, transactional 2 per 4 KB), a write per 1 KB (standard 1,
    transactional 2); every item read or written costs at least one unit of its kind."""
    reads = 0.0
    writes = 0.0
    for (kind, kb), count in capacity.items():
        if kind in _READ_FACTORS:
            reads += _READ_FACTORS[kind] * math.ceil(kb / 4) * count
        elif kind in _WRITE_FACTORS:
            writes += _WRITE_FACTORS[kind] * kb * count
    return reads, writes


# --- DynamoDB item sizes ---------------------------------------------------------------------


def _number_size(text: str) -> int:
    mantissa = re.split("[eE]", text.strip().lstrip("+-"), maxsplit=1)[0]
    digits = mantissa.replace(".", "").strip("0") or "0"
    return math.ceil(len(digits) / 2) + 1


def _binary_size(text: str) -> int:
    try:
        return len(base64.b64decode(text, validate=False))
    except (binascii.Error, ValueError):
        return len(text)


def attribute_value_size(value: Mapping[str, Any]) -> int:
    """Size of one DynamoDB JSON attribute value (``{"S": "..."}``), after the rules of
    "DynamoDB item sizes and formats" in the DynamoDB developer guide."""
    size = 0
    for kind, raw in value.items():
        if kind == "S":
            size += len(str(raw).encode())
        elif kind == "N":
            size += _number_size(str(raw))
        elif kind == "B":
            size += _binary_size(str(raw))
        elif kind in ("BOOL", "NULL"):
            size += 1
        elif kind == "SS":
            size += sum(len(str(item).encode()) for item in raw)
        elif kind == "NS":
            size += sum(_number_size(str(item)) for item in raw)
        elif kind == "BS":
            size += sum(_binary_size(str(item)) for item in raw)
        elif kind == "L":
            size += 3 + sum(1 + attribute_value_size(item) for item in raw)
        elif kind == "M":
            size += 3 + sum(1 + len(name.encode()) + attribute_value_size(item) for name, item in raw.items())
    return size


def item_size(item: Mapping[str, Any] | None) -> int:
    """Size of a DynamoDB item in DynamoDB JSON: attribute names plus values."""
    if not item:
        return 0
    return sum(len(name.encode()) + attribute_value_size(value) for name, value in item.items())


def _kb(size: int) -> int:
    return max(1, math.ceil(size / KB))


# --- global secondary indexes ------------------------------------------------------------------


@dataclass(frozen=True)
class IndexSpec:
    """A global secondary index, as far as the cost of writing to it goes."""

    name: str
    keys: tuple[str, ...]
    projection: str = "ALL"  # ALL | KEYS_ONLY | INCLUDE
    non_key_attributes: tuple[str, ...] = ()
    table_keys: tuple[str, ...] = ()

    def indexes(self, item: Mapping[str, Any]) -> bool:
        return all(key in item for key in self.keys)

    def projects(self, attribute: str) -> bool:
        if attribute in self.keys or attribute in self.table_keys or self.projection == "ALL":
            return True
        return self.projection == "INCLUDE" and attribute in self.non_key_attributes

    def projected_size(self, item: Mapping[str, Any]) -> int:
        return item_size({name: value for name, value in item.items() if self.projects(name)})


def index_specs(table: Mapping[str, Any]) -> tuple[IndexSpec, ...]:
    """The global secondary indexes of a ``describe_table()["Table"]`` description."""
    table_keys = tuple(element["AttributeName"] for element in table.get("KeySchema", []))
    return tuple(
        IndexSpec(
            name=index["IndexName"],
            keys=tuple(element["AttributeName"] for element in index["KeySchema"]),
            projection=index.get("Projection", {}).get("ProjectionType", "ALL"),
            non_key_attributes=tuple(index.get("Projection", {}).get("NonKeyAttributes", ())),
            table_keys=table_keys,
        )
        for index in table.get("GlobalSecondaryIndexes", [])
    )


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def updated_attributes(expression: str, names: Mapping[str, str] | None = None) -> dict[str, str]:
    """Top-level attributes an UpdateExpression changes, each with its clause (SET, REMOVE,
    ADD or DELETE); ``#placeholders`` are resolved through ExpressionAttributeNames."""
    names = names or {}
    changed: dict[str, str] = {}
    pieces = _UPDATE_CLAUSE.split(expression)
    for clause, text in zip(pieces[1::2], pieces[2::2], strict=False):
        for action in _split_top_level(text):
            path = action.split("=", 1)[0] if clause.upper() == "SET" else action.split()[0]
            first = re.split(r"[.\[]", path.strip(), maxsplit=1)[0]
            changed[names.get(first, first)] = clause.upper()
    return changed


# --- the middleware ----------------------------------------------------------------------------


class RequestCounter:
    """WSGI middleware counting AWS requests by (service, operation, caller). Thread-safe."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._stats: dict[RequestKey, OperationStats] = {}
        self._indexes: dict[str, tuple[IndexSpec, ...]] = {}

    # --- reading ---------------------------------------------------------------------------

    def snapshot(self) -> dict[RequestKey, OperationStats]:
        """A copy of every count so far."""
        with self._lock:
            return {key: stats.copy() for key, stats in self._stats.items()}

    def reset(self) -> None:
        with self._lock:
            self._stats.clear()

    def requests(self, service: str, operation: str, caller: str | None = None) -> int:
        """Requests of one operation, from one caller or (None) from all."""
        with self._lock:
            return sum(
                stats.requests
                for key, stats in self._stats.items()
                if key.service == service
                and key.operation == operation
                and (caller is None or key.caller == caller)
            )

    def watch_indexes(self, table_name: str, specs: Sequence[IndexSpec]) -> None:
        """Estimate index writes for writes to ``table_name`` (see ``index_specs``)."""
        with self._lock:
            self._indexes[table_name] = tuple(specs)

    # --- WSGI --------------------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            body = _rebuffer_body(environ)
            key = classify(environ, body)
        except Exception:  # never fail moto's request because of counting
            logger.exception("request counter could not classify a request")
            return self.app(environ, start_response)
        if key is None:
            return self.app(environ, start_response)

        statuses: list[int] = []

        def recording_start_response(status: str, headers: Any, exc_info: Any = None) -> Any:
            statuses.append(int(status.split(" ", 1)[0]))
            if exc_info is not None:
                return start_response(status, headers, exc_info)
            return start_response(status, headers)

        result = self.app(environ, recording_start_response)
        response: bytes | None = None
        if key.service in ("dynamodb", "sqs"):
            # JSON answers, small: read them for item sizes and received messages.
            try:
                response = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
            result = [response]
        try:
            stats = self._measure(environ, key, body, response, statuses[0] if statuses else 0)
        except Exception:
            logger.exception("request counter could not measure %s", key.name)
            stats = OperationStats(requests=1)
        with self._lock:
            self._stats.setdefault(key, OperationStats()).merge(stats)
        return result

    def _measure(
        self, environ: Mapping[str, Any], key: RequestKey, body: bytes, response: bytes | None, status: int
    ) -> OperationStats:
        attempt = _ATTEMPT.search(str(environ.get("HTTP_AMZ_SDK_REQUEST", "")))
        stats = OperationStats(
            requests=1,
            retries=1 if attempt and int(attempt.group(1)) > 1 else 0,
            errors=1 if status >= 400 else 0,
            request_bytes=len(body),
        )
        if key.service == "dynamodb":
            request = _json(body)
            answer = _json(response) if status < 400 else {}
            with self._lock:
                indexes = dict(self._indexes)
            _DynamoMeasure(stats, request, answer, indexes).run(key.operation)
        elif key.service == "sqs":
            _measure_sqs(stats, key.operation, body, response)
        elif key.service == "events" and key.operation == "PutEvents":
            stats.items = len(_json(body).get("Entries") or [])  # EventBridge bills each entry
        return stats


def install(server: Any) -> RequestCounter:
    """Puts a ``RequestCounter`` in front of a started moto ``ThreadedMotoServer``.

    moto 5.x keeps its werkzeug server in ``ThreadedMotoServer._server``; werkzeug's request
    handler calls ``server.app`` for every request, so swapping ``app`` takes effect at once.
    """
    wsgi_server = getattr(server, "_server", None)
    if wsgi_server is None or not hasattr(wsgi_server, "app"):
        raise RuntimeError("no started werkzeug server on this moto server (did moto change?)")
    counter = RequestCounter(wsgi_server.app)
    wsgi_server.app = counter
    return counter


# --- classification ----------------------------------------------------------------------------


def _rebuffer_body(environ: dict[str, Any]) -> bytes:
    """Reads the request body and puts it back as a fresh stream for the app."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    if length > 0:
        body = stream.read(length)
    elif environ.get("wsgi.input_terminated"):
        body = stream.read()
    else:
        return b""
    environ["wsgi.input"] = io.BytesIO(body)
    return bytes(body)


def classify(environ: Mapping[str, Any], body: bytes) -> RequestKey | None:
    """The operation a request calls; None for moto's own endpoints (``/moto-api``)."""
    path = str(environ.get("PATH_INFO", ""))
    if path.startswith("/moto-api"):
        return None
    scope = _CREDENTIAL_SCOPE.search(str(environ.get("HTTP_AUTHORIZATION", "")))
    signing_service = scope.group(1) if scope else ""
    app_id = _APP_ID.search(str(environ.get("HTTP_USER_AGENT", "")))
    caller = app_id.group(1) if app_id else ""
    target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
    if target:
        prefix, _, operation = target.rpartition(".")
        service = _TARGET_SERVICES.get(prefix) or signing_service or prefix.split("_")[0].lower()
        return RequestKey(service, operation, caller)
    action = _query_action(environ, body)
    if action:
        return RequestKey(signing_service or "unknown", action, caller)
    method = str(environ.get("REQUEST_METHOD", "GET")).upper()
    operation = rest_operation(signing_service, method, path)
    return RequestKey(signing_service or "unknown", operation, caller)


def _query_action(environ: Mapping[str, Any], body: bytes) -> str | None:
    content_type = str(environ.get("CONTENT_TYPE", ""))
    if body and content_type.startswith("application/x-www-form-urlencoded"):
        actions = parse_qs(body.decode("utf-8", "replace")).get("Action")
        if actions:
            return actions[0]
    actions = parse_qs(str(environ.get("QUERY_STRING", ""))).get("Action")
    return actions[0] if actions else None


@dataclass(frozen=True)
class _Route:
    method: str
    pattern: re.Pattern[str]
    literal: int  # characters outside placeholders: the most specific route wins
    operation: str


@cache
def _rest_routes(service: str) -> tuple[_Route, ...]:
    import botocore.session  # noqa: PLC0415 - only for REST services, once per service

    try:
        model = botocore.session.get_session().get_service_model(service)
    except Exception:
        return ()
    routes = []
    for name in model.operation_names:
        http = model.operation_model(name).http
        uri = str(http.get("requestUri", "/")).split("?", 1)[0]
        regex = ""
        for piece in re.split(r"(\{[^}]+\})", uri):
            if piece.startswith("{"):
                regex += ".+" if piece.endswith("+}") else "[^/]+"
            else:
                regex += re.escape(piece)
        literal = len(re.sub(r"\{[^}]+\}", "", uri))
        routes.append(_Route(str(http.get("method", "GET")).upper(), re.compile(f"{regex}/?"), literal, name))
    return tuple(sorted(routes, key=lambda route: -route.literal))


def rest_operation(service: str, method: str, path: str) -> str:
    """The operation of a REST request after the service's botocore model (``POST
    /schedules/x`` in ``scheduler`` is ``CreateSchedule``); ``METHOD /first-segment`` when
    the model does not say."""
    for route in _rest_routes(service) if service else ():
        if route.method == method and route.pattern.fullmatch(path):
            return route.operation
    segment = path.strip("/").split("/", 1)[0]
    return f"{method} /{segment}"


def _json(body: bytes | None) -> dict[str, Any]:
    if not body:
        return {}
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


# --- DynamoDB ----------------------------------------------------------------------------------


def _read_kind(consistent: Any, index_name: Any = None) -> str:
    # Global secondary indexes only serve eventually consistent reads.
    return STRONG_READ if consistent is True and not index_name else EVENTUAL_READ


def _update_size(request: Mapping[str, Any]) -> int:
    """What an update request itself carries (its key and values): the smallest the item can be.
    DynamoDB bills the larger of the item before and after, which the request does not show."""
    values = request.get("ExpressionAttributeValues") or {}
    return item_size(request.get("Key")) + sum(attribute_value_size(value) for value in values.values())


#: One index entry written: (index name, KB of its projected item, rounded up).
IndexWrite = tuple[str, int]


def _index_writes_for_put(item: Mapping[str, Any], specs: Sequence[IndexSpec]) -> list[IndexWrite]:
    # Assumes a new item (an overwrite that moves the index key would add a delete).
    return [(spec.name, _kb(spec.projected_size(item))) for spec in specs if spec.indexes(item)]


def _index_writes_for_update(
    request: Mapping[str, Any], new_item: Mapping[str, Any] | None, specs: Sequence[IndexSpec]
) -> list[IndexWrite]:
    """Index entries an update writes, assuming the item is in the index: changing an index
    key deletes the old entry and puts a new one (two writes), changing only a projected
    attribute rewrites the entry (one write)."""
    changed = updated_attributes(
        str(request.get("UpdateExpression", "")), request.get("ExpressionAttributeNames")
    )
    writes: list[IndexWrite] = []
    for spec in specs:
        key_changes = [clause for name, clause in changed.items() if name in spec.keys]
        if not key_changes and new_item is not None and not spec.indexes(new_item):
            continue  # a sparse index: the item is not in it, before or after
        if key_changes:
            count = 1 if all(clause == "REMOVE" for clause in key_changes) else 2
        elif any(spec.projects(name) for name in changed):
            count = 1
        else:
            continue
        size = spec.projected_size(new_item) if new_item else _update_size(request)
        writes += [(spec.name, _kb(size))] * count
    return writes


class _DynamoMeasure:
    """Turns one DynamoDB request and its answer into items and capacity by kind."""

    def __init__(
        self,
        stats: OperationStats,
        request: Mapping[str, Any],
        answer: Mapping[str, Any],
        indexes: Mapping[str, Sequence[IndexSpec]],
    ) -> None:
        self.stats = stats
        self.request = request
        self.answer = answer
        self.indexes = indexes

    def run(self, operation: str) -> None:
        handler = getattr(self, f"op_{operation}", None)
        if handler is not None:
            handler()

    def read(self, kind: str, size: int) -> None:
        self.stats.capacity[(kind, _kb(size))] += 1
        self.stats.items += 1
        if kind == STRONG_READ:
            self.stats.strongly_consistent_items += 1

    def write(self, kind: str, size: int, index_writes: Iterable[IndexWrite] = ()) -> None:
        self.stats.capacity[(kind, _kb(size))] += 1
        self.stats.items += 1
        for name, kb in index_writes:
            self.stats.capacity[(INDEX_WRITE, kb)] += 1
            self.stats.index_writes[name] += 1

    def specs(self, action: Mapping[str, Any]) -> Sequence[IndexSpec]:
        return self.indexes.get(str(action.get("TableName", "")), ())

    # --- reads -------------------------------------------------------------------------------

    def op_GetItem(self) -> None:  # noqa: N802 - named after the operation
        self.read(_read_kind(self.request.get("ConsistentRead")), item_size(self.answer.get("Item")))

    def op_Query(self) -> None:  # noqa: N802
        kind = _read_kind(self.request.get("ConsistentRead"), self.request.get("IndexName"))
        found = self.answer.get("Items") or []
        # Query and Scan add up the items' sizes, then round once.
        self.stats.capacity[(kind, _kb(sum(item_size(item) for item in found)))] += 1
        self.stats.items += len(found)
        if kind == STRONG_READ:
            self.stats.strongly_consistent_items += len(found)

    op_Scan = op_Query  # noqa: N815

    def op_BatchGetItem(self) -> None:  # noqa: N802
        responses = self.answer.get("Responses") or {}
        unprocessed = self.answer.get("UnprocessedKeys") or {}
        for table, wanted in (self.request.get("RequestItems") or {}).items():
            kind = _read_kind(wanted.get("ConsistentRead"))
            found = responses.get(table) or []
            for item in found:
                self.read(kind, item_size(item))
            skipped = len((unprocessed.get(table) or {}).get("Keys") or [])
            for _ in range(max(0, len(wanted.get("Keys") or []) - len(found) - skipped)):
                self.read(kind, 0)  # a key without an item still costs the minimum read

    def op_TransactGetItems(self) -> None:  # noqa: N802
        responses = self.answer.get("Responses") or []
        for index in range(len(self.request.get("TransactItems") or [])):
            entry = responses[index] if index < len(responses) else {}
            self.read(TRANSACTIONAL_READ, item_size((entry or {}).get("Item")))

    # --- writes ------------------------------------------------------------------------------

    def op_PutItem(self) -> None:  # noqa: N802
        item = self.request.get("Item") or {}
        self.write(WRITE, item_size(item), _index_writes_for_put(item, self.specs(self.request)))

    def op_UpdateItem(self) -> None:  # noqa: N802
        returned = self.answer.get("Attributes")
        new_item = returned if self.request.get("ReturnValues") == "ALL_NEW" else None
        size = max(_update_size(self.request), item_size(new_item))
        self.write(WRITE, size, _index_writes_for_update(self.request, new_item, self.specs(self.request)))

    def op_DeleteItem(self) -> None:  # noqa: N802
        old = self.answer.get("Attributes") if self.request.get("ReturnValues") == "ALL_OLD" else None
        index_writes = [
            (spec.name, _kb(spec.projected_size(old)))
            for spec in self.specs(self.request)
            if old and spec.indexes(old)
        ]
        self.write(WRITE, item_size(old) or item_size(self.request.get("Key")), index_writes)

    def op_BatchWriteItem(self) -> None:  # noqa: N802
        for table, entries in (self.request.get("RequestItems") or {}).items():
            specs = self.indexes.get(table, ())
            for entry in entries:
                if "PutRequest" in entry:
                    item = entry["PutRequest"].get("Item") or {}
                    self.write(WRITE, item_size(item), _index_writes_for_put(item, specs))
                elif "DeleteRequest" in entry:
                    self.write(WRITE, item_size(entry["DeleteRequest"].get("Key")))

    def op_TransactWriteItems(self) -> None:  # noqa: N802
        for entry in self.request.get("TransactItems") or []:
            if "Put" in entry:
                item = entry["Put"].get("Item") or {}
                index_writes = _index_writes_for_put(item, self.specs(entry["Put"]))
                self.write(TRANSACTIONAL_WRITE, item_size(item), index_writes)
            elif "Update" in entry:
                update = entry["Update"]
                index_writes = _index_writes_for_update(update, None, self.specs(update))
                self.write(TRANSACTIONAL_WRITE, _update_size(update), index_writes)
            else:  # Delete, ConditionCheck: billed on the item, of which the request has the key
                action = entry.get("Delete") or entry.get("ConditionCheck") or {}
                self.write(TRANSACTIONAL_WRITE, item_size(action.get("Key")))


# --- SQS ---------------------------------------------------------------------------------------


def _measure_sqs(stats: OperationStats, operation: str, body: bytes, response: bytes | None) -> None:
    if operation in ("SendMessage", "DeleteMessage", "ChangeMessageVisibility"):
        stats.messages = 1
    elif operation.endswith("Batch"):
        stats.messages = len(_json(body).get("Entries") or [])
    elif operation == "ReceiveMessage":
        stats.messages = len(_json(response).get("Messages") or [])
        stats.empty_receives = 0 if stats.messages else 1
    # Each 64 KB chunk of a payload is billed as one request (the payload: what was sent or,
    # for a receive, what came back).
    payload = max(len(body), len(response or b""))
    stats.sqs_billed_requests = max(1, math.ceil(payload / SQS_BILLING_CHUNK))
