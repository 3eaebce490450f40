"""End-to-end cost per delivered message: messages through the local stack, partner API to `sent`.

Starts the local stack (devstack) of template.yaml on free ports with the demo tenant and two
bench-seeded integrations of that tenant:

- ``int_bench_orders`` -> the stack's echo destination, message types ``purchase_order`` (no
  duplicate-key fields: the happy path) and ``purchase_order_keyed`` (duplicate-key field
  ``po_number``, duplicate handling ``accept``);
- ``int_bench_retry`` -> a bench-only destination on 127.0.0.1 answering 503 to the first attempt
  of each Idempotency-Key and 200 after, automatic retries on, first wait 1 s.

After a warm-up (function instances started, not counted) it measures three variants in turn,
each in its own counted window: (a) ``happy_path`` (``--n``), (b) ``duplicate_key_fields`` and
(c) ``scheduled_retry`` (``--variant-n`` each; every message needs exactly one scheduled retry).
Each message is a ~1 KiB JSON purchase order with its own po_number and Idempotency-Key. Waits
are bounded by progress, not by a total time: a variant stops waiting when every message was
delivered, or when nothing progressed (no delivery, no AWS work request) for ``--stall`` seconds;
it then reports what it got (delivered k of n). A missed target never fails the run.

Per variant, per delivered message, priced at bench/aws_prices.toml:

- AWS requests by caller and operation, counted by devstack.request_counter in front of the
  embedded moto (each function's SDK calls carry its logical id as SDK app id; the local runtime's
  SQS polling is Lambda's event source mapping; a fired retry schedule's SendMessage is
  EventBridge Scheduler's); DynamoDB RRU/WRU from item sizes per DynamoDB's rules, GSI writes
  included. Empty receives (idle polling) are reported apart, not per message;
- Lambda: invocations, and compute at the template's MemorySize. Locally a handler's duration is
  mostly moto's emulation time, so the billed duration is *modeled*: per invocation, the handler's
  measured time minus the time its AWS requests took against the emulator, plus a documented AWS
  latency per request (``[aws_latency_ms]``), rounded up to the ms. Both the raw local figure and
  the modeled one are printed; the modeled one is priced. (bench/_instrument.py measures each
  invocation inside its instance process.) The model assumes AWS calls are made one at a time,
  as the hub makes them. The delivery's HTTP call to the local destination stays in the
  handler's time as measured (a real destination is slower). Init (cold starts) is not included:
  warm instances serve the counted windows;
- CloudWatch Logs: the bytes each function wrote to stdout/stderr during the window, plus Lambda's
  own lines as the function's LoggingConfig leaves them (``platform_log_bytes``): with the
  template's JSON format and SystemLogLevel WARN none for a successful invocation, ~650 bytes for
  a failed one (with the text format ~260 bytes of START/END/REPORT per invocation);
- API Gateway (HTTP API requests) and EventBridge Scheduler (invocations: fired retry schedules);
- DynamoDB storage (issue 29): after each window, the items its messages left (every item type,
  found by the message ids they name) are read back with a Scan and priced as stored: each at its
  size + 100 bytes, each global secondary index entry at the base key + index keys + projected
  attributes + 100 bytes, kept until its `expires_at` (the TTL ingest, the worker and the partner
  API give it: at the template's default retention a message and its satellites
  MessageRetentionDays, its payload PayloadRetentionDays, claims and event items less), an item
  without one for those defaults (``retention_days``), at the price per GB-month; point-in-time
  recovery on the table's share (no index entries) as `DynamoDB PITR`.

Search (issue 28): every variant reports its index writes per message by index (GSI3 is the
search's: one per message); then ``SEARCH_N`` more messages of the keyed type, each with an
x-correlation-id of its own beside its external id (the case that writes GSI3 twice), give that
case's index writes and WRU per message, and one lookup of each kind (``by=``) through the admin
API for one of them gives its DynamoDB requests and read units (outside the counted windows).

Also measured: ``e2e_messages_per_s`` (happy path, delivered / (last `sent` - first POST)) and
``e2e_vs_raw_put_ratio``: that rate divided by how many ~1 KiB PutItem per second one thread gets
from the same moto server in the same run (a tight loop for ``--raw-seconds``), a yardstick for
this machine and emulator. Absolute speed is moto's and this machine's; request counts, units
and the cost model are what this is for.

    python -m bench.e2e [--n 200] [--variant-n 40] [--concurrency 8] [--pollers 2] [--stall 30]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
import threading
import time
import tomllib
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only the standard library (and bench modules that import only it) at module level: function
# instances are spawned processes that import this module again as __mp_main__.
from bench.common import median, merge_results, now_iso, payload_bytes, percentile, purchase_order

if TYPE_CHECKING:
    import httpx

    from devstack.request_counter import IndexSpec, OperationStats, RequestKey
    from devstack.stack import LocalStack

PRICES = Path(__file__).with_name("aws_prices.toml")
ESM = "Lambda SQS pollers"  # the local runtime's SQS calls: what Lambda's event source mapping does on AWS
BILLED_ESM_OPERATIONS = {
    "ReceiveMessage",
    "DeleteMessage",
    "DeleteMessageBatch",
    "ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch",
    "SendMessage",  # a fired retry schedule delivering to its queue: EventBridge Scheduler on AWS
}
ORDERS_INTEGRATION = "int_bench_orders"
RETRY_INTEGRATION = "int_bench_retry"
#: Through a connection that declares limits high enough never to hold (issue 30): what a
#: permit costs per delivery (rate and concurrency: the permit's write and the slot's give-back).
LIMITED_INTEGRATION = "int_bench_limited"
SERVICES = (
    "DynamoDB",
    "DynamoDB storage",
    "DynamoDB PITR",
    "SQS",
    "Lambda",
    "API Gateway",
    "Scheduler",
    "EventBridge",
    "CloudWatch Logs",
    "X-Ray",
)
#: The outbox's own function (issue 12): its share of the cost is reported apart too.
PUBLISHER = "OutboxPublisherFunction"
#: How long the publisher may still be busy after the last delivery (its stream batching window
#: is 1 s): the counted window waits for it, so its last batch is in the figures.
OUTBOX_SETTLE_S = 2.5


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    integration_id: str
    message_type: str
    destination: str  # "echo" | "flaky"


VARIANTS = (
    Variant(
        "happy_path",
        "purchase_order without duplicate-key fields, delivered at the first attempt",
        ORDERS_INTEGRATION,
        "purchase_order",
        "echo",
    ),
    Variant(
        "duplicate_key_fields",
        "purchase_order_keyed: duplicate_key_fields=(po_number,), accept; every po_number new",
        ORDERS_INTEGRATION,
        "purchase_order_keyed",
        "echo",
    ),
    Variant(
        "scheduled_retry",
        "destination answers 503 to the first attempt: one scheduled retry (1 s), then 200",
        RETRY_INTEGRATION,
        "purchase_order",
        "flaky",
    ),
    Variant(
        "limited_connection",
        "purchase_order through a connection with limits (1,000/s, 100 in flight: never held)",
        LIMITED_INTEGRATION,
        "purchase_order",
        "echo",
    ),
)


# --- destinations ----------------------------------------------------------------------------


class Deliveries:
    """When each message was first delivered with a 2xx (its Idempotency-Key is the message id)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.first: dict[str, float] = {}

    def delivered(self, message_id: str) -> None:
        with self._lock:
            self.first.setdefault(message_id, time.time())

    def count(self, message_ids: set[str]) -> int:
        with self._lock:
            return len(message_ids.intersection(self.first))

    def watch_echo(self, echo: Any) -> None:
        """Wraps the echo server's ``record`` (unlike its bounded deque, this never forgets)."""
        original: Callable[[Any], None] = echo.record

        def record(request: Any) -> None:
            original(request)
            if 200 <= request.status < 300:
                self.delivered(request.headers.get("idempotency-key", ""))

        setattr(echo, "record", record)  # noqa: B010 - instance attribute over the method


