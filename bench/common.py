"""What the bench parts share: the sample payload, the results file and its targets, the summary
table, and one moto tweak.

Only the standard library at module level: the e2e part's function instances are spawned
processes that import the bench modules again.

The results file (bench/results/latest.json, generated, not in git) is one JSON object. Each part
merges its own keys into it (``merge_results``); ``targets`` is recomputed from whatever figures
are present after every merge, so a part run alone updates its figures and keeps the others'
(each part's section carries its own ``measured_at``). ``python -m bench`` starts a fresh file.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import sys
import tempfile
import threading
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hub.domain.delivery_limits import DeliveryLimits

ROOT = Path(__file__).resolve().parent.parent
for _path in (str(ROOT), str(ROOT / "layers" / "hub")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

RESULTS = Path(__file__).with_name("results") / "latest.json"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


# --- the sample message ------------------------------------------------------------------------


def purchase_order(run_id: str, index: int) -> dict[str, Any]:
    """A realistic purchase order of about 1 KiB as compact JSON (``json.dumps(...,
    separators=(",", ":"))``): buyer and ship-to blocks, four lines with sku, description,
    quantity and price. Every index gives the same size (fixed-width numbers), so sizes and
    capacity units do not drift with the run; ``run_id``'s first 8 characters make the po_number
    unique across runs."""
    po = f"PO-{run_id[:8]:0>8}-{index:06d}"
    lines = [
        ("HB-M8X40-100", "Stainless steel hex bolt M8x40, box of 100", "BOX", "12.50"),
        ("WS-M8-500", "Flat washer M8 DIN 125, bag of 500", "BAG", "7.90"),
        ("NT-M8-200", "Nylon lock nut M8, box of 200", "BOX", "15.20"),
        ("GL-NIT-L", "Nitrile work gloves, size L, pack of 12 pairs", "PCK", "21.00"),
    ]
    return {
        "po_number": po,
        "order_date": "2026-11-30",
        "currency": "USD",
        "buyer": {
            "company": "Acme Retail Ltd",
            "tax_id": "12.345.678/0001-90",
            "contact": "Jane Doe",
            "email": "purchasing@acme.example",
            "phone": "+1-555-0100",
        },
        "ship_to": {
            "name": "Acme DC North",
            "street": "1200 Industrial Pkwy, Dock 4",
            "city": "Columbus",
            "region": "OH",
            "postal_code": "43219",
            "country": "US",
        },
        "lines": [
            {
                "line": number,
                "sku": sku,
                "description": description,
                "qty": (index + number) % 9 + 1,
                "uom": uom,
                "unit_price": price,
            }
            for number, (sku, description, uom, price) in enumerate(lines, start=1)
        ],
        "payment_terms": "NET30",
        "incoterm": "FCA",
        "requested_delivery": "2026-12-14",
        "notes": "Deliver Mon-Fri 08:00-16:00; call dock 30 min ahead. Partial OK",
    }


def payload_bytes(payload: Mapping[str, Any]) -> int:
    return len(json.dumps(payload, separators=(",", ":")).encode())


# --- results and targets -----------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One target: ``figure <= limit`` is met. ``figure`` None: not measured in this file."""

    key: str
    description: str
    limit: float
    unit: str
    figure: float | None

    @property
    def met(self) -> bool | None:
        if self.figure is None or math.isnan(self.figure):
            return None
        return self.figure <= self.limit

    def as_json(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "limit": self.limit,
            "unit": self.unit,
            "figure": self.figure,
            "met": self.met,
        }


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def targets(results: Mapping[str, Any]) -> list[Target]:
    """Every target with its figure from ``results`` (None where that part did not run)."""
    cost = (results.get("cost_per_million_usd") or {}).get("total")
    found = [
        Target(
            "cost_total",
            "cost per million delivered messages, happy path, all in (storage at the default retention)",
            5.5,
            "USD",
            _number(cost),
        ),
        Target("cost_total_stretch", "same, stretch", 5.0, "USD", _number(cost)),
        Target(
            "dynamodb_wru",
            "DynamoDB write request units per message, happy path",
            5.0,
            "WRU",
            _number(results.get("wru_per_message")),
        ),
        Target(
            "dynamodb_requests",
            "DynamoDB requests per message, happy path",
            6.0,
            "requests",
            _number(results.get("dynamodb_requests_per_message")),
        ),
        Target(
            "search_index_writes",
            "search index (GSI3) writes per message, happy path (issue 28)",
            1.0,
            "writes",
            _number(results.get("search_index_writes_per_message")),
        ),
        Target(
            "outbox_cost",
            "cost the outbox adds per million delivered messages (publisher, bus), happy path",
            0.5,
            "USD",
            _number(results.get("outbox_cost_per_million_usd")),
        ),
        Target(
            "ingest_overhead",
            "ingest: handler time / bare boto3 time (same calls, instant replies)",
            1.5,
            "x",
            _number(results.get("ingest_overhead_ratio")),
        ),
    ]
    found.append(
        Target(
            "breaker_schedules",
            "schedules per minute against a dead destination, breaker on / off (issue 12)",
            0.25,
            "x",
            _number(results.get("breaker_schedules_ratio")),
        )
    )
    found.append(
        Target(
            "fairness_quiet_p99",
            "quiet tenant's p99 time to sent during another's burst / alone, fair queues on (issue 30)",
            2.0,
            "x",
            _number(results.get("fairness_quiet_p99_ratio")),
        )
    )
    found.append(
        Target(
            "pacing_in_flight",
            "a connection limited to 2 in flight: most requests at once at the destination (issue 30)",
            2.0,
            "requests",
            _number(results.get("pacing_max_in_flight")),
        )
    )
    found.append(
        Target(
            "pacing_per_second",
            "the same, limited to 5/s with a burst of 5: most requests in any second (burst + rate)",
            10.0,
            "requests",
            _number(results.get("pacing_max_in_any_second")),
        )
    )
    cold = {fid: ratio for fid, ratio in (results.get("cold_start_ratio") or {}).items() if fid != "spread"}
    for function in sorted(cold, key=lambda name: (name != "IngestApiFunction", name)):
        limit = 1.5 if function == "IngestApiFunction" else 2.0
        found.append(
            Target(
                f"cold_start_{function}",
                f"cold start {function} / bare boto3 client",
                limit,
                "x",
                _number(cold[function]),
            )
        )
    return found


