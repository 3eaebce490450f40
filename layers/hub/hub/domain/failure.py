"""Error classes of a failed step (seed 000, "Erros mapeados pelo classifier"; seed 004,
pattern 6). Adapters raise typed errors carrying one of these; the retry policy decides on the
class, never on message text."""

from __future__ import annotations

from enum import StrEnum


class ErrorClass(StrEnum):
    HTTP_5XX = "http_5xx"
    HTTP_4XX = "http_4xx"
    HTTP_401 = "http_401"
    HTTP_429 = "http_429"
    #: The destination says the resource is gone for good: the connection is flagged.
    HTTP_410 = "http_410"
    TIMEOUT = "timeout"
    NETWORK = "network"
    TLS = "tls"
    SYNTAX = "syntax"
    SOAP_FAULT = "soap_fault"
    #: The hub itself failed: a step raised something no adapter classified (a bug, or stored
    #: data it cannot read) on every receive SQS made. Never the destination's answer.
    INTERNAL = "internal"
    #: The payload was deleted by its retention (payload_retention_days) before this attempt:
    #: there is nothing to deliver. Never retried; the message keeps its metadata and timeline.
    PAYLOAD_PURGED = "payload_purged"


_SPECIAL_STATUSES = {401: ErrorClass.HTTP_401, 410: ErrorClass.HTTP_410, 429: ErrorClass.HTTP_429}


def classify_http_status(status: int) -> ErrorClass | None:
    """The class of an HTTP answer; None for success (2xx). Redirects are not followed, so a 3xx
    means nothing was delivered: a configuration problem, never retried (http_4xx)."""
    if status < 300:
        return None
    if status >= 500:
        return ErrorClass.HTTP_5XX
    return _SPECIAL_STATUSES.get(status, ErrorClass.HTTP_4XX)


class FailureCause(StrEnum):
    """Why a call to a destination failed, finer than its error class and beside it (the class
    decides retries; the cause tells an operator what to fix): the failure also names the host
    (`host:port`) it was for."""

    #: The host name does not resolve.
    DNS = "dns"
    #: Nothing listens there: the connection was refused.
    REFUSED = "refused"
    #: No route to the host, or another error before a connection was made.
    UNREACHABLE = "unreachable"
    #: No connection, or no answer, within the connection's timeout.
    TIMEOUT = "timeout"
    #: The TLS handshake failed: the server's certificate (unknown CA, expired, another host's
    #: name) or ours (missing, refused).
    TLS = "tls"
    #: Connected, but the connection broke before an answer came.
    CONNECTION_LOST = "connection_lost"
    #: The destination answered with an HTTP error status.
    HTTP_STATUS = "http_status"
    #: The egress policy refused the address (nothing was connected to).
    NOT_ALLOWED = "not_allowed"
