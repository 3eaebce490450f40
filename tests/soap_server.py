"""A real SOAP 1.2 peer for connector tests: HTTPS on 127.0.0.1 with required client certificates,
answering NFeStatusServico4 `nfeStatusServicoNF` like a SEFAZ does (a canned `retConsStatServ`).

It records every request (headers, body, client certificate subject) and can be told to answer a
SOAP 1.2 Fault, an HTTP 500 without an envelope, or to hang before answering.
"""

from __future__ import annotations

import ssl
import threading
from dataclasses import dataclass
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

from cryptography import x509

from tests.serving import serving_thread

SOAP12_CONTENT_TYPE = "application/soap+xml; charset=utf-8"

RET_CONS_STAT_SERV = (
    '<retConsStatServ xmlns="http://www.portalfiscal.inf.br/nfe" versao="4.00">'
    "<tpAmb>2</tpAmb><verAplic>TEST_PL009_V4</verAplic><cStat>107</cStat>"
    "<xMotivo>Servico em Operacao</xMotivo><cUF>35</cUF>"
    "<dhRecbto>2026-01-01T10:00:00-03:00</dhRecbto><tMed>1</tMed></retConsStatServ>"
)

SUCCESS_ENVELOPE = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<soap:Envelope xmlns:soap="http://www.w3.org/2003/05/soap-envelope"><soap:Body>'
    '<nfeResultMsg xmlns="http://www.portalfiscal.inf.br/nfe/wsdl/NFeStatusServico4">'
    f"{RET_CONS_STAT_SERV}</nfeResultMsg></soap:Body></soap:Envelope>"
)


def fault_envelope(code: str, reason: str) -> str:
    """A SOAP 1.2 Fault; `code` is "Sender" or "Receiver"."""
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<soap:Envelope xmlns:soap="http://www.w3.org/2003/05/soap-envelope"><soap:Body><soap:Fault>'
        f"<soap:Code><soap:Value>soap:{code}</soap:Value></soap:Code>"
        f'<soap:Reason><soap:Text xml:lang="en">{reason}</soap:Text></soap:Reason>'
        "</soap:Fault></soap:Body></soap:Envelope>"
    )


class Behaviour(StrEnum):
    SUCCESS = "success"
    SENDER_FAULT = "sender_fault"
    RECEIVER_FAULT = "receiver_fault"
    HTTP_500 = "http_500"
    HANG = "hang"


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: bytes
    client_subject: str | None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        owner = self.server.owner
        owner.requests.append(
            RecordedRequest(self.path, dict(self.headers.items()), body, _peer_subject(self.connection))
        )
        behaviour = owner.behaviour
        if behaviour is Behaviour.HANG:
            owner.release.wait(timeout=30)
            return
        if behaviour is Behaviour.SENDER_FAULT:
            self._answer(400, fault_envelope("Sender", "Rejeicao: XML mal formado"), SOAP12_CONTENT_TYPE)
        elif behaviour is Behaviour.RECEIVER_FAULT:
            self._answer(
                500, fault_envelope("Receiver", "Servico paralisado momentaneamente"), SOAP12_CONTENT_TYPE
            )
        elif behaviour is Behaviour.HTTP_500:
            self._answer(500, "Internal Server Error", "text/plain")
        else:
            self._answer(200, SUCCESS_ENVELOPE, SOAP12_CONTENT_TYPE)

    def do_GET(self) -> None:
        """`?wsdl` answers the service's WSDL (as SEFAZ services do); anything else is 405."""
        owner = self.server.owner
        owner.requests.append(
            RecordedRequest(self.path, dict(self.headers.items()), b"", _peer_subject(self.connection))
        )
        if self.path.endswith("?wsdl"):
            self._answer(200, _status_wsdl(), "text/xml; charset=utf-8")
        else:
            self._answer(405, "Method Not Allowed", "text/plain")

    def _answer(self, status: int, text: str, content_type: str) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: tests assert on `requests`, not on stderr."""


def _status_wsdl() -> str:
    from importlib import resources  # noqa: PLC0415

    return (resources.files("nfelib") / "nfe/wsdl/v4_0/nfestatusservico4.wsdl").read_text("utf-8")


def _peer_subject(connection: object) -> str | None:
    """RFC 4514 subject of the client certificate, e.g. "CN=Hub Test Client,O=Hub Test PKI,C=BR"."""
    if not isinstance(connection, ssl.SSLSocket):
        return None
    der = connection.getpeercert(binary_form=True)
    return x509.load_der_x509_certificate(der).subject.rfc4514_string() if der else None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: SoapServer

    def handle_error(self, request: object, client_address: object) -> None:
        """Rejected handshakes (no or untrusted client certificate) are expected in tests."""


class SoapServer:
    """HTTPS SOAP 1.2 server on a free port of 127.0.0.1 that requires a client certificate
    issued by `ca_file`. Use as a context manager; `url` is the service address."""

    def __init__(self, ca_file: Path, cert_file: Path, key_file: Path) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=str(ca_file))
        context.load_cert_chain(str(cert_file), str(key_file))
        self._context = context
        self.behaviour = Behaviour.SUCCESS
        self.requests: list[RecordedRequest] = []
        #: Set to let a hanging handler finish (stop() sets it).
        self.release = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"https://localhost:{self._httpd.server_address[1]}/ws/NFeStatusServico4.asmx"

    def start(self) -> SoapServer:
        httpd = _Server(("127.0.0.1", 0), _Handler, bind_and_activate=False)
        httpd.owner = self
        httpd.server_bind()
        httpd.server_activate()
        # Handshake per connection in the handler thread, so a bad client never blocks the accept loop.
        httpd.socket = self._context.wrap_socket(
            httpd.socket, server_side=True, do_handshake_on_connect=False
        )
        self._httpd = httpd
        self._thread = serving_thread(httpd, name="soap-server")
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def reset(self) -> None:
        self.behaviour = Behaviour.SUCCESS
        self.requests.clear()
        self.release.set()
        self.release = threading.Event()

    def __enter__(self) -> SoapServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
