"""EventBridge Scheduler adapter: durable one-time retries (seed 002: waits are persisted, a
restart loses nothing)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from hub.adapters.aws import client, error_code
from hub.domain.message import StepMessage
from hub.errors import ServiceUnavailable

if TYPE_CHECKING:
    from hub.delivery.gate import ConnectionJob


class SchedulerUnavailable(ServiceUnavailable):
    code = "scheduler_unavailable"


#: How long EventBridge Scheduler keeps trying to put a due retry on its queue (SQS refusing
#: it, the role broken by a deploy) before the body goes to the schedules' dead-letter queue,
#: whose alarm calls an operator: an hour of automatic recovery, then a person.
RETRY_POLICY = {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": 3600}


class EventBridgeRetryScheduler:
    """Sends a step message to the pipeline queue (or any body to the queue it targets: the
    webhooks lane's retries) at a given time, once. A schedule Scheduler cannot deliver ends in
    `dead_letter_arn` (SchedulesDLQ), never silently."""

    def __init__(self, group_name: str, queue_arn: str, role_arn: str, *, dead_letter_arn: str) -> None:
        self._group = group_name
        self._queue_arn = queue_arn
        self._role_arn = role_arn
        self._dead_letter_arn = dead_letter_arn

    def schedule(self, step: StepMessage, at: datetime, name: str) -> None:
        self.send_at(step.model_dump_json(), at, name, tenant_id=step.tenant_id)

    def schedule_job(self, job: ConnectionJob, at: datetime, name: str) -> None:
        """A connection job at `at` (issue 12: the open breaker's probe, one per opening)."""
        self.send_at(job.model_dump_json(), at, name, tenant_id=job.tenant_id)

    def send_at(self, body: str, at: datetime, name: str, *, tenant_id: str | None = None) -> None:
        """Puts `body` on the target queue at `at`, once per `name`. `at()` has whole seconds:
        rounded up, so a retry never runs before the time it was given (a Retry-After is a
        floor), and never set in the past. `tenant_id` becomes the message's `MessageGroupId`
        (SqsParameters), the tenant SQS fair queues see (issue 30)."""
        earliest = datetime.now(UTC) + timedelta(seconds=1)
        when = max(at, earliest).astimezone(UTC)
        if when.microsecond:
            when = when.replace(microsecond=0) + timedelta(seconds=1)
        try:
            client("scheduler").create_schedule(
                Name=name,
                GroupName=self._group,
                ScheduleExpression=f"at({when:%Y-%m-%dT%H:%M:%S})",
                ScheduleExpressionTimezone="UTC",
                FlexibleTimeWindow={"Mode": "OFF"},
                ActionAfterCompletion="DELETE",
                Target={
                    "Arn": self._queue_arn,
                    "RoleArn": self._role_arn,
                    "Input": body,
                    "RetryPolicy": RETRY_POLICY,
                    "DeadLetterConfig": {"Arn": self._dead_letter_arn},
                    **({"SqsParameters": {"MessageGroupId": tenant_id}} if tenant_id else {}),
                },
            )
        except ClientError as exc:
            if error_code(exc) == "ConflictException":
                return  # already scheduled by an earlier run of this step
            raise SchedulerUnavailable("retry scheduling is temporarily unavailable") from exc
        except BotoCoreError as exc:
            raise SchedulerUnavailable("retry scheduling is temporarily unavailable") from exc

    def cancel(self, name: str) -> bool:
        try:
            client("scheduler").delete_schedule(Name=name, GroupName=self._group)
        except ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                return False  # already fired (ActionAfterCompletion DELETE) or cancelled
            raise SchedulerUnavailable("retry scheduling is temporarily unavailable") from exc
        except BotoCoreError as exc:
            raise SchedulerUnavailable("retry scheduling is temporarily unavailable") from exc
        return True
