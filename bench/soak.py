"""The soak (issue 15, ``make soak``): N messages from 8 partners through the local stack to a
destination that answers at random, while a chaos loop crashes pipeline-worker processes, then
checks that nothing was lost, applied twice or announced twice.

    SOAK_N=10000 python -m bench.soak        # the default N is 10,000; SOAK_KILL_EVERY=5 (s)

Set-up (all on this machine): the local stack (devstack) of template.yaml; 8 partner tenants
seeded over the admin API as an operator would (tenant, connection, integration, API key,
webhook subscription), each integration with automatic retries on a short ladder and a
connection with a 1 s read timeout and ``idempotent_retries`` on. The destination (127.0.0.1, a
threaded server of this module) honours the hub's ``Idempotency-Key``: a key it applied before
is answered 200 and not applied again; otherwise it answers at random 200 (applied), 503, 429
with ``Retry-After``, or applies and answers only after the read timeout (the answer is lost).
One webhook subscriber (127.0.0.1) takes every tenant's ``message.*`` events and keeps them by
``webhook-id``, signatures verified.

The chaos loop kills a random PipelineWorkerFunction instance every ``SOAK_KILL_EVERY`` seconds
until every message is final (a real SIGKILL of its process, ``LocalStack.crash``): busy
ones mid-batch, or idle ones. A killed batch comes back after the pipeline queue's visibility
timeout. The template's 1,260 s (six times the worker timeout) would hold it for 21 minutes, so
the soak shortens it for its own run the way an operator could (``SetQueueAttributes
VisibilityTimeout``, ``SOAK_VISIBILITY``, default 30 s: longer than any batch here, whose
deliveries time out after 1 s). A step killed while it held its message's lease waits until the
lease (5 minutes, hub.pipeline.rules.LOCK_LEASE) expires: the busy-step ladder retries it.

The run ends when every acknowledged message is final, or at ``SOAK_CAP`` seconds. Checks, each
a failing exit status with its message: none lost (every 2xx'd message id is in the table);
every message final, or waiting on a schedule or a held connection; the status events the
subscriber got for each message are a path of allowed transitions, without gaps or repeats,
ending in its current status (exactly one event per status change, counted by webhook-id); the
destination applied each message at most once and every ``sent`` one exactly once, always under
one Idempotency-Key, and a message applied but not sent is marked ``uncertain``; no message,
business-key or breaker-probe lease left held, and every final message's execution released its
admission. The summary is printed and written to ``bench/results/soak.json``.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only the standard library (and bench.common, which imports only it) at module level: function
# instances are spawned processes that import the __main__ module again.
from bench.common import now_iso, percentile, purchase_order

if TYPE_CHECKING:
    import httpx

    from devstack.stack import LocalStack

RESULTS = Path(__file__).with_name("results") / "soak.json"
WORKER = "PipelineWorkerFunction"
PARTNERS = 8
MESSAGE_TYPE = "purchase_order"
#: The subscribers' shared secret: the public Standard Webhooks test vector's (local only).
SUBSCRIBER_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # noqa: S105
FINAL = ("sent", "error", "dead_letter", "cancelled", "received_observed", "duplicate_rejected")


@dataclass(frozen=True)
class SoakConfig:
    """One run's sizes and knobs (``from_env`` reads the ``SOAK_*`` variables)."""

    n: int = 10_000
    partners: int = PARTNERS
    #: Seconds between two worker crashes; 0: no chaos.
    kill_every: float = 5.0
    #: Share of crashes aimed at a busy instance (mid-batch); the rest crash an idle one.
    kill_busy_share: float = 0.7
    #: The destination's answers: weights of 200 / 503 / 429 / applied-but-too-slow.
    answers: tuple[float, float, float, float] = (0.7, 0.1, 0.1, 0.1)
    read_timeout_s: float = 1.0
    retry_after_s: int = 1
    #: The integrations' retry policy: this many retries on this ladder (the last step repeats).
    retry_max: int = 3
    ladder_s: tuple[float, ...] = (1.0, 2.0, 4.0)
    visibility_s: int = 30
    #: The breakers' first cool-down (HUB_BREAKER_COOLDOWN_SECONDS; doubles per failed probe).
    breaker_cooldown_s: int = 2
    #: The whole run (posting included) gives up waiting after this many seconds.
    cap_s: float = 10_800.0
    #: The drain gives up earlier once nothing moved for this many seconds: no message became
    #: final and the stack ran no invocation of its own (tests/waiting.py). A loaded machine is
    #: slow, not stuck; a crash mid-batch holds its message's lease for 5 minutes.
    stall_s: float = 600.0
    #: Posting stops this long before the cap, so what was posted has time to finish.
    drain_s: float = 1_200.0
    #: Partners wait while this many acknowledged messages are not final yet.
    max_in_flight: int = 600
    #: After the last message is final: how long events may still arrive at the subscriber.
    settle_s: float = 60.0
    seed: int | None = None
    results: Path | None = RESULTS

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> SoakConfig:
        base = cls()
        return cls(
            n=int(env.get("SOAK_N", base.n)),
            kill_every=float(env.get("SOAK_KILL_EVERY", base.kill_every)),
            visibility_s=int(env.get("SOAK_VISIBILITY", base.visibility_s)),
            cap_s=float(env.get("SOAK_CAP", base.cap_s)),
            stall_s=float(env.get("SOAK_STALL", base.stall_s)),
            drain_s=float(env.get("SOAK_DRAIN", base.drain_s)),
            max_in_flight=int(env.get("SOAK_IN_FLIGHT", base.max_in_flight)),
            seed=int(env["SOAK_SEED"]) if env.get("SOAK_SEED") else None,
        )


