"""receive-message: store a partner message once, enqueue its first step, answer.

Guarantees:
- a 202 means the first step is on the pipeline queue **and** the status record, payload and
  claims are stored; a 503 means the request may be sent again: what it left behind (claims
  without a message) makes a resend wait at most PENDING_WINDOW, never lose or double it;
- an exact re-delivery returns the original message (by Idempotency-Key, by payload
  fingerprint, or as the loser of a concurrent race), never a second one.

Order matters: the first step is enqueued *before* anything is stored, then the claims are
written (Idempotency-Key, then payload fingerprint, each a conditional put; the fingerprint
claim carries the payload), then the message item, last. A message therefore never exists
without its step on the queue and its claims; a claim may exist without its message, for a
moment (its request is still writing) or for good (the request died): a request meeting such a
claim answers 503 + Retry-After until PENDING_WINDOW has passed, then takes the claim over. A
request never writes its message after INGEST_DEADLINE_SECONDS, so the message of a claim taken
over can no longer appear. A 2xx names a message that exists. The step of a request that did
not write its message is an orphan: the pipeline worker drops it once it is older than the time
a request may take.

A warm instance reads nothing before those writes: the API key and the integration come from
the in-memory configuration cache (hub.config_cache), and an earlier message holding a claim is
learnt from the put's failed condition, which returns the claim.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from hub.config import Settings
from hub.domain import idempotency
from hub.domain.clock import utcnow
from hub.domain.idempotency import DedupKind
from hub.domain.ids import is_message_id, new_id
from hub.domain.message import (
    InboundMessage,
    MessageRecord,
    PayloadFormat,
    PipelineStep,
    StepMessage,
)
from hub.domain.retention import Retention, expired
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import ApiKey, Integration, Tenant, hash_api_key, tenant_accepts_traffic
from hub.errors import (
    IdempotencyKeyReused,
    MessagePending,
    NotFound,
    ServiceUnavailable,
    StorageUnavailable,
    Unauthorized,
    UnknownMessageType,
)
from hub.ingest.key_usage import KeyUsage
from hub.ingest.receptions import Receptions
from hub.ingest.throttle import TenantThrottle
from hub.pipeline import rules
from hub.pipeline.rules import entity_key
from hub.ports import Claim, ConfigRepository, MessageRepository, NewMessage, StepQueue

logger = logging.getLogger(__name__)

#: The message is written within this many seconds of the request's start, or not at all (the
#: function's timeout, 10 s, bounds a write already sent). Both stay below PENDING_WINDOW, so a
#: claim is never taken over while its own request may still write the message, and below the
#: worker's orphan grace (rules.ORPHAN_GRACE), so a step never gives up on a message still coming.
INGEST_DEADLINE_SECONDS = 5.0
#: How long a claim whose message does not exist yet is waited on (503 + Retry-After) before a
#: resend may take it over.
PENDING_WINDOW = rules.ORPHAN_GRACE
#: A request finding a claim whose message is not there yet looks once more after this pause.
PENDING_REREAD_SECONDS = 0.2
#: Claims taken over in a row before giving up (another request keeps winning them): 503.
MAX_TAKEOVERS = 3


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
        seq=record.step_seq,
    )


def require_key(raw_key: str | None) -> str:
    """The presented key's hash; Unauthorized when no key was presented."""
    if not raw_key:
        raise Unauthorized("missing API key: send Authorization: Bearer <key> or x-api-key")
    return hash_api_key(raw_key)


def _check_key(api_key: ApiKey | None, now: datetime) -> ApiKey:
    """The key when ingest accepts it at `now`: not revoked, not past a rotation's grace."""
    if api_key is None or not api_key.usable_at(now):
        raise Unauthorized("invalid API key")
    return api_key


