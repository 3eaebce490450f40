"""POST /api/webhook/{tenant_id}/{integration_id}: a partner's own payload, verified, adapted,
ingested.

Order (each step only runs on what the previous one accepted):
1. the integration, read by the tenant and id in the path (integration ids are unique within a
   tenant only): it decides the verification scheme (unknown tenant, unknown integration, or one
   without an inbound webhook: 404, the same answer for all three);
2. the signature or credential, on the raw bytes as received, in constant time (401, no
   business change);
3. the Content-Type: one the adapter takes (415), before anything parses the body;
4. the adapter: the body parsed as the configured format (400) and mapped to a message (422
   naming the missing or unknown field);
5. the ingest path of receive-message: idempotency claims, enqueue, store (202 / 200 / 503).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from datetime import datetime

from hub.domain import media_type
from hub.domain.clock import utcnow
from hub.domain.idempotency import sanitize_idempotency_key
from hub.domain.message import InboundMessage
from hub.errors import NotFound, SignatureInvalid
from hub.ingest.receive import Ingestor, ReceiveOutcome
from hub.ports import ConfigRepository
from hub.webhooks.adapter import adapt
from hub.webhooks.signatures import verify

logger = logging.getLogger(__name__)

#: Tenant and integration ids: no '#' (they are parts of table keys).
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")


class WebhookReceiver:
    def __init__(
        self, config: ConfigRepository, ingestor: Ingestor, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self._config = config
        self._ingestor = ingestor
        self._clock = clock

    def receive(
        self,
        tenant_id: str,
        integration_id: str,
        headers: Mapping[str, str],
        body: bytes,
        correlation_id: str,
        *,
        correlation_given: bool = False,
    ) -> ReceiveOutcome:
        """Stores a verified delivery once. `headers` have lowercase names; `body` is the raw
        bytes as received (base64-decoded when the gateway encoded them). A redelivery with the
        same event id (or Standard Webhooks `webhook-id`) answers the original message."""
        known = _ID.fullmatch(tenant_id) is not None and _ID.fullmatch(integration_id) is not None
        integration = self._config.get_integration(tenant_id, integration_id) if known else None
        if integration is None or integration.inbound_webhook is None:
            raise NotFound("integration not found")
        webhook = integration.inbound_webhook
        try:
            delivery_id = verify(webhook.verification, headers, body, self._clock)
        except SignatureInvalid as refused:
            # Names the scheme and the reason; never a header value, secret or body byte.
            logger.warning(
                "webhook refused",
                extra={
                    "integration_id": integration_id,
                    "scheme": webhook.verification.scheme,
                    "code": refused.code,
                },
            )
            raise
        media_type.require(headers.get("content-type"), webhook.adapter.accepted_content_types())
        event = adapt(webhook.adapter, body)
        inbound = InboundMessage(
            integration_id=integration.integration_id,
            message_type=event.message_type,
            payload=event.payload,
            external_id=event.event_id,
            occurred_at=event.occurred_at,
        )
        return self._ingestor.receive_verified(
            integration,
            inbound,
            # The delivery id is Standard Webhooks' `webhook-id` header; else the event's own id.
            sanitize_idempotency_key(
                delivery_id or event.event_id,
                ("header", "webhook-id") if delivery_id else ("field", "event_id"),
            ),
            correlation_id,
            correlation_given=correlation_given,
        )