# --- the destination ---------------------------------------------------------------------------


class Destination:
    """A destination that honours Idempotency-Key and counts what it applied.

    Per key: the first request that is applied wins; every later request with that key is
    answered 200 and not applied again (a replay). Applications are also counted per
    ``po_number``, the message's own business number: a hub that changed the key between
    attempts of one message would show there as two applications."""

    def __init__(self, config: SoakConfig, rng: random.Random) -> None:
        from devstack.http_server import AppHandler, BackgroundHttpServer  # noqa: PLC0415

        self._lock = threading.Lock()
        self.applied_keys: set[str] = set()
        #: po_number -> how many times it was applied (a correct run: never above 1).
        self.applications: Counter[str] = Counter()
        #: po_number -> the Idempotency-Keys it arrived under.
        self.keys_of: defaultdict[str, set[str]] = defaultdict(set)
        #: Idempotency-Key -> requests received (every attempt, replays included).
        self.requests: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        weights = config.answers
        slow_s = config.read_timeout_s + 1.5
        retry_after = str(config.retry_after_s)
        destination = self

        class Handler(AppHandler[Any]):
            def serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b"{}"
                key = self.headers.get("idempotency-key", "")
                try:
                    po_number = str(json.loads(body).get("po_number", ""))
                except ValueError:
                    po_number = ""
                if len(body) < length or not po_number:
                    # A request cut short (its worker was killed while sending it) or not an
                    # order: a real destination applies nothing of it. The 10,000 run of
                    # 2026-12-01 counted one such request as applied under no po_number.
                    self.close_connection = True
                    with destination._lock:
                        destination.answered["incomplete"] += 1
                    return
                with destination._lock:
                    destination.requests[key] += 1
                    destination.keys_of[po_number].add(key)
                    if key in destination.applied_keys:
                        kind = "replay"
                    else:
                        kind = rng.choices(("ok", "503", "429", "slow"), weights)[0]
                        if kind in ("ok", "slow"):
                            destination.applied_keys.add(key)
                            destination.applications[po_number] += 1
                    destination.answered[kind] += 1
                if kind == "slow":
                    time.sleep(slow_s)  # applied; the hub has stopped listening by now
                status = {"ok": 200, "replay": 200, "slow": 200, "503": 503, "429": 429}[kind]
                try:
                    self.send_response(status)
                    if kind == "429":
                        self.send_header("retry-after", retry_after)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                except OSError:  # the hub gave up on a slow answer and closed the connection
                    self.close_connection = True

        self.server = BackgroundHttpServer("soak-destination", "127.0.0.1", 0, Handler)

    @property
    def url(self) -> str:
        return f"{self.server.base_url}/orders"


# --- the webhook subscriber ------------------------------------------------------------------


@dataclass
class Delivery:
    """One event as the subscriber got it (the first delivery of its webhook-id)."""

    event: dict[str, Any]
    body: bytes
    copies: int = 1