class FlakyDestination:
    """Bench-only destination: 503 to the first attempt of each Idempotency-Key, 200 after."""

    def __init__(self, deliveries: Deliveries) -> None:
        from devstack.http_server import AppHandler, BackgroundHttpServer  # noqa: PLC0415

        seen: set[str] = set()
        lock = threading.Lock()

        class Handler(AppHandler[Any]):
            def serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                key = self.headers.get("idempotency-key", "")
                with lock:
                    first = key not in seen
                    seen.add(key)
                status = 503 if first else 200
                if not first:
                    deliveries.delivered(key)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        self.server = BackgroundHttpServer("flaky", "127.0.0.1", 0, Handler)

    @property
    def url(self) -> str:
        return f"{self.server.base_url}/orders"


def _seed_bench_integrations(stack: LocalStack, flaky_url: str) -> None:
    from devstack.demo import DEMO_TENANT_ID, pointed_at  # noqa: PLC0415
    from hub.adapters.dynamo.tenancy import DynamoConfigRepository  # noqa: PLC0415
    from hub.domain.delivery_limits import DeliveryLimits  # noqa: PLC0415
    from hub.domain.retry import RetryPolicy  # noqa: PLC0415
    from hub.domain.tenancy import (  # noqa: PLC0415
        Destination,
        DuplicateHandling,
        Integration,
        IntegrationMode,
        MessageTypeConfig,
    )

    with pointed_at(stack):
        config = DynamoConfigRepository(stack.resources["HubTable"])
        config.put_integration(
            Integration(
                integration_id=ORDERS_INTEGRATION,
                tenant_id=DEMO_TENANT_ID,
                name="bench orders -> echo destination",
                mode=IntegrationMode.ORCHESTRATION,
                destination=Destination(url=stack.echo_url),
                message_types={
                    "purchase_order": MessageTypeConfig(),
                    "purchase_order_keyed": MessageTypeConfig(
                        duplicate_key_fields=("po_number",), duplicate_handling=DuplicateHandling.ACCEPT
                    ),
                },
            )
        )
        config.put_integration(
            Integration(
                integration_id=LIMITED_INTEGRATION,
                tenant_id=DEMO_TENANT_ID,
                name="bench orders -> echo destination, limited connection",
                mode=IntegrationMode.ORCHESTRATION,
                destination=Destination(
                    url=stack.echo_url,
                    connection_id="con_bench_limited",
                    limits=DeliveryLimits(max_concurrency=100, rate_per_second=1000, burst=1000),
                ),
                message_types={"purchase_order": MessageTypeConfig()},
            )
        )
        config.put_integration(
            Integration(
                integration_id=RETRY_INTEGRATION,
                tenant_id=DEMO_TENANT_ID,
                name="bench orders -> flaky destination",
                mode=IntegrationMode.ORCHESTRATION,
                destination=Destination(url=flaky_url),
                retry_policy=RetryPolicy(retry_auto_enabled=True, retry_max=3, ladder_seconds=(1.0,)),
                message_types={"purchase_order": MessageTypeConfig()},
            )
        )


# --- load --------------------------------------------------------------------------------------


@dataclass
class Posted:
    message_id: str
    started: float  # wall clock, comparable with the hub's updated_at
    latency: float
    status: int


def _post_all(
    api: httpx.Client,
    run_id: str,
    variant: Variant,
    count: int,
    concurrency: int,
    *,
    correlated: bool = False,
) -> list[Posted]:
    """Posts ``count`` purchase orders (external id = po_number, Idempotency-Key
    ``<run>-<variant>-<index>``); ``correlated``: with an x-correlation-id of their own too
    (``corr-<run>-<index>``, which search then indexes beside the external id)."""
    import httpx  # noqa: PLC0415

    def post(index: int) -> Posted:
        payload = purchase_order(run_id, index)
        body = {
            "integration_id": variant.integration_id,
            "message_type": variant.message_type,
            "external_id": payload["po_number"],
            "payload": payload,
        }
        headers = {"Idempotency-Key": f"{run_id}-{variant.name}-{index}"}
        if correlated:
            headers["X-Correlation-Id"] = f"corr-{run_id}-{index}"
        started, clock = time.time(), time.perf_counter()
        try:
            answer = api.post("/api/edi-hub/receive-message", json=body, headers=headers)
        except httpx.HTTPError:
            return Posted("", started, time.perf_counter() - clock, 0)
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
    stack: LocalStack, deliveries: Deliveries, message_ids: set[str], stall: float, quiet: float = 1.0
) -> bool:
    """Until every message was delivered and no work request came for ``quiet`` seconds (the
    worker's last status updates and the pollers' deletes come after delivery). Gives up when
    nothing progressed (no new delivery, no work request) for ``stall`` seconds; returns whether
    every message was delivered."""
    last = (deliveries.count(message_ids), _busy_requests(stack))
    since = time.monotonic()
    while True:
        time.sleep(0.1)
        now = (deliveries.count(message_ids), _busy_requests(stack))
        if now != last:
            last, since = now, time.monotonic()
        idle = time.monotonic() - since
        if now[0] >= len(message_ids) and idle >= quiet:
            return True
        if idle >= stall:
            return False


def _statuses(api: httpx.Client, message_ids: list[str], concurrency: int, patience: float) -> dict[str, Any]:
    """Each message's public view, polling until `sent` (for at most ``patience`` seconds)."""
    deadline = time.monotonic() + patience

    def read(message_id: str) -> dict[str, Any]:
        while True:
            view: dict[str, Any] = api.get(f"/api/edi-hub/messages/{message_id}").json()
            if view.get("pipeline_status") == "sent" or time.monotonic() > deadline:
                return view
            time.sleep(0.2)

    with ThreadPoolExecutor(concurrency) as pool:
        return dict(zip(message_ids, pool.map(read, message_ids), strict=True))


# --- one counted window --------------------------------------------------------------------------


