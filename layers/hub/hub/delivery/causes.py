"""A call that got no HTTP answer, said the way an operator can act on it: the host it was for and
the cause (hub.domain.failure.FailureCause), found in the exception chain of whichever library
made the call (httpx/httpcore, requests/urllib3, ssl, socket) by type, never by message text.

The error classes stay the connectors' (`network`, `timeout`, `tls`: the retry policy decides on
them); these helpers only build the failure's text, cause and host. The texts name the host and
the cause, never a URL's path or query, a credential or certificate material:

- `DNS lookup of erp.invalid failed (Name or service not known)`
- `connection refused by erp.example.com:443`
- `TLS handshake with sefaz.example:443 failed: certificate verify failed: unable to get local
  issuer certificate`
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator

from hub.delivery.port import DeliveryFailed
from hub.domain.destination_binding import origin
from hub.domain.failure import ErrorClass, FailureCause

#: OpenSSL alerts a server sends about the client's certificate (or its absence), as the words
#: an operator reads.
_CLIENT_CERTIFICATE_ALERTS = {
    "TLSV13_ALERT_CERTIFICATE_REQUIRED": "certificate required",
    "SSLV3_ALERT_BAD_CERTIFICATE": "bad certificate",
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN": "certificate unknown",
    "TLSV1_ALERT_UNKNOWN_CA": "unknown CA",
    "SSLV3_ALERT_CERTIFICATE_EXPIRED": "certificate expired",
    "SSLV3_ALERT_CERTIFICATE_REVOKED": "certificate revoked",
    "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE": "unsupported certificate",
    "TLSV1_ALERT_ACCESS_DENIED": "access denied",
}
#: Other handshake failures an operator can act on, in words.
_OTHER_PROBLEMS = {
    "SSLV3_ALERT_HANDSHAKE_FAILURE": (
        "the destination ended the handshake (no common protocol or cipher, or a client certificate "
        "it requires)"
    ),
    "WRONG_VERSION_NUMBER": "the destination does not speak TLS on this port (wrong version number)",
}


def endpoint(url: str | None) -> str | None:
    """`host:port` of `url` (the scheme's default port filled in, an IPv6 address in brackets);
    None without a host. Never the path, query or user-info."""
    where = origin(url)
    if where is None or not where.host or where.port is None:
        return None
    host = f"[{where.host}]" if ":" in where.host else where.host
    return f"{host}:{where.port}"


def _host_name(host: str) -> str:
    """The name part of `host:port`."""
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name.strip("[]")


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and every exception it wraps (cause, context, urllib3's `reason`, exception args)."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        wrapped = [current.__cause__, current.__context__, getattr(current, "reason", None), *current.args]
        pending.extend(e for e in wrapped if isinstance(e, BaseException))


def tls_error(exc: BaseException) -> ssl.SSLError | None:
    """The ssl error behind `exc`, if any."""
    return next((error for error in exception_chain(exc) if isinstance(error, ssl.SSLError)), None)


def closed_during_handshake(error: ssl.SSLError) -> bool:
    """The server closed the TLS connection without an alert (an EOF): a server refusing a client
    certificate sometimes closes before its alert is read, exactly as a connection dropped after
    the request was sent looks."""
    return isinstance(error, ssl.SSLEOFError | ssl.SSLZeroReturnError)


def tls_problem(error: ssl.SSLError, *, presented_certificate: bool) -> str:
    """What went wrong in the handshake, in words: the server's certificate (verify failed: unknown
    CA, expired, another host's name) or ours (required and missing, refused)."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"certificate verify failed: {error.verify_message or error.reason or 'untrusted'}"
    if closed_during_handshake(error):
        return "closed by the destination without an answer (a client certificate missing or refused?)"
    reason = str(error.reason or type(error).__name__)
    alert = _CLIENT_CERTIFICATE_ALERTS.get(reason)
    if alert is not None:
        if presented_certificate:
            return f"the destination refused the client certificate ({alert})"
        return f"the destination requires a client certificate and none was presented ({alert})"
    return _OTHER_PROBLEMS.get(reason, reason.replace("_", " ").lower())


def tls_failed(
    error: ssl.SSLError,
    host: str | None,
    duration_ms: int,
    *,
    presented_certificate: bool,
    uncertain: bool = False,
) -> DeliveryFailed:
    problem = tls_problem(error, presented_certificate=presented_certificate)
    return DeliveryFailed(
        ErrorClass.TLS,
        f"TLS handshake with {host or 'the destination'} failed: {problem}",
        uncertain=uncertain,
        duration_ms=duration_ms,
        cause=FailureCause.TLS,
        host=host,
    )


def connect_timed_out(host: str | None, duration_ms: int, seconds: float | None = None) -> DeliveryFailed:
    """No connection within the connect timeout: nothing was sent (`network`)."""
    after = f" after {seconds:g} s" if seconds is not None else ""
    return DeliveryFailed(
        ErrorClass.NETWORK,
        f"connecting to {host or 'the destination'} timed out{after}",
        duration_ms=duration_ms,
        cause=FailureCause.TIMEOUT,
        host=host,
    )


def answer_timed_out(host: str | None, duration_ms: int, seconds: float | None = None) -> DeliveryFailed:
    """Sent, then no answer within the read timeout: the destination may have applied it
    (`timeout`, uncertain)."""
    within = f" within {seconds:g} s" if seconds is not None else " before the read timeout"
    return DeliveryFailed(
        ErrorClass.TIMEOUT,
        f"no answer from {host or 'the destination'}{within} (the request was sent)",
        uncertain=True,
        duration_ms=duration_ms,
        cause=FailureCause.TIMEOUT,
        host=host,
    )


def connection_lost(host: str | None, duration_ms: int) -> DeliveryFailed:
    """The connection broke after the request went out (`network`, uncertain)."""
    return DeliveryFailed(
        ErrorClass.NETWORK,
        f"connection to {host or 'the destination'} lost after sending, without an answer",
        uncertain=True,
        duration_ms=duration_ms,
        cause=FailureCause.CONNECTION_LOST,
        host=host,
    )


def not_connected(exc: BaseException, host: str | None, duration_ms: int) -> DeliveryFailed:
    """No connection was made (`network`, nothing sent): the name did not resolve, the port
    refused, or the host was unreachable."""
    where = host or "the destination"
    for error in exception_chain(exc):
        if isinstance(error, socket.gaierror):
            name = _host_name(host) if host else "the destination's host"
            why = error.strerror or "no address"
            return _network(f"DNS lookup of {name} failed ({why})", FailureCause.DNS, host, duration_ms)
        if isinstance(error, ConnectionRefusedError):
            return _network(f"connection refused by {where}", FailureCause.REFUSED, host, duration_ms)
    reason = next(
        (e.strerror for e in exception_chain(exc) if isinstance(e, OSError) and e.strerror),
        "no connection",
    )
    return _network(f"{where} unreachable ({reason})", FailureCause.UNREACHABLE, host, duration_ms)


def _network(text: str, cause: FailureCause, host: str | None, duration_ms: int) -> DeliveryFailed:
    return DeliveryFailed(ErrorClass.NETWORK, text, duration_ms=duration_ms, cause=cause, host=host)
