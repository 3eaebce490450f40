"""SoapConnector against a real SOAP 1.2 server over mTLS, driving the NF-e 4.00
NFeStatusServico4 WSDL shipped by nfelib (the SEFAZ status service)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import pytest

from hub.delivery.port import ClientCertificate, DeliveryFailed, OutboundRequest
from hub.delivery.soap import SoapConnector
from hub.delivery.tls import CertificateInvalid
from hub.domain.failure import ErrorClass
from hub.domain.tenancy import Destination, DestinationProtocol, Platform, SoapSettings
from tests.egress import LOCAL_EGRESS
from tests.pki import PFX_PASSWORD, Pki
from tests.soap_server import Behaviour, SoapServer

WSDL = "nfelib:nfe/wsdl/v4_0/nfestatusservico4.wsdl"
SOAP12_BINDING = "{http://www.portalfiscal.inf.br/nfe/wsdl/NFeStatusServico4}NFeStatusServico4Soap12"
ACTION = "http://www.portalfiscal.inf.br/nfe/wsdl/NFeStatusServico4/nfeStatusServicoNF"
CONS_STAT_SERV = (
    b'<consStatServ xmlns="http://www.portalfiscal.inf.br/nfe" versao="4.00">'
    b"<tpAmb>2</tpAmb><cUF>35</cUF><xServ>STATUS</xServ></consStatServ>"
)


@dataclass
class FixedCertificates:
    """CertificateStore for tests: every destination gets `certificate`."""

    certificate: ClientCertificate | None
    asked: list[str | None] = field(default_factory=list)

    def client_certificate(
        self, destination: Destination, tenant_id: str | None = None
    ) -> ClientCertificate | None:
        self.asked.append(destination.client_certificate_id)
        return self.certificate


@pytest.fixture(scope="module")
def server_on(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SoapServer]:
    ca, cert, key = pki.write_server_files(tmp_path_factory.mktemp("soap-server"))
    with SoapServer(ca, cert, key) as running:
        yield running


@pytest.fixture
def server(server_on: SoapServer) -> Iterator[SoapServer]:
    server_on.reset()
    yield server_on
    server_on.reset()


def sefaz(url: str, *, read_timeout: float = 5.0) -> Destination:
    return Destination(
        protocol=DestinationProtocol.SOAP,
        platform=Platform.SEFAZ,
        url=url,
        soap=SoapSettings(wsdl=WSDL, operation="nfeStatusServicoNF", soap_version="1.2"),
        client_certificate_id="cert_a1",
        connect_timeout_seconds=2.0,
        read_timeout_seconds=read_timeout,
    )


def status_request() -> OutboundRequest:
    return OutboundRequest(
        message_id="msg_1",
        idempotency_key="idem_1",
        body=CONS_STAT_SERV,
        content_type="application/xml",
        correlation_id="corr_1",
    )


def connector(pki: Pki, pfx: bytes | None, password: bytes = PFX_PASSWORD) -> SoapConnector:
    certificate = ClientCertificate(pfx=pfx, password=password) if pfx is not None else None
    return SoapConnector(FixedCertificates(certificate), ca_pem=pki.ca.cert_pem, egress=LOCAL_EGRESS)


def failure_of(soap: SoapConnector, destination: Destination) -> DeliveryFailed:
    with pytest.raises(DeliveryFailed) as caught:
        soap.deliver(destination, status_request())
    return caught.value


def test_status_service_answers_107_over_mtls(pki: Pki, server: SoapServer) -> None:
    outcome = connector(pki, pki.client_pfx).deliver(sefaz(server.url), status_request())

    assert outcome.dest_status == "200"
    # The answer's body is not kept (issue 27: never a 2xx body); DeliveryOutcome has no field for it.
    assert not hasattr(outcome, "dest_status_text")
    assert outcome.duration_ms >= 0
    [seen] = server.requests
    content_type = seen.headers["Content-Type"]
    assert content_type.startswith("application/soap+xml")
    assert f'action="{ACTION}"' in content_type
    assert b"http://www.w3.org/2003/05/soap-envelope" in seen.body
    assert b"nfeDadosMsg" in seen.body
    assert b"<xServ>STATUS</xServ>" in seen.body
    assert seen.client_subject is not None
    assert "CN=Hub Test Client" in seen.client_subject


def test_explicit_binding_and_client_reuse(pki: Pki, server: SoapServer) -> None:
    soap = connector(pki, pki.client_pfx)
    destination = sefaz(server.url).model_copy(
        update={
            "soap": SoapSettings(
                wsdl=WSDL, binding=SOAP12_BINDING, operation="nfeStatusServicoNF", soap_version="1.2"
            )
        }
    )

    first = soap.deliver(destination, status_request())
    second = soap.deliver(destination, status_request())

    assert first.dest_status == second.dest_status == "200"
    assert len(server.requests) == 2
    assert len(soap._endpoints) == 1


def test_legacy_3des_pkcs12_works(pki: Pki, server: SoapServer) -> None:
    outcome = connector(pki, pki.legacy_client_pfx).deliver(sefaz(server.url), status_request())

    assert outcome.dest_status == "200"
    assert "CN=Hub Test Client" in (server.requests[0].client_subject or "")


@pytest.mark.parametrize(
    ("behaviour", "fault_code", "status"),
    [(Behaviour.RECEIVER_FAULT, "Receiver", "500"), (Behaviour.SENDER_FAULT, "Sender", "400")],
)
def test_soap_fault_carries_its_code(
    pki: Pki, server: SoapServer, behaviour: Behaviour, fault_code: str, status: str
) -> None:
    server.behaviour = behaviour

    failed = failure_of(connector(pki, pki.client_pfx), sefaz(server.url))

    assert failed.error_class is ErrorClass.SOAP_FAULT
    assert failed.fault_code == fault_code
    assert failed.dest_status == status
    assert "Servico paralisado" in failed.dest_status_text or "XML mal formado" in failed.dest_status_text
    assert not failed.uncertain


def test_http_500_without_envelope_is_http_5xx(pki: Pki, server: SoapServer) -> None:
    server.behaviour = Behaviour.HTTP_500

    failed = failure_of(connector(pki, pki.client_pfx), sefaz(server.url))

    assert failed.error_class is ErrorClass.HTTP_5XX
    assert failed.dest_status == "500"
    assert "Internal Server Error" in failed.dest_status_text


@pytest.mark.parametrize("which", ["none", "foreign", "expired"])
def test_rejected_client_certificate_is_tls(pki: Pki, server: SoapServer, which: str) -> None:
    """TLS 1.3 reports the rejection on the first read (alert), or as a bare EOF when the server
    closes first: both are `tls`, and no request reached the application."""
    pfx = {"none": None, "foreign": pki.foreign_client_pfx, "expired": pki.expired_client_pfx}[which]

    failed = failure_of(connector(pki, pfx), sefaz(server.url))

    assert failed.error_class is ErrorClass.TLS
    assert server.requests == []


def test_untrusted_server_is_tls(pki: Pki, server: SoapServer) -> None:
    soap = SoapConnector(
        FixedCertificates(ClientCertificate(pki.client_pfx, PFX_PASSWORD)), egress=LOCAL_EGRESS
    )

    failed = failure_of(soap, sefaz(server.url))

    assert failed.error_class is ErrorClass.TLS
    assert "certificate verify failed" in failed.dest_status_text
    assert failed.dest_status_text.startswith(f"TLS handshake with {failed.host} failed")
    assert server.requests == []


def test_server_that_hangs_is_an_uncertain_timeout(pki: Pki, server: SoapServer) -> None:
    server.behaviour = Behaviour.HANG

    failed = failure_of(connector(pki, pki.client_pfx), sefaz(server.url, read_timeout=0.5))

    assert failed.error_class is ErrorClass.TIMEOUT
    assert failed.uncertain
    assert len(server.requests) == 1
    assert failed.duration_ms >= 500


def test_refused_port_is_network(pki: Pki) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on `port` now.

    failed = failure_of(connector(pki, pki.client_pfx), sefaz(f"https://127.0.0.1:{port}/ws"))

    assert failed.error_class is ErrorClass.NETWORK
    assert not failed.uncertain


def test_body_that_is_not_xml_is_syntax(pki: Pki, server: SoapServer) -> None:
    request = OutboundRequest("m", "k", b"{not xml", "application/json", "c")

    with pytest.raises(DeliveryFailed) as caught:
        connector(pki, pki.client_pfx).deliver(sefaz(server.url), request)

    assert caught.value.error_class is ErrorClass.SYNTAX
    assert server.requests == []


def test_wrong_pfx_password_is_certificate_invalid(pki: Pki, server: SoapServer) -> None:
    with pytest.raises(CertificateInvalid) as caught:
        connector(pki, pki.client_pfx, password=b"wrong-password").deliver(
            sefaz(server.url), status_request()
        )

    assert caught.value.code == "certificate_invalid"
    assert "wrong-password" not in str(caught.value)
    assert server.requests == []


def test_an_attempt_with_a_capped_read_timeout_gives_up_then_and_the_next_uses_the_connections(
    pki: Pki, server: SoapServer
) -> None:
    """The worker's time guard (issue 30): a capped read timeout applies to its attempt only
    (the endpoint, with its parsed WSDL, is shared by every attempt of the connection)."""
    soap = connector(pki, pki.client_pfx)
    destination = sefaz(server.url, read_timeout=30)
    server.behaviour = Behaviour.HANG

    with pytest.raises(DeliveryFailed) as caught:
        soap.deliver(destination, replace(status_request(), read_timeout_seconds=0.5))

    failed = caught.value
    assert (failed.error_class, failed.uncertain) == (ErrorClass.TIMEOUT, True)
    assert "within 0.5 s" in failed.dest_status_text
    assert 500 <= failed.duration_ms < 5000
    server.reset()
    assert soap.deliver(destination, status_request()).dest_status == "200"
    endpoint = next(iter(soap._endpoints.values()))
    assert endpoint.transport.operation_timeout == (2.0, 30)
