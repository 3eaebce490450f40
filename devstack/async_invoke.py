"""Lambda's asynchronous invocation (SNS, EventBridge Scheduler and rules): retries and destinations.

Lambda answers an asynchronous caller at once, runs the function from an internal queue and,
when the function fails, retries it ``MaximumRetryAttempts`` times (default 2; about 1 and then
2 minutes later on AWS, locally after ``retry_delays``, seconds). When the retries are exhausted
(or the event is older than ``MaximumEventAgeInSeconds``) the invocation record goes to
``DestinationConfig.OnFailure``; a success goes to ``OnSuccess`` when set. Both come from the
function's ``EventInvokeConfig``. Not emulated: throttling retries (an invocation waits for a
free instance instead) and Lambda / EventBridge destinations.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from devstack.destinations import Destinations
from devstack.lambda_runtime import InvocationResult

logger = logging.getLogger(__name__)

DEFAULT_RETRY_ATTEMPTS = 2
DEFAULT_EVENT_AGE_SECONDS = 21_600  # six hours

Invoke = Callable[[str, dict[str, Any]], InvocationResult]  # (logical id, event), synchronously


@dataclass(frozen=True)
class AsyncInvokeConfig:
    """A function's resolved ``EventInvokeConfig`` (Lambda's defaults when it has none)."""

    maximum_retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    maximum_event_age_seconds: float = DEFAULT_EVENT_AGE_SECONDS
    on_failure_arn: str | None = None
    on_success_arn: str | None = None

    @classmethod
    def from_properties(cls, props: Mapping[str, Any] | None) -> AsyncInvokeConfig:
        """From SAM's ``EventInvokeConfig`` property (already resolved)."""
        props = props or {}
        destinations = props.get("DestinationConfig") or {}

        def arn(kind: str) -> str | None:
            destination = destinations.get(kind) or {}
            value = destination.get("Destination")
            if destination and not value:
                # SAM creates a queue or topic itself when Destination is left out.
                logger.warning("EventInvokeConfig %s without Destination is not emulated locally", kind)
            return str(value) if value else None

        return cls(
            maximum_retry_attempts=int(props.get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS)),
            maximum_event_age_seconds=float(props.get("MaximumEventAgeInSeconds", DEFAULT_EVENT_AGE_SECONDS)),
            on_failure_arn=arn("OnFailure"),
            on_success_arn=arn("OnSuccess"),
        )


def _timestamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def invocation_record(
    function_arn: str,
    event: Any,
    result: InvocationResult,
    *,
    condition: str,
    invocations: int,
) -> dict[str, Any]:
    """Lambda's asynchronous invocation record, as its destinations receive it."""
    response_context: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
    if not result.ok:
        response_context["functionError"] = "Unhandled"
    return {
        "version": "1.0",
        "timestamp": _timestamp(datetime.now(UTC)),
        "requestContext": {
            "requestId": result.request_id,
            "functionArn": f"{function_arn}:$LATEST",
            "condition": condition,
            "approximateInvokeCount": invocations,
        },
        "requestPayload": event,
        "responseContext": response_context,
        "responsePayload": result.payload if result.ok else result.error,
    }


class AsyncInvoker:
    """Runs asynchronous invocations with Lambda's retries; retries wait on timer threads."""

    def __init__(
        self,
        invoke: Invoke,
        configs: Mapping[str, AsyncInvokeConfig],
        function_arns: Mapping[str, str],
        destinations: Destinations,
        *,
        retry_delays: Sequence[float] = (1.0, 2.0),
    ) -> None:
        self._invoke = invoke
        self._configs = dict(configs)
        self._arns = dict(function_arns)
        self._destinations = destinations
        self._retry_delays = tuple(retry_delays) or (0.0,)
        self._timers: set[threading.Timer] = set()
        self._lock = threading.Lock()
        self._stopped = False

    def invoke(self, logical_id: str, event: dict[str, Any]) -> None:
        """The first attempt, in the caller's thread; a failure schedules the retries."""
        self._attempt(logical_id, event, 1, time.monotonic())

    def stop(self) -> None:
        """Cancels the retries not yet started."""
        with self._lock:
            self._stopped = True
            timers, self._timers = self._timers, set()
        for timer in timers:
            timer.cancel()

    def _config(self, logical_id: str) -> AsyncInvokeConfig:
        return self._configs.get(logical_id) or AsyncInvokeConfig()

    def _attempt(self, logical_id: str, event: dict[str, Any], attempt: int, queued_at: float) -> None:
        config = self._config(logical_id)
        try:
            result = self._invoke(logical_id, event)
        except RuntimeError as exc:  # the pool was closed: the stack is stopping
            logger.info("async invoke of %s not run: %s", logical_id, exc)
            return
        if result.ok:
            if config.on_success_arn:
                self._send(
                    logical_id, config.on_success_arn, event, result, condition="Success", invocations=attempt
                )
            return
        error_type = (result.error or {}).get("errorType")
        if attempt <= config.maximum_retry_attempts:
            delay = self._retry_delays[min(attempt - 1, len(self._retry_delays) - 1)]
            if time.monotonic() + delay - queued_at <= config.maximum_event_age_seconds:
                logger.info("async invoke of %s failed (%s); retry in %.1fs", logical_id, error_type, delay)
                self._schedule(delay, logical_id, event, attempt + 1, queued_at)
                return
            condition = "EventAgeExceeded"
        else:
            condition = "RetriesExhausted"
        logger.warning("async invoke of %s failed %d times (%s)", logical_id, attempt, error_type)
        if config.on_failure_arn:
            self._send(
                logical_id, config.on_failure_arn, event, result, condition=condition, invocations=attempt
            )

    def _schedule(
        self, delay: float, logical_id: str, event: dict[str, Any], attempt: int, queued_at: float
    ) -> None:
        def fire() -> None:
            with self._lock:
                self._timers.discard(timer)
                if self._stopped:
                    return
            self._attempt(logical_id, event, attempt, queued_at)

        timer = threading.Timer(delay, fire)
        timer.name = f"async-retry:{logical_id}"
        timer.daemon = True
        with self._lock:
            if self._stopped:
                return
            self._timers.add(timer)
        timer.start()

    def _send(
        self,
        logical_id: str,
        arn: str,
        event: dict[str, Any],
        result: InvocationResult,
        *,
        condition: str,
        invocations: int,
    ) -> None:
        record = invocation_record(
            self._arns.get(logical_id, logical_id),
            event,
            result,
            condition=condition,
            invocations=invocations,
        )
        try:
            self._destinations.send(arn, record, source=logical_id)
        except Exception:
            logger.exception("%s: the invocation record could not be sent to %s", logical_id, arn)