@dataclass
class Result:
    variant: Variant
    n: int
    statuses: Counter[str]
    delivered: int
    complete: bool  # every message delivered before the wait gave up
    elapsed: float
    ingest_latency: list[float]
    time_to_sent: list[float]
    window: float  # seconds the counters ran
    requests: dict[RequestKey, OperationStats]
    invocations: list[dict[str, Any]]
    log_bytes: dict[str, int]
    memory_mb: dict[str, int]
    post_statuses: Counter[int]
    #: Events the outbox publisher reported publishing in the window (its EMF metric).
    outbox_events: float = 0.0
    #: What the window's messages left in the table, as DynamoDB bills its storage.
    stored: list[Stored] = field(default_factory=list)


@dataclass
class Bench:
    """The running stack and what measures it."""

    stack: LocalStack
    api: httpx.Client
    deliveries: Deliveries
    window: Any  # bench._instrument.Window
    concurrency: int
    stall: float

    def post_and_wait(
        self, variant: Variant, count: int, *, correlated: bool = False, run_id: str | None = None
    ) -> tuple[list[Posted], bool]:
        """Posts ``count`` new messages (a fresh run id unless given: new po_numbers and
        Idempotency-Keys, so nothing is deduplicated against an earlier batch) and waits for
        their delivery."""
        run_id = run_id or uuid.uuid4().hex[:8]
        posted = _post_all(self.api, run_id, variant, count, self.concurrency, correlated=correlated)
        ids = {p.message_id for p in posted if p.message_id}
        return posted, _wait_delivered(self.stack, self.deliveries, ids, self.stall)

    def measure(self, variant: Variant, n: int) -> Result:
        counter = self.stack.aws_requests
        assert counter is not None
        counter.reset()
        self.window.start()
        counted_from = time.monotonic()
        posted, complete = self.post_and_wait(variant, n)
        time.sleep(OUTBOX_SETTLE_S)  # the outbox's last batch of this window
        window = time.monotonic() - counted_from
        requests = counter.snapshot()
        log_bytes, invocations = self.window.read()
        outbox_events = self.window.metric_sum(PUBLISHER, "OutboxEventsPublished")
        # Read after the snapshot: these GETs are not part of the cost of a message.
        message_ids = [p.message_id for p in posted if p.message_id]
        views = _statuses(self.api, message_ids, self.concurrency, 5 if complete else 1)
        stored = read_back(self.stack, set(message_ids))
        sent_at = {
            message_id: datetime.fromisoformat(view["updated_at"]).timestamp()
            for message_id, view in views.items()
            if view.get("pipeline_status") == "sent"
        }
        started = {p.message_id: p.started for p in posted}
        first_post = min(p.started for p in posted)
        return Result(
            variant=variant,
            n=n,
            statuses=Counter(str(view.get("pipeline_status")) for view in views.values()),
            delivered=len(sent_at),
            complete=complete,
            elapsed=(max(sent_at.values()) - first_post) if sent_at else math.nan,
            ingest_latency=[p.latency for p in posted],
            time_to_sent=[sent_at[m] - started[m] for m in sent_at],
            window=window,
            requests=requests,
            invocations=invocations,
            log_bytes=log_bytes,
            memory_mb={logical_id: spec.memory_mb for logical_id, spec in self.stack.model.specs.items()},
            post_statuses=Counter(p.status for p in posted),
            outbox_events=outbox_events,
            stored=stored,
        )


def raw_put_rate(stack: LocalStack, seconds: float) -> float:
    """PutItem/s of ~1 KiB items from one thread, a tight loop against the stack's moto server
    (its own table: no stream, no index)."""
    dynamodb = stack.client("dynamodb")
    table = "hub-bench-raw-put"
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    body = {"S": "x" * 1000}
    count = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        dynamodb.put_item(TableName=table, Item={"PK": {"S": f"raw#{count}"}, "body": body})
        count += 1
    return count / (time.perf_counter() - started)


@dataclass
class Run:
    results: list[Result]
    raw_puts_per_s: float
    warmup_delivered: bool
    concurrency: int
    pollers: int
    warmup: int
    search: dict[str, Any] = field(default_factory=dict)


def run(
    *,
    n: int,
    variant_n: int,
    concurrency: int,
    pollers: int,
    warmup: int,
    stall: float,
    raw_seconds: float,
) -> Run:
    import httpx  # noqa: PLC0415

    from bench import _instrument  # noqa: PLC0415
    from bench.common import lean_transaction_snapshots  # noqa: PLC0415
    from devstack.cfn import load_template  # noqa: PLC0415
    from devstack.demo import DEMO_API_KEY, parameter_overrides, seed  # noqa: PLC0415
    from devstack.request_counter import index_specs  # noqa: PLC0415
    from tests.aws import TEMPLATE, local_stack_on_free_ports  # noqa: PLC0415

    resources = load_template(TEMPLATE)["Resources"]
    functions = [name for name, spec in resources.items() if spec.get("Type") == "AWS::Serverless::Function"]
    tables = [name for name, spec in resources.items() if spec.get("Type") == "AWS::DynamoDB::Table"]
    deliveries = Deliveries()
    flaky = FlakyDestination(deliveries)
    with tempfile.TemporaryDirectory(prefix="hub-bench-e2e-") as tmp:
        directory = Path(tmp)
        stack = local_stack_on_free_ports(
            stack_name="hub-bench-e2e",
            count_aws_requests=True,
            parameter_overrides=parameter_overrides(),  # the demo admin token: search is measured
            sqs_pollers_per_source=pollers,
            env_overrides=_instrument.env_overrides(directory, functions),
        )
        flaky.server.start()
        try:
            with lean_transaction_snapshots(), _instrument.installed(), stack:
                counter = stack.aws_requests
                assert counter is not None
                assert stack.echo is not None
                seed(stack)
                _seed_bench_integrations(stack, flaky.url)
                deliveries.watch_echo(stack.echo)
                dynamodb = stack.client("dynamodb")
                for logical_id in tables:
                    table = stack.resources[logical_id]
                    counter.watch_indexes(
                        table, index_specs(dynamodb.describe_table(TableName=table)["Table"])
                    )
                headers = {
                    "Authorization": f"Bearer {os.environ.get('HUB_LOCAL_DEMO_API_KEY', DEMO_API_KEY)}"
                }
                limits = httpx.Limits(
                    max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2
                )
                with httpx.Client(
                    base_url=stack.api_url, headers=headers, timeout=60, trust_env=False, limits=limits
                ) as api:
                    bench = Bench(
                        stack,
                        api,
                        deliveries,
                        _instrument.Window(directory),
                        concurrency,
                        stall,
                    )
                    # Warm-up: every function instance the load will use is started and imported.
                    _, warmed = bench.post_and_wait(VARIANTS[0], warmup)
                    results = [bench.measure(VARIANTS[0], n)]
                    raw = raw_put_rate(stack, raw_seconds)
                    results += [bench.measure(variant, variant_n) for variant in VARIANTS[1:]]
                    search = measure_search(bench, SEARCH_N)
        finally:
            flaky.server.stop()
    return Run(results, raw, warmed, concurrency, pollers, warmup, search)


# --- search (issue 28) -------------------------------------------------------------------------------

