"""The admin API over HTTP (httpx). Every failure becomes an ApiError carrying the API's own
error code and message (the hub's one error shape), or a TransportError naming the URL and the
cause (DNS, refused, timeout, TLS).

Every mutating call (POST, PUT, PATCH, DELETE) carries a fresh `Idempotency-Key`, so the API
acts on it at most once; an automatic retry of that call (a gateway's 502/503/504, 429, the
key still in use, or no answer in time) sends the same key again, so the API answers the first
result instead of acting twice."""

from __future__ import annotations

import socket
import ssl
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from hubctl import __version__

TIMEOUT = httpx.Timeout(30.0, connect=10.0)
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Pauses before each automatic retry (so at most len() retries).
RETRY_DELAYS = (1.0, 3.0)
#: Answers that say "not now, the same request may succeed later": a gateway or an unavailable
#: dependency (the API keeps no answer of a 5xx, so its key is free again), a rate limit.
_RETRIED_STATUSES = frozenset({429, 502, 503, 504})
#: The same Idempotency-Key is still being answered by the API (contracts: retry later).
_KEY_IN_USE = "idempotency_key_in_use"
#: The longest `Retry-After` honoured; a longer one is an answer, not a pause.
_MAX_RETRY_AFTER = 10.0


@dataclass
class ApiError(Exception):
    status: int
    code: str
    message: str
    details: Any = None
    #: What the operator can do about it (printed after the error), set by the command.
    hint: str | None = None

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"


class TransportError(Exception):
    """The admin API could not be reached (DNS, refused, TLS, timeout): the message names the
    URL and the cause."""

    def __init__(self, url: str, cause: str, *, may_have_arrived: bool = False) -> None:
        super().__init__(f"{url}: {cause}")
        self.url = url
        self.cause = cause
        #: The request may have reached the API (a read timeout, a dropped answer): a retry
        #: must carry the same Idempotency-Key. False: nothing was sent (DNS, refused, TLS).
        self.may_have_arrived = may_have_arrived


class BadUrl(Exception):
    """The admin API's URL itself is unusable (no http:// or https://, malformed): nothing sent."""


@dataclass
class Answer:
    status: int
    body: Any
    etag: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def version(self) -> int | None:
        """The resource's version, from the ETag (`"3"`) or the body's `version`."""
        if self.etag:
            text = self.etag.removeprefix("W/").strip('"')
            if text.isdigit():
                return int(text)
        if isinstance(self.body, dict) and isinstance(self.body.get("version"), int):
            return int(self.body["version"])
        return None


def _error_of(response: httpx.Response) -> ApiError:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return ApiError(
            response.status_code, error["code"], str(error.get("message", "")), error.get("details")
        )
    # Not the hub's shape: a proxy, a gateway or a wrong URL answered.
    excerpt = response.text[:200].replace("\n", " ")
    return ApiError(response.status_code, "http_error", excerpt or response.reason_phrase)


def _causes(error: BaseException) -> list[BaseException]:
    """The error and what it was raised from (httpx -> httpcore -> the socket's OSError)."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def cause_of(error: httpx.TransportError, timeout: httpx.Timeout = TIMEOUT) -> str:  # noqa: PLR0911 - one per cause
    """Why a request got no answer, in an operator's words: DNS, refused, timeout, TLS."""
    if isinstance(error, httpx.ConnectTimeout):
        return f"timeout: no connection within {timeout.connect:g} s"
    if isinstance(error, httpx.ReadTimeout):
        return f"timeout: connected, but no answer within {timeout.read:g} s"
    if isinstance(error, httpx.WriteTimeout | httpx.PoolTimeout):
        return "timeout: the request could not be sent in time"
    for cause in _causes(error):
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"TLS handshake failed: the server's certificate is not trusted ({cause.verify_message})"
        if isinstance(cause, ssl.SSLError):
            return f"TLS handshake failed ({getattr(cause, 'reason', None) or cause})"
        if isinstance(cause, socket.gaierror):
            return f"DNS: the host name does not resolve ({cause.strerror})"
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused: nothing listens on that port (is the stack running?)"
        if isinstance(cause, ConnectionResetError):
            return "the connection was reset by the server"
        if isinstance(cause, TimeoutError):
            return "timeout"
    if isinstance(error, httpx.RemoteProtocolError):
        return f"the server closed the connection without a valid answer ({error})"
    if isinstance(error, httpx.ProxyError):
        return f"the proxy refused ({error})"
    return f"{type(error).__name__}: {error}"


