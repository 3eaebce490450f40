"""End-to-end benchmark: messages through the local stack, from the partner API to `sent`.

Starts the local stack (devstack) of template.yaml on free ports with the demo tenant, whose
integration delivers to the stack's echo destination. After a warm-up (every function instance
started), it posts N unique messages from a few threads and waits, bounded, until the echo
destination has received every one and the stack is quiet again. Then it reads each message's
status (GET, after the counting stopped) and prints:

- messages/s end to end (first POST -> last `sent`), ingest latency, time to `sent`;
- Lambda invocations and AWS requests per delivered message, by caller and operation, counted
  by devstack.request_counter in front of the embedded moto (each function's SDK calls carry
  its logical id as SDK app id; calls without one come from the local runtime);
- the cost per million messages at the list prices in bench/aws_prices.toml.

Idle polling is not a per-message cost: an SQS ReceiveMessage is counted as per message only
when it returned messages; empty ones are reported apart. Absolute speed is moto's and this
machine's, not AWS's; request counts and the cost model are what this is for.

    python -m bench.e2e [--n 200] [--concurrency 8] [--pollers 2] [--timeout 90]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import sys
import tempfile
import threading
import time
import tomllib
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only the standard library at module level: function instances are spawned processes that
# import this module again as __mp_main__.
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "hub"), str(ROOT)]
PRICES = Path(__file__).with_name("aws_prices.toml")

if TYPE_CHECKING:
    import httpx

    from devstack.request_counter import OperationStats, RequestKey
    from devstack.stack import LocalStack

ESM = "Lambda SQS pollers"  # the local runtime's SQS calls: what Lambda's event source mapping does on AWS
BILLED_ESM_OPERATIONS = {
    "ReceiveMessage",
    "DeleteMessage",
    "DeleteMessageBatch",
    "ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch",
    "SendMessage",  # a fired retry schedule delivering to its queue: EventBridge Scheduler on AWS
}


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


# --- instrumentation -----------------------------------------------------------------------------


class Deliveries:
    """When the echo destination first received each message (its Idempotency-Key is the
    message id). Wraps the echo server's ``record``; unlike its bounded deque, never forgets."""

    def __init__(self, echo: Any) -> None:
        self._lock = threading.Lock()
        self.first: dict[str, float] = {}
        original: Callable[[Any], None] = echo.record

        def record(request: Any) -> None:
            original(request)
            message_id = request.headers.get("idempotency-key", "")
            with self._lock:
                self.first.setdefault(message_id, time.time())

        setattr(echo, "record", record)  # noqa: B010 - instance attribute over the method

    def count(self, message_ids: set[str]) -> int:
        with self._lock:
            return len(message_ids.intersection(self.first))


@dataclass
class Invocations:
    """Invocations per function and the time each took on its instance (bench-only wrapper
    of ``FunctionPool._run``: the handler's run, without waiting for a free instance)."""

    durations: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock)

    @contextlib.contextmanager
    def installed(self) -> Iterator[Invocations]:
        from devstack.lambda_runtime import FunctionPool  # noqa: PLC0415

        original = FunctionPool._run

        def run(pool: Any, instance: Any, event_json: str, request_id: str) -> Any:
            started = time.perf_counter()
            try:
                return original(pool, instance, event_json, request_id)
            finally:
                with self.lock:
                    self.durations[pool.spec.logical_id].append(time.perf_counter() - started)

        setattr(FunctionPool, "_run", run)  # noqa: B010
        try:
            yield self
        finally:
            setattr(FunctionPool, "_run", original)  # noqa: B010

    def reset(self) -> None:
        with self.lock:
            self.durations.clear()

    def snapshot(self) -> dict[str, list[float]]:
        with self.lock:
            return {name: list(values) for name, values in self.durations.items()}