#: Messages posted with an x-correlation-id of their own beside their external id (search indexes
#: both: the rarer, dearer case), then looked up.
SEARCH_N = 10
SEARCH_VARIANT = VARIANTS[1]  # keyed by po_number: every lookup has something to find


def measure_search(bench: Bench, count: int) -> dict[str, Any]:
    """What search costs (issue 28): index writes per message for messages whose partner sent an
    x-correlation-id beside a different external id (the variants above send none: one index
    write each), then the DynamoDB requests and read units of one lookup of each kind, through
    the admin API, for one of those messages (found: one row)."""
    import httpx  # noqa: PLC0415

    from devstack.demo import DEMO_TENANT_ID, admin_token  # noqa: PLC0415
    from devstack.request_counter import request_units  # noqa: PLC0415

    counter = bench.stack.aws_requests
    assert counter is not None
    run_id = uuid.uuid4().hex[:8]
    counter.reset()
    posted, complete = bench.post_and_wait(SEARCH_VARIANT, count, correlated=True, run_id=run_id)
    time.sleep(OUTBOX_SETTLE_S)
    delivered = max(1, bench.deliveries.count({p.message_id for p in posted if p.message_id}))
    index_writes: Counter[str] = Counter()
    written: Counter[tuple[str, int]] = Counter()
    for key, stats in counter.snapshot().items():
        if key.service == "dynamodb" and key.caller:
            index_writes.update(stats.index_writes)
            written.update(stats.capacity)
    _, write_units = request_units(written)
    index = posted[0].message_id
    payload = purchase_order(run_id, 0)
    lookups = {
        "message_id": index,
        "external_id": payload["po_number"],
        "idempotency_key": f"{run_id}-{SEARCH_VARIANT.name}-0",
        "correlation_id": f"corr-{run_id}-0",
        "business_key": payload["po_number"],
        "any": payload["po_number"],
    }
    admin_url = bench.stack.function_urls["AdminApiFunction"].rstrip("/")
    lookup_costs: dict[str, Any] = {}
    with httpx.Client(
        base_url=admin_url, headers={"Authorization": f"Bearer {admin_token()}"}, timeout=60, trust_env=False
    ) as admin:
        admin.get(
            "/api/admin/messages", params={"tenant_id": DEMO_TENANT_ID, "q": "warm-up", "by": "message_id"}
        )
        for by, q in lookups.items():
            counter.reset()
            answer = admin.get("/api/admin/messages", params={"tenant_id": DEMO_TENANT_ID, "q": q, "by": by})
            requests: Counter[str] = Counter()
            capacity: Counter[tuple[str, int]] = Counter()
            for key, stats in counter.snapshot().items():
                if key.service == "dynamodb" and key.caller == "AdminApiFunction":
                    requests[key.operation] += stats.requests
                    capacity.update(stats.capacity)
            reads, _ = request_units(capacity)
            lookup_costs[by] = {
                "status": answer.status_code,
                "found": len(answer.json().get("items", [])) if answer.status_code == 200 else None,
                "dynamodb_requests": dict(sorted(requests.items())),
                "rru": reads,
                "scans": requests.get("Scan", 0),
            }
    return {
        "messages": count,
        "delivered": delivered,
        "all_delivered_before_stall": complete,
        "index_writes_per_message_with_partner_correlation_id": {
            name: n / delivered for name, n in sorted(index_writes.items())
        },
        "wru_per_message_with_partner_correlation_id": write_units / delivered,
        "lookup": lookup_costs,
    }


def report_search(search: Mapping[str, Any], variants: Mapping[str, Mapping[str, Any]]) -> list[str]:
    writes = variants["happy_path"].get("index_writes_per_message") or {}
    same = variants.get(SEARCH_VARIANT.name) or {}
    rare = search.get("index_writes_per_message_with_partner_correlation_id") or {}
    lines = [
        "search (issue 28): index writes per delivered message, happy path: "
        + ", ".join(f"{name} {n:.2f}" for name, n in writes.items())
        + f" (search's GSI3: {writes.get('GSI3', 0.0):.2f}; target <= 1, none for the lookups the"
        " existing keys answer: message id, Idempotency-Key claims, business keys)",
        f"  with a partner x-correlation-id beside the external id ({search.get('messages')} messages):"
        + ",".join(f" {name} {n:.2f}" for name, n in rare.items())
        + f"; {search.get('wru_per_message_with_partner_correlation_id', 0.0):.2f} WRU"
        f" ({SEARCH_VARIANT.name} without the header {same.get('wru_per_message', 0.0):.2f}; the"
        " correlation pointer is one more"
        " item in ingest's transaction and one more GSI3 entry)",
        "  one lookup through the admin API (DynamoDB requests, RRU; the tenant's integrations read"
        " for idempotency_key / business_key / any):",
    ]
    for by, cost in (search.get("lookup") or {}).items():
        requests = ", ".join(f"{op} {n}" for op, n in cost["dynamodb_requests"].items())
        found = f"found {cost['found']}" if cost["status"] == 200 else f"answered {cost['status']}"
        lines.append(f"    by={by:<16} {found}: {requests}; {cost['rru']:.1f} RRU")
    return lines


# --- DynamoDB storage (issue 29) -----------------------------------------------------------------

PAYLOAD_ITEM = "payload"
#: The share of a message item that is its inline payload, reported apart (kept as a payload).
INLINE_PAYLOAD = "payload (inline)"
_MESSAGE_ID = re.compile(r"msg_[0-9a-z]{26}")
_DAY_S = 86_400


@dataclass(frozen=True)
class Stored:
    """One thing a message left in the table, as DynamoDB bills its storage: `kind` is the
    item's `item_type` (INLINE_PAYLOAD for an inline payload's share of a message item, or
    ``<index> entry``), `billed_bytes` its size plus the per-item overhead, `days` how long it
    is kept; `index`: an entry of a global secondary index (not in the table's backups)."""

    kind: str
    billed_bytes: int
    days: float
    index: bool = False


def stored_items(
    items: Iterable[Mapping[str, Any]],
    message_ids: set[str],
    specs: Sequence[IndexSpec],
    *,
    read_at: float,
    overhead: int,
) -> list[Stored]:
    """What the items (DynamoDB JSON, as a Scan returns them) of `message_ids` cost to keep:
    every item that names one of them (its key, or its `message_id` attribute), each at its size
    + `overhead` bytes, and each index entry of it at the base table's key + the index keys + the
    projected attributes + `overhead` ("DynamoDB item sizes and formats"; "Storage considerations
    for Global Secondary Indexes"), kept as long as its item. `read_at` (epoch s): when the items
    were read, from which an item's TTL (`expires_at`) counts."""
    from devstack.request_counter import item_size  # noqa: PLC0415

    found: list[Stored] = []
    for item in items:
        if not _of_messages(item, message_ids):
            continue
        kind = str(item.get("item_type", {}).get("S", "untyped"))
        days = _kept_days(kind, item, read_at)
        size = item_size(item)
        if kind == "message" and "payload" in item:
            inline = item_size({"payload": item["payload"]})
            found.append(Stored(INLINE_PAYLOAD, inline, retention_days().payload))
            size -= inline
        found.append(Stored(kind, size + overhead, days))
        found += [
            Stored(f"{spec.name} entry", spec.projected_size(item) + overhead, days, index=True)
            for spec in specs
            if spec.indexes(item)
        ]
    return found


