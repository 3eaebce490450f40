"""A failed delivery names the host and the cause (issue 28, point 8), for REST (httpx) and SOAP
(zeep/requests) alike, against real peers on this machine: a closed port (refused), a `.invalid`
name (DNS), TLS servers whose certificate is from an unknown CA, expired or for another name,
servers demanding a client certificate the hub does not present or does not trust, a slow
answer (timeout) and an error status. The error classes stay what the retry policy knows
(`network`, `timeout`, `tls`, `http_5xx`); the cause and the host come beside them, and the text
says both (hub.delivery.causes)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from hub.delivery.http import HttpConnector
from hub.delivery.port import ClientCertificate, DeliveryFailed, OutboundRequest
from hub.delivery.soap import SoapConnector
from hub.domain.failure import ErrorClass, FailureCause
from hub.domain.redaction import STATUS_TEXT_LIMIT
from hub.domain.tenancy import Destination
from tests.destinations import Answer, HttpDestination
from tests.egress import LOCAL_EGRESS, FakeDns, fake_dns
from tests.integration.delivery.test_soap_connector import FixedCertificates, sefaz, status_request
from tests.pki import PFX_PASSWORD, Pki, issue
from tests.soap_server import SoapServer

__all__ = ["fake_dns"]  # a fixture used by name

REQUEST = OutboundRequest(
    message_id="msg_1",
    idempotency_key="msg_1",
    body=b'{"po_number":"PO-1"}',
    content_type="application/json",
    correlation_id="corr_1",
)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens once it is closed


def port_of(url: str) -> int:
    return int(url.split("/")[2].rsplit(":", 1)[1])


def rest_failure(destination: Destination, certificate: ClientCertificate | None = None) -> DeliveryFailed:
    http = HttpConnector(FixedCertificates(certificate), egress=LOCAL_EGRESS)
    with pytest.raises(DeliveryFailed) as caught:
        http.deliver(destination, REQUEST)
    return caught.value


def soap_failure(destination: Destination, certificate: ClientCertificate | None, pki: Pki) -> DeliveryFailed:
    soap = SoapConnector(FixedCertificates(certificate), ca_pem=pki.ca.cert_pem, egress=LOCAL_EGRESS)
    with pytest.raises(DeliveryFailed) as caught:
        soap.deliver(destination, status_request())
    return caught.value


def assert_named(failure: DeliveryFailed, cause: FailureCause, host: str) -> None:
    assert (failure.cause, failure.host) == (cause, host)
    # The host:port (a DNS failure names the name it looked up).
    assert (host if cause is not FailureCause.DNS else host.rsplit(":", 1)[0]) in failure.dest_status_text
    assert len(failure.dest_status_text) <= STATUS_TEXT_LIMIT


def a_client_certificate(pki: Pki, pfx: bytes | None = None) -> ClientCertificate:
    return ClientCertificate(pfx=pfx or pki.client_pfx, password=PFX_PASSWORD)


@pytest.fixture
def tls_destination(pki: Pki, tmp_path: Path) -> Iterator[HttpDestination]:
    """HTTPS on localhost with a certificate from the test CA (unknown to the system store)."""
    with HttpDestination(tls=pki.server_context(tmp_path)) as server:
        yield server


@pytest.fixture
def mtls_destination(pki: Pki, tmp_path: Path) -> Iterator[HttpDestination]:
    """HTTPS that demands a client certificate issued by the test CA."""
    with HttpDestination(tls=pki.server_context(tmp_path, require_client_certificate=True)) as server:
        yield server


@pytest.fixture
def expired_destination(pki: Pki, tmp_path: Path) -> Iterator[HttpDestination]:
    """HTTPS on localhost whose certificate (from the test CA) expired yesterday."""
    import ssl  # noqa: PLC0415

    leaf = issue(pki.ca, "localhost", server=True, expired=True)
    (tmp_path / "expired.pem").write_bytes(leaf.cert_pem)
    (tmp_path / "expired.key").write_bytes(leaf.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(tmp_path / "expired.pem"), str(tmp_path / "expired.key"))
    with HttpDestination(tls=context) as server:
        yield server


class TestRest:
    def test_a_closed_port_is_refused_by_that_host_and_port(self):
        port = closed_port()

        failed = rest_failure(Destination(url=f"http://127.0.0.1:{port}/orders"))

        assert failed.error_class is ErrorClass.NETWORK
        assert not failed.uncertain
        assert_named(failed, FailureCause.REFUSED, f"127.0.0.1:{port}")
        assert failed.dest_status_text == f"connection refused by 127.0.0.1:{port}"

    def test_a_name_that_does_not_resolve_is_dns(self):
        failed = rest_failure(Destination(url="https://erp.invalid/orders"))

        assert failed.error_class is ErrorClass.NETWORK
        assert_named(failed, FailureCause.DNS, "erp.invalid:443")
        assert failed.dest_status_text.startswith("DNS lookup of erp.invalid failed")

    def test_a_server_certificate_from_an_unknown_ca_is_a_tls_handshake_failure_saying_so(
        self, tls_destination
    ):
        host = f"localhost:{port_of(tls_destination.url)}"

        failed = rest_failure(Destination(url=tls_destination.url))

        assert failed.error_class is ErrorClass.TLS
        assert_named(failed, FailureCause.TLS, host)
        assert failed.dest_status_text.startswith(
            f"TLS handshake with {host} failed: certificate verify failed: "
        )
        assert "issuer" in failed.dest_status_text or "self-signed" in failed.dest_status_text
        assert tls_destination.requests == []

    def test_a_certificate_for_another_name_is_a_hostname_mismatch(self, pki, tls_destination, request):
        dns: FakeDns = request.getfixturevalue("fake_dns")
        dns.add("erp.test", ["127.0.0.1"])
        port = port_of(tls_destination.url)
        pinned = pki.ca.cert_pem.decode()

        failed = rest_failure(Destination(url=f"https://erp.test:{port}/orders", trusted_ca_pem=pinned))

        assert_named(failed, FailureCause.TLS, f"erp.test:{port}")
        assert "certificate verify failed: Hostname mismatch" in failed.dest_status_text

    def test_an_expired_server_certificate_says_expired(self, pki, expired_destination):
        pinned = pki.ca.cert_pem.decode()

        failed = rest_failure(Destination(url=expired_destination.url, trusted_ca_pem=pinned))

        assert_named(failed, FailureCause.TLS, f"localhost:{port_of(expired_destination.url)}")
        assert "certificate verify failed: certificate has expired" in failed.dest_status_text

    def test_a_server_demanding_a_client_certificate_the_hub_does_not_present(self, pki, mtls_destination):
        pinned = pki.ca.cert_pem.decode()
        host = f"localhost:{port_of(mtls_destination.url)}"

        failed = rest_failure(Destination(url=mtls_destination.url, trusted_ca_pem=pinned))

        assert failed.error_class is ErrorClass.TLS
        assert_named(failed, FailureCause.TLS, host)
        assert failed.dest_status_text.startswith(f"TLS handshake with {host} failed: ")
        assert "client certificate" in failed.dest_status_text
        assert mtls_destination.requests == []

    def test_a_server_refusing_the_client_certificate_the_hub_presents(self, pki, mtls_destination):
        pinned = pki.ca.cert_pem.decode()
        destination = Destination(url=mtls_destination.url, trusted_ca_pem=pinned, client_certificate_id="c1")

        failed = rest_failure(destination, a_client_certificate(pki, pki.foreign_client_pfx))

        assert_named(failed, FailureCause.TLS, f"localhost:{port_of(mtls_destination.url)}")
        assert "client certificate" in failed.dest_status_text
        # Never certificate material in the text.
        assert "BEGIN" not in failed.dest_status_text
        assert PFX_PASSWORD.decode() not in failed.dest_status_text

    def test_no_answer_within_the_read_timeout_is_an_uncertain_timeout_naming_the_host(self, destination):
        destination.script(Answer(200, delay_seconds=2.0))

        failed = rest_failure(Destination(url=destination.url, read_timeout_seconds=0.3))

        assert (failed.error_class, failed.uncertain) == (ErrorClass.TIMEOUT, True)
        assert_named(failed, FailureCause.TIMEOUT, f"127.0.0.1:{port_of(destination.url)}")
        assert "within 0.3 s" in failed.dest_status_text

    def test_an_error_status_keeps_the_answer_as_its_text_with_the_cause_and_host_beside(self, destination):
        destination.script(Answer(503, "maintenance until 10:00"))

        failed = rest_failure(Destination(url=destination.url))

        assert (failed.error_class, failed.dest_status) == (ErrorClass.HTTP_5XX, "503")
        assert (failed.cause, failed.host) == (
            FailureCause.HTTP_STATUS,
            f"127.0.0.1:{port_of(destination.url)}",
        )
        assert failed.dest_status_text == "maintenance until 10:00"


class TestSoap:
    def test_a_closed_port_is_refused(self, pki):
        port = closed_port()

        failed = soap_failure(sefaz(f"https://localhost:{port}/ws"), a_client_certificate(pki), pki)

        assert failed.error_class is ErrorClass.NETWORK
        assert_named(failed, FailureCause.REFUSED, f"localhost:{port}")
        assert failed.dest_status_text == f"connection refused by localhost:{port}"

    def test_a_name_that_does_not_resolve_is_dns(self, pki):
        failed = soap_failure(sefaz("https://sefaz.invalid/ws/nfestatusservico4.asmx"), None, pki)

        assert failed.error_class is ErrorClass.NETWORK
        assert_named(failed, FailureCause.DNS, "sefaz.invalid:443")
        assert failed.dest_status_text.startswith("DNS lookup of sefaz.invalid failed")

    def test_a_server_certificate_from_an_unknown_ca(self, pki, mtls_server: SoapServer):
        soap = SoapConnector(FixedCertificates(a_client_certificate(pki)), egress=LOCAL_EGRESS)
        host = f"localhost:{port_of(mtls_server.url)}"

        with pytest.raises(DeliveryFailed) as caught:
            soap.deliver(sefaz(mtls_server.url), status_request())

        assert_named(caught.value, FailureCause.TLS, host)
        assert caught.value.dest_status_text.startswith(
            f"TLS handshake with {host} failed: certificate verify failed: "
        )

    def test_a_server_demanding_a_client_certificate_the_hub_does_not_present(
        self, pki, mtls_server: SoapServer
    ):
        host = f"localhost:{port_of(mtls_server.url)}"

        failed = soap_failure(sefaz(mtls_server.url), None, pki)

        assert failed.error_class is ErrorClass.TLS
        assert_named(failed, FailureCause.TLS, host)
        assert "client certificate" in failed.dest_status_text
        assert mtls_server.requests == []

    def test_a_server_refusing_the_client_certificate_the_hub_presents(self, pki, mtls_server: SoapServer):
        failed = soap_failure(sefaz(mtls_server.url), a_client_certificate(pki, pki.foreign_client_pfx), pki)

        assert_named(failed, FailureCause.TLS, f"localhost:{port_of(mtls_server.url)}")
        assert "refused the client certificate" in failed.dest_status_text or "closed by the destination" in (
            failed.dest_status_text
        )
