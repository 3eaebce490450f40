"""Record and replay of AWS HTTP exchanges: AWS answers in no time, so what remains is our code.

A tape server is a small HTTP/1.1 server (threaded, keep-alive, Nagle off) on 127.0.0.1, run in
its **own process** (``TapeServer`` starts ``python -m bench.replay``), so answering costs the
measured process no CPU. Clients reach it through ``AWS_ENDPOINT_URL``. It keeps named tapes,
each a sequence of exchanges (operation, status, headers, body), and one selected tape in one mode:

- ``record``: each request is forwarded to the upstream (a moto server) and the exchange is
  appended to the tape, in arrival order;
- ``replay``: the Nth request gets the tape's Nth recorded answer at once, byte for byte. Requests
  are matched by **sequence only**, never by body (request ids, timestamps and new ids differ
  from run to run); the operation (``X-Amz-Target``, the query ``Action``, or method and first
  path segment for REST APIs) must equal the recorded one, else the answer is a 400
  ``BenchReplayMismatch`` (not retried by the SDK) and the mismatch is counted.

Whatever calls a handler makes are recorded and replayed: nothing here knows which calls those
are. ``select`` answers with the state of the tape selected before (how many exchanges were
served of how many recorded, and mismatches so far), so a driver checks each replay as it
selects the next tape. Control requests use the path prefix ``/__tape__/``.

    python -m bench.replay --upstream http://127.0.0.1:5000   # prints "port <n>", then serves
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
CONTROL = "/__tape__/"
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"}


def operation_key(method: str, path: str, headers: Any, body: bytes) -> str:
    """What a request calls, as far as matching goes (not its parameters)."""
    target = headers.get("x-amz-target")
    if target:
        return str(target)
    query = urlsplit(path).query
    actions = parse_qs(query).get("Action")
    if not actions and body and str(headers.get("content-type", "")).startswith("application/x-www-form"):
        actions = parse_qs(body.decode("utf-8", "replace")).get("Action")
    if actions:
        return actions[0]
    segment = urlsplit(path).path.strip("/").split("/", 1)[0]
    return f"{method} /{segment}"


@dataclass(frozen=True)
class Exchange:
    operation: str
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def wire(self) -> bytes:
        head = [f"HTTP/1.1 {self.status} {self.reason}"]
        head += [f"{name}: {value}" for name, value in self.headers]
        head.append(f"Content-Length: {len(self.body)}")
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + self.body


def _mismatch(expected: str, got: str) -> Exchange:
    body = json.dumps(
        {"__type": "BenchReplayMismatch", "message": f"replay expected {expected}, got {got}"}
    ).encode()
    return Exchange(got, 400, "Bad Request", (("Content-Type", "application/x-amz-json-1.0"),), body)


@dataclass
class _State:
    upstream: tuple[str, int] | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    tapes: dict[str, list[Exchange]] = field(default_factory=dict)
    current: str | None = None
    mode: str = "off"
    cursor: int = 0
    mismatches: int = 0
    mismatch_notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        tape = self.tapes.get(self.current or "", [])
        return {
            "name": self.current,
            "mode": self.mode,
            "served": self.cursor if self.mode == "replay" else len(tape),
            "length": len(tape),
            "operations": [exchange.operation for exchange in tape],
            "mismatches": self.mismatches,
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, state: _State) -> None:
        self.state = state
        self.local = threading.local()
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _any(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path.startswith(CONTROL):
            self._control(body)
            return
        state = self.server.state
        operation = operation_key(self.command, self.path, self.headers, body)
        with state.lock:
            mode, name = state.mode, state.current or ""
            exchange: Exchange | None = None
            if mode == "replay":
                tape = state.tapes.get(name, [])
                expected = tape[state.cursor].operation if state.cursor < len(tape) else "<end of tape>"
                if expected == operation:
                    exchange = tape[state.cursor]
                    state.cursor += 1
                else:
                    state.mismatches += 1
                    if len(state.mismatch_notes) < 20:
                        state.mismatch_notes.append(
                            f"{name}#{state.cursor}: expected {expected}, got {operation}"
                        )
                    exchange = _mismatch(expected, operation)
        if exchange is None:  # record (or off: forward without keeping)
            exchange = self._forward(operation, body)
            if mode == "record":
                with state.lock:
                    state.tapes.setdefault(name, []).append(exchange)
        self.wfile.write(exchange.wire())

    def _forward(self, operation: str, body: bytes) -> Exchange:
        upstream = self.server.state.upstream
        if upstream is None:
            return _mismatch("<no upstream to record from>", operation)
        headers = {name: value for name, value in self.headers.items() if name.lower() not in _HOP_BY_HOP}
        headers["Host"] = f"{upstream[0]}:{upstream[1]}"
        headers["Content-Length"] = str(len(body))
        for attempt in (1, 2):  # a kept-alive upstream connection may have been closed
            connection = getattr(self.server.local, "connection", None)
            if connection is None:
                connection = http.client.HTTPConnection(*upstream, timeout=120)
                self.server.local.connection = connection
            try:
                connection.request(self.command, self.path, body=body, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
            except (OSError, http.client.HTTPException):
                connection.close()
                self.server.local.connection = None
                if attempt == 2:
                    raise
                continue
            kept = tuple((k, v) for k, v in answer.getheaders() if k.lower() not in _HOP_BY_HOP)
            return Exchange(operation, answer.status, answer.reason, kept, data)
        raise AssertionError("unreachable")

    def _control(self, body: bytes) -> None:
        state = self.server.state
        request = json.loads(body) if body else {}
        command = self.path[len(CONTROL) :]
        with state.lock:
            answer: dict[str, Any] = {"previous": state.summary()}
            if command == "select":
                state.current, state.mode, state.cursor = request["name"], request["mode"], 0
                if state.mode == "record":
                    state.tapes[state.current] = []
            elif command == "stats":
                answer["mismatch_notes"] = list(state.mismatch_notes)
                answer["tapes"] = {name: len(tape) for name, tape in state.tapes.items()}
        data = json.dumps(answer).encode()
        self.wfile.write(Exchange("", 200, "OK", (("Content-Type", "application/json"),), data).wire())

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _any  # noqa: N815


def serve(upstream: str | None) -> None:
    """Serves until stdin closes (the parent went away) or the process is terminated."""
    target = urlsplit(upstream) if upstream else None
    state = _State(upstream=(target.hostname or "127.0.0.1", target.port or 80) if target else None)
    server = _Server(state)
    print(f"port {server.server_port}", flush=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    sys.stdin.read()  # EOF when the parent closes our stdin or exits
    server.shutdown()


class TapeServer:
    """Runs a tape server in a child process for the duration of a ``with`` block."""

    def __init__(self, upstream: str | None) -> None:
        self.upstream = upstream
        self.url = ""
        self._process: subprocess.Popen[str] | None = None
        self._connection: http.client.HTTPConnection | None = None

    def __enter__(self) -> TapeServer:
        command = [sys.executable, "-m", "bench.replay"]
        if self.upstream:
            command += ["--upstream", self.upstream]
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")}
        self._process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline().split()
        if len(line) != 2 or line[0] != "port":
            self.__exit__(None, None, None)
            raise RuntimeError(f"tape server did not start: {line}")
        self.url = f"http://127.0.0.1:{line[1]}"
        self._connection = http.client.HTTPConnection("127.0.0.1", int(line[1]), timeout=30)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._connection is not None:
            self._connection.close()
        if self._process is not None:
            if self._process.stdin is not None:
                self._process.stdin.close()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.terminate()  # our own child, by its handle
                self._process.wait(timeout=5)
            self._process = None

    def _call(self, command: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self._connection is not None
        self._connection.request("POST", CONTROL + command, body=json.dumps(body or {}))
        answer: dict[str, Any] = json.loads(self._connection.getresponse().read())
        return answer

    def select(self, name: str, mode: str) -> dict[str, Any]:
        """Selects tape ``name`` in ``mode`` (record: starts it empty; replay: from its first
        exchange); returns the summary of the tape selected before."""
        return dict(self._call("select", {"name": name, "mode": mode})["previous"])

    def stats(self) -> dict[str, Any]:
        return self._call("stats")


def replay_complete(summary: dict[str, Any], mismatches_before: int) -> bool:
    """True when a replay served its whole tape and caused no mismatch."""
    return bool(
        summary["mode"] == "replay"
        and summary["served"] == summary["length"]
        and summary["mismatches"] == mismatches_before
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--upstream", default=None, help="the AWS endpoint to record from (a moto server)")
    serve(parser.parse_args().upstream)
    return 0


if __name__ == "__main__":
    sys.exit(main())
