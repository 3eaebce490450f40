"""A demo delivery destination: answers every request with a digest of what it received.

The answer carries the method, path, a few headers and the body's sha256 and length —
never the body itself, so logs and responses stay small and free of payload data.
``/status/<code>`` answers with that status code, to exercise a destination's failures.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from devstack.http_server import AppHandler, BackgroundHttpServer

ECHOED_HEADERS = ("content-type", "idempotency-key")
_STATUS_PATH = re.compile(r"/status/(\d{3})(?:/|$)")


@dataclass(frozen=True)
class EchoedRequest:
    """What the echo server remembers about one request (no body, only its digest)."""

    method: str
    path: str
    headers: dict[str, str]
    sha256: str
    length: int
    status: int

    def as_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "sha256": self.sha256,
            "length": self.length,
        }


class _EchoHandler(AppHandler["EchoServer"]):
    def serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        match = _STATUS_PATH.search(self.path)
        status = int(match.group(1)) if match else 200
        record = EchoedRequest(
            method=self.command,
            path=self.path.split("?", 1)[0],
            headers={name: self.headers[name] for name in ECHOED_HEADERS if name in self.headers},
            sha256=hashlib.sha256(body).hexdigest(),
            length=len(body),
            status=status,
        )
        self.app.record(record)
        answer = json.dumps(record.as_json()).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer)


class EchoServer(BackgroundHttpServer):
    """Threaded echo server on ``host:port`` (0 picks a free port); keeps the last requests."""

    def __init__(self, host: str = "127.0.0.1", port: int = 3100, keep: int = 1000) -> None:
        self.requests: deque[EchoedRequest] = deque(maxlen=keep)
        self._lock = threading.Lock()
        super().__init__("echo", host, port, _EchoHandler)

    def record(self, request: EchoedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    @property
    def url(self) -> str:
        return f"{self.base_url}/echo"
