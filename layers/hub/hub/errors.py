"""Domain errors: one type per thing a caller can act on.

Each carries a machine-readable ``code`` and the HTTP status the API answers with, so every
API renders the same shape: ``{"error": {"code", "message", "details"?}}``.
Adapters translate vendor exceptions into these; nothing decides on exception text.
"""

from __future__ import annotations

from typing import Any, ClassVar


class HubError(Exception):
    """Base of every error the hub raises on purpose."""

    code: ClassVar[str] = "internal_error"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def headers(self) -> dict[str, str]:
        """Extra response headers this error asks for (e.g. Retry-After)."""
        return {}


class ConfigurationError(HubError):
    code = "configuration_error"
    http_status = 500


class ValidationFailed(HubError):
    code = "validation_error"
    http_status = 400


class CursorMismatch(HubError):
    """A well-formed cursor of the same listing, given out under other filters (the
    queue's `integration_id` / `since` / `until`): its position means nothing in this one.
    Start again without a cursor."""

    code = "cursor_mismatch"
    http_status = 422


class MalformedBody(HubError):
    code = "malformed_json"
    http_status = 400


class InvalidIdempotencyKey(HubError):
    code = "invalid_idempotency_key"
    http_status = 400


class PayloadTooLarge(HubError):
    code = "payload_too_large"
    http_status = 413


class UnsupportedMediaType(HubError):
    """The request's Content-Type is not one the route takes; `details.accepted` names them."""

    code = "unsupported_media_type"
    http_status = 415


class RouteNotFound(HubError):
    """No route has this path (any method)."""

    code = "route_not_found"
    http_status = 404


class MethodNotAllowed(HubError):
    """The path exists, but not with this method; `Allow` names the methods it takes."""

    code = "method_not_allowed"
    http_status = 405

    def __init__(self, message: str, *, allowed: tuple[str, ...]) -> None:
        super().__init__(message, details={"allowed": list(allowed)})
        self.allowed = allowed

    def headers(self) -> dict[str, str]:
        return {"Allow": ", ".join(self.allowed)}


class Unauthorized(HubError):
    code = "unauthorized"
    http_status = 401

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": "Bearer"}


class RateLimited(HubError):
    """Over the caller's rate limit: nothing was stored, so the same request may be
    sent again after `Retry-After` seconds."""

    code = "rate_limited"
    http_status = 429

    def __init__(self, message: str, *, retry_after_seconds: int, details: Any = None) -> None:
        super().__init__(message, details={"retry_after_seconds": retry_after_seconds, **(details or {})})
        self.retry_after_seconds = retry_after_seconds

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_seconds)}


class TooManyFailedTokens(RateLimited):
    """Too many refused admin tokens from this source address lately: no token is looked at
    until `Retry-After` has passed (a good one neither)."""

    code = "too_many_failed_tokens"


class Forbidden(HubError):
    """The admin token is valid but its role may not do this (e.g. a viewer reprocessing), or
    the action is the platform's and the token is one tenant's."""

    code = "forbidden"
    http_status = 403


class MalformedXml(MalformedBody):
    code = "malformed_xml"


class SignatureInvalid(HubError):
    """An inbound webhook whose signature or credential is missing or does not match."""

    code = "signature_invalid"
    http_status = 401


class SignatureExpired(SignatureInvalid):
    """A correctly signed webhook whose timestamp is outside the tolerance (a replay or a
    badly skewed clock)."""

    code = "signature_expired"


class UnprocessableEvent(HubError):
    """A verified webhook whose payload lacks a field the integration's adapter requires, or
    names an event type it does not know; `details.field` names it."""

    code = "missing_field"
    http_status = 422


class UnknownEventType(UnprocessableEvent):
    code = "unknown_event_type"


class UnknownMessageType(HubError):
    """A message type the integration does not define, while it refuses undefined ones
    (`unknown_message_types: reject`); `details.known_types` names the defined ones."""

    code = "unknown_message_type"
    http_status = 422