@contextlib.contextmanager
def _function_output_to(path: Path) -> Iterator[None]:
    """Function instances inherit this process's stdout: their logs and EMF metrics (produced,
    so part of the cost) go to a file instead of the report."""
    sys.stdout.flush()
    saved = os.dup(1)
    with path.open("wb") as log:
        os.dup2(log.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


@contextlib.contextmanager
def _lean_transaction_snapshots() -> Iterator[None]:
    """moto (5.2) rolls back a failed TransactWriteItems from a ``copy.deepcopy`` of each table
    it touches, stream records included, taken once per item of every transaction. That cost
    grows with the table, so a run slows down quadratically as messages pile up (DynamoDB's
    latency does not depend on table size). Here the snapshot copies the table's key
    structure and deep-copies only the items the transaction touches: the same rollback
    (untouched items are not changed by it), at a cost that stays small. Bench only."""
    import copy  # noqa: PLC0415

    from moto.dynamodb.models import DynamoDBBackend  # noqa: PLC0415
    from moto.dynamodb.models.dynamo_type import DynamoType  # noqa: PLC0415
    from moto.dynamodb.models.table import Table  # noqa: PLC0415

    touched = threading.local()
    original_transact = DynamoDBBackend.transact_write_items

    def transact(backend: Any, transact_items: list[dict[str, Any]]) -> Any:
        keys: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for entry in transact_items:
            for operation in entry.values():
                keys[str(operation.get("TableName"))].append(
                    operation.get("Item") or operation.get("Key") or {}
                )
        touched.keys = keys
        try:
            return original_transact(backend, transact_items)
        finally:
            touched.keys = None

    def snapshot(table: Any, memo: dict[int, Any]) -> Any:
        keys = getattr(touched, "keys", None)
        if not keys or table.name not in keys:  # any other deep copy: as before
            clone = object.__new__(type(table))
            memo[id(table)] = clone
            for name, value in table.__dict__.items():
                clone.__dict__[name] = copy.deepcopy(value, memo)
            return clone
        clone = copy.copy(table)
        ranged = table.range_key_attr is not None
        clone.items = defaultdict(dict, {h: dict(r) if ranged else r for h, r in table.items.items()})
        for key in keys[table.name]:
            if table.hash_key_attr not in key:
                continue
            hash_value = DynamoType(key[table.hash_key_attr])
            if not ranged:
                if hash_value in clone.items:
                    clone.items[hash_value] = copy.deepcopy(clone.items[hash_value])
                continue
            if table.range_key_attr not in key:
                continue
            range_value = DynamoType(key[table.range_key_attr])
            row = clone.items.get(hash_value)
            if row is not None and range_value in row:
                row[range_value] = copy.deepcopy(row[range_value])
        if table.stream_shard is not None:
            clone.stream_shard = copy.copy(table.stream_shard)
            clone.stream_shard.items = list(table.stream_shard.items)
        return clone

    setattr(DynamoDBBackend, "transact_write_items", transact)  # noqa: B010
    setattr(Table, "__deepcopy__", snapshot)  # noqa: B010
    try:
        yield
    finally:
        setattr(DynamoDBBackend, "transact_write_items", original_transact)  # noqa: B010
        delattr(Table, "__deepcopy__")


# --- load ----------------------------------------------------------------------------------------


@dataclass
class Posted:
    message_id: str
    started: float  # wall clock, comparable with the hub's updated_at
    latency: float
    status: int


def _body(run_id: str, index: int) -> dict[str, Any]:
    from devstack.demo import DEMO_INTEGRATION_ID, DEMO_MESSAGE_TYPE  # noqa: PLC0415

    po = f"PO-{run_id}-{index}"
    return {
        "integration_id": DEMO_INTEGRATION_ID,
        "message_type": DEMO_MESSAGE_TYPE,
        "external_id": po,
        "payload": {"po_number": po, "lines": [{"sku": "A-1", "qty": index % 7 + 1}]},
    }


def _post_all(api: httpx.Client, run_id: str, count: int, concurrency: int) -> list[Posted]:
    def post(index: int) -> Posted:
        started = time.time()
        clock = time.perf_counter()
        answer = api.post(
            "/api/edi-hub/receive-message",
            json=_body(run_id, index),
            headers={"Idempotency-Key": f"{run_id}-{index}"},
        )
        latency = time.perf_counter() - clock
        message_id = answer.json().get("message_id", "") if answer.status_code in (200, 202) else ""
        return Posted(message_id, started, latency, answer.status_code)

    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(post, range(count)))


def _busy_requests(stack: LocalStack) -> int:
    """Requests that are work, not idle polling or the scheduler emulation's listing."""
    assert stack.aws_requests is not None
    return sum(
        stats.requests - stats.empty_receives
        for key, stats in stack.aws_requests.snapshot().items()
        if key.caller or key.service == "sqs"
    )


