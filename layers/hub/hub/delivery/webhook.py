"""Outbound webhooks over httpx (issue 12): one POST through the egress policy, its failure
classified exactly as a REST delivery's (hub.delivery.http), redirects never followed."""

from __future__ import annotations

import time

import httpx

from hub.delivery.causes import endpoint
from hub.delivery.egress import DestinationNotAllowed, EgressPolicy
from hub.delivery.http import _transport_failure, parse_retry_after
from hub.delivery.port import DeliveryFailed, answer_text
from hub.domain.failure import ErrorClass, FailureCause, classify_http_status

#: A receiver should answer fast and process later (Standard Webhooks' advice).
CONNECT_TIMEOUT_SECONDS = 5.0
READ_TIMEOUT_SECONDS = 15.0


class HttpWebhookPoster:
    """hub.outbox.webhooks.WebhookPoster: one client per instance (connections reused)."""

    def __init__(self, egress: EgressPolicy) -> None:
        self._http = egress.http_client()

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        started = time.monotonic()
        timeout = httpx.Timeout(READ_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS)
        host = endpoint(url)
        try:
            response = self._http.post(url, content=body, headers=headers, timeout=timeout)
        except httpx.TransportError as exc:
            raise _transport_failure(
                exc, host, int((time.monotonic() - started) * 1000), timeout=timeout
            ) from exc
        except DestinationNotAllowed as refused:
            # Retried as a network failure: a public receiver's name may resolve to a private
            # address for a while; the refusal never reaches the address either way.
            raise DeliveryFailed(
                ErrorClass.NETWORK, refused.message, cause=FailureCause.NOT_ALLOWED, host=host
            ) from None
        error_class = classify_http_status(response.status_code)
        if error_class is None:
            return response.status_code
        raise DeliveryFailed(
            error_class,
            answer_text(response.status_code, response.text),
            dest_status=str(response.status_code),
            retry_after_seconds=parse_retry_after(response.headers.get("retry-after")),
            duration_ms=int((time.monotonic() - started) * 1000),
            cause=FailureCause.HTTP_STATUS,
            host=host,
        )