class NotFound(HubError):
    code = "not_found"
    http_status = 404


class IdempotencyKeyReused(HubError):
    """The Idempotency-Key was first used with a different request: send this one with a new key."""

    code = "idempotency_key_reused"
    http_status = 422


class Conflict(HubError):
    """A conditional write lost: the item is not in the state the caller expected."""

    code = "conflict"
    http_status = 409


class PreconditionFailed(HubError):
    """`If-Match` names a version that is no longer the stored one: someone changed the resource
    since the caller read it. `details.current_version` says which version is stored."""

    code = "precondition_failed"
    http_status = 412


class InvalidTransition(Conflict):
    """The stored status is no longer the one the caller read: someone else moved it."""

    code = "invalid_transition"


class IdempotencyKeyInUse(Conflict):
    """The first request with this Idempotency-Key is still running: resend after Retry-After
    seconds to get its answer."""

    code = "idempotency_key_in_use"
    retry_after_seconds: ClassVar[int] = 1

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_seconds)}


class LeaseHeld(Conflict):
    """A step of the message runs now (it holds the message's lease)."""

    code = "delivery_in_progress"


class AlreadyActed(Conflict):
    """The bulk job named already acted on this message (an earlier run of the same page)."""

    code = "already_acted"


class TransitionNotAllowed(HubError):
    """A move the transition table forbids: a bug in the caller, never retried into success."""

    code = "transition_not_allowed"


class ServiceUnavailable(HubError):
    """A dependency failed before anything was acknowledged: safe to resend."""

    code = "service_unavailable"
    http_status = 503
    retry_after_seconds: ClassVar[int] = 5

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_seconds)}


class MessagePending(ServiceUnavailable):
    """A claim on this message is held by an earlier request whose message is not stored yet: it
    may still be, so the resend waits `Retry-After` seconds (then takes the claim over if the
    message never came)."""

    code = "message_pending"

    def __init__(self, message: str, *, retry_after_seconds: int, details: Any = None) -> None:
        super().__init__(message, details={"retry_after_seconds": retry_after_seconds, **(details or {})})
        self.retry_after_seconds = retry_after_seconds  # type: ignore[misc]


class StorageUnavailable(ServiceUnavailable):
    code = "storage_unavailable"


class QueueUnavailable(ServiceUnavailable):
    code = "queue_unavailable"


class MetricsUnavailable(ServiceUnavailable):
    """CloudWatch did not answer a metrics read (the admin Health view shows the rest)."""

    code = "metrics_unavailable"


class DeliveryInFlight(ServiceUnavailable):
    """A step holds the message right now (mid-delivery): the status callback is recorded, and
    its resend (after `Retry-After`) moves the delivery status (hub.callbacks.receive)."""

    code = "delivery_in_flight"
    retry_after_seconds = 5


class AlertChannelUnavailable(ServiceUnavailable):
    """Slack or email did not take an alert. Retryable: the alert stays pending and the event
    that raised it is retried, so an alert is never dropped silently."""

    code = "alert_channel_unavailable"


class ClaimTaken(Conflict):
    """Creating a message lost the race for an idempotency or fingerprint claim."""

    code = "claim_taken"

    def __init__(self, message: str, *, claims: tuple[object, ...]) -> None:
        super().__init__(message)
        self.claims = claims


class KeyServiceUnavailable(ServiceUnavailable):
    """The key service (KMS) did not answer (throttled, unreachable, key disabled): retry later."""

    code = "key_service_unavailable"


class SecretUndecryptable(HubError):
    """A sealed secret does not open: sealed for another item or purpose, tampered, or another
    key. Not retryable into success: the owner's secret must be saved again."""

    code = "secret_undecryptable"
    http_status = 500


class SecretRequired(HubError):
    """A save moves a stored credential to another destination (a URL's scheme, host or port:
    hub.domain.destination_binding) without sending it again. `details`: one entry per credential
    to send again, `{"field", "problem": "secret_required", "message", "moved"}`."""

    code = "secret_required"
    http_status = 400
