"""The delivery port: what the pipeline asks of a connector, and what it gets back.

A connector sends one already-mapped request to a destination and either returns a
`DeliveryOutcome` or raises `DeliveryFailed` carrying an `ErrorClass`. Connectors translate
library errors (httpx, zeep, ssl) into these; nothing above them sees a vendor exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from hub.domain.failure import ErrorClass
from hub.domain.redaction import redact_text
from hub.domain.tenancy import Destination

#: Longest excerpt of a destination's answer we keep (dest_status_text).
STATUS_TEXT_LIMIT = 300


@dataclass(frozen=True)
class OutboundRequest:
    """A mapped message ready to send. `idempotency_key` is the same on every attempt."""

    message_id: str
    idempotency_key: str
    body: bytes
    content_type: str
    correlation_id: str
    #: The message's tenant: a client certificate is only ever one of this tenant's.
    tenant_id: str | None = None


@dataclass(frozen=True)
class DeliveryOutcome:
    dest_status: str
    dest_status_text: str
    duration_ms: int


class DeliveryFailed(Exception):
    """The destination did not accept the message (or we cannot tell: `uncertain`)."""

    def __init__(
        self,
        error_class: ErrorClass,
        dest_status_text: str,
        *,
        dest_status: str | None = None,
        retry_after_seconds: float | None = None,
        uncertain: bool = False,
        duration_ms: int = 0,
        fault_code: str | None = None,
    ) -> None:
        super().__init__(f"{error_class.value}: {dest_status_text}")
        self.error_class = error_class
        self.dest_status = dest_status
        self.dest_status_text = dest_status_text[:STATUS_TEXT_LIMIT]
        self.retry_after_seconds = retry_after_seconds
        self.uncertain = uncertain
        self.duration_ms = duration_ms
        #: For soap_fault: the fault code (Receiver/Server are transient, Sender/Client are not).
        self.fault_code = fault_code


@dataclass(frozen=True)
class ClientCertificate:
    """A PKCS#12 client certificate, decrypted in memory for one connection."""

    pfx: bytes
    password: bytes = field(repr=False)


class CertificateStore(Protocol):
    def client_certificate(
        self, destination: Destination, tenant_id: str | None = None
    ) -> ClientCertificate | None:
        """The destination's client certificate, or None when it has none. With `tenant_id`, a
        certificate of another tenant is treated as missing (DeliveryFailed, `tls`)."""
        ...


class Connector(Protocol):
    def deliver(self, destination: Destination, request: OutboundRequest) -> DeliveryOutcome:
        """Sends `request`; raises DeliveryFailed with its class when not accepted."""
        ...


def excerpt(text: str, limit: int = STATUS_TEXT_LIMIT) -> str:
    """A short, single-line excerpt of a destination's answer for dest_status_text, with personal
    data it may quote back (CPF, CNPJ, e-mail, phone) masked: it is stored, logged and shown."""
    flat = redact_text(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"
