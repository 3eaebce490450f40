"""Real network faults between a function and the embedded AWS: a forwarding proxy on 127.0.0.1.

A function pointed at the proxy (``AWS_ENDPOINT_URL_DYNAMODB`` / ``_SQS`` / ``_SCHEDULER`` in its
environment; botocore prefers a service's own endpoint variable to ``AWS_ENDPOINT_URL``) talks to
moto through it. Each request is told apart by its ``X-Amz-Target`` header (botocore 1.44 speaks
the JSON protocol to DynamoDB and SQS: ``DynamoDB_20120810.<Operation>``,
``AmazonSQS.<Operation>``) or, for a REST service (EventBridge Scheduler), by its SigV4 signing
name and method + path (``devstack.request_counter``), and is either forwarded or refused the way
an outage looks from the client:

- ``Fault.UNAVAILABLE``: HTTP 503 with a ``ServiceUnavailable`` error body (botocore retries it
  with a 25-50 ms base backoff, then raises ClientError);
- ``Fault.THROTTLED``: HTTP 400 ``ThrottlingException`` (retried with a 1 s base backoff: slower);
- ``Fault.DROP``: the connection is closed without an answer (botocore: ConnectionClosedError).

Nothing in the hub is patched: the hub's adapters see exactly what they would see on AWS.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from devstack.request_counter import rest_operation
from tests.serving import serving_thread

#: X-Amz-Target prefixes of the services the proxy tells apart.
SERVICE_TARGETS = {"DynamoDB_20120810": "dynamodb", "AmazonSQS": "sqs"}
#: Headers that belong to one hop, not to the request or answer forwarded.
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length"}


class Fault(Enum):
    UNAVAILABLE = "unavailable"
    THROTTLED = "throttled"
    DROP = "drop"


@dataclass(frozen=True)
class Rule:
    """A fault or a delay for the calls of one operation whose JSON body `when` accepts."""

    service: str
    operation: str
    when: Callable[[dict[str, Any]], bool]
    fault: Fault | None = None
    delay_seconds: float = 0.0


@dataclass(frozen=True)
class SeenCall:
    """One AWS call through the proxy: its service, operation, JSON body and whether it was refused."""

    service: str
    operation: str
    body: dict[str, Any]
    refused: bool


_SIGNING_NAME = re.compile(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/aws4_request")


def _target(headers: Any, method: str, path: str) -> tuple[str, str]:
    target = headers.get("X-Amz-Target")
    if target:
        prefix, _, operation = target.partition(".")
        return SERVICE_TARGETS.get(prefix, prefix.lower()), operation
    signed = _SIGNING_NAME.search(headers.get("Authorization") or "")
    service = signed.group(1) if signed else "unknown"
    return service, rest_operation(service, method, urlsplit(path).path)


class AwsFaultProxy:
    """Forwards AWS JSON-protocol calls to `upstream` (set it once moto runs), refusing those a
    fault is set for. Thread-safe; records every call it sees (``calls``)."""

    def __init__(self) -> None:
        self.upstream = ""
        self.calls: list[SeenCall] = []
        self._faults: dict[tuple[str, str | None], Fault] = {}
        self._rules: list[Rule] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _relay(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                service, operation = _target(self.headers, self.command, self.path)
                rule = owner._rule_for(service, operation, body)
                if rule is not None and rule.delay_seconds:
                    time.sleep(rule.delay_seconds)  # a slow network / service, as the client sees it
                fault = (rule.fault if rule else None) or owner._fault_for(service, operation)
                owner._record(service, operation, body, refused=fault is not None)
                if fault is None:
                    self._forward(body)
                elif fault is Fault.DROP:
                    self.close_connection = True
                    self.connection.close()
                else:
                    self._refuse(fault)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _relay  # noqa: N815

            def _forward(self, body: bytes) -> None:
                upstream = urlsplit(owner.upstream)
                connection = http.client.HTTPConnection(upstream.hostname or "", upstream.port, timeout=30)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                    connection.request(self.command, self.path, body=body, headers=headers)
                    answer = connection.getresponse()
                    payload = answer.read()
                    self.send_response(answer.status)
                    for name, value in answer.getheaders():
                        if name.lower() not in _HOP_BY_HOP:
                            self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                finally:
                    connection.close()

            def _refuse(self, fault: Fault) -> None:
                status, code = (
                    (503, "ServiceUnavailable")
                    if fault is Fault.UNAVAILABLE
                    else (400, "ThrottlingException")
                )
                payload = json.dumps({"__type": code, "message": f"fault injected: {fault.value}"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.0")
                self.send_header("x-amzn-query-error", f"{code};Sender")
                self.send_header("x-amzn-ErrorType", code)  # how REST services name the error
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = serving_thread(self._server)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def environment(self, *services: str) -> dict[str, str]:
        """A function's environment overrides that send `services` ("dynamodb", "sqs",
        "scheduler") here."""
        return {f"AWS_ENDPOINT_URL_{service.upper()}": self.url for service in services}

    def fail(self, service: str, operation: str | None = None, fault: Fault = Fault.UNAVAILABLE) -> None:
        """Refuses every call to `service` (only `operation`, when given) until `heal`."""
        with self._lock:
            self._faults[(service, operation)] = fault

    def fail_when(
        self, service: str, operation: str, when: Callable[[dict[str, Any]], bool], fault: Fault
    ) -> None:
        """Refuses the calls of `operation` whose JSON body `when` accepts (e.g. one item's put)."""
        with self._lock:
            self._rules.append(Rule(service, operation, when, fault=fault))

    def delay_when(
        self, service: str, operation: str, when: Callable[[dict[str, Any]], bool], seconds: float
    ) -> None:
        """Holds the calls of `operation` whose JSON body `when` accepts for `seconds` before
        forwarding them."""
        with self._lock:
            self._rules.append(Rule(service, operation, when, delay_seconds=seconds))

    def heal(self) -> None:
        with self._lock:
            self._faults.clear()
            self._rules.clear()

    def _rule_for(self, service: str, operation: str, body: bytes) -> Rule | None:
        with self._lock:
            rules = [r for r in self._rules if (r.service, r.operation) == (service, operation)]
        if not rules:
            return None
        try:
            decoded = json.loads(body) if body else {}
        except ValueError:
            return None
        return next((r for r in rules if isinstance(decoded, dict) and r.when(decoded)), None)

    def seen(self, service: str, operation: str) -> list[SeenCall]:
        """The calls to `service`'s `operation` seen so far (forwarded or refused)."""
        with self._lock:
            return [c for c in self.calls if (c.service, c.operation) == (service, operation)]

    def _fault_for(self, service: str, operation: str) -> Fault | None:
        with self._lock:
            return self._faults.get((service, operation)) or self._faults.get((service, None))

    def _record(self, service: str, operation: str, body: bytes, *, refused: bool) -> None:
        try:
            decoded = json.loads(body) if body else {}
        except ValueError:
            decoded = {}
        with self._lock:
            self.calls.append(
                SeenCall(service, operation, decoded if isinstance(decoded, dict) else {}, refused)
            )

    def __enter__(self) -> AwsFaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
