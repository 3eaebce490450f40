"""Unit tier: pure code only. The network is blocked so a stray client call fails loudly."""

import socket

import pytest


def _no_network(*_args: object, **_kwargs: object) -> None:
    raise RuntimeError("unit tests must not open network connections")


@pytest.fixture(autouse=True)
def _block_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    monkeypatch.setattr(socket.socket, "connect_ex", _no_network)
    monkeypatch.setattr(socket, "create_connection", _no_network)
