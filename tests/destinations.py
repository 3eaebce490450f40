"""A real HTTP destination on 127.0.0.1 for delivery tests: scripted answers, recorded requests."""

from __future__ import annotations

import ssl
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.serving import serving_thread


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: str = '{"ok": true}'
    headers: dict[str, str] = field(default_factory=dict)
    delay_seconds: float = 0.0
    #: The answer waits until this is set (a test's progress, not a time; a minute at most).
    hold: threading.Event | None = None


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    #: time.monotonic() when the request arrived and when its answer was sent.
    arrived: float = 0.0
    answered: float = 0.0


class HttpDestination:
    """Answers each request with the next scripted Answer (the last one repeats). With `tls` (a
    server SSLContext), it serves HTTPS at https://localhost:<port>."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[SeenRequest] = []
        #: Requests that have arrived, counted before a scripted delay (``requests`` records each
        #: once answered): a test waits on it to know a caller is inside its call.
        self.arrivals = 0
        self._script: deque[Answer] = deque([Answer()])
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                arrived = time.monotonic()
                answer = owner._arrive()
                if answer.delay_seconds:
                    time.sleep(answer.delay_seconds)  # a scripted slow answer: time-based on purpose
                if answer.hold is not None:
                    answer.hold.wait(60)
                headers = {k.lower(): v for k, v in self.headers.items()}
                owner._record(SeenRequest(self.command, self.path, headers, body, arrived, time.monotonic()))
                payload = answer.body.encode()
                self.send_response(answer.status)
                for name, value in {"Content-Type": "application/json", **answer.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client gave up (a timeout test): nothing to answer

            do_POST = do_PUT = do_PATCH = do_GET = do_DELETE = _serve  # noqa: N815 - http.server's naming

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._tls = tls is not None
        if tls is not None:
            # Handshake in the handler thread, so a refused client never blocks the accept loop.
            self._server.socket = tls.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
            self._server.handle_error = lambda *_: None  # type: ignore[method-assign]
        self._thread = serving_thread(self._server)

    def _arrive(self) -> Answer:
        """Counts the request and takes its answer from the script."""
        with self._lock:
            self.arrivals += 1
            return self._script.popleft() if len(self._script) > 1 else self._script[0]

    def _record(self, request: SeenRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def script(self, *answers: Answer) -> None:
        with self._lock:
            self._script = deque(answers)

    @property
    def url(self) -> str:
        port = self._server.server_address[1]
        return f"https://localhost:{port}/orders" if self._tls else f"http://127.0.0.1:{port}/orders"

    def __enter__(self) -> HttpDestination:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
