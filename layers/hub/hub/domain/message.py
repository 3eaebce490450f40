"""Messages: what a partner sends, the small status record we keep, and the slim step
message that travels on SQS (ids and counters only, never the payload)."""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import ConfigDict, Field

from hub.domain.clock import StorableTime
from hub.domain.delivery_status import DeliveryStatus
from hub.domain.model import HubModel
from hub.domain.redaction import status_text
from hub.domain.status import PipelineStatus

_ID = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"


class InboundMessage(HubModel):
    """The partner API request body."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    integration_id: str = Field(pattern=_ID)
    message_type: str = Field(pattern=_ID)
    payload: dict[str, Any] | str
    external_id: str | None = Field(default=None, min_length=1, max_length=255)
    #: When the source says the event happened (RFC 3339, with offset); kept apart from
    #: received_at, when we got it.
    occurred_at: StorableTime | None = None


class PayloadFormat(StrEnum):
    JSON = "json"
    TEXT = "text"


class MessageRecord(HubModel):
    """The hot status record of one message. Small on purpose: it is rewritten on every
    status change and DynamoDB bills writes per KB. The payload lives apart."""

    model_config = ConfigDict(frozen=True)

    message_id: str
    tenant_id: str
    integration_id: str
    message_type: str
    pipeline_status: PipelineStatus
    received_at: datetime
    updated_at: datetime
    occurred_at: datetime | None = None
    external_id: str | None = None
    correlation_id: str
    execution_id: str
    #: The fingerprint and payload hash ingest computes; kept on its claims, not on the item.
    fingerprint: str = ""
    payload_sha256: str = ""
    payload_format: PayloadFormat
    payload_bytes: int
    #: The business entity (see pipeline.rules.entity_key): steps of messages with the same one
    #: run one at a time, under a lease on its business-key item. "" : the message is its own
    #: entity, and its own lease is the lock.
    entity_key: str = ""
    idempotency_key: str | None = None
    dest_status: str | None = None
    dest_status_text: str | None = None
    retry_count: int = 0
    next_retry_at: datetime | None = None
    last_retry_error_class: str | None = None
    #: A timeout after the request was sent: the destination may have applied it.
    uncertain: bool = False
    #: When the current execution started (an operator's reprocess starts a new one); the retry
    #: policy's max age counts from here. None: the first execution, started at received_at.
    execution_started_at: datetime | None = None
    #: Set when a later message with the same business key replaced this one (overwrite).
    superseded_by: str | None = None
    #: What the destination confirmed later through status callbacks (pattern 5), only ever
    #: moved forward (hub.domain.delivery_status); None: no callback yet (pending). When the hub
    #: recorded the callback that set it.
    delivery_status: DeliveryStatus | None = None
    delivery_status_at: datetime | None = None
    #: Waiting on its connection, not on a schedule (issue 12): `paused` or `circuit_open`
    #: (hub.delivery.breaker.HeldReason), and the connection it waits on. Only while
    #: `retry_pending`; no attempt was made and no retry counted for the hold.
    held_reason: str | None = None
    held_on: str | None = None
    #: The bulk jobs (issue 28) that reprocessed or cancelled the message: a page of one of
    #: them run again finds it and does not act twice (whatever other jobs did meanwhile).
    bulk_jobs: frozenset[str] = frozenset()
    #: Log entries went to keep the item within its write unit (not only the oldest beyond
    #: MAX_LOG_ENTRIES): the log no longer holds the message's whole history.
    log_trimmed: bool = False
    #: When the message and its satellites are deleted (epoch seconds, the table's TTL):
    #: `received_at` + its tenant's message retention (issue 29). None: kept for good (stored
    #: before retention). TTL deletes lazily: from then on a read for a view treats it as gone
    #: (hub.domain.retention.expired).
    expires_at: int | None = None

    # --- the execution's state, kept on the same item (seed 002, section 8) ---------------
    #: Bumped by every change of the item, exactly once per change (an event id later).
    version: int = 0
    #: The sequence number the next step of the execution must carry (step dedup).
    step_seq: int = 0
    #: Who runs a step of this message now, and until when (epoch seconds): the in-flight
    #: marker, and the entity lock of a message without business keys.
    lease_owner: str | None = None
    lease_until: int | None = None
    #: Last activity of the live execution (epoch seconds): admission is taken over after a day
    #: without any.
    active_at: int | None = None
    #: When the current execution finished (admission released; recent completion counts
    #: from here). None while it is alive.
    completed_at: datetime | None = None

    def public_view(self) -> dict[str, Any]:
        """What the partner API shows its owner: status and timestamps, no internals."""
        return self.model_dump(mode="json", include=set(PUBLIC_FIELDS))

    def shown_status_text(self) -> str | None:
        """`dest_status_text` as admin views show it: bounded and control-free
        (hub.domain.redaction.status_text), and never for a `sent` message (a 2xx body is not
        kept; an item written before that rule may still hold one)."""
        if self.dest_status_text is None or self.pipeline_status is PipelineStatus.SENT:
            return None
        return status_text(self.dest_status_text)


#: The last log entries kept on the message item (older ones drop off).
MAX_LOG_ENTRIES = 20


#: The fields of a message the partner API shows (public_view; its OpenAPI document too). Never
#: `dest_status_text` (issue 27): a destination's answer read back through the partner API would
#: be a channel to whatever the hub can reach; partners get `dest_status` and the status.
PUBLIC_FIELDS = (
    "message_id",
    "integration_id",
    "message_type",
    "external_id",
    "pipeline_status",
    "dest_status",
    "retry_count",
    "next_retry_at",
    "last_retry_error_class",
    "superseded_by",
    "uncertain",
    "delivery_status",
    "delivery_status_at",
    "occurred_at",
    "received_at",
    "updated_at",
)


#: The operation every execution of a message runs (the first and each reprocess): they share
#: one admission record, so a message has at most one live execution.
PIPELINE_OPERATION = "ingest"


class PipelineStep(StrEnum):
    PROCESS = "process"
    DELIVER = "deliver"
    FINISHED = "finished"


class StepMessage(HubModel):
    """One pipeline step to run (seed 002, section 5.1): which message, which step, the
    counters, and ids to trace it. Workers re-read the message state before acting."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: int = 1
    #: The operation this execution runs (seed 002, 5.2).
    operation: str = PIPELINE_OPERATION
    message_id: str
    tenant_id: str
    integration_id: str
    step: PipelineStep
    attempt: int = 0
    lock_wait: int = 0
    execution_id: str
    correlation_id: str
    publish_id: str
    #: How often this step found no message yet (an ingest may still be committing it).
    orphan_checks: int = 0
    #: The message's `step_seq` this step expects: a step whose sequence has passed already ran.
    seq: int = 0

    @property
    def step_id(self) -> str:
        """Unique per published step (seed 002, 8: message, operation, step, counters, publish
        id); recorded once the step succeeded, so a redelivery of a done step is dropped."""
        parts = (self.message_id, self.operation, self.execution_id, self.step.value, str(self.seq))
        return ":".join(
            (*parts, str(self.attempt), str(self.lock_wait), str(self.orphan_checks), self.publish_id)
        )

    def next(self, step: PipelineStep, seq: int) -> StepMessage:
        """A following step of the same execution (expecting `seq`), counters reset. Its publish
        id derives from this step's id, so a step run twice publishes the same id twice."""
        derived = hashlib.sha256(f"{self.step_id}>{step.value}:{seq}".encode()).hexdigest()[:26]
        return self.model_copy(
            update={
                "step": step,
                "seq": seq,
                "attempt": 0,
                "lock_wait": 0,
                "orphan_checks": 0,
                "publish_id": f"pub_{derived}",
            }
        )

    def rescheduled(
        self,
        publish_id: str,
        *,
        lock_wait: int | None = None,
        attempt: int | None = None,
        orphan_checks: int | None = None,
    ) -> StepMessage:
        """The same step again (busy lock, retry, orphan re-check), with its counters moved on."""
        return self.model_copy(
            update={
                "publish_id": publish_id,
                "lock_wait": self.lock_wait if lock_wait is None else lock_wait,
                "attempt": self.attempt if attempt is None else attempt,
                "orphan_checks": self.orphan_checks if orphan_checks is None else orphan_checks,
            }
        )