def _check_message_type(integration: Integration, message_type: str) -> None:
    """UnknownMessageType (422) naming the defined types, unless the integration takes it."""
    if not integration.takes_message_type(message_type):
        raise UnknownMessageType(
            "this integration does not define this message type",
            details={"field": "message_type", "known_types": sorted(integration.message_types)},
        )


class Ingestor:
    """The partner-facing use cases: receive a message, read its status."""

    def __init__(
        self,
        config: ConfigRepository,
        messages: MessageRepository,
        queue: StepQueue,
        settings: Settings,
        *,
        clock: Callable[[], datetime] = utcnow,
        usage: KeyUsage | None = None,
        receptions: Receptions | None = None,
        throttle: TenantThrottle | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self._config = config
        self._messages = messages
        self._queue = queue
        self._settings = settings
        self._clock = clock
        self._usage = usage
        self._receptions = receptions
        self._throttle = throttle
        self._monotonic = monotonic
        self._pause = pause

    def _accepted(
        self, api_key: ApiKey | None, now: datetime, *, throttled: bool = True
    ) -> tuple[ApiKey, Tenant | None]:
        """The presented key if ingest accepts it now (Unauthorized otherwise: also when its
        tenant is disabled; TenantRateLimited when `throttled` and its tenant is over its
        rate), its use noted; with its tenant as `_admit` read it."""
        accepted = _check_key(api_key, now)
        tenant = self._admit(accepted.tenant_id, throttled=throttled)
        if self._usage is not None:
            self._usage.seen(accepted, now)
        return accepted, tenant

    def _admit(self, tenant_id: str, *, throttled: bool = True) -> Tenant | None:
        """The tenant (None: no tenant item, as written by hand before tenants existed).
        Unauthorized when the tenant is disabled; TenantRateLimited when it is over its rate
        (before anything is stored: a 429 is safe to resend). From the configuration cache,
        like the key: a warm instance reads nothing more per request, and sees a disable, a
        changed limit or retention within its TTL."""
        tenant = self._config.get_tenant(tenant_id)
        if not tenant_accepts_traffic(tenant):
            raise Unauthorized("this tenant is disabled")
        if throttled and self._throttle is not None:
            self._throttle.admit(tenant_id, tenant)
        return tenant

    def _retention(self, tenant: Tenant | None) -> Retention:
        """How long the tenant's messages are kept: its own retention, else the platform's."""
        defaults = self._settings.retention
        return tenant.retention(defaults) if tenant is not None else defaults

    def receive(
        self,
        raw_key: str | None,
        inbound: InboundMessage,
        idempotency_key: str | None,
        correlation_id: str,
        *,
        correlation_given: bool = False,
    ) -> ReceiveOutcome:
        """`correlation_given`: the partner sent `correlation_id` (else it is the gateway's
        request id); search then finds the message by it even when it has an external id."""
        key_hash = require_key(raw_key)
        return self._ingest(
            inbound, idempotency_key, correlation_id, key_hash=key_hash, correlation_given=correlation_given
        )

    def receive_verified(
        self,
        integration: Integration,
        inbound: InboundMessage,
        idempotency_key: str | None,
        correlation_id: str,
        *,
        correlation_given: bool = False,
    ) -> ReceiveOutcome:
        """receive-message for a caller already authenticated for `integration` (an inbound
        webhook whose signature was verified): the same claims, answers and guarantees; 401 when
        the integration's tenant is disabled, 429 when it is over its rate."""
        tenant = self._admit(integration.tenant_id)
        return self._ingest(
            inbound,
            idempotency_key,
            correlation_id,
            verified=(integration, tenant),
            correlation_given=correlation_given,
        )

    def _ingest(
        self,
        inbound: InboundMessage,
        idempotency_key: str | None,
        correlation_id: str,
        *,
        key_hash: str | None = None,
        verified: tuple[Integration, Tenant | None] | None = None,
        correlation_given: bool = False,
    ) -> ReceiveOutcome:
        """`verified`: the integration an inbound webhook authenticated, with its tenant as
        admitted (else both come from the API key `key_hash`)."""
        started = self._monotonic()
        now = self._clock()
        idem_hash = idempotency.idempotency_key_hash(idempotency_key) if idempotency_key else None
        payload_bytes = idempotency.canonical_payload(inbound.payload)
        payload_sha = idempotency.sha256_hex(payload_bytes)

        if verified is None:
            assert key_hash is not None, "an API key or an authenticated integration"
            verified = self._authorized(key_hash, inbound.integration_id, now)
        integration, tenant = verified
        if inbound.integration_id != integration.integration_id:
            raise NotFound("integration not found")
        retention = self._retention(tenant)
        _check_message_type(integration, inbound.message_type)
        fields = integration.message_type_config(inbound.message_type).duplicate_key_fields
        key_values = idempotency.duplicate_key_values(inbound.payload, fields)
        fp = idempotency.fingerprint(inbound.message_type, key_values, payload_sha)
        request_sha = idempotency.request_hash(
            inbound.message_type, payload_sha, inbound.external_id, inbound.occurred_at
        )

        message_id = new_id("msg")
        record = MessageRecord(
            message_id=message_id,
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
            entity_key=entity_key(
                integration.tenant_id, integration.integration_id, inbound.message_type, key_values
            ),
            idempotency_key=idempotency_key,
            # Issue 29: the message and its satellites go by TTL after its tenant's retention.
            expires_at=int(retention.message_until(now).timestamp()),
        )
        new = NewMessage(
            record=record,
            payload_text=payload_bytes.decode("utf-8"),
            idempotency_key_hash=idem_hash,
            request_sha256=request_sha,
            idempotency_expires_at=now + timedelta(hours=self._settings.idempotency_retention_hours),
            fingerprint_expires_at=now + timedelta(hours=self._settings.fingerprint_retention_hours),
            correlation_given=correlation_given,
            payload_expires_at=retention.payload_until(now),
        )
        self._queue.publish(first_step(record))
        outcome = self._store(new, now, started)
        if outcome.created:
            self._received(integration, now)
            # DEBUG: a message's INFO line is its outcome, written once by the worker (issue 29).
            logger.debug(
                "message received",
                extra={
                    "message_id": record.message_id,
                    "tenant_id": record.tenant_id,
                    "integration_id": record.integration_id,
                    "message_type": record.message_type,
                },
            )
        return outcome

    def _store(self, new: NewMessage, began: datetime, started: float) -> ReceiveOutcome:
        """The claims, then the message: separate conditional writes
        (docs/decisions/ingest-without-a-transaction.md). A claim another message holds answers
        this request with that message; one whose message does not exist (yet) is waited on for
        PENDING_WINDOW, then taken over. The message is written only within INGEST_DEADLINE of
        the start, so it can never appear after a claimant took its claims over or after the
        worker gave up on its step."""
        mine: list[DedupKind] = []
        for kind in idempotency.claim_order(new.idempotency_key_hash is not None):
            holder = self._messages.claim(new, kind, self._clock())
            for _ in range(MAX_TAKEOVERS):
                if holder is None:
                    break
                answer = self._answer_for(holder, new, began)
                if answer is not None:
                    for ours in mine:
                        self._messages.release(new, ours)
                    return answer
                holder = self._messages.take_over(new, kind, holder, self._clock())
            if holder is not None:
                raise ServiceUnavailable("another request is storing this message; resend")
            mine.append(kind)
        if self._elapsed(started) > INGEST_DEADLINE_SECONDS:
            # Too late to write the message: the claims stay, and a resend takes them over.
            raise ServiceUnavailable("storing the message took too long; resend")
        try:
            self._messages.store(new, self._clock())
        except StorageUnavailable:
            # The write may have landed and only its answer been lost: then it is ours, a 202.
            if self._messages.get(new.record.message_id) is None:
                raise
        return ReceiveOutcome(new.record)

    def _answer_for(self, holder: Claim, new: NewMessage, began: datetime) -> ReceiveOutcome | None:
        """What a claim held by another message means for this request: its answer (that message,
        deduplicated), or None when the claim is stale and may be taken over. Raises
        IdempotencyKeyReused for the same key on another request, MessagePending while the
        holder's message may still be being written."""
        if holder.kind is DedupKind.IDEMPOTENCY_KEY and holder.request_sha256 != new.request_sha256:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was already used with a different request",
                details={"message_id": holder.message_id},
            )
        record = self._messages.get(holder.message_id)
        if record is None:
            self._pause(PENDING_REREAD_SECONDS)
            record = self._messages.get(holder.message_id)
        if record is not None and expired(record.expires_at, self._clock()):
            return None  # past its retention (TTL not yet run): its claims are free to take over
        if record is None:
            now = self._clock()
            pending_until = (holder.claimed_at or now) + PENDING_WINDOW
            if now < pending_until:
                raise MessagePending(
                    "an earlier request with this message is still being stored; resend",
                    retry_after_seconds=max(1, math.ceil((pending_until - now).total_seconds())),
                )
            return None  # its request died before writing the message: take the claim over
        if record.fingerprint and record.fingerprint != holder.fingerprint:
            return None  # a claim its message does not match (left by a refused request)
        logger.info(
            "duplicate dropped",
            extra={"message_id": record.message_id, "deduplicated_by": holder.kind.value},
        )
        # Claimed before this request began: an earlier message (a re-delivery); after: a
        # concurrent request won the race.
        earlier = holder.claimed_at is not None and holder.claimed_at <= began
        return ReceiveOutcome(record, holder.kind if earlier else DedupKind.RACE_WINNER)

    def _elapsed(self, started: float) -> float:
        return self._monotonic() - started

    def _received(self, integration: Integration, now: datetime) -> None:
        """Notes that `integration` took a new message (deleting it is refused for a while)."""
        if self._receptions is not None:
            self._receptions.seen(integration.tenant_id, integration.integration_id, now)

    def _authorized(
        self, key_hash: str, integration_id: str, now: datetime
    ) -> tuple[Integration, Tenant | None]:
        """The integration the presented key may use, and its tenant (all from the
        configuration cache)."""
        api_key, tenant = self._accepted(self._config.get_api_key(key_hash), now)
        # Ids are unique within a tenant: the key's tenant is the only one looked in.
        integration = self._config.get_integration(api_key.tenant_id, integration_id)
        if integration is None or not api_key.may_use(integration):
            # Same answer whether it does not exist or belongs to someone else.
            raise NotFound("integration not found")
        return integration, tenant

    def authenticate(self, raw_key: str | None) -> ApiKey:
        """The caller's active API key; Unauthorized otherwise. Spends none of the tenant's
        rate: a request refused before it stores or reads anything costs next to nothing."""
        api_key, _ = self._accepted(
            self._config.get_api_key(require_key(raw_key)), self._clock(), throttled=False
        )
        return api_key

    def status(self, raw_key: str | None, message_id: str) -> MessageRecord:
        """The caller's own message; another tenant's or a missing one is NotFound alike."""
        key_hash = require_key(raw_key)
        now = self._clock()
        if not is_message_id(message_id):
            self._accepted(self._config.get_api_key(key_hash), now)
            raise NotFound("message not found")
        found_key, record = self._messages.get_for_key(key_hash, message_id)
        api_key, _ = self._accepted(found_key, now)
        if record is None or record.tenant_id != api_key.tenant_id or expired(record.expires_at, now):
            # Past its retention it is gone, whether or not DynamoDB's TTL has deleted it yet.
            raise NotFound("message not found")
        if api_key.integration_ids is not None and record.integration_id not in api_key.integration_ids:
            raise NotFound("message not found")
        return record
