"""`POST /api/edi-hub/status-callback/{message_id}`: a destination confirms what became of a
delivered message (accepted, delivered, read) or that it failed (rejected, expired).

Guarantees:
- authenticated per connection: the bearer token must be the status-callback token of the
  connection the message's integration delivers through (its SHA-256 compared in constant time;
  no KMS on this path). Anything else - no token, a wrong one, another connection's, a message
  that does not exist, a connection without a token - is the same 401, so a caller without the
  right token learns nothing, not even whether the message exists;
- every callback is recorded as received before anything moves (a 2xx means it is kept);
- the message's `delivery_status` only moves forward (hub.domain.delivery_status), in one
  conditional update: concurrent or late callbacks never regress it. 202 when this callback moved
  it, 200 when it was recorded and moved nothing (the same status again, a lower one, or after a
  terminal failure); both answer the projection as it stands. While a step holds the message
  (mid-delivery) an advance waits: 503 `delivery_in_flight` with Retry-After, the callback
  recorded, the resend moves it (so every advance leaves as its outbox event).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hub.domain.clock import utcnow
from hub.domain.delivery_status import DeliveryStatus, StatusCallback, hash_callback_token, may_follow
from hub.domain.ids import is_message_id, new_id
from hub.domain.message import MessageRecord
from hub.domain.retention import expired
from hub.domain.tenancy import tenant_accepts_traffic
from hub.errors import DeliveryInFlight, Unauthorized
from hub.ports import ConfigRepository, DeliveryStatusStore, ReceivedCallback

if TYPE_CHECKING:
    from hub.ingest.throttle import TenantThrottle

logger = logging.getLogger(__name__)

#: One answer for every authentication failure (see the module's docstring).
_REFUSED = (
    "a valid status-callback token of this message's connection is required (Authorization: Bearer <token>)"
)


@dataclass(frozen=True)
class Authenticated:
    record: MessageRecord
    connection_id: str


@dataclass(frozen=True)
class CallbackOutcome:
    record: MessageRecord
    callback_id: str
    advanced: bool

    def body(self) -> dict[str, Any]:
        record = self.record
        return {
            "message_id": record.message_id,
            "callback_id": self.callback_id,
            "advanced": self.advanced,
            "delivery_status": (record.delivery_status or DeliveryStatus.PENDING).value,
            "delivery_status_at": record.model_dump(mode="json", include={"delivery_status_at"})[
                "delivery_status_at"
            ],
        }


class StatusCallbacks:
    def __init__(
        self,
        config: ConfigRepository,
        store: DeliveryStatusStore,
        *,
        clock: Callable[[], datetime] = utcnow,
        throttle: TenantThrottle | None = None,
    ) -> None:
        self._config = config
        self._store = store
        self._clock = clock
        self._throttle = throttle

    def authenticate(self, raw_token: str | None, message_id: str) -> Authenticated:
        """The message and its connection when `raw_token` is that connection's callback token;
        Unauthorized (one message for every reason) otherwise, or when the tenant is disabled;
        TenantRateLimited when the tenant is over its rate (the partner API's one limit per
        tenant; checked before the callback is recorded)."""
        if not raw_token or not is_message_id(message_id):
            raise Unauthorized(_REFUSED)
        presented = hash_callback_token(raw_token)
        record = self._store.message(message_id)
        integration = (
            self._config.get_integration(record.tenant_id, record.integration_id) if record else None
        )
        if (
            record is None
            or integration is None
            or integration.tenant_id != record.tenant_id
            or expired(record.expires_at, self._clock())  # past its retention: gone (issue 29)
        ):
            raise Unauthorized(_REFUSED)
        connection_id = integration.connection_id
        credential = self._store.credential(record.tenant_id, connection_id) if connection_id else None
        if (
            connection_id is None
            or credential is None
            or credential.tenant_id != record.tenant_id
            or not credential.accepts(presented, self._clock())
        ):
            raise Unauthorized(_REFUSED)
        tenant = self._config.get_tenant(record.tenant_id)
        if not tenant_accepts_traffic(tenant):
            raise Unauthorized("this tenant is disabled")
        if self._throttle is not None:
            self._throttle.admit(record.tenant_id, tenant)
        return Authenticated(record, connection_id)

    def receive(self, caller: Authenticated, callback: StatusCallback) -> CallbackOutcome:
        """Records the callback, then advances the projection when the rank rules allow."""
        now = self._clock()
        record = caller.record
        received = ReceivedCallback(
            message_id=record.message_id,
            tenant_id=record.tenant_id,
            connection_id=caller.connection_id,
            callback_id=new_id("cbk"),
            status=callback.status,
            received_at=now,
            occurred_at=callback.occurred_at,
            detail=callback.detail,
            external_ref=callback.external_ref,
            message_expires_at=record.expires_at,
        )
        self._store.record_callback(received)
        status = DeliveryStatus(callback.status.value)
        current, advanced = self._store.advance(record, status, now)
        if not advanced and current.lease_owner is not None and may_follow(current.delivery_status, status):
            # Recorded; the projection waits until the step gives the message back (see
            # hub.adapters.dynamo.callbacks.advance_update): the destination's resend moves it.
            raise DeliveryInFlight(
                "the message is being delivered right now; resend this callback in a few seconds",
                details={"callback_id": received.callback_id},
            )
        logger.info(
            "status callback",
            extra={
                "message_id": record.message_id,
                "tenant_id": record.tenant_id,
                "connection_id": caller.connection_id,
                "callback_id": received.callback_id,
                "status": callback.status.value,
                "advanced": advanced,
                "delivery_status": current.delivery_status.value if current.delivery_status else None,
            },
        )
        return CallbackOutcome(current, received.callback_id, advanced)