def _without_nan(value: Any) -> Any:
    """NaN (a median of nothing) becomes null: strict JSON readers refuse NaN."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: _without_nan(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nan(item) for item in value]
    return value


def merge_results(update: Mapping[str, Any], path: Path = RESULTS) -> dict[str, Any]:
    """Merges ``update`` into the results file, recomputes ``targets`` and ``as_of``, writes
    it atomically and returns the whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    current: dict[str, Any] = {}
    if path.exists():
        with contextlib.suppress(ValueError):
            current = json.loads(path.read_text())
    current.update(_without_nan(update))
    current["as_of"] = now_iso()
    current["targets"] = {target.key: target.as_json() for target in targets(current)}
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as file:
        json.dump(current, file, indent=2, sort_keys=True, default=str)
        file.write("\n")
    os.replace(file.name, path)
    return current


def _figure(value: float | None, unit: str) -> str:
    if value is None or math.isnan(value):
        return "not measured"
    if unit == "USD":
        return f"${value:.2f}"
    if unit == "x":
        return f"{value:.2f}x" if value >= 0.1 else f"{value:.4f}x"
    return f"{value:.2f} {unit}"


def summary_lines(results: Mapping[str, Any]) -> list[str]:
    """The table: target | figure | met?, then the figures without a target."""
    rows = [("target", "figure", "met?")]
    for target in targets(results):
        limit = f"${target.limit:.2f}" if target.unit == "USD" else f"{target.limit:g}{target.unit}"
        if target.unit not in ("USD", "x"):
            limit = f"{target.limit:g} {target.unit}"
        met = {True: "yes", False: "NO", None: "-"}[target.met]
        rows.append((f"{target.description} <= {limit}", _figure(target.figure, target.unit), met))
    for name, variant in sorted((results.get("variants") or {}).items()):
        if name != "happy_path":
            total = _number(((variant or {}).get("cost_per_million_usd") or {}).get("total"))
            rows.append((f"cost per million, variant {name} (no target)", _figure(total, "USD"), "-"))
    schedules = results.get("breaker_schedules_per_minute") or {}
    for state in ("breaker_off", "breaker_on"):
        figure = _number(schedules.get(state))
        rows.append(
            (
                f"schedules/min, dead destination, {state.replace('_', ' ')} (no target)",
                _figure(figure, "/min"),
                "-",
            )
        )
    e2e = _number(results.get("e2e_messages_per_s"))
    ratio = _number(results.get("e2e_vs_raw_put_ratio"))
    rows.append(("end to end messages/s (no target)", _figure(e2e, "msg/s"), "-"))
    rows.append(("e2e messages/s / raw moto PutItem/s (no target)", _figure(ratio, "x"), "-"))
    width = [max(len(row[column]) for row in rows) for column in range(3)]
    lines = [" | ".join(cell.ljust(width[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in width))
    return [f"summary ({results.get('as_of', '?')}, {RESULTS.relative_to(ROOT)}):", *lines]


# --- moto ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def lean_transaction_snapshots() -> Iterator[None]:
    """moto (5.2) rolls back a failed TransactWriteItems from a ``copy.deepcopy`` of each table
    it touches, stream records included, taken once per item of every transaction. That cost
    grows with the table, so a run slows down quadratically as messages pile up (DynamoDB's
    latency does not depend on table size). Here the snapshot copies the table's key
    structure and deep-copies only the items the transaction touches: the same rollback
    (untouched items are not changed by it), at a cost that stays small. Bench only; affects
    the moto of this process (in-process or a ThreadedMotoServer started here)."""
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


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """A moto server on a free port of 127.0.0.1 in this process; yields its endpoint URL."""
    import logging  # noqa: PLC0415

    from moto.server import ThreadedMotoServer  # noqa: PLC0415

    from devstack.moto_fidelity import make_dynamodb_atomic  # noqa: PLC0415

    make_dynamodb_atomic()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def seed_tenant(
    table: str,
    *,
    tenant_id: str,
    integration_id: str,
    api_key: str,
    destination: str,
    name: str,
    limits: DeliveryLimits | None = None,
) -> None:
    """One tenant with one orchestration integration delivering to `destination` and one API key,
    written straight to `table` (the current boto3 endpoint). With `limits`, the integration
    delivers through a connection of its own (`con_<integration>`) that declares them."""
    from hub.adapters.aws import reset_clients  # noqa: PLC0415
    from hub.adapters.dynamo.connections import DynamoConnections  # noqa: PLC0415
    from hub.adapters.dynamo.tenancy import DynamoConfigRepository  # noqa: PLC0415
    from hub.domain.tenancy import (  # noqa: PLC0415
        ApiKey,
        Connection,
        Destination,
        Integration,
        IntegrationMode,
        MessageTypeConfig,
        Tenant,
        hash_api_key,
    )

    reset_clients()
    config = DynamoConfigRepository(table)
    config.put_tenant(Tenant(tenant_id=tenant_id, name=name))
    delivery: dict[str, Any] = {"destination": Destination(url=destination)}
    if limits is not None:
        connection_id = f"con_{integration_id}"
        DynamoConnections(table).create(
            Connection(
                connection_id=connection_id,
                tenant_id=tenant_id,
                destination=Destination(url=destination, connection_id=connection_id, limits=limits),
            )
        )
        delivery = {"connection_id": connection_id}
    config.put_integration(
        Integration(
            integration_id=integration_id,
            tenant_id=tenant_id,
            name=name,
            mode=IntegrationMode.ORCHESTRATION,
            message_types={"purchase_order": MessageTypeConfig()},
            **delivery,
        )
    )
    config.put_api_key(
        ApiKey(key_id=name.replace(" ", "-"), tenant_id=tenant_id, key_hash=hash_api_key(api_key))
    )
    reset_clients()
