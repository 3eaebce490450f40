"""Connectors and the certificate store, built on first use.

A worker instance that only observes, or only delivers over REST without mTLS, then never loads
zeep and lxml (SOAP), nor cryptography and the KMS client (client certificates): a Lambda cold
start pays for the protocols its deliveries use, not for every protocol the hub speaks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping

from hub.delivery.port import CertificateStore, ClientCertificate, Connector
from hub.domain.tenancy import Destination, DestinationProtocol


class LazyConnectors(Mapping[DestinationProtocol, Connector]):
    """The worker's connectors by protocol: each built by its factory on its first lookup, once
    (thread-safe), then reused. Iteration and `in` list the protocols without building any."""

    def __init__(self, factories: Mapping[DestinationProtocol, Callable[[], Connector]]) -> None:
        self._factories = dict(factories)
        self._built: dict[DestinationProtocol, Connector] = {}
        self._lock = threading.Lock()

    def __getitem__(self, protocol: DestinationProtocol) -> Connector:
        connector = self._built.get(protocol)
        if connector is not None:
            return connector
        factory = self._factories[protocol]  # KeyError for an unknown protocol, as a dict
        with self._lock:
            if protocol not in self._built:
                self._built[protocol] = factory()
            return self._built[protocol]

    def __contains__(self, protocol: object) -> bool:
        return protocol in self._factories  # Mapping's default would build it

    def __iter__(self) -> Iterator[DestinationProtocol]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)


class LazyCertificateStore:
    """A CertificateStore that builds the real one on the first destination with a client
    certificate. Every other destination gets None, as from any store, without building it."""

    def __init__(self, build: Callable[[], CertificateStore]) -> None:
        self._build = build
        self._store: CertificateStore | None = None
        self._lock = threading.Lock()

    def client_certificate(
        self, destination: Destination, tenant_id: str | None = None
    ) -> ClientCertificate | None:
        if not destination.client_certificate_id:
            return None
        return self._real().client_certificate(destination, tenant_id)

    def _real(self) -> CertificateStore:
        with self._lock:
            if self._store is None:
                self._store = self._build()
            return self._store
