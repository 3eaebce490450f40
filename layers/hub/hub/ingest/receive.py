"""receive-message: store a partner message once, enqueue its first step, answer.

Guarantees:
- a 202 means the status record, payload and claims are stored and the first step is on the
  pipeline queue; a 503 means nothing is left behind that would block a resend;
- an exact re-delivery returns the original message (by Idempotency-Key, by payload
  fingerprint, or as the loser of a concurrent race), never a second one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hub.config import Settings
from hub.domain import idempotency
from hub.domain.idempotency import DedupKind
from hub.domain.ids import new_id
from hub.domain.message import (
    InboundMessage,
    MessageRecord,
    PayloadFormat,
    PipelineStep,
    StepMessage,
)
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import ApiKey, hash_api_key
from hub.errors import (
    ClaimTaken,
    IdempotencyKeyReused,
    NotFound,
    ServiceUnavailable,
    StorageUnavailable,
    Unauthorized,
)
from hub.ports import Claim, MessageRepository, NewMessage, StepQueue

logger = logging.getLogger(__name__)


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class ReceiveOutcome:
    record: MessageRecord
    deduplicated_by: DedupKind | None = None

    @property
    def created(self) -> bool:
        return self.deduplicated_by is None

    def body(self) -> dict[str, object]:
        answer: dict[str, object] = {
            "message_id": self.record.message_id,
            "pipeline_status": self.record.pipeline_status.value,
            "deduplicated": not self.created,
        }
        if self.deduplicated_by is not None:
            answer["deduplicated_by"] = self.deduplicated_by.value
        return answer


def first_step(record: MessageRecord) -> StepMessage:
    return StepMessage(
        message_id=record.message_id,
        tenant_id=record.tenant_id,
        integration_id=record.integration_id,
        step=PipelineStep.PROCESS,
        execution_id=record.execution_id,
        correlation_id=record.correlation_id,
        publish_id=new_id("pub"),
    )


def require_key(raw_key: str | None) -> str:
    """The presented key's hash; Unauthorized when no key was presented."""
    if not raw_key:
        raise Unauthorized("missing API key: send Authorization: Bearer <key> or x-api-key")
    return hash_api_key(raw_key)


def _check_key(api_key: ApiKey | None) -> ApiKey:
    if api_key is None or not api_key.active:
        raise Unauthorized("invalid API key")
    return api_key