class AdminClient:
    def __init__(
        self,
        url: str,
        token: str,
        transport: httpx.BaseTransport | None = None,
        *,
        timeout: httpx.Timeout = TIMEOUT,
        retry_delays: Sequence[float] = RETRY_DELAYS,
        on_retry: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url.rstrip("/")
        self._timeout = timeout
        self._retry_delays = tuple(retry_delays)
        self._on_retry = on_retry
        self._sleep = sleep
        try:
            self._http = httpx.Client(
                base_url=url,
                headers={"Authorization": f"Bearer {token}", "User-Agent": f"hubctl/{__version__}"},
                timeout=timeout,
                transport=transport,
            )
        except httpx.InvalidURL as error:
            raise BadUrl(f"the admin API URL {url!r} is not a URL: {error}") from error

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        if_match: int | None = None,
    ) -> Answer:
        """One API call; a mutating one with a fresh Idempotency-Key, kept across its retries."""
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else {}
        if method in MUTATING:
            headers["Idempotency-Key"] = str(uuid.uuid4())
        query = {k: v for k, v in (params or {}).items() if v is not None}
        delays = list(self._retry_delays)
        while True:
            response, failure = self._send(method, path, json, query, headers)
            pause = self._retry_after(response, failure, delays)
            if pause is None:
                break
            self._note_retry(method, path, response, failure, pause)
            self._sleep(pause)
        if failure is not None:
            raise failure
        assert response is not None
        if response.status_code >= 400:
            raise _error_of(response)
        body: Any = None
        if response.content:
            try:
                body = response.json()
            except ValueError:
                body = response.text
        return Answer(response.status_code, body, response.headers.get("etag"), dict(response.headers))

    def _send(
        self, method: str, path: str, body: Any, query: dict[str, Any], headers: dict[str, str]
    ) -> tuple[httpx.Response | None, TransportError | None]:
        try:
            return self._http.request(method, path, json=body, params=query, headers=headers), None
        except httpx.UnsupportedProtocol as error:
            raise BadUrl(f"the admin API URL {self.url!r} must start with http:// or https://") from error
        except httpx.InvalidURL as error:
            raise BadUrl(f"the admin API URL {self.url!r} is not a URL: {error}") from error
        except httpx.TransportError as error:
            arrived = isinstance(error, httpx.ReadTimeout | httpx.WriteTimeout | httpx.RemoteProtocolError)
            cause = cause_of(error, self._timeout)
            return None, TransportError(f"{self.url}{path}", cause, may_have_arrived=arrived)

    def _retry_after(
        self, response: httpx.Response | None, failure: TransportError | None, delays: list[float]
    ) -> float | None:
        """The pause before retrying this answer, or None to take it as it is. Only what cannot
        have acted twice is retried: no connection, a gateway's or a rate limit's refusal, the
        key still in use (an answer in time never comes back to a retry)."""
        if not delays:
            return None
        if failure is not None:
            # A refused connection, an unknown host or a TLS failure sent nothing and will not
            # change in a second: said at once. A request that may have arrived is sent again
            # with its key, so the API answers it once.
            if not failure.may_have_arrived:
                return None
        elif response is not None:
            in_use = response.status_code == 409 and _code(response) == _KEY_IN_USE
            if response.status_code not in _RETRIED_STATUSES and not in_use:
                return None
            asked = _seconds(response.headers.get("retry-after"))
            if asked is not None:
                if asked > _MAX_RETRY_AFTER:
                    return None
                delays.pop(0)
                return asked
        return delays.pop(0)

    def _note_retry(
        self,
        method: str,
        path: str,
        response: httpx.Response | None,
        failure: TransportError | None,
        pause: float,
    ) -> None:
        if self._on_retry is None:
            return
        why = failure.cause if failure is not None else f"HTTP {response.status_code if response else '?'}"
        key = " (same Idempotency-Key)" if method in MUTATING else ""
        self._on_retry(f"{method} {path}: {why}; retrying in {pause:g} s{key}")

    def get(self, path: str, **params: Any) -> Answer:
        return self.call("GET", path, params=params)

    def post(self, path: str, body: Any = None, **params: Any) -> Answer:
        return self.call("POST", path, json=body, params=params or None)


def _code(response: httpx.Response) -> str | None:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return None
    return error.get("code") if isinstance(error, dict) else None


def _seconds(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