class Subscriber:
    """Every tenant's ``message.*`` webhooks, by webhook-id, signatures verified."""

    def __init__(self) -> None:
        from standardwebhooks import Webhook  # noqa: PLC0415

        from devstack.http_server import AppHandler, BackgroundHttpServer  # noqa: PLC0415

        self._lock = threading.Lock()
        self.by_id: dict[str, Delivery] = {}
        #: Copies of one webhook-id whose body differed from the first (a correct run: 0).
        self.conflicting: list[str] = []
        #: Why each complete request was refused (a correct run: none).
        self.refused: list[str] = []
        #: Requests whose body ended before its content-length (the sender went away mid-send; a
        #: real receiver drops them too and the sender's retry brings the event).
        self.cut_short = 0
        #: message id -> its events' webhook-ids, in arrival order.
        self.of_message: defaultdict[str, list[str]] = defaultdict(list)
        #: Messages seen reaching a final status (the posting's back-pressure reads it).
        self.final: set[str] = set()
        self.changed = threading.Event()
        verifier = Webhook(SUBSCRIBER_SECRET)
        subscriber = self

        class Handler(AppHandler[Any]):
            def serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = self.rfile.read(length) if length else b""
                except OSError:
                    body = b""
                headers = {name.lower(): value for name, value in self.headers.items()}
                if len(body) < length:
                    with subscriber._lock:
                        subscriber.cut_short += 1
                    self.close_connection = True
                    return
                try:
                    event = verifier.verify(body, headers)
                except Exception as exc:
                    why = (
                        f"{type(exc).__name__}: {exc} (webhook-id {headers.get('webhook-id')}, "
                        f"timestamp {headers.get('webhook-timestamp')} received at {int(time.time())}, "
                        f"{len(body)} bytes)"
                    )
                    with subscriber._lock:
                        subscriber.refused.append(why)
                    self._answer(400)
                    return
                subscriber.record(headers.get("webhook-id", ""), event, body)
                self._answer(200)

            def _answer(self, status: int) -> None:
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = BackgroundHttpServer("soak-subscriber", "127.0.0.1", 0, Handler)

    def record(self, webhook_id: str, event: dict[str, Any], body: bytes) -> None:
        with self._lock:
            known = self.by_id.get(webhook_id)
            if known is not None:
                known.copies += 1
                if known.body != body:
                    self.conflicting.append(webhook_id)
                return
            self.by_id[webhook_id] = Delivery(event, body)
            data = event.get("data") or {}
            message_id = data.get("message_id")
            if message_id:
                self.of_message[str(message_id)].append(webhook_id)
                if data.get("status_after") in FINAL:
                    self.final.add(str(message_id))
        self.changed.set()

    def events_of(self, message_id: str) -> list[dict[str, Any]]:
        """The message's distinct events, in version order."""
        with self._lock:
            events = [self.by_id[i].event for i in self.of_message.get(message_id, [])]
        return sorted(events, key=lambda e: int(e["data"].get("version", 0)))

    def last_status(self, message_id: str) -> str | None:
        events = self.events_of(message_id)
        return str(events[-1]["data"].get("status_after")) if events else None

    def final_count(self) -> int:
        with self._lock:
            return len(self.final)

    def url(self, tenant_id: str) -> str:
        return f"{self.server.base_url}/hooks/{tenant_id}"


# --- chaos ---------------------------------------------------------------------------------------


class Chaos:
    """Crashes a random pipeline-worker instance every ``every`` seconds until stopped."""

    def __init__(self, stack: LocalStack, every: float, busy_share: float, rng: random.Random) -> None:
        self._stack = stack
        self._every = every
        self._busy_share = busy_share
        self._rng = rng
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="soak-chaos", daemon=True)
        self.kills: Counter[str] = Counter()

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            busy = self._rng.random() < self._busy_share
            # Under load an idle instance is idle for moments only: look for one for a while.
            looking_until = time.monotonic() + self._every / 2
            crashed = bool(self._stack.crash(WORKER, busy=busy))
            while not crashed and time.monotonic() < looking_until and not self._stop.wait(0.02):
                crashed = bool(self._stack.crash(WORKER, busy=busy))
            self.kills[("busy" if busy else "idle") if crashed else "missed"] += 1

    def start(self) -> None:
        if self._every > 0:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)


# --- seeding over the admin API --------------------------------------------------------------


@dataclass(frozen=True)
class Partner:
    tenant_id: str
    integration_id: str
    connection_id: str
    api_key: str


def _created(answer: httpx.Response) -> dict[str, Any]:
    if answer.status_code != 201:
        raise RuntimeError(f"seeding failed: {answer.request.url} -> {answer.status_code} {answer.text}")
    created: dict[str, Any] = answer.json()
    return created


def seed_partners(
    admin: httpx.Client, config: SoakConfig, run: str, destination: str, hooks: Subscriber
) -> list[Partner]:
    """One tenant per partner, as an operator sets it up through the admin API."""
    partners = []
    for index in range(config.partners):
        tenant_id = f"tnt_soak{run}p{index}"
        connection_id = f"conn_soak_{index}"
        integration_id = f"int_soak_{index}"
        _created(
            admin.post(
                "/api/admin/tenants",
                json={
                    "tenant_id": tenant_id,
                    "name": f"Soak partner {index}",
                    "default_mode": "orchestration",
                },
            )
        )
        base = f"/api/admin/tenants/{tenant_id}"
        _created(
            admin.post(
                f"{base}/connections",
                json={
                    "connection_id": connection_id,
                    "name": f"soak destination {index}",
                    "url": destination,
                    "connect_timeout_seconds": 2,
                    "read_timeout_seconds": config.read_timeout_s,
                    "idempotent_retries": True,
                },
            )
        )
        _created(
            admin.post(
                f"{base}/integrations",
                json={
                    "integration_id": integration_id,
                    "name": f"soak partner {index}",
                    "mode": "orchestration",
                    "connection_id": connection_id,
                    "message_types": {MESSAGE_TYPE: {"duplicate_key_fields": ["po_number"]}},
                    "retry_policy": {
                        "retry_auto_enabled": True,
                        "retry_max": config.retry_max,
                        "ladder_seconds": list(config.ladder_s),
                    },
                },
            )
        )
        key = _created(admin.post(f"{base}/api-keys", json={"label": "soak"}))["key"]
        _created(
            admin.post(
                f"{base}/subscriptions",
                json={"url": hooks.url(tenant_id), "event_types": ["message.*"], "secret": SUBSCRIBER_SECRET},
            )
        )
        partners.append(Partner(tenant_id, integration_id, connection_id, str(key)))
    return partners


