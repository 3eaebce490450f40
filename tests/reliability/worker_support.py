"""Real parts for the worker's reliability tests (tests/reliability/test_worker_faults.py): a
destination that honours our `Idempotency-Key` and counts what it applied, a gate in front of the
local stack's EventBridge Scheduler that can refuse the worker's calls, and readers of what the
stack stored (the message item's lease, the table's stream, the retry schedules)."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from devstack.demo import pointed_at
from devstack.stack import LocalStack
from hub.adapters.dynamo import keys
from tests.outbox import StreamReader
from tests.pipeline import integration, post  # noqa: F401 - their home is tests/pipeline.py now
from tests.serving import serving_thread
from tests.waiting import CEILING_SECONDS, STALL_SECONDS, wait_for

T = TypeVar("T")


def wait_until(probe: Callable[[], T], what: str, timeout: float | None = None, interval: float = 0.1) -> T:
    """Polls `probe` until it returns something truthy (and returns it): tests/waiting.py's
    wait_for, which fails once neither the probe's answer nor the stack's activity moved for
    `timeout` seconds (default: STALL_SECONDS), or at its ceiling (the longer of CEILING_SECONDS
    and `timeout`)."""
    stall = STALL_SECONDS if timeout is None else timeout
    return wait_for(probe, what, stall=stall, ceiling=max(CEILING_SECONDS, stall), interval=interval)


def process_gone(pid: int) -> bool:
    """The process has exited (reaped, or a zombie its parent has yet to reap). Linux. Reading
    the stat file of a process reaped after the open fails with ESRCH: gone as well."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


# --- the destination --------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """How the destination answers one request. A 2xx is applied (once per key) before the
    answer; `delay_seconds` then holds the answer back (the client may time out or crash
    meanwhile: the destination has applied it all the same); `hold` holds it until released."""

    status: int = 200
    delay_seconds: float = 0.0
    hold: bool = False
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Arrival:
    key: str
    #: Wall-clock time the request arrived (compared with the hub's `next_retry_at`).
    at: datetime
    applied: bool


class KeyedDestination:
    """A destination system that honours idempotency keys, on 127.0.0.1: the first 2xx request
    of an `Idempotency-Key` applies the order, a later one with the same key is answered the same
    but applies nothing. `applied` counts what it applied per key, `arrivals` every request.
    Answers follow `script` (the last reply repeats)."""

    def __init__(self) -> None:
        self.applied: Counter[str] = Counter()
        self.arrivals: list[Arrival] = []
        self._script: list[Reply] = [Reply()]
        self._lock = threading.Lock()
        self._released = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                reply = owner._arrive(self.headers.get("Idempotency-Key") or "")
                if reply.hold:
                    owner._released.wait(60)
                if reply.delay_seconds:
                    time.sleep(reply.delay_seconds)  # a scripted slow answer: time-based on purpose
                body = b'{"ok": true}' if reply.status < 300 else b'{"error": "scripted"}'
                try:
                    self.send_response(reply.status)
                    for name, value in (("Content-Type", "application/json"), *reply.headers):
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    return  # the client is gone (timed out, or its process was killed)

            do_PUT = do_POST  # noqa: N815 - http.server's naming

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = serving_thread(self._server)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/orders"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script = list(replies)

    def release(self) -> None:
        """Answers every held request (and any later one scripted to hold)."""
        self._released.set()

    def requests_for(self, key: str) -> list[Arrival]:
        with self._lock:
            return [a for a in self.arrivals if a.key == key]

    def _arrive(self, key: str) -> Reply:
        with self._lock:
            reply = self._script.pop(0) if len(self._script) > 1 else self._script[0]
            applies = 200 <= reply.status < 300 and key != "" and self.applied[key] == 0
            if applies:
                self.applied[key] += 1
            self.arrivals.append(Arrival(key, datetime.now(UTC), applies))
            return reply

    def __enter__(self) -> KeyedDestination:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()


# --- the hub's data on the stack --------------------------------------------------------------


def message_item(stack: LocalStack, message_id: str) -> dict[str, Any]:
    """The stored message item (its status record, execution state and lease), values unwrapped
    (numbers stay strings, as DynamoDB sends them)."""
    key = {name: {"S": value} for name, value in keys.message_key(message_id).items()}
    item = stack.client("dynamodb").get_item(
        TableName=stack.resources["HubTable"], Key=key, ConsistentRead=True
    )
    return {name: next(iter(value.values())) for name, value in item["Item"].items()}


def message_items(stack: LocalStack, message_ids: list[str]) -> list[dict[str, Any]]:
    """The stored message items of `message_ids`, read by BatchGetItem (100 a call), values
    unwrapped as `message_item` does: one read per hundred messages where the admin API takes a
    request (and a function instance's work) per message."""
    dynamodb, table = stack.client("dynamodb"), stack.resources["HubTable"]
    found: list[dict[str, Any]] = []
    for start in range(0, len(message_ids), 100):
        wanted = [
            {name: {"S": value} for name, value in keys.message_key(m).items()}
            for m in message_ids[start : start + 100]
        ]
        request: dict[str, Any] = {table: {"Keys": wanted, "ConsistentRead": True}}
        while request:
            answer = dynamodb.batch_get_item(RequestItems=request)
            found += [
                {k: next(iter(v.values())) for k, v in item.items()} for item in answer["Responses"][table]
            ]
            request = answer.get("UnprocessedKeys") or {}
    return found


def expire_lease(stack: LocalStack, message_id: str, owner: str) -> bool:
    """Moves the lease `owner` holds on the message to the past, as when its 5 minutes
    (hub.pipeline.rules.LOCK_LEASE, no setting) have run out; only while `owner` still holds it.
    False when it no longer does (the run finished or another took the message meanwhile)."""
    key = {name: {"S": value} for name, value in keys.message_key(message_id).items()}
    dynamodb = stack.client("dynamodb")
    try:
        dynamodb.update_item(
            TableName=stack.resources["HubTable"],
            Key=key,
            UpdateExpression="SET lease_until = :past",
            ConditionExpression="lease_owner = :owner",
            ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 1)}, ":owner": {"S": owner}},
        )
    except dynamodb.exceptions.ConditionalCheckFailedException:
        return False
    return True


