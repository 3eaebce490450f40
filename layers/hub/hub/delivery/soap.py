"""SOAP connector (zeep): sends a mapped XML document to a WSDL operation, over mTLS when the
destination has a client certificate (SEFAZ: SOAP 1.2 + ICP-Brasil A1).

Errors are classified by type and cause, never by message text:

- SOAP Fault → `soap_fault` with `fault_code` as a local name (1.1 Client/Server, 1.2 Sender/Receiver);
- HTTP error status without a SOAP Fault → `classify_http_status`, `dest_status` = the status;
- TLS failure anywhere in the cause chain (untrusted server, rejected or missing client
  certificate, which TLS 1.3 reports only on the first read) → `tls`. A TLS connection closed
  without an alert (EOF) is `tls` with `uncertain`: a server rejecting a missing certificate
  sometimes closes before its alert is read, which looks exactly like a connection dropped after
  the request was sent;
- refused connection, DNS failure, connect timeout → `network` (nothing reached the destination);
- every failure names the host it was for (`host:port`) and its cause (hub.delivery.causes);
- read timeout after sending → `timeout`, `uncertain` (the destination may have processed it);
- connection lost after connecting → `network`, `uncertain`;
- a body that is not XML, or an answer that is not a SOAP envelope → `syntax`.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import requests
import urllib3
import zeep
import zeep.exceptions
from lxml import etree  # type: ignore[import-untyped]

from hub.delivery import causes
from hub.delivery.egress import DestinationNotAllowed, EgressPolicy
from hub.delivery.port import (
    CertificateStore,
    ClientCertificate,
    DeliveryFailed,
    DeliveryOutcome,
    OutboundRequest,
    ProbeResult,
    answer_text,
    pinned_roots,
)
from hub.delivery.tls import certificate_fingerprint, client_ssl_context
from hub.domain.failure import ErrorClass, FailureCause, classify_http_status
from hub.domain.tenancy import NFELIB_PREFIX, Destination, SoapSettings
from hub.errors import ConfigurationError

_SOAP11_BINDING = "Soap11Binding"
_SOAP12_BINDING = "Soap12Binding"

#: Mapped bodies come from our own mapping step, but never let XML reach the network or disk.
_BODY_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


class _RecordingTransport(zeep.Transport):
    """Keeps the last HTTP answer per thread: zeep's Fault does not carry the status, and the
    answer text is what we excerpt. An attempt posts with its own timeouts (`attempt_timeouts`:
    a capped read timeout is shorter than the endpoint's), on its own thread only.

    Loads a WSDL and what it imports only over http(s) through the session (the egress policy,
    no redirects) or from the files of the nfelib package: never another local file."""

    def __init__(self, session: requests.Session, timeout: tuple[float, float], egress: EgressPolicy) -> None:
        self._last = threading.local()
        super().__init__(session=session, timeout=timeout, operation_timeout=timeout)
        self._egress = egress

    @property
    def operation_timeout(self) -> tuple[float, float] | None:
        """What zeep posts an operation with: this thread's attempt's, else the endpoint's."""
        attempt: tuple[float, float] | None = getattr(self._last, "timeout", None)
        return attempt or self._operation_timeout

    @operation_timeout.setter
    def operation_timeout(self, value: tuple[float, float] | None) -> None:
        self._operation_timeout = value

    @contextmanager
    def attempt_timeouts(self, timeout: tuple[float, float]) -> Iterator[None]:
        """Posts of this thread use `timeout` (connect, read) until the block ends."""
        self._last.timeout = timeout
        try:
            yield
        finally:
            self._last.timeout = None

    def load(self, url: str) -> bytes:
        scheme = urlsplit(url).scheme.lower()
        if scheme in ("http", "https"):
            self._egress.check_url(url, "soap.wsdl")
            response = self.session.get(url, timeout=self.load_timeout)
            if 300 <= response.status_code < 400:
                raise ConfigurationError(
                    f"the WSDL answered {response.status_code}: redirects are never followed"
                )
            response.raise_for_status()
            return bytes(response.content)
        path = Path(unquote(url.removeprefix("file://")) if scheme == "file" else url)
        if scheme not in ("", "file") or not _inside_nfelib(path):
            raise DestinationNotAllowed(
                "a WSDL and what it imports load over http(s), or from the nfelib package (nfelib:...)",
                details=[
                    {"field": "soap.wsdl", "problem": "destination_not_allowed", "message": "local file"}
                ],
            )
        return path.read_bytes()

    def post(self, address: str, message: Any, headers: dict[str, str]) -> requests.Response:
        response: requests.Response = super().post(address, message, headers)
        self._last.response = response
        return response

    def take_response(self) -> requests.Response | None:
        response: requests.Response | None = getattr(self._last, "response", None)
        self._last.response = None
        return response


@dataclass(frozen=True)
class _Endpoint:
    client: zeep.Client
    transport: _RecordingTransport
    binding: str


class SoapConnector:
    """`Connector` for `protocol: soap` destinations.

    A zeep Client (parsed WSDL, HTTP session with its TLS context) is built once per
    (WSDL, binding, client certificate, CA, timeouts) and reused. Raises DeliveryFailed for a
    delivery that did not succeed, CertificateInvalid for an unusable PKCS#12, and
    ConfigurationError for an unknown WSDL file, binding or operation.
    """

    def __init__(
        self, certificates: CertificateStore, *, egress: EgressPolicy, ca_pem: bytes | None = None
    ) -> None:
        self._certificates = certificates
        self._egress = egress
        self._ca_pem = ca_pem
        self._endpoints: dict[tuple[object, ...], _Endpoint] = {}
        self._lock = threading.Lock()

    def deliver(self, destination: Destination, request: OutboundRequest) -> DeliveryOutcome:
        settings = destination.soap
        if settings is None:
            raise ConfigurationError("SOAP destination without soap settings")
        started = time.monotonic()
        try:
            document = etree.fromstring(request.body, parser=_BODY_PARSER)
        except etree.XMLSyntaxError:
            raise DeliveryFailed(ErrorClass.SYNTAX, "mapped body is not well-formed XML") from None
        certificate = self._certificates.client_certificate(destination, request.tenant_id)
        endpoint: _Endpoint | None = None
        read_timeout = request.read_timeout(destination)
        try:
            endpoint = self._endpoint(destination, settings, certificate)
            service = endpoint.client.create_service(endpoint.binding, destination.url)
            with endpoint.transport.attempt_timeouts((destination.connect_timeout_seconds, read_timeout)):
                service[settings.operation](document)
        except (zeep.exceptions.Error, requests.exceptions.RequestException) as exc:
            response = endpoint.transport.take_response() if endpoint else None
            url = _failed_url(exc, destination.url)
            called = _Called(destination, certificate is not None, url, read_timeout)
            raise _failure(exc, response, _elapsed_ms(started), called) from None
        response = endpoint.transport.take_response()
        status = response.status_code if response is not None else 200
        return DeliveryOutcome(dest_status=str(status), duration_ms=_elapsed_ms(started))

    def probe(self, destination: Destination, tenant_id: str | None) -> ProbeResult:
        """The connection test: loads the WSDL and checks its binding and operation (a WSDL URL is
        fetched over the connection's TLS session), then GETs `<url>?wsdl` from the service address
        with the client certificate: the TLS handshake a delivery makes, without a message.
        Failures are classified exactly as deliveries are."""
        settings = destination.soap
        if settings is None:
            raise ConfigurationError("SOAP destination without soap settings")
        started = time.monotonic()
        timeout = (destination.connect_timeout_seconds, destination.read_timeout_seconds)
        certificate: ClientCertificate | None = None
        try:
            certificate = self._certificates.client_certificate(destination, tenant_id)
            endpoint = self._endpoint(destination, settings, certificate)
            response = endpoint.transport.session.get(
                destination.url, params="wsdl", timeout=timeout, allow_redirects=False
            )
        except DeliveryFailed as failure:
            return ProbeResult.failed(failure)
        except (zeep.exceptions.Error, requests.exceptions.RequestException) as exc:
            url = _failed_url(exc, destination.url)
            called = _Called(destination, certificate is not None, url, destination.read_timeout_seconds)
            return ProbeResult.failed(_failure(exc, None, _elapsed_ms(started), called))
        return ProbeResult.answered(
            response.status_code, _elapsed_ms(started), causes.endpoint(destination.url)
        )

    def _endpoint(
        self, destination: Destination, settings: SoapSettings, certificate: ClientCertificate | None
    ) -> _Endpoint:
        timeout = (destination.connect_timeout_seconds, destination.read_timeout_seconds)
        fingerprint = certificate_fingerprint(certificate) if certificate else None
        roots = pinned_roots(destination)
        key = (
            settings.wsdl,
            settings.binding,
            settings.soap_version,
            fingerprint,
            self._ca_pem,
            roots,
            timeout,
        )
        with self._lock:
            cached = self._endpoints.get(key)
        if cached is not None:
            return cached
        context = client_ssl_context(certificate, ca_pem=self._ca_pem, pinned_roots=roots)
        # Trust, client certificate and TLS 1.2+ are exactly this context's; the address is the
        # egress policy's; redirects are never followed (a SOAP post or a WSDL load alike).
        session = self._egress.requests_session(context)
        transport = _RecordingTransport(session, timeout, self._egress)
        try:
            client = zeep.Client(_wsdl_location(settings.wsdl), transport=transport)
        except FileNotFoundError:
            raise ConfigurationError(f"WSDL file {settings.wsdl!r} not found") from None
        binding = _binding_name(client, settings)
        if settings.operation not in client.wsdl.bindings[binding].all():
            raise ConfigurationError(f"WSDL binding {binding} has no operation {settings.operation}")
        endpoint = _Endpoint(client, transport, binding)
        with self._lock:
            self._endpoints[key] = endpoint
        return endpoint


def _nfelib_root() -> Path:
    return Path(str(resources.files("nfelib"))).resolve()


def _inside_nfelib(path: Path) -> bool:
    return path.resolve().is_relative_to(_nfelib_root())


def _wsdl_location(wsdl: str) -> str:
    """A URL or path zeep can load; `nfelib:<path>` resolves inside the installed nfelib package
    (any other path is refused when zeep loads it: _RecordingTransport.load)."""
    if not wsdl.startswith(NFELIB_PREFIX):
        return wsdl
    root = _nfelib_root()
    path = (root / wsdl.removeprefix(NFELIB_PREFIX)).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise ConfigurationError(f"no WSDL {wsdl!r} in the nfelib package")
    return str(path)


def _binding_name(client: zeep.Client, settings: SoapSettings) -> str:
    bindings: dict[str, Any] = client.wsdl.bindings
    if settings.binding is not None:
        if settings.binding in bindings:
            return settings.binding
        raise ConfigurationError(f"WSDL has no binding {settings.binding}")
    wanted = _SOAP12_BINDING if settings.soap_version == "1.2" else _SOAP11_BINDING
    for name, binding in bindings.items():
        if type(binding).__name__ == wanted:
            return name
    raise ConfigurationError(f"WSDL has no SOAP {settings.soap_version} binding")


@dataclass(frozen=True)
class _Called:
    """What a failure names: the destination (its connect timeout), whether a client
    certificate was presented, the URL the failed request went to (the service, or a WSDL it
    loaded) and the read timeout the attempt used (the connection's, or a shorter cap)."""

    destination: Destination
    presented_certificate: bool
    url: str
    read_timeout: float

    @property
    def host(self) -> str | None:
        return causes.endpoint(self.url)


def _failed_url(exc: BaseException, default: str) -> str:
    """The URL of the request that failed (requests keeps it on the exception), else `default`."""
    request = getattr(exc, "request", None)
    url = getattr(request, "url", None)
    return url if isinstance(url, str) and url else default


def _failure(
    exc: BaseException, response: requests.Response | None, duration_ms: int, called: _Called
) -> DeliveryFailed:
    if isinstance(exc, zeep.exceptions.Error):
        return _answer_failure(exc, response, duration_ms, called.host)
    return _connection_failure(exc, duration_ms, called)


def _answer_failure(
    exc: zeep.exceptions.Error, response: requests.Response | None, duration_ms: int, host: str | None
) -> DeliveryFailed:
    """The destination answered (or the request did not fit the WSDL)."""
    status = response.status_code if response is not None else None
    dest_status = str(status) if status is not None else None
    http_class = classify_http_status(status) if status is not None else None
    fault_code = _fault_code(exc.code) if isinstance(exc, zeep.exceptions.Fault) else None
    if isinstance(exc, zeep.exceptions.Fault) and fault_code is not None:
        return DeliveryFailed(
            ErrorClass.SOAP_FAULT,
            f"{exc.code}: {exc.message or ''}",
            dest_status=dest_status,
            duration_ms=duration_ms,
            fault_code=fault_code,
            host=host,
        )
    if http_class is not None:
        # An error status without a SOAP Fault: zeep calls it a TransportError or an "unknown fault".
        text = answer_text(status, _body_text(response)) if status is not None else ""
        return DeliveryFailed(
            http_class,
            text,
            dest_status=dest_status,
            duration_ms=duration_ms,
            cause=FailureCause.HTTP_STATUS,
            host=host,
        )
    # A 2xx answer that is not the expected SOAP envelope: the destination may have acted on it.
    sent = response is not None
    text = "answer is not a SOAP envelope" if sent else "request does not fit the WSDL operation"
    return DeliveryFailed(
        ErrorClass.SYNTAX, text, dest_status=dest_status, uncertain=sent, duration_ms=duration_ms, host=host
    )


def _connection_failure(exc: BaseException, duration_ms: int, called: _Called) -> DeliveryFailed:
    """No HTTP answer: classified by the cause, since TLS rejections surface as read errors."""
    host, destination = called.host, called.destination
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return causes.connect_timed_out(host, duration_ms, destination.connect_timeout_seconds)
    tls_error = causes.tls_error(exc)
    if tls_error is not None:
        return causes.tls_failed(
            tls_error,
            host,
            duration_ms,
            presented_certificate=called.presented_certificate,
            uncertain=causes.closed_during_handshake(tls_error),
        )
    if isinstance(exc, requests.exceptions.ReadTimeout):
        return causes.answer_timed_out(host, duration_ms, called.read_timeout)
    never_connected = any(
        isinstance(e, urllib3.exceptions.NewConnectionError | ConnectionRefusedError | socket.gaierror)
        for e in causes.exception_chain(exc)
    )
    if never_connected:
        return causes.not_connected(exc, host, duration_ms)
    return causes.connection_lost(host, duration_ms)


def _fault_code(code: str | None) -> str | None:
    """`soap:Receiver` → `Receiver`; `Server.Busy` (1.1 dotted subcode) → `Server`."""
    if not code:
        return None
    local = code.rsplit("}", 1)[-1].rsplit(":", 1)[-1]
    return local.split(".", 1)[0] or None


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _body_text(response: requests.Response | None) -> str:
    if response is None:
        return ""
    return response.content.decode(response.encoding or "utf-8", errors="replace")
