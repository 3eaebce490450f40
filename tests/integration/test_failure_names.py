"""The connection test tool and a failed delivery name the host and the cause (issue 28, point 8),
through the real admin and pipeline handlers on moto, against real peers on 127.0.0.1: a closed
port, a `.invalid` name, a TLS server whose certificate is from an unknown CA, one demanding a
client certificate the hub does not present. The answer keeps its delivery error class
(`network`, `tls`) and adds `cause` and `host`; the message's failure text says both."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.destinations import HttpDestination
from tests.pipeline import configure, send, status
from tests.pki import Pki

TEST_PATH = "/api/admin/tenants/t1/connections"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens once it is closed


def host_of(url: str) -> str:
    return url.split("/")[2]


@pytest.fixture
def tls_destination(pki: Pki, tmp_path: Path) -> Iterator[HttpDestination]:
    with HttpDestination(tls=pki.server_context(tmp_path)) as server:
        yield server


@pytest.fixture
def mtls_destination(pki: Pki, tmp_path: Path) -> Iterator[HttpDestination]:
    with HttpDestination(tls=pki.server_context(tmp_path, require_client_certificate=True)) as server:
        yield server


def probed(admin_api: Any, connection_id: str, **connection: Any) -> dict[str, Any]:
    """Saves the connection of tenant t1, then runs the test tool on it: its answer."""
    created = admin_api("POST", TEST_PATH, body={"connection_id": connection_id, **connection})
    assert created.status == 201, created.body
    answer = admin_api("POST", f"{TEST_PATH}/{connection_id}/test")
    assert answer.status == 200, answer.body
    return dict(answer.body)


class TestTheTestTool:
    def test_a_closed_port_is_network_refused_by_that_host(self, stack, tenancy, admin_api):
        port = closed_port()

        answer = probed(admin_api, "closed", url=f"http://127.0.0.1:{port}/orders")

        assert answer == {
            "ok": False,
            "error_class": "network",
            "cause": "refused",
            "host": f"127.0.0.1:{port}",
            "dest_status": None,
            "detail": f"connection refused by 127.0.0.1:{port}",
        }

    def test_an_unresolvable_name_is_network_dns(self, stack, tenancy, admin_api):
        answer = probed(admin_api, "nowhere", url="https://erp.invalid/orders")

        assert (answer["ok"], answer["error_class"], answer["cause"]) == (False, "network", "dns")
        assert answer["host"] == "erp.invalid:443"
        assert answer["detail"].startswith("DNS lookup of erp.invalid failed")

    def test_an_unknown_ca_is_tls_saying_the_certificate_problem(
        self, stack, tenancy, admin_api, tls_destination
    ):
        host = host_of(tls_destination.url)

        answer = probed(admin_api, "untrusted", url=tls_destination.url)

        assert (answer["error_class"], answer["cause"], answer["host"]) == ("tls", "tls", host)
        assert answer["detail"] == (
            f"TLS handshake with {host} failed: "
            "certificate verify failed: unable to get local issuer certificate"
        )

    def test_a_client_certificate_demanded_and_not_presented_is_tls_saying_so(
        self, stack, tenancy, admin_api, pki, mtls_destination
    ):
        host = host_of(mtls_destination.url)

        answer = probed(admin_api, "mtls", url=mtls_destination.url, trusted_ca_pem=pki.ca.cert_pem.decode())

        assert (answer["error_class"], answer["cause"], answer["host"]) == ("tls", "tls", host)
        assert answer["detail"].startswith(f"TLS handshake with {host} failed: ")
        assert "client certificate" in answer["detail"]


class TestTheMessagesFailureText:
    def test_a_refused_delivery_names_the_host_in_the_text_and_the_cause_in_its_attempt(
        self, stack, tenancy, ingest_api, worker, admin_api
    ):
        port = closed_port()
        configure(stack, tenancy, SimpleNamespace(url=f"http://127.0.0.1:{port}/orders"))

        message_id = send(ingest_api, tenancy, {"po_number": "PO-REFUSED"})
        worker()

        stored = status(stack, message_id)
        assert stored["last_retry_error_class"] == "network"
        assert stored["dest_status_text"] == f"connection refused by 127.0.0.1:{port}"
        [attempt] = attempts(admin_api, message_id)
        assert (attempt["error_class"], attempt["cause"], attempt["host"]) == (
            "network",
            "refused",
            f"127.0.0.1:{port}",
        )

    def test_a_tls_failure_names_the_host_and_the_certificate_problem(
        self, stack, tenancy, ingest_api, worker, admin_api, pki, mtls_destination
    ):
        host = host_of(mtls_destination.url)
        configure(stack, tenancy, mtls_destination, trusted_ca_pem=pki.ca.cert_pem.decode())

        message_id = send(ingest_api, tenancy, {"po_number": "PO-MTLS"})
        worker()

        stored = status(stack, message_id)
        assert stored["last_retry_error_class"] == "tls"
        assert stored["dest_status_text"].startswith(f"TLS handshake with {host} failed: ")
        assert "client certificate" in stored["dest_status_text"]
        [attempt] = attempts(admin_api, message_id)
        assert (attempt["cause"], attempt["host"]) == ("tls", host)
        assert mtls_destination.requests == []


def attempts(admin_api: Any, message_id: str) -> list[dict[str, Any]]:
    view = admin_api("GET", f"/api/admin/messages/{message_id}")
    assert view.status == 200, view.body
    return [entry for entry in view.body["timeline"] if entry["kind"] == "attempt"]