def _of_messages(item: Mapping[str, Any], message_ids: set[str]) -> bool:
    named = {str(item.get("message_id", {}).get("S", ""))}
    for key in ("PK", "SK"):
        named.update(_MESSAGE_ID.findall(str(item.get(key, {}).get("S", ""))))
    return not named.isdisjoint(message_ids)


@dataclass(frozen=True)
class RetentionDays:
    """How long the table keeps what a message leaves, at the template's default retention
    (issue 29): the message item and its satellites (correlation pointer, callbacks, business-key
    item, index entries) `message`, its payload `payload`."""

    message: int
    payload: int


@lru_cache(maxsize=1)
def retention_days() -> RetentionDays:
    """The template's MessageRetentionDays and PayloadRetentionDays defaults: what the stack the
    bench runs writes as TTLs (one description). Items carry their TTL (`expires_at`), so these
    price only what has none: a payload inline on a message item, or an item stored before
    retention."""
    from devstack.cfn import load_template  # noqa: PLC0415
    from tests.aws import TEMPLATE  # noqa: PLC0415

    parameters = load_template(TEMPLATE)["Parameters"]
    return RetentionDays(
        message=int(parameters["MessageRetentionDays"]["Default"]),
        payload=int(parameters["PayloadRetentionDays"]["Default"]),
    )


def _kept_days(kind: str, item: Mapping[str, Any], read_at: float) -> float:
    if "expires_at" in item:
        return max(0.0, (float(item["expires_at"]["N"]) - read_at) / _DAY_S)
    kept = retention_days()
    return kept.payload if kind == PAYLOAD_ITEM else kept.message


def read_back(stack: LocalStack, message_ids: set[str]) -> list[Stored]:
    """The items `message_ids` left in the hub table, read back with a Scan after the counted
    window (not a cost of the messages) and priced as stored (`stored_items`)."""
    from devstack.request_counter import index_specs  # noqa: PLC0415

    dynamodb = stack.client("dynamodb")
    table = stack.resources["HubTable"]
    specs = index_specs(dynamodb.describe_table(TableName=table)["Table"])
    read_at = time.time()
    items = [
        item
        for page in dynamodb.get_paginator("scan").paginate(TableName=table)
        for item in page.get("Items", [])
    ]
    overhead = int(load_prices()["dynamodb"]["storage_item_overhead_bytes"])
    return stored_items(items, message_ids, specs, read_at=read_at, overhead=overhead)


@dataclass(frozen=True)
class StorageShare:
    """One kind of stored thing, per delivered message: billed bytes, and bytes x days kept."""

    bytes: float
    byte_days: float
    index: bool = False

    @property
    def days(self) -> float:
        return self.byte_days / self.bytes if self.bytes else 0.0


def storage_per_message(stored: Iterable[Stored], count: int) -> dict[str, StorageShare]:
    """`stored` by kind, per message of `count`."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    indexes: set[str] = set()
    for thing in stored:
        totals[thing.kind][0] += thing.billed_bytes
        totals[thing.kind][1] += thing.billed_bytes * thing.days
        if thing.index:
            indexes.add(thing.kind)
    return {
        kind: StorageShare(b / count, bd / count, kind in indexes) for kind, (b, bd) in sorted(totals.items())
    }


def storage_cost_per_million(
    shares: Mapping[str, StorageShare], prices: Mapping[str, Any]
) -> tuple[float, float]:
    """USD per million messages for keeping what each leaves, and for its point-in-time
    recovery (billed on the table's size, not its global secondary indexes'): GB-months per
    message (bytes x days kept, a month being `hours_per_month` hours) x the price per GB-month.
    A steady flow keeps that many GB-months per message in the table, whatever the rate."""
    dynamodb = prices["dynamodb"]
    days_per_month = dynamodb["storage_hours_per_month"] / 24

    def usd(byte_days: float, per_gb_month: float) -> float:
        return byte_days / days_per_month / dynamodb["storage_bytes_per_gb"] * per_gb_month * 1_000_000

    table = sum(share.byte_days for share in shares.values() if not share.index)
    everything = sum(share.byte_days for share in shares.values())
    return (
        usd(everything, dynamodb["storage_gb_month"]),
        usd(table, dynamodb["pitr_gb_month"]),
    )


# --- the cost model ------------------------------------------------------------------------------


@dataclass
class FunctionCompute:
    """One function's invocations per message and their durations (ms, per invocation)."""

    invocations: float
    raw_ms: list[int] = field(default_factory=list)
    local_aws_ms: list[float] = field(default_factory=list)
    modeled_ms: list[int] = field(default_factory=list)
    failed: int = 0  # invocations that raised (Lambda's status `error`)
    gb_s_raw: float = 0.0
    gb_s_modeled: float = 0.0


@dataclass
class PerMessage:
    """What one delivered message costs, in billed units."""

    requests: dict[str, dict[str, float]]  # caller -> service:operation -> requests per message
    dynamodb_requests: float
    read_units: float
    write_units: float
    units_by_caller: dict[str, tuple[float, float]]  # caller -> (RRU, WRU) per message
    index_write_units: float
    index_writes: dict[str, float]  # index -> entries written per message
    sqs_requests: float  # billed (64 KB chunks), non-empty receives only
    compute: dict[str, FunctionCompute]
    log_bytes: dict[str, float]  # function -> bytes written per message (platform lines included)
    api_requests: float
    schedules: float
    bus_events: float  # EventBridge PutEvents entries (each billed)
    outbox_events: float  # events the publisher handed on
    idle_receives: int
    emulation: dict[str, int]  # requests with no AWS equivalent: scheduler emulation, stream reads
    latency_defaulted: set[str]  # operations priced with the default latency
    storage: dict[str, StorageShare] = field(default_factory=dict)  # by kind of stored thing

    @property
    def invocations(self) -> float:
        return sum(c.invocations for c in self.compute.values())

    @property
    def gb_seconds(self) -> float:
        return sum(c.gb_s_modeled for c in self.compute.values())

    @property
    def gb_seconds_raw(self) -> float:
        return sum(c.gb_s_raw for c in self.compute.values())


def _modeled_ms(invocation: Mapping[str, Any], latency: Mapping[str, Any], defaulted: set[str]) -> int:
    """Billed ms of one invocation on AWS: our time (handler minus local AWS time) + modeled AWS
    latency per HTTP attempt, rounded up to the ms."""
    own_ms = max(0.0, (invocation["handler_s"] - invocation["aws_s"]) * 1000)
    aws_ms = 0.0
    for operation, (attempts, _) in invocation["calls"].items():
        if operation not in latency:
            defaulted.add(operation)
        aws_ms += attempts * float(latency.get(operation, latency["default"]))
    return math.ceil(own_ms + aws_ms)


