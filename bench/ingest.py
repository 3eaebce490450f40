"""Ingest benchmark: the real IngestApiFunction handler against in-process moto.

For each ingest it records the AWS calls the handler made (botocore event hooks), then replays
exactly those calls, with the same client, against a second copy of the stack (same template,
another stack name). Both run interleaved in one process, so the ratio

    overhead = handler time / raw time of its own AWS calls

compares like with like on a noisy machine. Target: <= 1.5x.

    python -m bench.ingest [--n 400] [--warmup 40]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "hub"), str(ROOT)]

TARGET_RATIO = 1.5


@dataclass
class Recorder:
    """Collects (service, operation, params) of every AWS call while `on`."""

    on: bool = False
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def __call__(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if self.on:
            self.calls.append((model.service_model.service_name, model.name, copy.deepcopy(params)))


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _retarget(params: dict[str, Any], swaps: dict[str, str]) -> dict[str, Any]:
    text = json.dumps(params)
    for old, new in swaps.items():
        text = text.replace(old, new)
    return json.loads(text)


def _snake(operation: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in operation).lstrip("_")


def _forget_written_items(
    dynamodb: Any, calls: list[tuple[str, str, dict[str, Any]]], tables: tuple[str, ...]
) -> None:
    """Deletes what an ingest wrote, untimed. DynamoDB's latency does not depend on table size,
    but moto's TransactWriteItems deep-copies the whole table per item; keeping the tables at
    their seeded size keeps the measurement about our code, as on AWS."""
    keys = [
        {"PK": entry["Put"]["Item"]["PK"], "SK": entry["Put"]["Item"]["SK"]}
        for _, operation, params in calls
        if operation == "TransactWriteItems"
        for entry in params["TransactItems"]
        if "Put" in entry
    ]
    for table in tables:
        for key in keys:
            dynamodb.delete_item(TableName=table, Key=key)
    # moto keeps every stream record of a table in memory and deep-copies them with the table;
    # DynamoDB trims streams after 24 h and never copies them per write. Trim here too.
    from moto.core import DEFAULT_ACCOUNT_ID  # noqa: PLC0415
    from moto.dynamodb.models import dynamodb_backends  # noqa: PLC0415

    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][dynamodb.meta.region_name]
    for table in tables:
        shard = backend.tables[table].stream_shard
        if shard is not None:
            shard.items.clear()


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Handler logs and EMF metrics are produced (part of the cost) but not shown."""
    with contextlib.redirect_stdout(io.StringIO()) as sink:
        yield
    del sink


