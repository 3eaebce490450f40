"""The partner API's answers as models, for its OpenAPI document. The handlers build these
answers as dicts (ReceiveOutcome.body, MessageRecord.public_view); the integration tests check
every answer they get against these schemas, so the two cannot drift apart."""

from __future__ import annotations

from typing import Any

from pydantic import Field, create_model

from hub.domain.delivery_status import DeliveryStatus
from hub.domain.idempotency import DedupKind
from hub.domain.message import PUBLIC_FIELDS, MessageRecord
from hub.domain.model import HubModel
from hub.domain.status import PipelineStatus


class ReceiveAnswer(HubModel):
    """The message the request created (202) or the earlier one it duplicates (200)."""

    message_id: str
    pipeline_status: PipelineStatus
    deduplicated: bool
    #: Present on a duplicate: which rule recognized it.
    deduplicated_by: DedupKind | None = None


_public: dict[str, Any] = {name: (MessageRecord.model_fields[name].annotation, ...) for name in PUBLIC_FIELDS}

#: A message's status as its owner sees it (every field present; null when not known yet).
MessageStatus: type[HubModel] = create_model(
    "MessageStatus", __doc__="A message's status.", __base__=HubModel, **_public
)


class ReceiveHeaders(HubModel):
    """Request headers receive-message reads (besides the API key)."""

    idempotency_key: str | None = Field(
        default=None,
        description="Your id for this message: a resend with the same key answers the first message.",
    )
    x_correlation_id: str | None = Field(
        default=None,
        description=(
            "Carried through the pipeline's logs when it is 1-128 of A-Z a-z 0-9 _ . : - "
            "(else the gateway's request id is)."
        ),
    )


class IfMatch(HubModel):
    """The optimistic-write header of versioned admin resources."""

    if_match: str | None = Field(
        default=None,
        description='The ETag the caller read, e.g. "3": 412 when the resource changed since.',
    )


class CallbackAnswer(HubModel):
    """The callback was recorded; the message's delivery status as it stands now."""

    message_id: str
    #: The id the hub gave this callback (it is listed under it in the message's log).
    callback_id: str
    #: Whether this callback moved `delivery_status` (the answer is then 202, else 200).
    advanced: bool
    delivery_status: DeliveryStatus
    delivery_status_at: str | None