def queue_counts(stack: LocalStack, queue: str) -> dict[str, int]:
    """A queue's visible, in-flight and delayed message counts."""
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    attributes = stack.client("sqs").get_queue_attributes(
        QueueUrl=stack.resources[queue], AttributeNames=names
    )
    return {name: int(value) for name, value in attributes["Attributes"].items()}


def queued_bodies(stack: LocalStack, queue: str) -> list[dict[str, Any]]:
    """The bodies of the messages visible on `queue`, read and put back (visibility 0)."""
    sqs = stack.client("sqs")
    answer = sqs.receive_message(QueueUrl=stack.resources[queue], MaxNumberOfMessages=10, VisibilityTimeout=5)
    bodies = []
    for message in answer.get("Messages", []):
        bodies.append(json.loads(message["Body"]))
        sqs.change_message_visibility(
            QueueUrl=stack.resources[queue], ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )
    return bodies


def retry_schedules(stack: LocalStack, message_id: str) -> list[dict[str, Any]]:
    """The retry schedules waiting for `message_id` (read from moto directly, not through a gate)."""
    scheduler = stack.client("scheduler")
    group = stack.resources["HubScheduleGroup"]
    found = []
    for summary in scheduler.list_schedules(GroupName=group)["Schedules"]:
        schedule = scheduler.get_schedule(GroupName=group, Name=summary["Name"])
        if json.loads(schedule["Target"]["Input"]).get("message_id") == message_id:
            found.append(schedule)
    return found


def stream_records(stack: LocalStack, message_id: str) -> list[dict[str, Any]]:
    """The table stream's records of the message item, oldest first, shaped as Lambda delivers
    them (what a redelivery of the publisher's batch hands it again)."""
    wanted = keys.message_key(message_id)
    with pointed_at(stack):
        records = StreamReader(stack.resources["HubTable"]).new_records()
    return [r for r in records if {n: v["S"] for n, v in r["dynamodb"]["Keys"].items()} == wanted]


def new_status(record: dict[str, Any]) -> str | None:
    image = record["dynamodb"].get("NewImage") or {}
    status = image.get("pipeline_status", {}).get("S")
    return str(status) if status is not None else None
