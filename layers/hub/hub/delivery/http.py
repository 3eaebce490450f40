"""REST delivery over httpx: auth, timeouts, a stable Idempotency-Key, mTLS, and every
library error translated into a `DeliveryFailed` with its class."""

from __future__ import annotations

import base64
import hashlib
import ssl
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from hub.delivery import causes
from hub.delivery.egress import EgressPolicy
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
from hub.domain.failure import ErrorClass, FailureCause, classify_http_status
from hub.domain.tenancy import AuthKind, Destination, HttpAuth

_TOKEN_EARLY_REFRESH_SECONDS = 30


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date); None if absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # str.isdigit() also takes "²", which float() refuses
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _secrets_of(auth: HttpAuth) -> list[str]:
    return [s for s in (auth.token, auth.password, auth.api_key, auth.client_secret) if s]


def _scrub(text: str, secrets: list[str]) -> str:
    """A destination may echo a request back: never keep our credentials in dest_status_text."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def _transport_failure(
    exc: httpx.TransportError,
    host: str | None,
    duration_ms: int,
    *,
    timeout: httpx.Timeout | None = None,
    presented_certificate: bool = False,
) -> DeliveryFailed:
    """No HTTP answer: classified by type and by cause (TLS rejections surface as read errors),
    naming the host and the cause (hub.delivery.causes)."""
    if isinstance(exc, httpx.ConnectTimeout):
        return causes.connect_timed_out(host, duration_ms, timeout.connect if timeout else None)
    if isinstance(exc, httpx.ReadTimeout | httpx.WriteTimeout):
        # The request may have been applied: the outcome is uncertain (seed 004, pattern 6).
        return causes.answer_timed_out(host, duration_ms, timeout.read if timeout else None)
    tls_error = causes.tls_error(exc)
    if tls_error is not None:
        return causes.tls_failed(tls_error, host, duration_ms, presented_certificate=presented_certificate)
    if isinstance(exc, httpx.ReadError | httpx.RemoteProtocolError):
        return causes.connection_lost(host, duration_ms)
    return causes.not_connected(exc, host, duration_ms)


def _token_key(auth: HttpAuth) -> tuple[str, str, str, str]:
    """A cached token is found only with the credentials that fetched it: the endpoint, client
    id and scope are shown in admin views, so without the secret's digest a second connection
    (any tenant's) naming the same three with any secret would be handed the token."""
    digest = hashlib.sha256((auth.client_secret or "").encode()).hexdigest()
    return (auth.token_url or "", auth.client_id or "", auth.scope or "", digest)


class TokenCache:
    """OAuth2 client-credentials tokens, reused until shortly before they expire."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._tokens: dict[tuple[str, str, str, str], tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def token(self, auth: HttpAuth, http: httpx.Client) -> str:
        key = _token_key(auth)
        with self._lock:
            cached = self._tokens.get(key)
            if cached and cached[1] > self._clock():
                return cached[0]
        data = {"grant_type": "client_credentials"}
        if auth.scope:
            data["scope"] = auth.scope
        host = causes.endpoint(auth.token_url)
        try:
            answer = http.post(
                auth.token_url or "",
                data=data,
                auth=(auth.client_id or "", auth.client_secret or ""),
            )
        except httpx.HTTPError as exc:
            # Nothing was delivered whatever the cause: `network` (retried), named as a delivery's.
            named = _transport_failure(exc, host, 0) if isinstance(exc, httpx.TransportError) else None
            raise DeliveryFailed(
                ErrorClass.NETWORK,
                f"token endpoint: {named.dest_status_text if named else 'no answer'}",
                cause=named.cause if named else None,
                host=host,
            ) from exc
        if answer.status_code != 200:
            error_class = classify_http_status(answer.status_code) or ErrorClass.HTTP_4XX
            said = f"token endpoint {host or ''}".rstrip() + f" answered {answer.status_code}"
            if 300 <= answer.status_code < 400:
                said += ", a redirect: redirects are never followed (point auth.token_url at the final URL)"
            raise DeliveryFailed(
                error_class,
                said,
                dest_status=str(answer.status_code),
                cause=FailureCause.HTTP_STATUS,
                host=host,
            )
        try:
            body = answer.json()
            token = str(body["access_token"])
            lifetime = float(body.get("expires_in", 300))
        except (ValueError, KeyError, TypeError) as exc:
            raise DeliveryFailed(
                ErrorClass.HTTP_5XX, "token endpoint answered without an access token"
            ) from exc
        with self._lock:
            self._tokens[key] = (token, self._clock() + max(0.0, lifetime - _TOKEN_EARLY_REFRESH_SECONDS))
        return token

    def forget(self, auth: HttpAuth) -> None:
        """Drops the cached token (after a 401: the next attempt fetches a new one)."""
        with self._lock:
            self._tokens.pop(_token_key(auth), None)


class HttpConnector:
    """Implements the Connector port for REST destinations."""

    def __init__(
        self,
        certificates: CertificateStore,
        *,
        egress: EgressPolicy,
        ca_pem: bytes | None = None,
        tokens: TokenCache | None = None,
    ) -> None:
        self._certificates = certificates
        self._egress = egress
        self._ca_pem = ca_pem
        self._tokens = tokens or TokenCache()
        #: Per (tenant#certificate id, pinned roots): (the certificate's fingerprint, its client).
        #: A renewed certificate has another fingerprint and replaces the client.
        self._clients: dict[tuple[str, bytes | None], tuple[str | None, httpx.Client]] = {}
        self._lock = threading.Lock()

    def _client(self, destination: Destination, tenant_id: str | None) -> httpx.Client:
        roots = pinned_roots(destination)
        key = (
            f"{tenant_id}#{destination.client_certificate_id}" if destination.client_certificate_id else "",
            roots,
        )
        # Raises DeliveryFailed (`tls`) when the destination names a certificate the tenant lacks.
        certificate = self._certificates.client_certificate(destination, tenant_id)
        fingerprint = None
        if certificate is not None:
            from hub.delivery.tls import certificate_fingerprint  # noqa: PLC0415 - only for mTLS

            fingerprint = certificate_fingerprint(certificate)
        with self._lock:
            found = self._clients.get(key)
            if found is not None and found[0] == fingerprint:
                return found[1]
        fresh = self._egress.http_client(verify=self._verify(certificate, roots))
        with self._lock:
            # The replaced client is not closed: a delivery on another thread may still use it.
            self._clients[key] = (fingerprint, fresh)
        return fresh

    def _verify(self, certificate: ClientCertificate | None, roots: bytes | None) -> ssl.SSLContext | bool:
        if certificate is None and self._ca_pem is None and roots is None:
            return True
        from hub.delivery.tls import client_ssl_context  # noqa: PLC0415 - only for mTLS / private CAs

        return client_ssl_context(certificate, ca_pem=self._ca_pem, pinned_roots=roots)

    def _auth_headers(self, auth: HttpAuth, http: httpx.Client) -> dict[str, str]:
        if auth.kind is AuthKind.BEARER:
            return {"Authorization": f"Bearer {auth.token or ''}"}
        if auth.kind is AuthKind.BASIC:
            raw = f"{auth.username or ''}:{auth.password or ''}".encode()
            return {"Authorization": "Basic " + base64.b64encode(raw).decode()}
        if auth.kind is AuthKind.API_KEY:
            return {auth.header_name: auth.api_key or ""}
        if auth.kind is AuthKind.OAUTH2_CLIENT_CREDENTIALS:
            return {"Authorization": f"Bearer {self._tokens.token(auth, http)}"}
        return {}

    def deliver(self, destination: Destination, request: OutboundRequest) -> DeliveryOutcome:
        http = self._client(destination, request.tenant_id)
        headers = {
            **destination.headers,
            "Content-Type": request.content_type,
            "Idempotency-Key": request.idempotency_key,
            "X-Correlation-Id": request.correlation_id,
        }
        timeout = httpx.Timeout(
            request.read_timeout(destination),
            connect=destination.connect_timeout_seconds,
        )
        started = time.monotonic()
        host = causes.endpoint(destination.url)

        def elapsed() -> int:
            return int((time.monotonic() - started) * 1000)

        try:
            auth_headers = self._auth_headers(destination.auth, http)
            headers.update(auth_headers)
            response = http.request(
                destination.method, destination.url, content=request.body, headers=headers, timeout=timeout
            )
        except httpx.TransportError as exc:
            presented = destination.client_certificate_id is not None
            raise _transport_failure(
                exc, host, elapsed(), timeout=timeout, presented_certificate=presented
            ) from exc
        # Everything we sent that could be a credential: auth header values (incl. the Basic
        # string and a fetched token), configured header values, and the raw secrets.
        secrets = [*_secrets_of(destination.auth), *auth_headers.values(), *destination.headers.values()]
        secrets += [value.split(" ", 1)[1] for value in auth_headers.values() if " " in value]
        error_class = classify_http_status(response.status_code)
        if error_class is None:
            return DeliveryOutcome(str(response.status_code), elapsed())
        text = answer_text(response.status_code, _scrub(response.text, [s for s in secrets if len(s) >= 4]))
        if error_class is ErrorClass.HTTP_401 and destination.auth.kind is AuthKind.OAUTH2_CLIENT_CREDENTIALS:
            self._tokens.forget(destination.auth)
        raise DeliveryFailed(
            error_class,
            text,
            dest_status=str(response.status_code),
            retry_after_seconds=parse_retry_after(response.headers.get("retry-after")),
            duration_ms=elapsed(),
            cause=FailureCause.HTTP_STATUS,
            host=host,
        )

    def probe(self, destination: Destination, tenant_id: str | None) -> ProbeResult:
        """One harmless call, as `deliver` would make it (same client, TLS context, client
        certificate and auth, incl. fetching an OAuth2 token) but a GET without a body: the
        connection test of the admin API. Failures are classified exactly as deliveries are."""
        started = time.monotonic()
        host = causes.endpoint(destination.url)
        try:
            http = self._client(destination, tenant_id)
            headers = {
                **destination.headers,
                **self._auth_headers(destination.auth, http),
                "X-Correlation-Id": "connection-test",
            }
            timeout = httpx.Timeout(
                destination.read_timeout_seconds, connect=destination.connect_timeout_seconds
            )
            try:
                response = http.request("GET", destination.url, headers=headers, timeout=timeout)
            except httpx.TransportError as exc:
                raise _transport_failure(
                    exc,
                    host,
                    int((time.monotonic() - started) * 1000),
                    timeout=timeout,
                    presented_certificate=destination.client_certificate_id is not None,
                ) from exc
        except DeliveryFailed as failure:
            return ProbeResult.failed(failure)
        return ProbeResult.answered(response.status_code, int((time.monotonic() - started) * 1000), host)
