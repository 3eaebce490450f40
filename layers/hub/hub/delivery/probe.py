"""The connection test (admin API): one harmless call through the same connector, TLS context,
client certificate and auth a delivery uses, reported with the same error classes.

REST: a GET of the connection's URL (safe by HTTP's rules; HEAD and OPTIONS are often not
routed or not authenticated, so they would prove less). SOAP: the WSDL is loaded and its
binding and operation checked, then `<url>?wsdl` is fetched from the service with the client
certificate (the TLS handshake of a delivery, without a message). Nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hub.delivery.causes import endpoint
from hub.delivery.egress import DESTINATION_NOT_ALLOWED
from hub.delivery.port import Prober, ProbeResult, unusable_destination_class
from hub.domain.failure import FailureCause
from hub.domain.tenancy import Destination, DestinationProtocol
from hub.errors import HubError, ServiceUnavailable


def probe_view(result: ProbeResult) -> dict[str, Any]:
    """The test tool's answer: the delivery error class, and beside it the cause
    (hub.domain.failure.FailureCause; null when ok) and the `host:port` called."""
    return {
        "ok": result.ok,
        "error_class": result.error_class.value if result.error_class else None,
        "cause": result.cause.value if result.cause else None,
        "host": result.host,
        "dest_status": result.dest_status,
        "detail": result.detail,
    }


class ConnectorTester:
    """hub.admin.connections.ConnectionTester over the delivery connectors (each built on first
    use by its factory)."""

    def __init__(self, factories: Mapping[DestinationProtocol, Callable[[], Prober]]) -> None:
        self._factories = dict(factories)
        self._built: dict[DestinationProtocol, Prober] = {}

    def probe(self, destination: Destination, tenant_id: str) -> dict[str, Any]:
        prober = self._built.get(destination.protocol)
        if prober is None:
            prober = self._built[destination.protocol] = self._factories[destination.protocol]()
        try:
            result = prober.probe(destination, tenant_id)
        except ServiceUnavailable:
            raise  # our storage or KMS, not the connection: the admin API answers 503
        except HubError as unusable:
            # As the worker reports it: a connection the connector cannot even call.
            not_allowed = unusable.code == DESTINATION_NOT_ALLOWED
            result = ProbeResult(
                False,
                unusable_destination_class(unusable.code),
                None,
                unusable.message,
                cause=FailureCause.NOT_ALLOWED if not_allowed else None,
                host=endpoint(destination.url),
            )
        return probe_view(result)
