"""Connectors and the certificate store are built at first use, once."""

from __future__ import annotations

import pytest

from hub.delivery.lazy import LazyCertificateStore, LazyConnectors
from hub.delivery.port import ClientCertificate, Connector, DeliveryOutcome, OutboundRequest
from hub.domain.tenancy import Destination, DestinationProtocol


class StubConnector:
    def deliver(self, destination: Destination, request: OutboundRequest) -> DeliveryOutcome:
        return DeliveryOutcome(dest_status="200", duration_ms=1)


class CountingFactory:
    def __init__(self) -> None:
        self.calls = 0
        self.connector = StubConnector()

    def __call__(self) -> Connector:
        self.calls += 1
        return self.connector


def test_a_connector_is_built_at_its_first_lookup_and_reused() -> None:
    http, soap = CountingFactory(), CountingFactory()
    connectors = LazyConnectors({DestinationProtocol.HTTP: http, DestinationProtocol.SOAP: soap})

    assert (http.calls, soap.calls) == (0, 0)
    assert connectors[DestinationProtocol.HTTP] is http.connector
    assert connectors[DestinationProtocol.HTTP] is http.connector
    assert (http.calls, soap.calls) == (1, 0)


def test_listing_the_protocols_builds_nothing() -> None:
    http = CountingFactory()
    connectors = LazyConnectors({DestinationProtocol.HTTP: http})

    assert list(connectors) == [DestinationProtocol.HTTP]
    assert len(connectors) == 1
    assert DestinationProtocol.HTTP in connectors
    assert DestinationProtocol.SOAP not in connectors
    assert http.calls == 0


def test_an_unknown_protocol_is_a_key_error_as_in_a_dict() -> None:
    connectors = LazyConnectors({DestinationProtocol.HTTP: CountingFactory()})
    with pytest.raises(KeyError):
        connectors[DestinationProtocol.SOAP]


class FixedStore:
    def __init__(self) -> None:
        self.asked: list[tuple[str | None, str | None]] = []

    def client_certificate(
        self, destination: Destination, tenant_id: str | None = None
    ) -> ClientCertificate | None:
        self.asked.append((destination.client_certificate_id, tenant_id))
        return ClientCertificate(pfx=b"pfx", password=b"secret")


def building(built: list[FixedStore]) -> FixedStore:
    built.append(FixedStore())
    return built[-1]


def test_a_destination_without_a_certificate_never_builds_the_store() -> None:
    built: list[FixedStore] = []
    store = LazyCertificateStore(lambda: building(built))

    assert store.client_certificate(Destination(url="https://example.invalid/")) is None
    assert built == []


def test_a_destination_with_a_certificate_asks_the_store_built_once() -> None:
    built: list[FixedStore] = []
    store = LazyCertificateStore(lambda: building(built))
    mtls = Destination(url="https://example.invalid/", client_certificate_id="conn_sefaz_sp")

    first = store.client_certificate(mtls, "t1")
    store.client_certificate(mtls, "t1")

    assert first == ClientCertificate(pfx=b"pfx", password=b"secret")
    assert len(built) == 1
    assert built[0].asked == [("conn_sefaz_sp", "t1"), ("conn_sefaz_sp", "t1")]