# --- posting -----------------------------------------------------------------------------------


@dataclass
class Posted:
    po_number: str
    tenant_id: str
    started: float  # epoch seconds of the first POST
    message_id: str | None = None
    status: int = 0
    resends: int = 0


def post_all(
    api_url: str,
    partners: list[Partner],
    config: SoakConfig,
    run: str,
    *,
    deadline: float,
    finished: Callable[[], int] = lambda: 0,
) -> list[Posted]:
    """Each partner posts its share from its own thread; a 429 / 503 / network failure is sent
    again with the same Idempotency-Key, as a partner would (up to 20 times); so is any 5xx (an
    ingest that timed out after its commit answers 500: the resend is deduplicated). Stops posting at
    ``deadline`` (monotonic): the run then checks what was posted. Back-pressure: a partner
    waits while the messages acknowledged and not yet ``finished()`` (how many reached a final
    status) are ``config.max_in_flight`` or more, so the load follows what the pipeline
    delivers instead of piling up a backlog."""
    import httpx  # noqa: PLC0415

    shares = [range(i, config.n, len(partners)) for i in range(len(partners))]
    lock = threading.Lock()
    acknowledged: set[str] = set()

    def in_flight() -> int:
        with lock:
            count = len(acknowledged)
        return count - finished()

    def partner_posts(partner: Partner, indexes: range) -> list[Posted]:
        out: list[Posted] = []
        headers = {"Authorization": f"Bearer {partner.api_key}"}
        with httpx.Client(base_url=api_url, headers=headers, timeout=60, trust_env=False) as client:
            for index in indexes:
                while in_flight() >= config.max_in_flight and time.monotonic() < deadline:
                    time.sleep(0.2)
                if time.monotonic() > deadline:
                    break
                payload = purchase_order(run, index)
                posted = Posted(str(payload["po_number"]), partner.tenant_id, time.time())
                body = {
                    "integration_id": partner.integration_id,
                    "message_type": MESSAGE_TYPE,
                    "external_id": payload["po_number"],
                    "payload": payload,
                }
                key = {"Idempotency-Key": f"soak-{payload['po_number']}"}
                for attempt in range(20):
                    try:
                        answer = client.post("/api/edi-hub/receive-message", json=body, headers=key)
                    except httpx.TransportError:
                        posted.resends = attempt + 1
                        time.sleep(1)
                        continue
                    posted.status = answer.status_code
                    if answer.status_code == 429 or answer.status_code >= 500:
                        posted.resends = attempt + 1
                        time.sleep(float(answer.headers.get("retry-after") or 1))
                        continue
                    if 200 <= answer.status_code < 300:
                        posted.message_id = str(answer.json()["message_id"])
                    break
                out.append(posted)
                with lock:
                    acknowledged.update([posted.message_id] if posted.message_id else [])
        return out

    with ThreadPoolExecutor(max_workers=len(partners)) as pool:
        results = pool.map(partner_posts, partners, shares)
        return [posted for share in results for posted in share]


# --- reading the table -----------------------------------------------------------------------


@dataclass
class TableState:
    messages: dict[str, dict[str, Any]]  # message id -> its STATUS item
    business_keys: list[dict[str, Any]]
    connection_states: list[dict[str, Any]]


def read_table(stack: LocalStack, tenants: set[str]) -> TableState:
    from boto3.dynamodb.types import TypeDeserializer  # noqa: PLC0415

    dynamodb = stack.client("dynamodb")
    plain = TypeDeserializer()
    messages: dict[str, dict[str, Any]] = {}
    business_keys: list[dict[str, Any]] = []
    states: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=stack.resources["HubTable"]):
        for raw in page["Items"]:
            pk, sk = raw["PK"]["S"], raw["SK"]["S"]
            if pk.startswith("MSG#") and sk == "STATUS":
                item = {k: plain.deserialize(v) for k, v in raw.items()}
                if item.get("tenant_id") in tenants:
                    messages[str(item["message_id"])] = item
            elif pk.startswith("BK#") and "#int_soak_" in pk:  # BK#<tenant>#<integration>#...
                business_keys.append({k: plain.deserialize(v) for k, v in raw.items()})
            elif pk.startswith("CONNSTATE#") and "#conn_soak_" in pk:  # CONNSTATE#<tenant>#<connection>
                states.append({k: plain.deserialize(v) for k, v in raw.items()})
    return TableState(messages, business_keys, states)


def live_schedules(stack: LocalStack) -> set[str]:
    scheduler = stack.client("scheduler")
    names: set[str] = set()
    for page in scheduler.get_paginator("list_schedules").paginate(
        GroupName=stack.resources["HubScheduleGroup"]
    ):
        names.update(schedule["Name"] for schedule in page["Schedules"])
    return names


