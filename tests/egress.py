"""Test parts for the egress policy: the local stack's policy (loopback allowed), a DNS the test
controls, and a record of every socket connect so a test can prove none was opened.

These machines may only send traffic to loopback: denied targets are reached only through
names `FakeDns` resolves, and the policy refuses them before any socket connects."""

from __future__ import annotations

import ipaddress
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from devstack.stack import LOCAL_EGRESS_ALLOWED_CIDRS
from hub.delivery.egress import EgressPolicy

#: What the local stack and the tests' stacks allow: loopback.
LOCAL_EGRESS = EgressPolicy.from_setting(LOCAL_EGRESS_ALLOWED_CIDRS)

_connects: list[tuple[str, int]] = []
_recording = threading.Event()
_hooked = False
_lock = threading.Lock()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "socket.connect" and _recording.is_set():
        address = args[1]
        if isinstance(address, tuple) and len(address) >= 2:
            with _lock:
                _connects.append((str(address[0]), int(address[1])))


@contextmanager
def recorded_connects() -> Iterator[list[tuple[str, int]]]:
    """Every (address, port) a socket of this process connects to inside the block (CPython's
    `socket.connect` audit event: nothing escapes it, whichever library opens the socket)."""
    global _hooked  # noqa: PLW0603 - one audit hook per process: hooks cannot be removed
    with _lock:
        if not _hooked:
            sys.addaudithook(_audit)
            _hooked = True
        _connects.clear()
    _recording.set()
    seen: list[tuple[str, int]] = []
    try:
        yield seen
    finally:
        _recording.clear()
        with _lock:
            seen.extend(_connects)
            _connects.clear()


def non_loopback(connects: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """The connects that went anywhere but loopback (what a test of a denied target forbids)."""
    return [c for c in connects if not ipaddress.ip_address(c[0].split("%", 1)[0]).is_loopback]


class FakeDns:
    """socket.getaddrinfo for test names (`*.test`); every other name resolves as usual. A name
    maps to a list of address lists: the n-th lookup gets the n-th list (the last one repeats),
    which is how a test plays DNS rebinding."""

    def __init__(self, real: Callable[..., Any]) -> None:
        self._real = real
        self.names: dict[str, list[list[str]]] = {}
        self.lookups: dict[str, int] = {}

    def add(self, name: str, *answers: list[str]) -> None:
        self.names[name] = [list(a) for a in answers]

    def __call__(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in self.names:
            return self._real(host, port, *args, **kwargs)
        count = self.lookups.get(name, 0)
        self.lookups[name] = count + 1
        answers = self.names[name]
        addresses = answers[min(count, len(answers) - 1)]
        if not addresses:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        out = []
        for address in addresses:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sockaddr = (
                (address, int(port or 0), 0, 0) if family == socket.AF_INET6 else (address, int(port or 0))
            )
            out.append((family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", sockaddr))
        return out


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> FakeDns:
    dns = FakeDns(socket.getaddrinfo)
    monkeypatch.setattr(socket, "getaddrinfo", dns)
    return dns
