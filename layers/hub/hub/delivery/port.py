"""The delivery port: what the pipeline asks of a connector, and what it gets back.

A connector sends one already-mapped request to a destination and either returns a
`DeliveryOutcome` or raises `DeliveryFailed` carrying an `ErrorClass`. Connectors translate
library errors (httpx, zeep, ssl) into these; nothing above them sees a vendor exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from hub.delivery.egress import DESTINATION_NOT_ALLOWED
from hub.domain.failure import ErrorClass, FailureCause, classify_http_status
from hub.domain.redaction import status_text
from hub.domain.tenancy import Destination


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
    #: A shorter read timeout than the connection's for this attempt, so that it ends before
    #: the worker's invocation does (hub.pipeline.time_guard); None: the connection's.
    read_timeout_seconds: float | None = None

    def read_timeout(self, destination: Destination) -> float:
        """The read timeout this attempt uses: the connection's, or the shorter cap."""
        configured = destination.read_timeout_seconds
        return configured if self.read_timeout_seconds is None else min(configured, self.read_timeout_seconds)


@dataclass(frozen=True)
class DeliveryOutcome:
    """An accepted delivery. It carries no text of the destination's answer: a 2xx body is
    never kept or shown (issue 27: an answer read back is a channel to whatever the hub can
    reach); failures keep a bounded excerpt (DeliveryFailed)."""

    dest_status: str
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
        cause: FailureCause | None = None,
        host: str | None = None,
    ) -> None:
        # Bounded and cleaned once, here, for every connector: the exception's own text too.
        self.dest_status_text = status_text(dest_status_text)
        super().__init__(f"{error_class.value}: {self.dest_status_text}")
        self.error_class = error_class
        self.dest_status = dest_status
        self.retry_after_seconds = retry_after_seconds
        self.uncertain = uncertain
        self.duration_ms = duration_ms
        #: For soap_fault: the fault code (Receiver/Server are transient, Sender/Client are not).
        self.fault_code = fault_code
        #: Why, beside the class (hub.domain.failure.FailureCause), and the `host:port` called.
        self.cause = cause
        self.host = host


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


@dataclass(frozen=True)
class ProbeResult:
    """What the connection test reports: whether one harmless call got through, and otherwise
    the error class a delivery would get (the same classification)."""

    ok: bool
    error_class: ErrorClass | None
    dest_status: str | None
    detail: str
    duration_ms: int = 0
    #: Why it failed (None when ok), and the `host:port` called.
    cause: FailureCause | None = None
    host: str | None = None

    @classmethod
    def failed(cls, failure: DeliveryFailed) -> ProbeResult:
        return cls(
            False,
            failure.error_class,
            failure.dest_status,
            failure.dest_status_text,
            failure.duration_ms,
            failure.cause,
            failure.host,
        )

    @classmethod
    def answered(cls, status: int, duration_ms: int, host: str | None = None) -> ProbeResult:
        """An HTTP answer to the test call: TLS (and the client certificate) were accepted. A 2xx
        is ok, and so is 405: a POST-only endpoint refusing the test's GET proves that it exists
        and answers (but not that the credentials are accepted, which the detail says). Any
        other status is reported with the class a delivery answered with it would get."""
        error_class = classify_http_status(status)
        who = host or "the destination"
        if error_class is None:
            return cls(True, None, str(status), f"{who} answered {status}", duration_ms, host=host)
        if status == METHOD_NOT_ALLOWED:
            return cls(
                True,
                None,
                str(status),
                f"{who} answered 405 to the test's GET: reachable, but it takes other methods "
                "only, so the credentials were not checked",
                duration_ms,
                host=host,
            )
        detail = f"{who} answered {status} to the test's GET (it is reachable and TLS works)"
        if 300 <= status < 400:
            detail = f"{answer_text(status, '')}; nothing was sent to where it points"
        return cls(False, error_class, str(status), detail, duration_ms, FailureCause.HTTP_STATUS, host)


METHOD_NOT_ALLOWED = 405

#: Codes of the HubErrors a connector raises for a destination it cannot even call because of
#: its TLS material (an unreadable client certificate, an unloadable trusted CA bundle).
TLS_MATERIAL_ERRORS = frozenset({"certificate_invalid", "trusted_roots_invalid"})


def unusable_destination_class(error_code: str) -> ErrorClass:
    """The class of a destination a connector refused to call (a HubError with `error_code`):
    `tls` for its TLS material, `network` for an address the egress policy denies, else
    `syntax` (an unknown WSDL, binding or operation). Never retried: an operator must change
    the connection (or the deployment its allow-list)."""
    if error_code in TLS_MATERIAL_ERRORS:
        return ErrorClass.TLS
    return ErrorClass.NETWORK if error_code == DESTINATION_NOT_ALLOWED else ErrorClass.SYNTAX


def pinned_roots(destination: Destination) -> bytes | None:
    """The connection's trusted CA bundle as bytes (None: the system trust store)."""
    return destination.trusted_ca_pem.encode("ascii") if destination.trusted_ca_pem else None


class Prober(Protocol):
    def probe(self, destination: Destination, tenant_id: str | None) -> ProbeResult:
        """One harmless call with the destination's TLS, client certificate and auth."""
        ...


class Connector(Protocol):
    def deliver(self, destination: Destination, request: OutboundRequest) -> DeliveryOutcome:
        """Sends `request`; raises DeliveryFailed with its class when not accepted."""
        ...


def answer_text(status: int, text: str) -> str:
    """What a failed attempt keeps of an HTTP answer: for a redirect, why nothing was delivered
    (no client of the hub follows one, hub.delivery.egress); otherwise the body, which
    DeliveryFailed bounds and cleans (hub.domain.redaction.status_text) like every failure text."""
    if 300 <= status < 400:
        return (
            f"the destination answered {status}, a redirect: redirects are never followed "
            "(point the connection at the final URL)"
        )
    return text