# --- the checks --------------------------------------------------------------------------------


@dataclass
class Checks:
    failures: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    passed: list[str] = field(default_factory=list)

    def check(self, name: str, problems: list[str]) -> None:
        if problems:
            self.failures[name].extend(problems)
        else:
            self.passed.append(name)

    @property
    def ok(self) -> bool:
        return not self.failures


def history_problems(message_id: str, item: Mapping[str, Any], events: list[dict[str, Any]]) -> list[str]:
    """The message's status events (distinct webhook-ids, in version order) against its item:
    a path of allowed transitions from `received`, each event starting where the one before
    ended, the retry count never going back, ending in the current status and retry count; and
    the same moves, one event each, as the status stamps (``{"to", "v"}``) the hub wrote into
    the item's own log with every move (the last MAX_LOG_ENTRIES of them)."""
    problem = _path_problem(item, events) if events else "no event at all"
    return [f"{message_id}: {problem}"] if problem else []


def _path_problem(item: Mapping[str, Any], events: list[dict[str, Any]]) -> str | None:
    from hub.domain.status import PipelineStatus, can_transition  # noqa: PLC0415

    first = events[0]["data"]
    if events[0]["type"] != "message.received" or first.get("status_before"):
        return f"the first event is {events[0]['type']} from {first.get('status_before')}"
    previous, retries = "received", 0
    for event in events[1:]:
        data = event["data"]
        before, after = data.get("status_before"), str(data.get("status_after"))
        count = int(data.get("retry_count") or 0)
        if before != previous:
            return (
                f"{event['type']} from {before}, but the status was {previous} (an event missing or repeated)"
            )
        if not can_transition(PipelineStatus(previous), PipelineStatus(after)):
            return f"{previous} -> {after} is not an allowed transition"
        if count < retries:
            return f"the retry count went back from {retries} to {count}"
        previous, retries = after, count
    if (previous, retries) != (item.get("pipeline_status"), int(item.get("retry_count") or 0)):
        return (
            f"the events end in {previous} after {retries} retries,"
            f" the table says {item.get('pipeline_status')} after {item.get('retry_count')}"
        )
    return _log_problem(item, events)


def _log_problem(item: Mapping[str, Any], events: list[dict[str, Any]]) -> str | None:
    from hub.domain.message import MAX_LOG_ENTRIES  # noqa: PLC0415

    moves = [str(event["data"].get("status_after")) for event in events]
    log = list(item.get("log") or [])
    stamps: list[str] = []
    for entry in log:
        if "to" not in entry:
            continue
        # A hold (breaker open, connection paused) of a message already waiting changes no
        # announced field (hub.outbox.events.ANNOUNCED_FIELDS): a move with no event, by design.
        if entry.get("status") == "held" and stamps and stamps[-1] == entry["to"]:
            continue
        stamps.append(str(entry["to"]))
    if len(log) < MAX_LOG_ENTRIES and not item.get("log_trimmed"):  # the whole history is on the item
        matches = moves in (stamps, ["received", *stamps])
    else:  # its oldest entries dropped off (the bound, or the item's write unit): the newest must match
        matches = bool(stamps) and moves[-len(stamps) :] == stamps
    if matches:
        return None
    versions = [int(event["data"].get("version", 0)) for event in events]
    logged = [(entry["to"], entry.get("v")) for entry in log if "to" in entry]
    return f"events {list(zip(moves, versions, strict=True))}, but the item logged the moves {logged}"


def run_checks(
    *,
    posted: list[Posted],
    table: TableState,
    subscriber: Subscriber,
    destination: Destination,
    schedules: set[str],
    now: float,
) -> Checks:
    """Every check of the run, each with the messages that fail it."""
    checks = Checks()
    acknowledged = {p.message_id: p for p in posted if p.message_id}
    checks.check(
        "every message acknowledged (2xx) by the partner API",
        [f"{p.po_number}: answered {p.status} after {p.resends} resends" for p in posted if not p.message_id],
    )
    checks.check(
        "none lost: every acknowledged message id is in the table",
        [f"{m}: acknowledged, not in the table" for m in acknowledged if m not in table.messages],
    )
    checks.check(
        "no message in the table that was not acknowledged",
        [f"{m}: in the table, never acknowledged" for m in table.messages if m not in acknowledged],
    )
    checks.check(
        "every message final, or waiting on a schedule or a held connection", _not_waiting(table, schedules)
    )
    history = []
    for message_id, item in table.messages.items():
        history += history_problems(message_id, item, subscriber.events_of(message_id))
    checks.check("status events: one per status change, a valid path to the current status", history)
    checks.check(
        "a redelivered webhook-id carries the same event",
        [f"{i}: two different bodies" for i in subscriber.conflicting],
    )
    checks.check("every webhook verified", list(subscriber.refused))
    _destination_checks(checks, posted, table, destination)
    checks.check("no lease or admission left held", _held(table, now))
    return checks