class Ingestor:
    """The partner-facing use cases: receive a message, read its status."""

    def __init__(
        self,
        messages: MessageRepository,
        queue: StepQueue,
        settings: Settings,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._messages = messages
        self._queue = queue
        self._settings = settings
        self._clock = clock

    def receive(
        self,
        raw_key: str | None,
        inbound: InboundMessage,
        idempotency_key: str | None,
        correlation_id: str,
    ) -> ReceiveOutcome:
        key_hash = require_key(raw_key)
        now = self._clock()
        idem_hash = idempotency.idempotency_key_hash(idempotency_key) if idempotency_key else None
        payload_bytes = idempotency.canonical_payload(inbound.payload)
        payload_sha = idempotency.sha256_hex(payload_bytes)

        # The fingerprint needs the message type's duplicate-key fields, which live in the
        # integration; the integration is read in the same round trip as the claims. So read
        # once with the plain-payload fingerprint, and again only if the type declares keys.
        plain_fp = idempotency.fingerprint(inbound.message_type, [], payload_sha)
        lookup = self._messages.lookup_for_ingest(key_hash, inbound.integration_id, idem_hash, plain_fp, now)
        api_key = _check_key(lookup.api_key)
        integration = lookup.integration
        if integration is None or not api_key.may_use(integration):
            # Same answer whether it does not exist or belongs to someone else.
            raise NotFound("integration not found", details={"integration_id": inbound.integration_id})
        fields = integration.message_type_config(inbound.message_type).duplicate_key_fields
        fp = idempotency.fingerprint(
            inbound.message_type,
            idempotency.duplicate_key_values(inbound.payload, fields),
            payload_sha,
        )
        claims = lookup.claims
        if fp != plain_fp:
            claims = self._messages.lookup_for_ingest(
                key_hash, inbound.integration_id, idem_hash, fp, now
            ).claims

        existing = self._winner(claims, fp)
        if existing is not None:
            return self._deduplicated(existing)

        record = MessageRecord(
            message_id=new_id("msg"),
            tenant_id=integration.tenant_id,
            integration_id=integration.integration_id,
            message_type=inbound.message_type,
            pipeline_status=PipelineStatus.RECEIVED,
            received_at=now,
            updated_at=now,
            occurred_at=inbound.occurred_at,
            external_id=inbound.external_id,
            correlation_id=correlation_id,
            execution_id=new_id("exe"),
            fingerprint=fp,
            payload_sha256=payload_sha,
            payload_format=PayloadFormat.TEXT if isinstance(inbound.payload, str) else PayloadFormat.JSON,
            payload_bytes=len(payload_bytes),
            idempotency_key=idempotency_key,
        )
        new = NewMessage(
            record=record,
            payload_text=payload_bytes.decode("utf-8"),
            idempotency_key_hash=idem_hash,
            idempotency_expires_at=now + timedelta(hours=self._settings.idempotency_retention_hours),
            fingerprint_expires_at=now + timedelta(hours=self._settings.fingerprint_retention_hours),
        )
        try:
            self._messages.create(new, now)
        except ClaimTaken as lost:
            winner = self._winner(tuple(c for c in lost.claims if isinstance(c, Claim)), fp)
            if winner is None:  # pragma: no cover - ClaimTaken always names a claim
                raise
            return self._deduplicated(Claim(DedupKind.RACE_WINNER, winner.message_id, fp))

        self._enqueue_or_undo(new)
        logger.info(
            "message received",
            extra={
                "message_id": record.message_id,
                "tenant_id": record.tenant_id,
                "integration_id": record.integration_id,
                "message_type": record.message_type,
            },
        )
        return ReceiveOutcome(record)

    def _winner(self, claims: tuple[Claim, ...], fingerprint: str) -> Claim | None:
        """The claim that answers this request, idempotency key first. The same key sent with
        another payload is a client bug: refuse it rather than return an unrelated message."""
        for claim in sorted(claims, key=lambda c: c.kind != DedupKind.IDEMPOTENCY_KEY):
            if claim.kind == DedupKind.IDEMPOTENCY_KEY and claim.fingerprint != fingerprint:
                raise IdempotencyKeyReused(
                    "this Idempotency-Key was already used with a different request",
                    details={"message_id": claim.message_id},
                )
            return claim
        return None

    def _deduplicated(self, claim: Claim) -> ReceiveOutcome:
        record = self._messages.get(claim.message_id)
        if record is None:
            # The claim's owner is being undone (its enqueue failed) or just expired: the
            # client should resend, and then it will be stored afresh.
            raise ServiceUnavailable("the original message is not available yet; resend")
        self._repair_if_stuck(record)
        logger.info(
            "duplicate dropped",
            extra={"message_id": record.message_id, "deduplicated_by": claim.kind.value},
        )
        return ReceiveOutcome(record, claim.kind)

    def _enqueue_or_undo(self, new: NewMessage) -> None:
        try:
            self._queue.publish(first_step(new.record))
        except ServiceUnavailable:
            try:
                self._messages.discard(new)
            except StorageUnavailable:
                # Left behind: a resend finds the claim and _repair_if_stuck re-enqueues it.
                logger.exception(
                    "could not undo a message whose first step was not enqueued",
                    extra={"message_id": new.record.message_id},
                )
            raise

    def _repair_if_stuck(self, record: MessageRecord) -> None:
        """A message still `received` long after arrival may have lost its first step (enqueue
        and undo both failed): send it again. Workers drop duplicate step messages."""
        age = self._clock() - record.received_at
        if record.pipeline_status is PipelineStatus.RECEIVED and age > timedelta(
            seconds=self._settings.stuck_received_after_seconds
        ):
            self._queue.publish(first_step(record))
            logger.warning("re-enqueued a stuck message", extra={"message_id": record.message_id})

    def status(self, raw_key: str | None, message_id: str) -> MessageRecord:
        """The caller's own message; another tenant's or a missing one is NotFound alike."""
        key_hash = require_key(raw_key)
        api_key, record = self._messages.get_for_key(key_hash, message_id)
        api_key = _check_key(api_key)
        if record is None or record.tenant_id != api_key.tenant_id:
            raise NotFound("message not found", details={"message_id": message_id})
        if api_key.integration_ids is not None and record.integration_id not in api_key.integration_ids:
            raise NotFound("message not found", details={"message_id": message_id})
        return record
