"""Ingest overhead: the real IngestApiFunction handler against AWS answers that take no time.

What it divides: for the same ingest, with AWS answered instantly by a replay server,

    ingest_overhead_ratio = handler time per ingest / bare boto3 time per ingest  (medians)

- numerator: the real handler (loaded as tests/aws.py ``load_handler`` does, environment from
  template.yaml through tests/aws.py ``provision``) answering an HTTP API v2 receive-message
  event with a ~1 KiB purchase order, its AWS endpoint pointed at the replay server;
- denominator: bare boto3 making the very same calls (same services, operations and parameters,
  clients built with the same botocore Config) against the same replay server and tape.

So the ratio is (our code + SDK work for our calls) / (SDK work for our calls): what our code
costs on top of the AWS calls it must make. Neither side includes any emulator time.

How (bench/replay.py): a moto server runs in this process with the stack provisioned from the
template and a tenant, integration and API key seeded. For each ingest the handler first runs
once in *record* mode (its requests forwarded to moto through the tape server; the calls' params
are captured by wrapping botocore's ``BaseClient._make_api_call`` while recording), then the
handler and the bare calls each replay that ingest's tape, in alternating order (interleaved, so
a noisy machine slows both alike). Replays are matched by sequence within the ingest, never by
body, and checked: a replay that did not consume its whole tape, or asked for another operation,
is counted and reported. Whatever calls the handler makes are recorded and replayed. The first
``--warmup`` ingests are not measured (config caches filled, code paths warm). Handler logs and
EMF metrics are written to /dev/null (produced, so part of the cost).

    python -m bench.ingest [--n 300] [--warmup 40]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bench.common import (
    lean_transaction_snapshots,
    median,
    merge_results,
    moto_server,
    now_iso,
    payload_bytes,
    percentile,
    purchase_order,
    seed_tenant,
)

TARGET_RATIO = 1.5
API_KEY = "hub_bench_ingest-key-0000000000000000000000"  # bench only, in its own moto
INTEGRATION_ID = "int_bench_ingest"
TENANT_ID = "tnt_bench"

Call = tuple[str, str, dict[str, Any]]  # service, operation, params


@dataclass
class CallRecorder:
    """Wraps botocore's ``BaseClient._make_api_call`` while installed: every call of any client
    in this process, with a copy of its params and its client's Config."""

    calls: list[Call] = field(default_factory=list)
    configs: dict[str, Any] = field(default_factory=dict)

    @contextlib.contextmanager
    def installed(self) -> Iterator[CallRecorder]:
        from botocore.client import BaseClient  # noqa: PLC0415

        original = BaseClient._make_api_call

        def make_api_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
            service = client.meta.service_model.service_name
            self.calls.append((service, operation, copy.deepcopy(params)))
            self.configs.setdefault(service, client.meta.config)
            return original(client, operation, params)

        self.calls = []
        setattr(BaseClient, "_make_api_call", make_api_call)  # noqa: B010
        try:
            yield self
        finally:
            setattr(BaseClient, "_make_api_call", original)  # noqa: B010


@contextlib.contextmanager
def _stdout_to_devnull() -> Iterator[None]:
    """Handler logs and EMF metrics are written (a real write per line, as to Lambda's pipe) but
    not shown. Powertools binds sys.stdout when its Logger is created, so the handler is loaded
    inside this too."""
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield


def _seed(table: str) -> None:
    seed_tenant(
        table,
        tenant_id=TENANT_ID,
        integration_id=INTEGRATION_ID,
        api_key=API_KEY,
        destination="http://127.0.0.1:9/never-called",
        name="bench ingest",
    )


def _event(run_id: str, index: int) -> dict[str, Any]:
    from tests.events import http_event  # noqa: PLC0415

    payload = purchase_order(run_id, index)
    body = {
        "integration_id": INTEGRATION_ID,
        "message_type": "purchase_order",
        "external_id": payload["po_number"],
        "payload": payload,
    }
    headers: dict[str, str | None] = {
        "authorization": f"Bearer {API_KEY}",
        "idempotency-key": f"{run_id}-{index}",
    }
    return http_event("receive_message.json", body=body, headers=headers)