def _not_waiting(table: TableState, schedules: set[str]) -> list[str]:
    found = []
    for message_id, item in table.messages.items():
        status = item.get("pipeline_status")
        schedule = f"retry-{item.get('execution_id')}-{item.get('retry_count', 0)}"
        waits = status == "retry_pending" and (item.get("held_reason") or schedule in schedules)
        if status not in FINAL and not waits:
            found.append(f"{message_id}: {status}, retry {item.get('retry_count', 0)}, no schedule or hold")
    return found


def _destination_checks(
    checks: Checks, posted: list[Posted], table: TableState, destination: Destination
) -> None:
    checks.check(
        "the destination applied each message at most once",
        [f"{po}: applied {count} times" for po, count in destination.applications.items() if count > 1],
    )
    checks.check(
        "one Idempotency-Key per message across all its attempts",
        [f"{po}: keys {sorted(keys)}" for po, keys in destination.keys_of.items() if len(keys) > 1],
    )
    sent_not_applied, applied_unsent = [], []
    for message_id, item in table.messages.items():
        po_number, status = str(item.get("external_id") or ""), item.get("pipeline_status")
        applied = destination.applications.get(po_number, 0)
        if status == "sent" and applied != 1:
            sent_not_applied.append(f"{message_id} ({po_number}): sent, applied {applied} times")
        if applied and status != "sent" and not item.get("uncertain"):
            applied_unsent.append(f"{message_id} ({po_number}): applied, {status}, not uncertain")
    checks.check("every sent message applied exactly once", sent_not_applied)
    checks.check("a message applied but not sent is marked uncertain", applied_unsent)
    posted_numbers = {p.po_number for p in posted}
    checks.check(
        "the destination saw only messages the partners posted",
        [f"{po}: unknown po_number" for po in destination.applications if po not in posted_numbers],
    )


def _held(table: TableState, now: float) -> list[str]:
    """Leases still live (message, business key, breaker probe) and final messages whose
    execution still holds its admission."""
    held = []
    for message_id, item in table.messages.items():
        if item.get("lease_owner") and int(item.get("lease_until") or 0) >= now:
            held.append(f"{message_id}: lease held by {item['lease_owner']} until {item['lease_until']}")
        released = "completed_at" in item or not int(item.get("active_at") or 0)
        if item.get("pipeline_status") in FINAL and not released:
            held.append(f"{message_id}: {item['pipeline_status']} but its execution still holds admission")
    for item in table.business_keys:
        if item.get("lease_owner") and int(item.get("lease_until") or 0) >= now:
            held.append(f"{item['PK']}: business-key lease held by {item['lease_owner']}")
    for item in table.connection_states:
        until = item.get("probe_until")
        if until and datetime.fromisoformat(str(until)).timestamp() >= now:
            held.append(f"{item['PK']}: breaker probe held by {item.get('probe_message')}")
    return held


# --- the run -----------------------------------------------------------------------------------


def _statuses(table: TableState) -> Counter[str]:
    return Counter(str(item.get("pipeline_status")) for item in table.messages.values())


def _distribution(values: list[int]) -> dict[str, int]:
    return {str(k): v for k, v in sorted(Counter(values).items())}


@contextmanager
def _stack(config: SoakConfig) -> Iterator[LocalStack]:
    from bench.common import lean_transaction_snapshots  # noqa: PLC0415
    from devstack.demo import parameter_overrides  # noqa: PLC0415
    from tests.aws import function_names, local_stack_on_free_ports  # noqa: PLC0415

    cooldown = {"HUB_BREAKER_COOLDOWN_SECONDS": str(config.breaker_cooldown_s)}
    with (
        lean_transaction_snapshots(),
        local_stack_on_free_ports(
            stack_name="hub-soak",
            parameter_overrides=parameter_overrides(),
            env_overrides=dict.fromkeys(function_names(), cooldown),
        ) as stack,
    ):
        # The operator's knob: a crashed batch comes back after this, not after 21 minutes. Set
        # while the worker's poller holds its receives (a long poll under way read the old one).
        with stack.sqs_poller("PipelineWorkerFunction").paused():
            stack.client("sqs").set_queue_attributes(
                QueueUrl=stack.resources["PipelineQueue"],
                Attributes={"VisibilityTimeout": str(config.visibility_s)},
            )
        yield stack


def _wait_final(
    posted: list[Posted],
    subscriber: Subscriber,
    deadline: float,
    stall_s: float,
    say: Callable[[str], None],
) -> bool:
    """Until the subscriber has seen every acknowledged message reach a final status (cheap: no
    table reads); gives up once neither that nor the local stack's own work moved for
    ``stall_s`` seconds (tests/waiting.py), or at the deadline. True when all did."""
    from tests.waiting import wait_for  # noqa: PLC0415 - the stack's progress marker

    ids = [p.message_id for p in posted if p.message_id]
    pending = set(ids)
    last_report = 0.0

    def still_pending() -> int:
        nonlocal pending, last_report
        pending = {m for m in pending if subscriber.last_status(m) not in FINAL}
        if time.monotonic() - last_report > 30:
            say(f"  waiting: {len(ids) - len(pending)} of {len(ids)} final")
            last_report = time.monotonic()
        return len(pending)

    def until_a_webhook(seconds: float) -> None:
        subscriber.changed.wait(seconds)
        subscriber.changed.clear()

    try:
        wait_for(
            still_pending,
            "every acknowledged message final",
            until=lambda count: count == 0,
            stall=stall_s,
            ceiling=max(0.0, deadline - time.monotonic()),
            interval=2.0,
            sleep=until_a_webhook,
        )
    except AssertionError as stopped:
        say(f"  {stopped}")
    return not pending