def _compute(
    result: Result, count: int, prices: Mapping[str, Any], defaulted: set[str]
) -> dict[str, FunctionCompute]:
    by_function: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for invocation in result.invocations:
        by_function[invocation["function"]].append(invocation)
    compute = {}
    for name, invocations in sorted(by_function.items()):
        gb = result.memory_mb.get(name, 128) / 1024
        entry = FunctionCompute(invocations=len(invocations) / count)
        for invocation in invocations:
            entry.raw_ms.append(math.ceil(invocation["handler_s"] * 1000))
            entry.local_aws_ms.append(invocation["aws_s"] * 1000)
            entry.modeled_ms.append(_modeled_ms(invocation, prices["aws_latency_ms"], defaulted))
            entry.failed += not invocation.get("ok", True)
        entry.gb_s_raw = sum(entry.raw_ms) / 1000 * gb / count
        entry.gb_s_modeled = sum(entry.modeled_ms) / 1000 * gb / count
        compute[name] = entry
    return compute


def per_message(result: Result, prices: Mapping[str, Any]) -> PerMessage:
    from devstack.request_counter import INDEX_WRITE, request_units  # noqa: PLC0415

    count = max(result.delivered, 1)
    requests: dict[str, dict[str, float]] = defaultdict(dict)
    capacity: dict[str, Counter[tuple[str, int]]] = defaultdict(Counter)
    index_writes: Counter[str] = Counter()
    sqs_billed = idle = schedules = dynamodb_requests = bus_entries = 0
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
        if key.service == "dynamodb":
            dynamodb_requests += stats.requests
            index_writes.update(stats.index_writes)
        if key.name == "scheduler:CreateSchedule":
            schedules += stats.requests - stats.errors
        if key.name == "events:PutEvents":
            bus_entries += stats.items
    total: Counter[tuple[str, int]] = sum(capacity.values(), Counter())
    reads, writes = request_units(total)
    by_caller = {caller: request_units(units) for caller, units in sorted(capacity.items())}
    defaulted: set[str] = set()
    compute = _compute(result, count, prices, defaulted)
    log_bytes = {}
    for name, c in compute.items():
        succeeded, failed = platform_log_bytes(prices, name)
        platform = succeeded * (len(c.raw_ms) - c.failed) + failed * c.failed
        log_bytes[name] = (result.log_bytes.get(name, 0) + platform) / count
    return PerMessage(
        requests=dict(requests),
        dynamodb_requests=dynamodb_requests / count,
        read_units=reads / count,
        write_units=writes / count,
        units_by_caller={caller: (r / count, w / count) for caller, (r, w) in by_caller.items() if r or w},
        index_write_units=sum(kb * k for (kind, kb), k in total.items() if kind == INDEX_WRITE) / count,
        index_writes={name: n / count for name, n in sorted(index_writes.items())},
        sqs_requests=sqs_billed / count,
        compute=compute,
        log_bytes=log_bytes,
        api_requests=result.n / count,
        schedules=schedules / count,
        bus_events=bus_entries / count,
        outbox_events=result.outbox_events / count,
        idle_receives=idle,
        emulation=emulation,
        latency_defaulted=defaulted,
        storage=storage_per_message(result.stored, count),
    )


def platform_log_bytes(prices: Mapping[str, Any], logical_id: str) -> tuple[float, float]:
    """Bytes of Lambda's own lines per successful and per failed invocation of `logical_id`, for
    its LoggingConfig in template.yaml (Globals merged): [cloudwatch_logs] in aws_prices.toml."""
    from devstack.cfn import load_template  # noqa: PLC0415
    from devstack.functions import merge_globals  # noqa: PLC0415
    from tests.aws import TEMPLATE  # noqa: PLC0415

    template = load_template(TEMPLATE)
    function = (template.get("Globals") or {}).get("Function") or {}
    props = merge_globals(function, template["Resources"][logical_id].get("Properties") or {})
    config = props.get("LoggingConfig") or {}
    logs = prices["cloudwatch_logs"]
    log_format = str(config.get("LogFormat", "Text")).upper()
    if log_format == "TEXT":
        return logs["platform_bytes_per_invocation_text"], logs["platform_bytes_per_invocation_text"]
    if log_format == "JSON" and config.get("SystemLogLevel") == "WARN":
        return (
            logs["platform_bytes_per_invocation_json_warn"],
            logs["platform_bytes_per_failed_invocation_json_warn"],
        )
    raise ValueError(f"{logical_id}: no platform-line figures for LoggingConfig {config} in aws_prices.toml")


def tracing_by_default() -> bool:
    """Whether template.yaml traces with X-Ray unless told otherwise (its `Tracing` default)."""
    from devstack.cfn import load_template  # noqa: PLC0415
    from tests.aws import TEMPLATE  # noqa: PLC0415

    return load_template(TEMPLATE)["Parameters"]["Tracing"]["Default"] == "Active"


def cost_per_million(
    unit: PerMessage, prices: Mapping[str, Any], gb_seconds: float | None = None, *, tracing: bool = False
) -> dict[str, float]:
    """USD per million delivered messages, by service (Lambda compute at the modeled duration
    unless ``gb_seconds`` is given; X-Ray when ``tracing``: a trace per invocation; DynamoDB's
    requests, and apart the storage of what each message leaves and its backups)."""
    million = 1_000_000
    logs = prices["cloudwatch_logs"]
    compute = unit.gb_seconds if gb_seconds is None else gb_seconds
    storage, pitr = storage_cost_per_million(unit.storage, prices)
    return {
        "X-Ray": unit.invocations * prices["xray"]["trace_recorded_per_million"] if tracing else 0.0,
        "DynamoDB": unit.read_units * prices["dynamodb"]["read_request_unit_per_million"]
        + unit.write_units * prices["dynamodb"]["write_request_unit_per_million"],
        "DynamoDB storage": storage,
        "DynamoDB PITR": pitr,
        "SQS": unit.sqs_requests * prices["sqs"]["standard_request_per_million"],
        "Lambda": unit.invocations * prices["lambda"]["request_per_million"]
        + compute * million * prices["lambda"]["arm64_gb_second"],
        "API Gateway": unit.api_requests * prices["apigateway"]["http_api_request_per_million"],
        "Scheduler": unit.schedules * prices["scheduler"]["invocation_per_million"],
        "EventBridge": unit.bus_events * prices["eventbridge"]["put_event_per_million"],
        "CloudWatch Logs": sum(unit.log_bytes.values())
        * million
        / logs["bytes_per_gb"]
        * logs["ingestion_per_gb"],
    }


