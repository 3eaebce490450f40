"""A connection's trusted CA bundle over real TLS (REST over httpx, SOAP over zeep), and the
connection test (`probe`) against real servers on 127.0.0.1: the server's chain is trusted only
through the connection's bundle, the bundle replaces the system store, and every failure gets
the class a delivery would get."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hub.delivery.http import HttpConnector
from hub.delivery.port import ClientCertificate, DeliveryFailed, OutboundRequest
from hub.delivery.probe import ConnectorTester
from hub.delivery.soap import SoapConnector
from hub.domain.failure import ErrorClass
from hub.domain.tenancy import AuthKind, Destination, DestinationProtocol, HttpAuth, Platform, SoapSettings
from tests.destinations import Answer, HttpDestination
from tests.egress import LOCAL_EGRESS
from tests.integration.delivery.test_soap_connector import CONS_STAT_SERV, WSDL, FixedCertificates
from tests.pki import PFX_PASSWORD, Pki
from tests.soap_server import SoapServer

REQUEST = OutboundRequest(
    message_id="msg_1",
    idempotency_key="msg_1",
    body=b'{"a":1}',
    content_type="application/json",
    correlation_id="c1",
)


@pytest.fixture
def https_destination(pki: Pki, tmp_path) -> Iterator[HttpDestination]:
    """HTTPS on localhost with a certificate of the test CA (no client certificate asked)."""
    with HttpDestination(tls=pki.server_context(tmp_path)) as server:
        yield server


@pytest.fixture
def soap_server(pki: Pki, tmp_path) -> Iterator[SoapServer]:
    ca, cert, key = pki.write_server_files(tmp_path)
    with SoapServer(ca, cert, key) as running:
        yield running


def client_certificate(pki: Pki) -> FixedCertificates:
    return FixedCertificates(ClientCertificate(pfx=pki.client_pfx, password=PFX_PASSWORD))


def roots(issued_pem: bytes) -> str:
    return issued_pem.decode("ascii")


def sefaz(url: str, **options) -> Destination:
    return Destination(
        protocol=DestinationProtocol.SOAP,
        platform=Platform.SEFAZ,
        url=url,
        soap=SoapSettings(wsdl=WSDL, operation="nfeStatusServicoNF", soap_version="1.2"),
        client_certificate_id="con_sefaz",
        connect_timeout_seconds=2.0,
        read_timeout_seconds=5.0,
        **options,
    )


class TestRest:
    def test_a_server_trusted_only_through_the_connections_bundle_is_delivered_to(
        self, pki, https_destination
    ):
        http = HttpConnector(FixedCertificates(None), egress=LOCAL_EGRESS)

        outcome = http.deliver(
            Destination(url=https_destination.url, trusted_ca_pem=roots(pki.ca.cert_pem)), REQUEST
        )

        assert outcome.dest_status == "200"
        assert len(https_destination.requests) == 1

    def test_without_the_bundle_the_same_server_is_tls(self, https_destination):
        with pytest.raises(DeliveryFailed) as refused:
            HttpConnector(FixedCertificates(None), egress=LOCAL_EGRESS).deliver(
                Destination(url=https_destination.url), REQUEST
            )

        assert refused.value.error_class is ErrorClass.TLS
        assert https_destination.requests == []

    def test_the_bundle_replaces_the_default_trust_so_another_ca_is_tls(self, pki, https_destination):
        # The process trusts the test CA (ca_pem), but this connection pins another CA only.
        http = HttpConnector(FixedCertificates(None), ca_pem=pki.ca.cert_pem, egress=LOCAL_EGRESS)

        with pytest.raises(DeliveryFailed) as refused:
            http.deliver(
                Destination(url=https_destination.url, trusted_ca_pem=roots(pki.other_ca.cert_pem)), REQUEST
            )

        assert refused.value.error_class is ErrorClass.TLS
        assert http.deliver(Destination(url=https_destination.url), REQUEST).dest_status == "200"

    def test_mtls_with_the_bundle_and_a_client_certificate(self, pki, soap_server):
        http = HttpConnector(client_certificate(pki), egress=LOCAL_EGRESS)
        destination = Destination(
            url=soap_server.url, client_certificate_id="con_1", trusted_ca_pem=roots(pki.ca.cert_pem)
        )

        assert http.deliver(destination, REQUEST).dest_status == "200"
        assert soap_server.requests[0].client_subject == pki.client.subject


class TestSoap:
    def test_a_sefaz_server_trusted_only_through_the_bundle_answers(self, pki, soap_server):
        soap = SoapConnector(client_certificate(pki), egress=LOCAL_EGRESS)
        request = OutboundRequest("msg_1", "msg_1", CONS_STAT_SERV, "application/xml", "c1")

        outcome = soap.deliver(sefaz(soap_server.url, trusted_ca_pem=roots(pki.ca.cert_pem)), request)

        assert outcome.dest_status == "200"
        assert len(soap_server.requests) == 1

    def test_without_the_bundle_it_is_tls_and_nothing_is_sent(self, pki, soap_server):
        soap = SoapConnector(client_certificate(pki), egress=LOCAL_EGRESS)
        request = OutboundRequest("msg_1", "msg_1", CONS_STAT_SERV, "application/xml", "c1")

        with pytest.raises(DeliveryFailed) as refused:
            soap.deliver(sefaz(soap_server.url, trusted_ca_pem=roots(pki.other_ca.cert_pem)), request)

        assert refused.value.error_class is ErrorClass.TLS
        assert "certificate verify failed" in refused.value.dest_status_text
        assert soap_server.requests == []


def connection_tester(certificates: FixedCertificates) -> ConnectorTester:
    return ConnectorTester(
        {
            DestinationProtocol.HTTP: lambda: HttpConnector(certificates, egress=LOCAL_EGRESS),
            DestinationProtocol.SOAP: lambda: SoapConnector(certificates, egress=LOCAL_EGRESS),
        }
    )


class TestProbe:
    def test_rest_a_get_with_the_connections_auth_and_no_body(self, pki, https_destination):
        destination = Destination(
            url=https_destination.url,
            trusted_ca_pem=roots(pki.ca.cert_pem),
            auth=HttpAuth(kind=AuthKind.BEARER, token="tok-probe"),
            headers={"X-Tenant": "t1"},
        )

        result = connection_tester(FixedCertificates(None)).probe(destination, "t1")

        host = https_destination.url.split("/")[2]
        assert result == {
            "ok": True,
            "error_class": None,
            "cause": None,
            "host": host,
            "dest_status": "200",
            "detail": f"{host} answered 200",
        }
        [seen] = https_destination.requests
        assert (seen.method, seen.body) == ("GET", b"")
        assert seen.headers["authorization"] == "Bearer tok-probe"
        assert seen.headers["x-tenant"] == "t1"
        assert "idempotency-key" not in seen.headers

    @pytest.mark.parametrize(
        ("status", "error_class"),
        [(401, "http_401"), (404, "http_4xx"), (503, "http_5xx"), (410, "http_410"), (429, "http_429")],
    )
    def test_rest_an_error_answer_gets_the_delivery_class(self, pki, https_destination, status, error_class):
        https_destination.script(Answer(status, "{}"))
        destination = Destination(url=https_destination.url, trusted_ca_pem=roots(pki.ca.cert_pem))

        result = connection_tester(FixedCertificates(None)).probe(destination, "t1")

        assert (result["ok"], result["error_class"], result["dest_status"]) == (
            False,
            error_class,
            str(status),
        )

    def test_rest_405_proves_a_post_only_endpoint_answers(self, pki, https_destination):
        https_destination.script(Answer(405, "{}"))
        destination = Destination(url=https_destination.url, trusted_ca_pem=roots(pki.ca.cert_pem))

        result = connection_tester(FixedCertificates(None)).probe(destination, "t1")

        assert (result["ok"], result["error_class"], result["dest_status"]) == (True, None, "405")
        assert "credentials were not checked" in result["detail"]

    def test_rest_an_untrusted_server_is_tls(self, pki, https_destination):
        destination = Destination(url=https_destination.url, trusted_ca_pem=roots(pki.other_ca.cert_pem))

        result = connection_tester(FixedCertificates(None)).probe(destination, "t1")

        assert (result["ok"], result["error_class"], result["dest_status"]) == (False, "tls", None)
        assert https_destination.requests == []

    def test_rest_nothing_listening_is_network(self):
        result = connection_tester(FixedCertificates(None)).probe(
            Destination(url="http://127.0.0.1:9/orders", connect_timeout_seconds=1), "t1"
        )

        assert (result["ok"], result["error_class"]) == (False, "network")

    def test_soap_fetches_the_wsdl_over_mtls_with_the_client_certificate(self, pki, soap_server):
        destination = sefaz(soap_server.url, trusted_ca_pem=roots(pki.ca.cert_pem))

        result = connection_tester(client_certificate(pki)).probe(destination, "t1")

        assert (result["ok"], result["error_class"], result["dest_status"]) == (True, None, "200")
        [seen] = soap_server.requests
        assert seen.path.endswith("?wsdl")
        assert seen.body == b""
        assert seen.client_subject == pki.client.subject

    def test_soap_a_refused_handshake_without_a_certificate_is_tls(self, pki, soap_server):
        destination = sefaz(soap_server.url, trusted_ca_pem=roots(pki.ca.cert_pem))

        result = connection_tester(FixedCertificates(None)).probe(destination, "t1")

        assert (result["ok"], result["error_class"]) == (False, "tls")
        assert soap_server.requests == []

    def test_soap_a_certificate_of_an_unknown_ca_is_refused_as_tls(self, pki, soap_server):
        foreign = FixedCertificates(ClientCertificate(pfx=pki.foreign_client_pfx, password=PFX_PASSWORD))
        destination = sefaz(soap_server.url, trusted_ca_pem=roots(pki.ca.cert_pem))

        result = connection_tester(foreign).probe(destination, "t1")

        assert (result["ok"], result["error_class"]) == (False, "tls")

    def test_soap_an_unknown_operation_is_syntax_before_any_call(self, pki, soap_server):
        destination = sefaz(soap_server.url, trusted_ca_pem=roots(pki.ca.cert_pem)).model_copy(
            update={"soap": SoapSettings(wsdl=WSDL, operation="noSuchOperation", soap_version="1.2")}
        )

        result = connection_tester(client_certificate(pki)).probe(destination, "t1")

        assert (result["ok"], result["error_class"]) == (False, "syntax")
        assert "noSuchOperation" in result["detail"]
        assert soap_server.requests == []

    def test_an_unreadable_client_certificate_is_tls(self, pki, soap_server):
        broken = FixedCertificates(ClientCertificate(pfx=pki.client_pfx, password=b"wrong"))
        destination = sefaz(soap_server.url, trusted_ca_pem=roots(pki.ca.cert_pem))

        result = connection_tester(broken).probe(destination, "t1")

        assert (result["ok"], result["error_class"]) == (False, "tls")