def _settle(subscriber: Subscriber, stack: LocalStack, quiet_s: float, cap_s: float) -> None:
    """Until no webhook arrived and the stack ran nothing of its own for ``quiet_s`` (or
    ``cap_s``): late and redelivered events. Time-based on purpose: a quiet period."""
    deadline = time.monotonic() + cap_s
    while time.monotonic() < deadline:
        subscriber.changed.clear()
        work = stack.activity()
        if not subscriber.changed.wait(quiet_s) and stack.activity() == work and not stack.busy():
            return


def run(config: SoakConfig, say: Callable[[str], None] = print) -> dict[str, Any]:
    """One soak; returns the summary (``summary["ok"]``: every check passed)."""
    import httpx  # noqa: PLC0415

    from devstack.demo import admin_token  # noqa: PLC0415

    rng = random.Random(config.seed)
    run_id = uuid.uuid4().hex[:8]
    destination = Destination(config, rng)
    subscriber = Subscriber()
    destination.server.start()
    subscriber.server.start()
    started = time.monotonic()
    deadline = started + config.cap_s
    try:
        with _stack(config) as stack:
            say(f"soak {run_id}: stack up in {time.monotonic() - started:.0f} s; {config.partners} partners")
            admin_url = stack.function_urls["AdminApiFunction"]
            headers = {"Authorization": f"Bearer {admin_token()}"}
            with httpx.Client(base_url=admin_url, headers=headers, timeout=60, trust_env=False) as admin:
                partners = seed_partners(admin, config, run_id, destination.url, subscriber)
            chaos = Chaos(stack, config.kill_every, config.kill_busy_share, rng)
            load_started = time.monotonic()
            chaos.start()
            say(f"posting {config.n} messages; a worker crash every {config.kill_every:g} s")
            # The crashes go on until every message is final: the drain is under chaos too (and a
            # short run still sees crashes when its workers were busy while it posted).
            try:
                posted = post_all(
                    stack.api_url,
                    partners,
                    config,
                    run_id,
                    deadline=deadline - config.drain_s,
                    finished=subscriber.final_count,
                )
                posted_s = time.monotonic() - load_started
                acknowledged = sum(1 for p in posted if p.message_id)
                say(f"posted in {posted_s:.0f} s ({acknowledged} acknowledged); kills {dict(chaos.kills)}")
                all_final = _wait_final(posted, subscriber, deadline, config.stall_s, say)
            finally:
                chaos.stop()
            final_s = time.monotonic() - load_started
            _settle(subscriber, stack, quiet_s=5.0, cap_s=config.settle_s)
            table = read_table(stack, {p.tenant_id for p in partners})
            schedules = live_schedules(stack)
            checks = run_checks(
                posted=posted,
                table=table,
                subscriber=subscriber,
                destination=destination,
                schedules=schedules,
                now=time.time(),
            )
    finally:
        destination.server.stop()
        subscriber.server.stop()
    seen = Observed(posted, table, subscriber, destination, chaos.kills, checks, all_final, posted_s, final_s)
    summary = summarize(config, seen)
    if config.results is not None:
        config.results.parent.mkdir(parents=True, exist_ok=True)
        config.results.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    for line in report(summary):
        say(line)
    return summary


@dataclass(frozen=True)
class Observed:
    """What one run saw, for its summary."""

    posted: list[Posted]
    table: TableState
    subscriber: Subscriber
    destination: Destination
    kills: Counter[str]
    checks: Checks
    all_final: bool
    posted_s: float
    final_s: float