def outbox_cost(unit: PerMessage, prices: Mapping[str, Any]) -> dict[str, float]:
    """What the outbox adds per million delivered messages: the publisher's invocations, compute
    and log bytes, and the events it puts on the bus (no webhook subscription in these runs)."""
    million = 1_000_000
    compute = unit.compute.get(PUBLISHER)
    logs = prices["cloudwatch_logs"]
    lambda_cost = (
        compute.invocations * prices["lambda"]["request_per_million"]
        + compute.gb_s_modeled * million * prices["lambda"]["arm64_gb_second"]
        if compute
        else 0.0
    )
    return {
        "Lambda": lambda_cost,
        "EventBridge": unit.bus_events * prices["eventbridge"]["put_event_per_million"],
        "CloudWatch Logs": unit.log_bytes.get(PUBLISHER, 0.0)
        * million
        / logs["bytes_per_gb"]
        * logs["ingestion_per_gb"],
    }


def load_prices(path: Path = PRICES) -> dict[str, Any]:
    with path.open("rb") as file:
        return tomllib.load(file)


# --- results and report -----------------------------------------------------------------------


def variant_json(result: Result, prices: Mapping[str, Any]) -> dict[str, Any]:
    unit = per_message(result, prices)
    tracing = tracing_by_default()
    costs = cost_per_million(unit, prices, tracing=tracing)
    raw_costs = cost_per_million(unit, prices, gb_seconds=unit.gb_seconds_raw, tracing=tracing)
    traced = cost_per_million(unit, prices, tracing=True)
    rate = result.delivered / result.elapsed if result.delivered and result.elapsed > 0 else None
    return {
        "description": result.variant.description,
        "integration_id": result.variant.integration_id,
        "message_type": result.variant.message_type,
        "n": result.n,
        "delivered": result.delivered,
        "all_delivered_before_stall": result.complete,
        "statuses": dict(result.statuses),
        "post_statuses": {str(k): v for k, v in result.post_statuses.items()},
        "messages_per_s": rate,
        "ingest_latency_ms": {
            "p50": median(result.ingest_latency) * 1000,
            "p99": percentile(result.ingest_latency, 99) * 1000,
        },
        "time_to_sent_s": {"p50": median(result.time_to_sent), "p99": percentile(result.time_to_sent, 99)},
        "cost_per_million_usd": {"total": sum(costs.values()), "breakdown": costs, "tracing": tracing},
        # The same with the template's `Tracing=Active` (a trace per invocation).
        "cost_per_million_usd_with_tracing": sum(traced.values()),
        "cost_per_million_usd_with_raw_local_lambda_duration": sum(raw_costs.values()),
        "outbox": _outbox_json(unit, prices),
        "dynamodb_requests_per_message": unit.dynamodb_requests,
        "wru_per_message": unit.write_units,
        "rru_per_message": unit.read_units,
        "gsi_wru_per_message": unit.index_write_units,
        # What each message leaves in the table (issue 29), billed bytes (+100 each) by kind,
        # and how long each kind is kept (days; TTL items by their own TTL).
        "storage_bytes_per_message": {kind: share.bytes for kind, share in unit.storage.items()},
        "storage_days": {kind: share.days for kind, share in unit.storage.items()},
        "index_writes_per_message": unit.index_writes,
        "units_per_message_by_caller": {
            c: {"rru": r, "wru": w} for c, (r, w) in unit.units_by_caller.items()
        },
        "requests_per_message": unit.requests,
        "sqs_billed_requests_per_message": unit.sqs_requests,
        "lambda": {
            name: {
                "invocations_per_message": c.invocations,
                "raw_local_ms_p50": median([float(v) for v in c.raw_ms]),
                "local_aws_ms_p50": median(c.local_aws_ms),
                "modeled_ms_p50": median([float(v) for v in c.modeled_ms]),
                "gb_ms_per_message_raw_local": c.gb_s_raw * 1000,
                "gb_ms_per_message_modeled": c.gb_s_modeled * 1000,
            }
            for name, c in unit.compute.items()
        },
        "latency_defaulted_operations": sorted(unit.latency_defaulted),
        "cloudwatch_logs_bytes_per_message": unit.log_bytes,
        "idle_empty_receives": unit.idle_receives,
        "emulation_requests": unit.emulation,
        "window_s": result.window,
    }


def _outbox_json(unit: PerMessage, prices: Mapping[str, Any]) -> dict[str, Any]:
    costs = outbox_cost(unit, prices)
    total = sum(costs.values())
    publisher = unit.compute.get(PUBLISHER)
    return {
        "events_per_message": unit.outbox_events,
        "bus_events_per_message": unit.bus_events,
        "publisher_invocations_per_message": publisher.invocations if publisher else 0.0,
        "cost_per_million_usd": {"total": total, "breakdown": costs},
        "cost_per_million_events_usd": total / unit.outbox_events if unit.outbox_events else None,
    }


def destination_latency_cost(prices: Mapping[str, Any], memory_mb: int) -> float:
    """US$ per million messages for each 100 ms a destination takes to answer: the worker's
    duration at its memory size (it delivers one message after another, waiting)."""
    return 0.1 * memory_mb / 1024 * float(prices["lambda"]["arm64_gb_second"]) * 1_000_000


def report_variant(name: str, summary: Mapping[str, Any], prices: Mapping[str, Any]) -> list[str]:
    lines = [
        f"{name}: {summary['description']}",
        f"  delivered:            {summary['delivered']} of {summary['n']} sent {summary['statuses']}"
        f" (POST answers {summary['post_statuses']})"
        + ("" if summary["all_delivered_before_stall"] else "; the wait gave up: no progress for --stall s"),
    ]
    if summary["messages_per_s"]:
        lines += [
            f"  throughput:           {summary['messages_per_s']:.2f} messages/s (first POST -> last sent)",
            f"  ingest latency:       p50 {summary['ingest_latency_ms']['p50']:.0f} ms,"
            f" p99 {summary['ingest_latency_ms']['p99']:.0f} ms; time to sent p50"
            f" {summary['time_to_sent_s']['p50']:.2f} s, p99 {summary['time_to_sent_s']['p99']:.2f} s",
        ]
    lines.append("  AWS requests per delivered message (billed; ReceiveMessage only when it got messages):")
    for caller, operations in sorted(summary["requests_per_message"].items()):
        lines.append(f"    {caller:<24}" + ", ".join(f"{op} {per:.2f}" for op, per in operations.items()))
    by_caller = ", ".join(
        f"{c} {u['rru']:.1f}/{u['wru']:.1f}" for c, u in summary["units_per_message_by_caller"].items()
    )
    lines.append(
        f"  DynamoDB per message: {summary['dynamodb_requests_per_message']:.2f} requests,"
        f" {summary['rru_per_message']:.2f} RRU, {summary['wru_per_message']:.2f} WRU ({by_caller} RRU/WRU;"
        f" {summary['gsi_wru_per_message']:.2f} WRU are GSI writes)"
    )
    lines.append(
        "  index writes per message: "
        + (", ".join(f"{name} {n:.2f}" for name, n in summary["index_writes_per_message"].items()) or "none")
    )
    lines.append(
        "  Lambda per message (ms per invocation, p50: raw local | of it AWS against moto | modeled):"
    )
    for function, c in summary["lambda"].items():
        lines.append(
            f"    {function:<24}{c['invocations_per_message']:.2f} invocations, {c['raw_local_ms_p50']:.0f} |"
            f" {c['local_aws_ms_p50']:.0f} | {c['modeled_ms_p50']:.0f} ms;"
            f" {c['gb_ms_per_message_raw_local']:.1f} GB-ms raw,"
            f" {c['gb_ms_per_message_modeled']:.1f} GB-ms modeled"
        )
    lines.append(storage_line(summary))
    logs = ", ".join(f"{f} {b:.0f} B" for f, b in summary["cloudwatch_logs_bytes_per_message"].items())
    lines.append(
        f"  CloudWatch Logs per message: {logs} (each incl. Lambda's own lines as its LoggingConfig"
        " leaves them: bench/aws_prices.toml [cloudwatch_logs])"
    )
    costs = summary["cost_per_million_usd"]
    lines.append(
        "  cost per million delivered messages: "
        + ", ".join(f"{service} ${costs['breakdown'][service]:.2f}" for service in SERVICES)
        + f" = ${costs['total']:.2f} (with raw local Lambda durations:"
        f" ${summary['cost_per_million_usd_with_raw_local_lambda_duration']:.2f};"
        f" with Tracing=Active: ${summary['cost_per_million_usd_with_tracing']:.2f})"
    )
    outbox = summary["outbox"]
    per_event = outbox["cost_per_million_events_usd"]
    lines.append(
        f"  outbox: {outbox['events_per_message']:.2f} events per message,"
        f" {outbox['publisher_invocations_per_message']:.3f} publisher invocations per message,"
        f" {outbox['bus_events_per_message']:.2f} put on the bus; adds"
        f" ${outbox['cost_per_million_usd']['total']:.3f} per million messages"
        + (f" (${per_event:.3f} per million events)" if per_event is not None else "")
        + " - "
        + ", ".join(f"{k} ${v:.3f}" for k, v in outbox["cost_per_million_usd"]["breakdown"].items())
    )
    if summary["latency_defaulted_operations"]:
        lines.append(
            f"  (default latency {prices['aws_latency_ms']['default']} ms used for:"
            f" {', '.join(summary['latency_defaulted_operations'])})"
        )
    return lines


