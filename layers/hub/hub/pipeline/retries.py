"""The retry hook of the pipeline: after a failed delivery, decide (hub.domain.retry) and either
schedule the next attempt durably, dead-letter the message, or leave it in `error`."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from hub.domain.ids import new_id
from hub.domain.message import StepMessage
from hub.domain.retry import RetryOutcome, decide, is_retryable
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import IntegrationMode
from hub.pipeline.worker import FailedDelivery
from hub.ports import MessageRepository

logger = logging.getLogger(__name__)


class RetryScheduler(Protocol):
    def schedule(self, step: StepMessage, at: datetime, name: str) -> None: ...


def _utcnow() -> datetime:
    return datetime.now(UTC)


class RetryOrchestrator:
    """Implements the worker's failure hook. Returns True when a retry keeps the execution
    alive (admission stays held until the retry finishes or gives up)."""

    def __init__(
        self,
        messages: MessageRepository,
        scheduler: RetryScheduler,
        *,
        clock: Callable[[], datetime] = _utcnow,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._messages = messages
        self._scheduler = scheduler
        self._clock = clock
        self._rand = rand

    def __call__(self, failed: FailedDelivery) -> bool:
        record, failure, integration = failed.record, failed.failure, failed.integration
        if integration.mode is IntegrationMode.OBSERVABILITY:
            return False  # observed messages are never retried (seed 000, H)
        destination = integration.destination
        retryable = is_retryable(
            failure.error_class,
            fault_code=failure.fault_code,
            uncertain=failure.uncertain,
            idempotent_retries=bool(destination and destination.idempotent_retries),
        )
        now = self._clock()
        decision = decide(
            integration.retry_policy,
            retryable=retryable,
            retry_count=record.retry_count,
            received_at=record.received_at,
            now=now,
            retry_after_seconds=failure.retry_after_seconds,
            rand=self._rand,
        )
        ids = {"message_id": record.message_id, "error_class": failure.error_class.value}
        if decision.outcome is RetryOutcome.EXHAUSTED_DEAD_LETTER:
            self._messages.transition(record, PipelineStatus.DEAD_LETTER, now)
            logger.warning("retries exhausted: dead-lettered", extra=ids)
            return False
        if decision.outcome is not RetryOutcome.SCHEDULE or decision.next_retry_at is None:
            logger.info("not retried", extra={**ids, "reason": decision.outcome.value})
            return False
        pending = self._messages.transition(
            record,
            PipelineStatus.RETRY_PENDING,
            now,
            retry_count=decision.retry_count,
            next_retry_at=decision.next_retry_at,
        )
        retry_step = failed.step.rescheduled(new_id("pub"), attempt=failed.step.attempt + 1, lock_wait=0)
        self._scheduler.schedule(
            retry_step, decision.next_retry_at, f"retry-{record.message_id}-{pending.retry_count}"
        )
        logger.info(
            "retry scheduled",
            extra={
                **ids,
                "retry_count": pending.retry_count,
                "next_retry_at": decision.next_retry_at.isoformat(),
            },
        )
        return True
