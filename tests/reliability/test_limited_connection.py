"""A destination that declared what it can take (issue 30), on the local stack with several worker
instances: a connection limited to 2 deliveries in flight and 5 a second (burst 5) gets 300 messages
(100 in `make test`, tests/reliability/sizes.py) - first deliveries, their retries after a wave of
503s (which opens the breaker: its release goes through the limits too), and a bulk reprocess of the
ones the wave dead-lettered - and, counted at the destination itself, never has more than 2 requests
in flight nor more than the burst + 5 a second in any window; every message is applied exactly once
(by the hub's Idempotency-Key, the message id)."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from devstack.demo import DEMO_ADMIN_TOKEN, parameter_overrides, seed
from devstack.stack import LocalStack
from tests.aws import function_names, local_stack_on_free_ports
from tests.reliability.sizes import proof_size
from tests.reliability.worker_support import message_items, wait_until
from tests.serving import serving_thread

pytestmark = pytest.mark.e2e

LIMITS = {"max_concurrency": 2, "rate_per_second": 5, "burst": 5}
FIRST, DEAD = proof_size(80, 250), proof_size(20, 50)
#: Requests in the first seconds after the first one are answered 503: the wave. It opens the
#: connection's breaker (at least 10 attempts, 70 % failed), whose probe after the cool-down
#: closes it and releases what it held - through the limits too.
WAVE_SECONDS = 3.0
COOLDOWN_SECONDS = 5
ANSWER_SECONDS = 0.3
#: A request may reach the destination this much later than its permit (a loaded machine).
JITTER = 0.3


class LimitedDestination:
    """Answers each request after ANSWER_SECONDS: 503 during the wave, 200 after. Notes each
    arrival, the 2xx answers per Idempotency-Key and the most requests in flight at once."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        #: 2xx answers per Idempotency-Key: each message's delivery that went through.
        self.delivered: Counter[str] = Counter()
        self.in_flight = 0
        self.most_in_flight = 0
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    owner.in_flight += 1
                    owner.most_in_flight = max(owner.most_in_flight, owner.in_flight)
                    owner.arrivals.append(time.monotonic())
                    failing = owner.arrivals[-1] - owner.arrivals[0] < WAVE_SECONDS
                time.sleep(ANSWER_SECONDS)
                with lock:
                    owner.in_flight -= 1
                    if not failing:
                        owner.delivered[self.headers.get("Idempotency-Key") or ""] += 1
                body = b'{"ok": true}'
                try:
                    self.send_response(503 if failing else 200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/orders"

    def __enter__(self) -> LimitedDestination:
        serving_thread(self._server).start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    env = {name: {"HUB_CONFIG_CACHE_SECONDS": "0"} for name in function_names()}
    env["PipelineWorkerFunction"]["HUB_BREAKER_COOLDOWN_SECONDS"] = str(COOLDOWN_SECONDS)
    with local_stack_on_free_ports(
        stack_name="hub-reliability-limits",
        parameter_overrides=parameter_overrides(),
        env_overrides=env,
        max_instances=4,
        sqs_pollers_per_source=4,
    ) as running:
        seed(running)
        yield running


def client(url: str, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60, trust_env=False
    )


def created(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code in (201, 202), answer.text
    body: dict[str, Any] = answer.json()
    return body


def most_in_any_window(arrivals: list[float], width: float) -> int:
    ordered = sorted(arrivals)
    return max(
        (sum(1 for t in ordered[i:] if t < start + width) for i, start in enumerate(ordered)), default=0
    )


@pytest.mark.timeout(1200)
def test_messages_through_a_limited_connection_never_exceed_its_limits(stack):
    suffix = uuid.uuid4().hex[:8]
    tenant = f"tnt_lim{suffix}"
    with (
        LimitedDestination() as destination,
        client(stack.function_urls["AdminApiFunction"], DEMO_ADMIN_TOKEN) as admin,
    ):
        created(admin.post("/api/admin/tenants", json={"tenant_id": tenant, "name": "limited"}))
        base = f"/api/admin/tenants/{tenant}"
        created(
            admin.post(
                f"{base}/connections",
                json={"connection_id": "con_lim", "url": destination.url, "limits": LIMITS},
            )
        )
        retrying, dead_at_once = f"int_limr{suffix}", f"int_limd{suffix}"
        for integration_id, policy in (
            (retrying, {"retry_auto_enabled": True, "retry_max": 5, "ladder_seconds": [1.0]}),
            (dead_at_once, {"retry_auto_enabled": True, "retry_max": 0}),
        ):
            created(
                admin.post(
                    f"{base}/integrations",
                    json={
                        "integration_id": integration_id,
                        "name": integration_id,
                        "mode": "orchestration",
                        "connection_id": "con_lim",
                        "message_types": {"purchase_order": {}},
                        "retry_policy": policy,
                    },
                )
            )
        key = created(admin.post(f"{base}/api-keys", json={"label": "partner"}))["key"]

        with client(stack.api_url, key) as api, ThreadPoolExecutor(8) as pool:

            def post(integration_id: str) -> str:
                body = {
                    "integration_id": integration_id,
                    "message_type": "purchase_order",
                    "payload": {"po_number": f"PO-{uuid.uuid4().hex[:10]}", "total": 10},
                }
                answer = api.post("/api/edi-hub/receive-message", json=body)
                assert answer.status_code == 202, answer.text
                return str(answer.json()["message_id"])

            dead = list(pool.map(lambda _: post(dead_at_once), range(DEAD)))
            first = list(pool.map(lambda _: post(retrying), range(FIRST)))

            def statuses(ids: list[str]) -> Counter[str]:
                # Read from the table (a batch read per hundred): polling each message's admin
                # view took a function instance's work per message per poll.
                return Counter(item["pipeline_status"] for item in message_items(stack, ids))

            def dead_settled() -> bool:
                found = statuses(dead)
                return sum(found.values()) == DEAD and set(found) <= {"sent", "dead_letter"}

            # The wave dead-letters some of the no-retry integration's messages (those it met)
            wait_until(
                dead_settled,
                "the no-retry messages settled",
                timeout=600,
                interval=1,
            )
            job = created(
                admin.post(
                    "/api/admin/bulk-jobs",
                    json={
                        "tenant_id": tenant,
                        "action": "reprocess",
                        "filter": {"tab": "dead_letter", "integration_id": dead_at_once},
                    },
                    headers={"Idempotency-Key": f"limits-{suffix}"},
                )
            )
            assert job["job_id"]
            wait_until(
                lambda: statuses(first + dead) == Counter({"sent": FIRST + DEAD}),
                "every message sent",
                timeout=900,
                interval=1,
            )

    # Each message went through exactly once (never a second 2xx for one Idempotency-Key)
    assert destination.delivered == Counter(dict.fromkeys(first + dead, 1))
    assert len(destination.arrivals) >= FIRST + DEAD + 1  # the wave's attempts came too
    assert destination.most_in_flight <= LIMITS["max_concurrency"]
    for width in (1.0, 2.0, 5.0, 10.0):
        allowed = LIMITS["burst"] + LIMITS["rate_per_second"] * (width + JITTER)
        assert most_in_any_window(destination.arrivals, width) <= allowed, width