def storage_line(summary: Mapping[str, Any]) -> str:
    sizes, days = summary.get("storage_bytes_per_message") or {}, summary.get("storage_days") or {}
    breakdown = summary["cost_per_million_usd"]["breakdown"]
    kept = ", ".join(f"{kind} {sizes[kind]:.0f} B x {days.get(kind, 0):.0f} d" for kind in sizes)
    storage, pitr = breakdown.get("DynamoDB storage", 0.0), breakdown.get("DynamoDB PITR", 0.0)
    retention = retention_days()
    return (
        f"  DynamoDB storage per message: {sum(sizes.values()):.0f} B ({kept or 'nothing read back'};"
        f" each item and index entry +100 B; default retention: payload {retention.payload} d,"
        f" message {retention.message} d): US${storage:.3f} per million, PITR US${pitr:.3f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200, help="happy-path messages measured")
    parser.add_argument("--variant-n", type=int, default=40, help="messages per other variant")
    parser.add_argument("--concurrency", type=int, default=8, help="threads posting")
    parser.add_argument("--pollers", type=int, default=2, help="concurrent SQS pollers per event source")
    parser.add_argument("--warmup", type=int, default=16, help="messages sent first and not measured")
    parser.add_argument(
        "--stall", type=float, default=30.0, help="give up after this many s without progress"
    )
    parser.add_argument("--raw-seconds", type=float, default=2.0, help="length of the raw PutItem loop")
    args = parser.parse_args()
    prices = load_prices()
    measured = run(
        n=args.n,
        variant_n=args.variant_n,
        concurrency=args.concurrency,
        pollers=args.pollers,
        warmup=args.warmup,
        stall=args.stall,
        raw_seconds=args.raw_seconds,
    )
    variants = {result.variant.name: variant_json(result, prices) for result in measured.results}
    happy = variants["happy_path"]
    rate = happy["messages_per_s"]
    print(
        f"end to end through the local stack (moto): partner API -> IngestApiFunction -> PipelineQueue ->"
        f" PipelineWorkerFunction -> destination; ~{payload_bytes(purchase_order('x', 0))} B purchase"
        f" orders; concurrency {measured.concurrency}, {measured.pollers} SQS pollers,"
        f" {measured.warmup} warm-up messages"
        + ("" if measured.warmup_delivered else " (warm-up not all delivered)")
    )
    print(
        f"  prices: {prices['region']}, on-demand, no free tier, as of {prices['as_of']}"
        " (bench/aws_prices.toml); Lambda compute priced at the modeled duration (see the module docstring)"
    )
    for name, summary in variants.items():
        for line in report_variant(name, summary, prices):
            print(line)
    for line in report_search(measured.search, variants):
        print(line)
    ratio = rate / measured.raw_puts_per_s if rate and measured.raw_puts_per_s else None
    print(
        f"raw moto PutItem (one thread, ~1 KiB items, same server): {measured.raw_puts_per_s:.0f}/s;"
        f" end to end {rate or 0:.2f} messages/s = {ratio or 0:.4f} of it"
    )
    measured_any = happy["delivered"] > 0  # else per-message figures would be totals: not reported
    worker_mb = measured.results[0].memory_mb.get("PipelineWorkerFunction", 128) if measured.results else 128
    latency_cost = destination_latency_cost(prices, worker_mb)
    print(
        f"destination latency: each 100 ms a destination takes per message costs ${latency_cost:.2f}"
        f" per million (the worker waits for it at {worker_mb} MB, one delivery after another)"
    )
    merge_results(
        {
            "destination_latency_cost_per_100ms_usd": latency_cost,
            "cost_per_million_usd": happy["cost_per_million_usd"] if measured_any else None,
            "outbox_cost_per_million_usd": happy["outbox"]["cost_per_million_usd"]["total"]
            if measured_any
            else None,
            "outbox_events_per_message": happy["outbox"]["events_per_message"] if measured_any else None,
            "dynamodb_requests_per_message": happy["dynamodb_requests_per_message"] if measured_any else None,
            "wru_per_message": happy["wru_per_message"] if measured_any else None,
            "rru_per_message": happy["rru_per_message"] if measured_any else None,
            "e2e_messages_per_s": rate,
            "e2e_vs_raw_put_ratio": ratio,
            "index_writes_per_message": happy["index_writes_per_message"] if measured_any else None,
            # Search (issue 28): its index (GSI3) written per message; its lookups' cost in `search`.
            "search_index_writes_per_message": happy["index_writes_per_message"].get("GSI3", 0.0)
            if measured_any
            else None,
            "search": measured.search,
            "variants": variants,
            "e2e": {
                "measured_at": now_iso(),
                "raw_put_items_per_s": measured.raw_puts_per_s,
                "prices_as_of": prices["as_of"],
                "concurrency": measured.concurrency,
                "pollers": measured.pollers,
                "warmup": measured.warmup,
                "payload_bytes": payload_bytes(purchase_order("x", 0)),
            },
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