def _wait_delivered(
    stack: LocalStack, deliveries: Deliveries, message_ids: set[str], deadline: float, quiet: float = 1.0
) -> bool:
    """Until every message reached the echo destination and no work request came for ``quiet``
    seconds (the worker's last status updates and the pollers' deletes come after delivery)."""
    while deliveries.count(message_ids) < len(message_ids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    last, since = _busy_requests(stack), time.monotonic()
    while time.monotonic() - since < quiet and time.monotonic() < deadline:
        time.sleep(0.1)
        now = _busy_requests(stack)
        if now != last:
            last, since = now, time.monotonic()
    return True


def _statuses(api: httpx.Client, message_ids: list[str], concurrency: int, deadline: float) -> dict[str, Any]:
    """Each message's public view, polling until `sent` (or the deadline)."""

    def read(message_id: str) -> dict[str, Any]:
        while True:
            view: dict[str, Any] = api.get(f"/api/edi-hub/messages/{message_id}").json()
            if view.get("pipeline_status") == "sent" or time.monotonic() > deadline:
                return view
            time.sleep(0.2)

    with ThreadPoolExecutor(concurrency) as pool:
        return dict(zip(message_ids, pool.map(read, message_ids), strict=True))


# --- the run -------------------------------------------------------------------------------------


@dataclass
class Result:
    n: int
    concurrency: int
    pollers: int
    warmup: int
    statuses: Counter[str]
    delivered: int
    elapsed: float
    ingest_latency: list[float]
    time_to_sent: list[float]
    window: float  # seconds the counters ran
    requests: dict[RequestKey, OperationStats]
    invocations: dict[str, list[float]]
    memory_mb: dict[str, int]
    post_statuses: Counter[int]


def run(n: int, concurrency: int, pollers: int, warmup: int, timeout: float) -> Result:
    import httpx  # noqa: PLC0415

    from devstack.cfn import load_template  # noqa: PLC0415
    from devstack.demo import DEMO_API_KEY, seed  # noqa: PLC0415
    from devstack.request_counter import index_specs  # noqa: PLC0415
    from tests.aws import TEMPLATE, local_stack_on_free_ports  # noqa: PLC0415

    resources = load_template(TEMPLATE)["Resources"]
    functions = [name for name, spec in resources.items() if spec.get("Type") == "AWS::Serverless::Function"]
    tables = [name for name, spec in resources.items() if spec.get("Type") == "AWS::DynamoDB::Table"]
    # Each function's SDK calls carry its logical id (User-Agent app/<id>) for the counter.
    env_overrides = {logical_id: {"AWS_SDK_UA_APP_ID": logical_id} for logical_id in functions}
    invocations = Invocations()
    stack = local_stack_on_free_ports(
        stack_name="hub-bench-e2e",
        count_aws_requests=True,
        sqs_pollers_per_source=pollers,
        env_overrides=env_overrides,
    )
    with _lean_transaction_snapshots(), invocations.installed(), stack:
        counter = stack.aws_requests
        assert counter is not None
        assert stack.echo is not None
        seed(stack)
        dynamodb = stack.client("dynamodb")
        for logical_id in tables:
            table = stack.resources[logical_id]
            counter.watch_indexes(table, index_specs(dynamodb.describe_table(TableName=table)["Table"]))
        deliveries = Deliveries(stack.echo)
        headers = {"Authorization": f"Bearer {os.environ.get('HUB_LOCAL_DEMO_API_KEY', DEMO_API_KEY)}"}
        limits = httpx.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2)
        with httpx.Client(
            base_url=stack.api_url, headers=headers, timeout=30, trust_env=False, limits=limits
        ) as api:
            run_id = uuid.uuid4().hex[:8]
            # Warm-up: every function instance the load will use is started and imported.
            warm = _post_all(api, f"warm-{run_id}", warmup, concurrency)
            warm_ids = {posted.message_id for posted in warm if posted.message_id}
            if not _wait_delivered(stack, deliveries, warm_ids, time.monotonic() + timeout):
                raise SystemExit("warm-up messages were not delivered: is the pipeline worker working?")
            counter.reset()
            invocations.reset()
            counted_from = time.monotonic()

            posted = _post_all(api, run_id, n, concurrency)
            message_ids = [p.message_id for p in posted if p.message_id]
            delivered = _wait_delivered(stack, deliveries, set(message_ids), time.monotonic() + timeout)
            window = time.monotonic() - counted_from
            requests = counter.snapshot()
            calls = invocations.snapshot()
            # Read after the snapshot: these GETs are not part of the cost of a message.
            views = _statuses(api, message_ids, concurrency, time.monotonic() + (5 if delivered else 1))
    sent_at = {
        message_id: datetime.fromisoformat(view["updated_at"]).timestamp()
        for message_id, view in views.items()
        if view.get("pipeline_status") == "sent"
    }
    started = {p.message_id: p.started for p in posted}
    first_post = min(p.started for p in posted)
    return Result(
        n=n,
        concurrency=concurrency,
        pollers=pollers,
        warmup=warmup,
        statuses=Counter(str(view.get("pipeline_status")) for view in views.values()),
        delivered=len(sent_at),
        elapsed=(max(sent_at.values()) - first_post) if sent_at else float("nan"),
        ingest_latency=[p.latency for p in posted],
        time_to_sent=[sent_at[m] - started[m] for m in sent_at],
        window=window,
        requests=requests,
        invocations=calls,
        memory_mb={logical_id: spec.memory_mb for logical_id, spec in stack.model.specs.items()},
        post_statuses=Counter(p.status for p in posted),
    )


