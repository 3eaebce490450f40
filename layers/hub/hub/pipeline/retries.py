"""The retry hook of the pipeline: after a failed delivery, decide (hub.domain.retry) what the
message becomes - `retry_pending` with a durable schedule for the next attempt, `dead_letter`,
or `error` - so the worker writes the failure and the decision in one conditional update."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from hub.domain.ids import new_id
from hub.domain.message import MessageRecord, PipelineStep, StepMessage
from hub.domain.retry import RetryOutcome, decide, is_retryable
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import IntegrationMode
from hub.pipeline.ports import FailedDelivery, FailurePlan

logger = logging.getLogger(__name__)


class RetryScheduler(Protocol):
    def schedule(self, step: StepMessage, at: datetime, name: str) -> None:
        """Sends `step` to the pipeline queue at `at`, once. Idempotent per `name`."""
        ...

    def cancel(self, name: str) -> bool:
        """Deletes the schedule `name`; False when there was none (already fired or deleted)."""
        ...


def retry_schedule_name(execution_id: str, retry_count: int) -> str:
    """Deterministic per execution and retry: a rerun of the same decision cannot schedule
    twice, and a reprocess (a new execution, counting from 0 again) never collides with a
    schedule left by the one before."""
    return f"retry-{execution_id}-{retry_count}"


def retry_step(step: StepMessage, seq: int) -> StepMessage:
    """The step a retry runs: a deliver step one attempt on, expecting the message's step
    sequence `seq` (the one the failed attempt's update left)."""
    return step.model_copy(
        update={
            "step": PipelineStep.DELIVER,
            "seq": seq,
            "attempt": step.attempt + 1,
            "lock_wait": 0,
            "orphan_checks": 0,
            "publish_id": new_id("pub"),
        }
    )


class RetryOrchestrator:
    """Implements the worker's failure hook."""

    def __init__(
        self,
        scheduler: RetryScheduler,
        *,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._scheduler = scheduler
        self._rand = rand

    def plan(self, failed: FailedDelivery) -> FailurePlan:
        record, failure, integration = failed.record, failed.failure, failed.integration
        if integration.mode is IntegrationMode.OBSERVABILITY:
            return FailurePlan(PipelineStatus.ERROR)  # observed messages are never retried (seed 000, H)
        destination = integration.destination
        retryable = is_retryable(
            failure.error_class,
            fault_code=failure.fault_code,
            uncertain=failure.uncertain,
            idempotent_retries=bool(destination and destination.idempotent_retries),
        )
        decision = decide(
            integration.retry_policy,
            retryable=retryable,
            retry_count=record.retry_count,
            received_at=record.execution_started_at or record.received_at,
            now=failed.failed_at,
            retry_after_seconds=failure.retry_after_seconds,
            rand=self._rand,
        )
        ids = {"message_id": record.message_id, "error_class": failure.error_class.value}
        if decision.outcome is RetryOutcome.EXHAUSTED_DEAD_LETTER:
            logger.warning("retries exhausted: dead-lettered", extra=ids)
            return FailurePlan(PipelineStatus.DEAD_LETTER, {"next_retry_at": None})
        at = decision.next_retry_at
        if decision.outcome is not RetryOutcome.SCHEDULE or at is None:
            logger.info("not retried", extra={**ids, "reason": decision.outcome.value})
            return FailurePlan(PipelineStatus.ERROR, {"next_retry_at": None})
        step = failed.step
        return FailurePlan(
            PipelineStatus.RETRY_PENDING,
            {"retry_count": decision.retry_count, "next_retry_at": at},
            # After the update: if this fails, SQS redelivers the deciding step, which finds the
            # message retry_pending and only re-creates the schedule (resume).
            then=lambda pending: self.resume(pending, step),
        )

    def resume(self, record: MessageRecord, step: StepMessage) -> None:
        at = record.next_retry_at
        if at is None:
            return
        name = retry_schedule_name(record.execution_id, record.retry_count)
        self._scheduler.schedule(retry_step(step, record.step_seq), at, name)
        logger.info(
            "retry scheduled",
            extra={
                "message_id": record.message_id,
                "retry_count": record.retry_count,
                "next_retry_at": at.isoformat(),
            },
        )