def summarize(config: SoakConfig, seen: Observed) -> dict[str, Any]:
    posted, table, subscriber, destination = seen.posted, seen.table, seen.subscriber, seen.destination
    checks, all_final, posted_s, final_s = seen.checks, seen.all_final, seen.posted_s, seen.final_s
    started = {p.message_id: p.started for p in posted if p.message_id}
    to_sent = []
    for message_id, item in table.messages.items():
        if item.get("pipeline_status") != "sent" or message_id not in started:
            continue
        sent = [e for e in subscriber.events_of(message_id) if e["data"].get("status_after") == "sent"]
        if sent:
            at = datetime.fromisoformat(str(sent[-1]["timestamp"])).astimezone(UTC).timestamp()
            to_sent.append(at - started[message_id])
    attempts = [int(item.get("retry_count") or 0) + 1 for item in table.messages.values()]
    requests = [destination.requests.get(m, 0) for m in table.messages]
    copies = Counter(d.copies for d in subscriber.by_id.values())
    acknowledged = sum(1 for p in posted if p.message_id)

    def _round(value: float) -> float | None:
        return None if math.isnan(value) else round(value, 2)

    return {
        "as_of": now_iso(),
        "ok": checks.ok,
        "n": config.n,
        "posted": len(posted),
        "partners": config.partners,
        "acknowledged": acknowledged,
        "ingest_resends": sum(p.resends for p in posted),
        "all_final_before_cap": all_final,
        "statuses": dict(sorted(_statuses(table).items())),
        "uncertain": sum(1 for item in table.messages.values() if item.get("uncertain")),
        "attempts_per_message": _distribution(attempts),
        "destination_requests_per_message": _distribution(requests),
        "destination_answers": dict(sorted(destination.answered.items())),
        "destination_applied": sum(destination.applications.values()),
        "time_to_sent_s": {
            "p50": _round(percentile(to_sent, 50)),
            "p99": _round(percentile(to_sent, 99)),
            "max": _round(max(to_sent, default=math.nan)),
        },
        "worker_kills_survived": dict(seen.kills) | {"total": seen.kills["busy"] + seen.kills["idle"]},
        "webhooks": {
            "events": len(subscriber.by_id),
            "deliveries_per_event": {str(k): v for k, v in sorted(copies.items())},
            "cut_short": subscriber.cut_short,
        },
        "duration_s": {"posting": round(posted_s, 1), "to_all_final": round(final_s, 1)},
        "throughput_per_s": {
            "acknowledged": round(acknowledged / posted_s, 2) if posted_s else None,
            "final": round(acknowledged / final_s, 2) if final_s else None,
        },
        "config": {
            "kill_every_s": config.kill_every,
            "kill_busy_share": config.kill_busy_share,
            "answers_200_503_429_slow": list(config.answers),
            "read_timeout_s": config.read_timeout_s,
            "retry_max": config.retry_max,
            "ladder_s": list(config.ladder_s),
            "pipeline_visibility_s": config.visibility_s,
            "breaker_cooldown_s": config.breaker_cooldown_s,
        },
        "checks": dict.fromkeys(checks.passed, "passed")
        | {name: problems[:20] for name, problems in checks.failures.items()},
    }


def report(summary: Mapping[str, Any]) -> list[str]:
    """The summary table as printed (and quoted in docs/development.md)."""

    def listed(counts: Mapping[str, Any], separator: str = " ") -> str:
        return ", ".join(f"{k}{separator}{v}" for k, v in counts.items())

    times, took, rate = summary["time_to_sent_s"], summary["duration_s"], summary["throughput_per_s"]
    rows = [
        (
            "messages (acknowledged / posted)",
            f"{summary['acknowledged']} / {summary['posted']} of {summary['n']}"
            f" from {summary['partners']} partners, {summary['ingest_resends']} resends",
        ),
        ("final statuses", f"{listed(summary['statuses'])} ({summary['uncertain']} uncertain)"),
        ("attempts per message", listed(summary["attempts_per_message"], ": ")),
        ("destination requests per message", listed(summary["destination_requests_per_message"], ": ")),
        (
            "destination answers",
            f"{listed(summary['destination_answers'])}; applied {summary['destination_applied']}",
        ),
        ("time to sent", f"p50 {times['p50']} s, p99 {times['p99']} s, max {times['max']} s"),
        ("worker kills survived", listed(summary["worker_kills_survived"])),
        (
            "webhook events (deliveries each)",
            f"{summary['webhooks']['events']} ({summary['webhooks']['deliveries_per_event']}), "
            f"{summary['webhooks']['cut_short']} cut short",
        ),
        (
            "duration",
            f"posting {took['posting']} s, to all final {took['to_all_final']} s"
            + ("" if summary["all_final_before_cap"] else " (cap reached)"),
        ),
        ("throughput", f"{rate['acknowledged']} acknowledged/s, {rate['final']} final/s"),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"soak summary ({summary['as_of']}):"]
    lines += [f"  {name.ljust(width)} | {value}" for name, value in rows]
    lines.append("checks:")
    for name, outcome in summary["checks"].items():
        if outcome == "passed":
            lines.append(f"  ok    {name}")
        else:
            lines.append(f"  FAIL  {name}")
            lines += [f"          {problem}" for problem in outcome[:10]]
    return lines


def main() -> int:
    """The functions' own output (their logs and EMF lines, what CloudWatch Logs would get) goes
    to a log file, not the terminal: the instances inherit this process's stdout and stderr."""
    config = SoakConfig.from_env()
    terminal = os.fdopen(os.dup(1), "w", buffering=1)
    log_path = Path(tempfile.gettempdir()) / f"hub-soak-{os.getpid()}.log"
    print(f"soak of {config.n} messages; the stack's logs: {log_path}", file=terminal)
    with log_path.open("w") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        summary = run(config, say=lambda line: print(line, file=terminal))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