# --- the cost model ------------------------------------------------------------------------------


@dataclass
class PerMessage:
    """What one delivered message costs, in billed units."""

    requests: dict[str, dict[str, float]]  # caller -> service:operation -> requests per message
    read_units: float
    write_units: float
    units_by_caller: dict[str, tuple[float, float]]  # caller -> (RRU, WRU) per message
    index_write_units: float
    sqs_requests: float  # billed (64 KB chunks), non-empty receives only
    invocations: dict[str, float]
    gb_seconds: float
    api_requests: float
    schedules: float
    idle_receives: int
    emulation: dict[str, int]  # requests with no AWS equivalent: scheduler emulation, ...


def per_message(result: Result) -> PerMessage:
    from devstack.request_counter import INDEX_WRITE, request_units  # noqa: PLC0415

    count = max(result.delivered, 1)
    requests: dict[str, dict[str, float]] = defaultdict(dict)
    capacity: dict[str, Counter[tuple[str, int]]] = defaultdict(Counter)
    sqs_billed = 0
    idle = 0
    schedules = 0
    emulation: dict[str, int] = {}
    for key, stats in sorted(result.requests.items()):
        if key.caller:
            caller = key.caller
        elif key.service == "sqs" and key.operation in BILLED_ESM_OPERATIONS:
            caller = ESM
        else:
            emulation[key.name] = emulation.get(key.name, 0) + stats.requests
            continue
        billed_requests = stats.requests - stats.empty_receives
        idle += stats.empty_receives
        if billed_requests:
            requests[caller][key.name] = billed_requests / count
        capacity[caller].update(stats.capacity)
        if key.service == "sqs":
            sqs_billed += stats.sqs_billed_requests - stats.empty_receives
        if key.name == "scheduler:CreateSchedule":
            schedules += stats.requests - stats.errors
    total: Counter[tuple[str, int]] = sum(capacity.values(), Counter())
    reads, writes = request_units(total)
    index_writes = sum(kb * n for (kind, kb), n in total.items() if kind == INDEX_WRITE)
    by_caller = {caller: request_units(units) for caller, units in sorted(capacity.items())}
    gb_seconds = sum(
        math.ceil(duration * 1000) / 1000 * result.memory_mb.get(name, 128) / 1024
        for name, durations in result.invocations.items()
        for duration in durations
    )
    return PerMessage(
        requests=dict(requests),
        read_units=reads / count,
        write_units=writes / count,
        units_by_caller={
            caller: (rru / count, wru / count) for caller, (rru, wru) in by_caller.items() if rru or wru
        },
        index_write_units=index_writes / count,
        sqs_requests=sqs_billed / count,
        invocations={name: len(durations) / count for name, durations in sorted(result.invocations.items())},
        gb_seconds=gb_seconds / count,
        api_requests=result.n / count,
        schedules=schedules / count,
        idle_receives=idle,
        emulation=emulation,
    )


def cost_per_million(unit: PerMessage, prices: Mapping[str, Any]) -> dict[str, float]:
    """USD per million delivered messages, by service."""
    million = 1_000_000
    return {
        "DynamoDB": unit.read_units * prices["dynamodb"]["read_request_unit_per_million"]
        + unit.write_units * prices["dynamodb"]["write_request_unit_per_million"],
        "SQS": unit.sqs_requests * prices["sqs"]["standard_request_per_million"],
        "Lambda": sum(unit.invocations.values()) * prices["lambda"]["request_per_million"]
        + unit.gb_seconds * million * prices["lambda"]["arm64_gb_second"],
        "API Gateway": unit.api_requests * prices["apigateway"]["http_api_request_per_million"],
        "Scheduler": unit.schedules * prices["scheduler"]["invocation_per_million"],
    }