def run(n: int, warmup: int) -> dict[str, Any]:
    from moto import mock_aws  # noqa: PLC0415 - after env setup

    from tests.aws import AWS_TEST_ENV, LambdaContext, load_handler, provision  # noqa: PLC0415

    os.environ.update(AWS_TEST_ENV)
    os.environ.pop("AWS_ENDPOINT_URL", None)
    os.environ["POWERTOOLS_LOG_LEVEL"] = "INFO"
    with mock_aws():
        from hub import wiring  # noqa: PLC0415
        from hub.adapters.aws import client, reset_clients  # noqa: PLC0415
        from hub.adapters.dynamo.tenancy import DynamoConfigRepository  # noqa: PLC0415
        from hub.domain.tenancy import ApiKey, Integration, IntegrationMode, Tenant, hash_api_key  # noqa: PLC0415

        reset_clients()
        wiring.reset()
        main, raw = provision("bench-main"), provision("bench-raw")
        os.environ.update(main.environments["IngestApiFunction"])
        key = "hub_bench_key"
        for stack in (main, raw):
            config = DynamoConfigRepository(stack.refs["HubTable"])
            config.put_tenant(Tenant(tenant_id="t1", name="Bench"))
            config.put_integration(
                Integration(
                    integration_id="int_bench",
                    tenant_id="t1",
                    name="bench",
                    mode=IntegrationMode.ORCHESTRATION,
                )
            )
            config.put_api_key(ApiKey(key_id="bench", tenant_id="t1", key_hash=hash_api_key(key)))
        swaps = {
            main.refs["HubTable"]: raw.refs["HubTable"],
            main.refs["PipelineQueue"]: raw.refs["PipelineQueue"],
        }
        recorder = Recorder()
        for service in ("dynamodb", "sqs"):
            client(service).meta.events.register(f"provide-client-params.{service}.*", recorder)

        from tests.events import http_event  # noqa: PLC0415

        with _quiet_stdout():
            handler = load_handler("IngestApiFunction")
        context = LambdaContext()
        handler_ms: list[float] = []
        raw_ms: list[float] = []
        per_op: Counter[str] = Counter()
        statuses: Counter[int] = Counter()
        for i in range(warmup + n):
            body = {
                "integration_id": "int_bench",
                "message_type": "purchase_order",
                "external_id": f"PO-{i}",
                "payload": {"po_number": f"PO-{i}", "lines": [{"sku": "A-1", "qty": i % 7 + 1}]},
            }
            headers: dict[str, str | None] = {
                "authorization": f"Bearer {key}",
                "idempotency-key": f"bench-{i}",
            }
            event = http_event("receive_message.json", body=body, headers=headers)
            recorder.calls.clear()
            recorder.on = True
            with _quiet_stdout():
                started = time.perf_counter()
                answer = handler(event, context)
                elapsed = time.perf_counter() - started
            recorder.on = False
            calls = list(recorder.calls)
            started = time.perf_counter()
            for service, operation, params in calls:
                getattr(client(service), _snake(operation))(**_retarget(params, swaps))
            raw_elapsed = time.perf_counter() - started
            _forget_written_items(client("dynamodb"), calls, (main.refs["HubTable"], raw.refs["HubTable"]))
            if i >= warmup:
                handler_ms.append(elapsed * 1000)
                raw_ms.append(raw_elapsed * 1000)
                statuses[answer["statusCode"]] += 1
                per_op.update(f"{service}:{operation}" for service, operation, _ in calls)
        return {
            "n": n,
            "statuses": dict(statuses),
            "messages_per_s": n / (sum(handler_ms) / 1000),
            "p50_ms": statistics.median(handler_ms),
            "p99_ms": _percentile(handler_ms, 99),
            "raw_aws_p50_ms": statistics.median(raw_ms),
            "aws_calls_per_ingest": {op: count / n for op, count in sorted(per_op.items())},
            "overhead_ratio": sum(handler_ms) / sum(raw_ms),
            "overhead_ms": (sum(handler_ms) - sum(raw_ms)) / n,
        }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=400, help="measured ingests")
    parser.add_argument("--warmup", type=int, default=40, help="ingests run first and not measured")
    args = parser.parse_args()
    result = run(args.n, args.warmup)
    print(f"ingest benchmark: {result['n']} messages through IngestApiFunction on in-process moto")
    print(f"  responses:            {result['statuses']}")
    print(f"  throughput:           {result['messages_per_s']:.0f} messages/s (one thread)")
    print(f"  latency:              p50 {result['p50_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms")
    print(
        "  AWS requests/ingest:  "
        + ", ".join(f"{op} {c:g}" for op, c in result["aws_calls_per_ingest"].items())
    )
    print(f"  raw AWS calls:        p50 {result['raw_aws_p50_ms']:.2f} ms per ingest (same calls replayed)")
    verdict = "ok" if result["overhead_ratio"] <= TARGET_RATIO else "OVER TARGET"
    print(f"  our code per ingest:  {result['overhead_ms']:.2f} ms (handler time minus raw AWS time, mean)")
    ratio = result["overhead_ratio"]
    print(f"  overhead ratio:       {ratio:.2f}x of raw AWS time (target <= {TARGET_RATIO}x: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