@dataclass
class Measured:
    handler_ms: list[float] = field(default_factory=list)
    bare_ms: list[float] = field(default_factory=list)
    record_ms: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    operations: Counter[str] = field(default_factory=Counter)
    bad_replays: int = 0
    notes: list[str] = field(default_factory=list)


def _bare_caller(configs: dict[str, Any]) -> Callable[[list[Call]], None]:
    """Bare boto3: one client per service, built like the handler's (its Config), endpoint from
    the environment (the replay server), making the recorded calls in order."""
    import boto3  # noqa: PLC0415
    from botocore import xform_name  # noqa: PLC0415
    from botocore.exceptions import ClientError  # noqa: PLC0415

    clients: dict[str, Any] = {}

    def call(calls: list[Call]) -> None:
        for service, operation, params in calls:
            client = clients.get(service)
            if client is None:
                client = clients[service] = boto3.session.Session().client(
                    service, config=configs.get(service)
                )
            with contextlib.suppress(ClientError):  # a recorded error answer is part of the path
                getattr(client, xform_name(operation))(**params)

    return call


def _measure(handler: Any, tapes: Any, n: int, warmup: int) -> Measured:
    from bench.replay import replay_complete  # noqa: PLC0415
    from tests.aws import LambdaContext  # noqa: PLC0415

    context = LambdaContext()
    recorder = CallRecorder()
    bare_callers: list[Callable[[list[Call]], None]] = []
    measured = Measured()
    run_id = os.urandom(4).hex()
    mismatches = 0
    for index in range(warmup + n):
        event = _event(run_id, index)
        tape = f"ingest-{index}"
        tapes.select(tape, "record")
        with recorder.installed():
            started = time.perf_counter()
            answer = handler(event, context)
            record_ms = (time.perf_counter() - started) * 1000
        calls = list(recorder.calls)
        if not bare_callers:
            bare_callers.append(_bare_caller(recorder.configs))
        bare = bare_callers[0]
        timings: dict[str, float] = {}
        order = ("handler", "bare") if index % 2 == 0 else ("bare", "handler")
        for side in order:
            summary = tapes.select(tape, "replay")
            if summary["mode"] == "replay" and not replay_complete(summary, mismatches):
                measured.bad_replays += 1
            mismatches = summary["mismatches"]
            started = time.perf_counter()
            if side == "handler":
                handler(event, context)
            else:
                bare(calls)
            timings[side] = (time.perf_counter() - started) * 1000
        summary = tapes.select("idle", "off")
        if not replay_complete(summary, mismatches):
            measured.bad_replays += 1
        mismatches = summary["mismatches"]
        if index >= warmup:
            measured.handler_ms.append(timings["handler"])
            measured.bare_ms.append(timings["bare"])
            measured.record_ms.append(record_ms)
            measured.statuses[int(answer["statusCode"])] += 1
            measured.operations.update(f"{service}:{operation}" for service, operation, _ in calls)
    measured.notes = list(tapes.stats().get("mismatch_notes", []))
    return measured


def run(n: int, warmup: int) -> dict[str, Any]:
    from bench.replay import TapeServer  # noqa: PLC0415
    from tests.aws import AWS_TEST_ENV, load_handler, provision  # noqa: PLC0415

    os.environ.update(AWS_TEST_ENV)
    with lean_transaction_snapshots(), moto_server() as moto_url:
        os.environ["AWS_ENDPOINT_URL"] = moto_url
        stack = provision("hub-bench-ingest")
        _seed(stack.refs["HubTable"])
        with TapeServer(upstream=moto_url) as tapes:
            os.environ.update(stack.environments["IngestApiFunction"])
            os.environ["POWERTOOLS_TRACE_DISABLED"] = "true"  # as the local stack and tests run it
            # One tenant, one instance, hundreds of ingests a second: the tenant's bucket is still
            # checked on every ingest (its cost is measured) but never refuses one (issue 14).
            os.environ["HUB_TENANT_RATE_PER_SECOND"] = "100000"
            os.environ["AWS_ENDPOINT_URL"] = tapes.url
            from hub import wiring  # noqa: PLC0415
            from hub.adapters.aws import reset_clients  # noqa: PLC0415

            reset_clients()
            wiring.reset()
            with _stdout_to_devnull():
                handler = load_handler("IngestApiFunction")
                measured = _measure(handler, tapes, n, warmup)
    return _summarize(measured, n, warmup)