def load_prices(path: Path = PRICES) -> dict[str, Any]:
    with path.open("rb") as file:
        return tomllib.load(file)


# --- report --------------------------------------------------------------------------------------


def report(result: Result, prices: Mapping[str, Any]) -> list[str]:
    unit = per_message(result)
    costs = cost_per_million(unit, prices)
    lat = [value * 1000 for value in result.ingest_latency]
    tts = result.time_to_sent
    worker_batches = {name: per for name, per in unit.invocations.items() if per and per < 1}
    lines = [
        f"end-to-end benchmark: {result.n} messages, partner API -> IngestApiFunction -> PipelineQueue"
        " -> PipelineWorkerFunction -> echo destination (local stack on moto)",
        f"  delivered:            {result.delivered}/{result.n} sent {dict(result.statuses)}"
        f" (POST answers {dict(result.post_statuses)}; concurrency {result.concurrency},"
        f" {result.pollers} SQS pollers, {result.warmup} warm-up messages not counted)",
    ]
    if result.delivered:
        lines += [
            f"  throughput:           {result.delivered / result.elapsed:.1f} messages/s end to end"
            f" (first POST -> last sent: {result.elapsed:.2f} s)",
            f"  ingest latency:       p50 {statistics.median(lat):.0f} ms, p99 {_percentile(lat, 99):.0f} ms"
            " (POST -> 202)",
            f"  time to sent:         p50 {statistics.median(tts):.2f} s, p99 {_percentile(tts, 99):.2f} s"
            " (POST -> pipeline_status sent)",
        ]
    lines.append(
        "  Lambda invocations:   "
        + ", ".join(f"{name} {per:.2f}" for name, per in unit.invocations.items())
        + " per message"
        + "".join(f" ({1 / per:.1f} messages per {name} batch)" for name, per in worker_batches.items())
    )
    lines.append(
        "  AWS requests per delivered message (billed ones; ReceiveMessage only when it got messages):"
    )
    for caller, operations in sorted(unit.requests.items()):
        ops = ", ".join(f"{name} {per:.2f}" for name, per in operations.items())
        lines.append(f"    {caller:<24}{ops}")
    callers = ", ".join(
        f"{caller} {rru:.1f}/{wru:.1f}" for caller, (rru, wru) in unit.units_by_caller.items()
    )
    lines.append(
        f"  DynamoDB per message: {unit.read_units:.2f} RRU, {unit.write_units:.2f} WRU ({callers} RRU/WRU;"
        f" {unit.index_write_units:.2f} WRU are GSI writes; item sizes per DynamoDB's rules)"
    )
    emulation = ", ".join(f"{name} {count}" for name, count in sorted(unit.emulation.items())) or "none"
    lines += [
        f"  not per message:      {unit.idle_receives} empty ReceiveMessage in {result.window:.1f} s"
        f" ({unit.idle_receives / result.window:.1f}/s idle long polling; on AWS Lambda's pollers poll"
        " an idle queue too: a fixed cost per queue, left out here)",
        f"                        local runtime only, no AWS bill: {emulation}",
        f"  cost per million messages at AWS list prices ({prices['region']}, on-demand, no free tier;"
        f" prices as of {prices['as_of']}, bench/aws_prices.toml):",
    ]
    lines += [f"    {service:<12}${cost:8.2f}" for service, cost in costs.items()]
    lines.append(f"    {'total':<12}${sum(costs.values()):8.2f}")
    lines.append(
        f"    (Lambda compute: {unit.gb_seconds * 1000:.2f} GB-ms per message from local run times,"
        " moto and this machine's; on AWS expect less)"
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200, help="messages measured")
    parser.add_argument("--concurrency", type=int, default=8, help="threads posting")
    parser.add_argument("--pollers", type=int, default=2, help="concurrent SQS pollers per event source")
    parser.add_argument("--warmup", type=int, default=16, help="messages sent first and not measured")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for delivery")
    args = parser.parse_args()
    prices = load_prices()
    log = Path(tempfile.gettempdir()) / "hub-bench-e2e-functions.log"
    with _function_output_to(log):
        result = run(args.n, args.concurrency, args.pollers, args.warmup, args.timeout)
    for line in report(result, prices):
        print(line)
    print(f"  function logs: {log}")
    return 0 if result.delivered == result.n else 1


if __name__ == "__main__":
    sys.exit(main())
