"""Tenant fairness on the pipeline lane (issue 30): one tenant's burst to a slow destination and
another tenant's steady traffic to a fast one, through the local stack.

The local stack of template.yaml (devstack) on free ports; two tenants of their own, each with an
integration and an API key:

- tenant A (noisy) posts ``--noisy-n`` messages (2,000) as fast as ``--concurrency`` clients
  can, to a destination on 127.0.0.1 that answers 200 after ``--slow-seconds`` (2 s);
- tenant B (quiet) posts ``--quiet-n`` messages (100) at the same time, one every
  ``--quiet-interval`` seconds (so they arrive while A's backlog grows), to a destination that
  answers at once.

Three runs, each on a fresh stack: B alone; A and B with the local fair queues on (every step
carries its tenant as ``MessageGroupId``; the stack's SQS orders receives as SQS fair queues do,
devstack.fair_queues); A and B with the ordering off (moto's own order, as a queue without
fairness). A message's time to `sent` is from the start of its POST to the `updated_at` of its
`sent` view (the partner API). Reported:

- ``fairness_quiet_p99_ratio``: B's p99 with A's burst, fairness on / B's p99 alone (target <= 2);
- ``fairness_off_quiet_p99_ratio``: the same with fairness off (what fairness saves);
- ``fairness_noisy_messages_per_s``: A's deliveries per second with fairness on, from its first
  POST to its last delivery (fairness must not idle the pool), beside the same with it off.

Both ratios divide by B alone measured in the same process, so the machine's speed cancels out.
The worker pool is ``--instances`` instances (AWS: MaximumConcurrency 50 batches of 5); each
batch runs its steps one after another, so A's batches hold an instance for ~10 s.

    python -m bench.fairness [--noisy-n 2000] [--quiet-n 100] [--instances 25]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.common import merge_results, now_iso, percentile, purchase_order, seed_tenant

NOISY = ("tnt_fair_noisy", "int_fair_noisy", "hub_fair_noisy_key")
QUIET = ("tnt_fair_quiet", "int_fair_quiet", "hub_fair_quiet_key")


class Destination:
    """A destination on 127.0.0.1 that answers 200 after `delay` seconds and notes when each
    message (its Idempotency-Key: the message id) first arrived."""

    def __init__(self, delay: float) -> None:
        self.first: dict[str, float] = {}
        lock = threading.Lock()
        first = self.first

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                time.sleep(delay)
                with lock:
                    first.setdefault(self.headers.get("idempotency-key", ""), time.time())
                body = b'{"ok":true}'
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/orders"

    def __enter__(self) -> Destination:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Posted:
    started: dict[str, float] = field(default_factory=dict)  # message id -> POST start
    failed: int = 0


@dataclass(frozen=True)
class Load:
    noisy_n: int
    quiet_n: int
    quiet_interval: float
    slow_seconds: float
    concurrency: int
    instances: int
    stall: float


@contextmanager
def _stack(load: Load, fair: bool, log_dir: Path) -> Iterator[Any]:
    from devstack import fair_queues  # noqa: PLC0415
    from tests.aws import local_stack_on_free_ports  # noqa: PLC0415

    fair_queues.enabled = fair
    stack = local_stack_on_free_ports(
        stack_name="hub-bench-fairness",
        max_instances=load.instances,
        function_log=log_dir / f"functions-{'on' if fair else 'off'}.log",
    )
    try:
        with stack:
            yield stack
    finally:
        fair_queues.enabled = True


def _post(api: Any, tenant: tuple[str, str, str], index: int, run: str, posted: Posted) -> None:
    payload = purchase_order(run, index)
    body = {"integration_id": tenant[1], "message_type": "purchase_order", "payload": payload}
    started = time.time()
    answer = api.post(
        "/api/edi-hub/receive-message",
        json=body,
        headers={"Authorization": f"Bearer {tenant[2]}", "Idempotency-Key": f"{run}-{index}"},
    )
    if answer.status_code in (200, 202):
        posted.started[answer.json()["message_id"]] = started
    else:
        posted.failed += 1


def _sent_at(api: Any, tenant: tuple[str, str, str], message_ids: list[str]) -> dict[str, float]:
    """When each message became `sent`, from its partner-API view."""
    sent: dict[str, float] = {}

    def view(message_id: str) -> None:
        answer = api.get(
            f"/api/edi-hub/messages/{message_id}", headers={"Authorization": f"Bearer {tenant[2]}"}
        )
        if answer.status_code == 200 and answer.json().get("pipeline_status") == "sent":
            sent[message_id] = datetime.fromisoformat(answer.json()["updated_at"]).timestamp()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(view, message_ids))
    return sent


def _wait(destinations: list[tuple[Destination, Posted]], stall: float) -> bool:
    """Until every posted message reached its destination, or nothing arrived for `stall` s."""
    last, since = -1, time.monotonic()
    while True:
        arrived = sum(len(set(p.started) & set(d.first)) for d, p in destinations)
        if arrived == sum(len(p.started) for _, p in destinations):
            return True
        if arrived != last:
            last, since = arrived, time.monotonic()
        elif time.monotonic() - since > stall:
            return False
        time.sleep(0.2)


def run_once(load: Load, *, fair: bool, with_noisy: bool, log_dir: Path) -> dict[str, Any]:
    import httpx  # noqa: PLC0415

    from devstack.demo import pointed_at  # noqa: PLC0415

    run = f"{'on' if fair else 'off'}{'-ab' if with_noisy else '-b'}-{int(time.time())}"
    with (
        Destination(load.slow_seconds) as slow,
        Destination(0.0) as fast,
        _stack(load, fair, log_dir) as stack,
    ):
        with pointed_at(stack):
            for (tenant, integration, key), url in ((NOISY, slow.url), (QUIET, fast.url)):
                seed_tenant(
                    stack.resources["HubTable"],
                    tenant_id=tenant,
                    integration_id=integration,
                    api_key=key,
                    destination=url,
                    name=tenant,
                )
        noisy, quiet = Posted(), Posted()
        limits = httpx.Limits(max_connections=load.concurrency + 4)
        with httpx.Client(base_url=stack.api_url, timeout=60, trust_env=False, limits=limits) as api:
            # Warm-up: an instance of each function imported, outside the figures.
            warm = Posted()
            _post(api, QUIET, 0, f"warm-{run}", warm)
            _wait([(fast, warm)], load.stall)
            started = time.time()
            with ThreadPoolExecutor(load.concurrency) as pool:
                if with_noisy:
                    for index in range(load.noisy_n):
                        pool.submit(_post, api, NOISY, index, run, noisy)
                for index in range(load.quiet_n):
                    time.sleep(max(0.0, started + index * load.quiet_interval - time.time()))
                    _post(api, QUIET, index, run, quiet)
            complete = _wait([(fast, quiet)], load.stall)
            noisy_complete = _wait([(slow, noisy)], load.stall) if with_noisy else True
            quiet_sent = _sent_at(api, QUIET, list(quiet.started))
    times = [quiet_sent[m] - quiet.started[m] for m in quiet_sent]
    noisy_arrivals = [slow.first[m] for m in noisy.started if m in slow.first]
    noisy_rate = (
        len(noisy_arrivals) / (max(noisy_arrivals) - min(noisy.started.values())) if noisy_arrivals else None
    )
    return {
        "fair_queues": fair,
        "noisy_posted": len(noisy.started),
        "quiet_posted": len(quiet.started),
        "post_failures": noisy.failed + quiet.failed,
        "quiet_sent": len(quiet_sent),
        "quiet_complete": complete,
        "noisy_delivered": len(noisy_arrivals),
        "noisy_complete": noisy_complete,
        "quiet_time_to_sent_s": {"p50": percentile(times, 50), "p99": percentile(times, 99)}
        if times
        else None,
        "noisy_messages_per_s": noisy_rate,
    }


# --- pacing: a connection that declared its limits (issue 30) ---------------------------------

PACED = ("tnt_paced", "int_paced", "hub_paced_key")
PACED_LIMITS = {"max_concurrency": 2, "rate_per_second": 5.0, "burst": 5}


class PacedDestination(Destination):
    """Answers after `delay` seconds and counts the most requests in flight at once; notes every
    arrival (time.monotonic)."""

    def __init__(self, delay: float) -> None:
        self.arrivals: list[float] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.ok: dict[str, int] = {}
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with lock:
                    owner.in_flight += 1
                    owner.most_in_flight = max(owner.most_in_flight, owner.in_flight)
                    owner.arrivals.append(time.monotonic())
                time.sleep(delay)
                with lock:
                    owner.in_flight -= 1
                    key = self.headers.get("idempotency-key", "")
                    owner.ok[key] = owner.ok.get(key, 0) + 1
                    owner.first.setdefault(key, time.time())
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.first: dict[str, float] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/orders"

    def __enter__(self) -> PacedDestination:
        super().__enter__()
        return self


def most_in_a_window(arrivals: list[float], width: float) -> int:
    ordered = sorted(arrivals)
    return max(
        (sum(1 for t in ordered[i:] if t < start + width) for i, start in enumerate(ordered)), default=0
    )


def run_pacing(load: Load, count: int, log_dir: Path) -> dict[str, Any]:
    """`count` messages posted at once through a connection limited to PACED_LIMITS, answered in
    0.3 s: what reached the destination at most at once, and in any second."""
    import httpx  # noqa: PLC0415

    from devstack.demo import pointed_at  # noqa: PLC0415
    from hub.domain.delivery_limits import DeliveryLimits  # noqa: PLC0415

    tenant, integration, key = PACED
    with PacedDestination(0.3) as destination, _stack(load, True, log_dir) as stack:
        with pointed_at(stack):
            seed_tenant(
                stack.resources["HubTable"],
                tenant_id=tenant,
                integration_id=integration,
                api_key=key,
                destination=destination.url,
                name=tenant,
                limits=DeliveryLimits.model_validate(PACED_LIMITS),
            )
        posted = Posted()
        run = f"paced-{int(time.time())}"
        with httpx.Client(base_url=stack.api_url, timeout=60, trust_env=False) as api:
            started = time.monotonic()
            with ThreadPoolExecutor(load.concurrency) as pool:
                for index in range(count):
                    pool.submit(_post, api, PACED, index, run, posted)
            _wait([(destination, posted)], load.stall)
            elapsed = time.monotonic() - started
    delivered = [m for m in posted.started if destination.ok.get(m)]
    return {
        "limits": PACED_LIMITS,
        "posted": len(posted.started),
        "delivered": len(delivered),
        "delivered_more_than_once": sum(1 for m in delivered if destination.ok[m] > 1),
        "max_in_flight": destination.most_in_flight,
        "max_in_any_second": most_in_a_window(destination.arrivals, 1.0),
        "messages_per_s": len(delivered) / elapsed if elapsed else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--noisy-n", type=int, default=2000)
    parser.add_argument("--quiet-n", type=int, default=100)
    parser.add_argument("--quiet-interval", type=float, default=0.25, help="seconds between B's posts")
    parser.add_argument("--slow-seconds", type=float, default=2.0, help="A's destination's answer time")
    parser.add_argument("--concurrency", type=int, default=16, help="A's concurrent clients")
    parser.add_argument("--instances", type=int, default=25, help="worker instances at most")
    parser.add_argument("--stall", type=float, default=60.0, help="give up after this long without progress")
    parser.add_argument("--paced-n", type=int, default=300, help="messages through the limited connection")
    args = parser.parse_args()
    import logging  # noqa: PLC0415

    logging.disable(logging.WARNING)
    load = Load(
        args.noisy_n,
        args.quiet_n,
        args.quiet_interval,
        args.slow_seconds,
        args.concurrency,
        args.instances,
        args.stall,
    )
    with tempfile.TemporaryDirectory(prefix="hub-bench-fairness-") as tmp:
        log_dir = Path(tmp)
        alone = run_once(load, fair=True, with_noisy=False, log_dir=log_dir)
        on = run_once(load, fair=True, with_noisy=True, log_dir=log_dir)
        off = run_once(load, fair=False, with_noisy=True, log_dir=log_dir)
        paced = run_pacing(load, args.paced_n, log_dir)

    def p99(result: dict[str, Any]) -> float | None:
        figures = result["quiet_time_to_sent_s"]
        return None if figures is None or not result["quiet_complete"] else figures["p99"]

    def over_alone(result: dict[str, Any]) -> float | None:
        base, figure = p99(alone), p99(result)
        return figure / base if base and figure is not None else None

    ratio_on, ratio_off = over_alone(on), over_alone(off)
    merge_results(
        {
            "fairness_quiet_p99_ratio": ratio_on,
            "fairness_off_quiet_p99_ratio": ratio_off,
            "fairness_noisy_messages_per_s": on["noisy_messages_per_s"],
            "pacing_max_in_flight": paced["max_in_flight"],
            "pacing_max_in_any_second": paced["max_in_any_second"],
            "pacing": {"measured_at": now_iso(), **paced},
            "fairness": {
                "measured_at": now_iso(),
                "load": load.__dict__,
                "quiet_alone": alone,
                "fairness_on": on,
                "fairness_off": off,
                "noisy_messages_per_s_fairness_off": off["noisy_messages_per_s"],
            },
        }
    )
    for name, result in (("B alone", alone), ("A+B fair on", on), ("A+B fair off", off)):
        print(f"{name:13} {json.dumps(result)}")
    print(f"B's p99 with A's burst / alone: fairness on {ratio_on}, off {ratio_off}")
    print(f"paced connection {json.dumps(paced)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