def _summarize(measured: Measured, n: int, warmup: int) -> dict[str, Any]:
    handler_p50, bare_p50 = median(measured.handler_ms), median(measured.bare_ms)
    count = max(len(measured.handler_ms), 1)
    return {
        "measured_at": now_iso(),
        "n": n,
        "warmup": warmup,
        "payload_bytes": payload_bytes(purchase_order("x", 0)),
        "statuses": {str(k): v for k, v in sorted(measured.statuses.items())},
        "aws_calls_per_ingest": {op: c / count for op, c in sorted(measured.operations.items())},
        "handler_ms": {"p50": handler_p50, "p99": percentile(measured.handler_ms, 99)},
        "bare_boto3_ms": {"p50": bare_p50, "p99": percentile(measured.bare_ms, 99)},
        "against_moto_ms": {"p50": median(measured.record_ms)},
        "overhead_ratio_median": handler_p50 / bare_p50 if bare_p50 else None,
        "overhead_ratio_mean": sum(measured.handler_ms) / sum(measured.bare_ms) if measured.bare_ms else None,
        "pair_ratio_spread": _spread(
            [h / b for h, b in zip(measured.handler_ms, measured.bare_ms, strict=True)]
        ),
        "our_ms_per_ingest_median": handler_p50 - bare_p50,
        "bad_replays": measured.bad_replays,
        "mismatch_notes": measured.notes,
    }


def _spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "min": min(values),
        "p10": percentile(values, 10),
        "p90": percentile(values, 90),
        "max": max(values),
    }


def report(result: dict[str, Any]) -> list[str]:
    ratio = result["overhead_ratio_median"]
    verdict = "met" if ratio is not None and ratio <= TARGET_RATIO else "NOT met"
    spread = result["pair_ratio_spread"]
    lines = [
        f"ingest overhead: {result['n']} ingests through IngestApiFunction (+{result['warmup']} warm-up),"
        f" ~{result['payload_bytes']} B purchase order, AWS answered by a replay server (bench/replay.py)",
        f"  responses:            {result['statuses']}",
        "  AWS calls per ingest: "
        + ", ".join(f"{op} {c:g}" for op, c in result["aws_calls_per_ingest"].items()),
        f"  handler:              p50 {result['handler_ms']['p50']:.2f} ms,"
        f" p99 {result['handler_ms']['p99']:.2f} ms (instant AWS answers)",
        f"  bare boto3, same calls: p50 {result['bare_boto3_ms']['p50']:.2f} ms,"
        f" p99 {result['bare_boto3_ms']['p99']:.2f} ms",
        f"  for scale, against moto: p50 {result['against_moto_ms']['p50']:.1f} ms per ingest"
        " (emulation time; not used in the ratio)",
        f"  our code per ingest:  {result['our_ms_per_ingest_median']:.2f} ms (median handler - median bare)",
        f"  overhead ratio:       {ratio:.2f}x median handler / median bare boto3"
        f" (mean {result['overhead_ratio_mean']:.2f}x; per-ingest pairs"
        f" {spread.get('min', 0):.2f}-{spread.get('max', 0):.2f}x, p10-p90"
        f" {spread.get('p10', 0):.2f}-{spread.get('p90', 0):.2f}x); target <= {TARGET_RATIO}x: {verdict}",
    ]
    if result["bad_replays"]:
        lines.append(
            f"  WARNING: {result['bad_replays']} replays did not follow their tape: "
            + "; ".join(result["mismatch_notes"][:5])
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=300, help="measured ingests")
    parser.add_argument("--warmup", type=int, default=40, help="ingests run first and not measured")
    args = parser.parse_args()
    result = run(args.n, args.warmup)
    for line in report(result):
        print(line)
    merge_results({"ingest_overhead_ratio": result["overhead_ratio_median"], "ingest": result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
