"""Fires EventBridge Scheduler schedules, which moto stores but never runs.

Every tick lists the schedules of every group (so schedules the application creates at
runtime are seen too), works out which occurrence is due and delivers it to the target:
an SQS queue of this stack (``send_message``) or one of the stack's functions (an
asynchronous invoke). SAM ``Schedule`` events (EventBridge rules) are fired the same way
from static definitions. Each (schedule, creation, occurrence) fires at most once, and
occurrences fire in order: never one at or before an occurrence already fired (a test's
``tick(now)`` in the future does not make the background thread fire the ones it skipped).
A one-time ``at()`` that is already past fires once on the next tick.

Ticks never overlap (the background thread and a test's ``tick(now)`` share one lock), and
``fired`` is read under that lock too: whoever has seen an effect of a tick (the message,
the deleted schedule) and then reads ``fired`` finds that tick's firings in it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from devstack.cron import (
    AtExpression,
    CronExpression,
    ExpressionError,
    RateExpression,
    parse_expression,
)

logger = logging.getLogger(__name__)

InvokeAsync = Callable[[str, dict[str, Any]], None]  # (logical id, event)


@dataclass(frozen=True)
class ScheduleDefinition:
    """What the scheduler needs to know about one schedule."""

    name: str
    group: str | None  # None for EventBridge rules (SAM `Schedule` events)
    arn: str
    expression: str
    target_arn: str
    created: datetime
    timezone: str = "UTC"
    state: str = "ENABLED"
    input: str | None = None
    message_group_id: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    delete_after_completion: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.group or "<rule>", self.name, self.created.isoformat())


@dataclass(frozen=True)
class Firing:
    """One delivered occurrence (kept in ``Scheduler.fired`` for tests and logs)."""

    schedule: str
    group: str | None
    scheduled_time: datetime
    target_arn: str
    delivered: bool


def _aware(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return None


def definition_from_api(schedule: Mapping[str, Any]) -> ScheduleDefinition:
    """Build a definition from a ``get_schedule`` response."""
    target = schedule.get("Target", {})
    return ScheduleDefinition(
        name=schedule["Name"],
        group=schedule.get("GroupName") or "default",
        arn=schedule.get("Arn", ""),
        expression=schedule["ScheduleExpression"],
        target_arn=target.get("Arn", ""),
        created=_aware(schedule.get("CreationDate")) or datetime.now(UTC),
        timezone=schedule.get("ScheduleExpressionTimezone") or "UTC",
        state=schedule.get("State") or "ENABLED",
        input=target.get("Input"),
        message_group_id=(target.get("SqsParameters") or {}).get("MessageGroupId"),
        start=_aware(schedule.get("StartDate")),
        end=_aware(schedule.get("EndDate")),
        delete_after_completion=schedule.get("ActionAfterCompletion") == "DELETE",
    )


class Scheduler:
    """Background thread that fires due schedules; ``tick(now)`` is public for tests."""

    def __init__(
        self,
        scheduler_client: Any,
        sqs_client: Any,
        invoke_async: InvokeAsync,
        function_arns: Mapping[str, str],
        *,
        region: str,
        account_id: str,
        poll_interval: float = 1.0,
        rules: Iterable[ScheduleDefinition] = (),
    ) -> None:
        self._client = scheduler_client
        self._sqs = sqs_client
        self._invoke_async = invoke_async
        self._functions_by_name = {
            arn.rsplit(":", 1)[-1]: logical_id for arn, logical_id in function_arns.items()
        }
        self._region = region
        self._account_id = account_id
        self._poll_interval = poll_interval
        self._rules = list(rules)
        self._details: dict[tuple[str, str], tuple[Any, ScheduleDefinition]] = {}
        self._first_seen: dict[tuple[str, str, str], datetime] = {}
        self._last_fired: dict[tuple[str, str, str], datetime] = {}  # by identity
        self._skipped: set[str] = set()
        self._queue_urls: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scheduler", daemon=True)
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="schedule-invoke")
        self._fired: list[Firing] = []

    @property
    def fired(self) -> list[Firing]:
        """Every delivered occurrence so far, oldest first (waits for a running tick)."""
        with self._lock:
            return list(self._fired)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        while not self._stop.wait(self._poll_interval):
            try:
                self.tick()
            except Exception:
                if self._stop.is_set():
                    return
                logger.exception("scheduler tick failed")

    # --- discovery ---------------------------------------------------------------------

    def list_definitions(self) -> list[ScheduleDefinition]:
        """Every schedule currently stored in moto, in every group, plus the static rules."""
        definitions = list(self._rules)
        seen = set()
        for group_page in self._client.get_paginator("list_schedule_groups").paginate():
            for group in group_page.get("ScheduleGroups", []):
                pages = self._client.get_paginator("list_schedules").paginate(GroupName=group["Name"])
                for page in pages:
                    for summary in page.get("Schedules", []):
                        key = (summary.get("GroupName") or "default", summary["Name"])
                        seen.add(key)
                        definition = self._definition(key, summary.get("LastModificationDate"))
                        if definition is not None:
                            definitions.append(definition)
        for key in set(self._details) - seen:
            del self._details[key]
        return definitions

    def _definition(self, key: tuple[str, str], version: Any) -> ScheduleDefinition | None:
        cached = self._details.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        try:
            schedule = self._client.get_schedule(GroupName=key[0], Name=key[1])
        except self._client.exceptions.ResourceNotFoundException:
            return None  # deleted between list and get
        definition = definition_from_api(schedule)
        self._details[key] = (version, definition)
        return definition

    # --- firing ------------------------------------------------------------------------

    def tick(self, now: datetime | None = None) -> list[Firing]:
        """Fire every occurrence due at ``now`` (default: the current time)."""
        now = now or datetime.now(UTC)
        with self._lock:
            firings = []
            for definition in self.list_definitions():
                if self._stop.is_set():  # a stopped stack's scheduler fires nothing more
                    break
                firing = self._maybe_fire(definition, now)
                if firing is not None:
                    firings.append(firing)
                    self._fired.append(firing)
            return firings

    def _due_time(self, definition: ScheduleDefinition, now: datetime) -> datetime | None:
        try:
            expression = parse_expression(definition.expression)
            zone = ZoneInfo(definition.timezone)
        except (ExpressionError, ValueError, KeyError) as exc:
            if definition.arn not in self._skipped:
                self._skipped.add(definition.arn)
                logger.warning("schedule %s skipped: %s", definition.name, exc)
            return None
        if isinstance(expression, AtExpression):
            due = expression.fire_time(zone)  # StartDate/EndDate do not apply to at()
            return due if due <= now else None
        if (definition.start and now < definition.start) or (definition.end and now > definition.end):
            return None
        return self._recurring_due(definition, expression, zone, now)

    def _recurring_due(
        self,
        definition: ScheduleDefinition,
        expression: RateExpression | CronExpression,
        zone: ZoneInfo,
        now: datetime,
    ) -> datetime | None:
        # Recurring schedules count from their start (or creation), never fire for
        # occurrences before the local scheduler first saw them.
        first_seen = self._first_seen.setdefault(definition.identity, min(now, datetime.now(UTC)))
        if isinstance(expression, RateExpression):
            anchor = definition.start or definition.created
            latest = expression.latest_at_or_before(anchor, now)
            if latest is None or latest <= first_seen - expression.period:
                return None
            return latest
        assert isinstance(expression, CronExpression)
        occurrence = expression.next_after(max(first_seen, definition.start or first_seen), zone)
        if occurrence is None or occurrence > now:
            return None
        # Several missed cron occurrences collapse into the latest one, fired once.
        while (following := expression.next_after(occurrence, zone)) is not None and (following <= now):
            occurrence = following
        return occurrence

    def _maybe_fire(self, definition: ScheduleDefinition, now: datetime) -> Firing | None:
        if definition.state != "ENABLED":
            return None
        due = self._due_time(definition, now)
        if due is None:
            return None
        last = self._last_fired.get(definition.identity)
        if last is not None and due <= last:
            self._complete(definition)  # a fired at() still listed: its deletion failed
            return None
        self._last_fired[definition.identity] = due
        delivered = self._deliver(definition, due)
        logger.info("schedule %s fired for %s", definition.name, due.isoformat())
        firing = Firing(definition.name, definition.group, due, definition.target_arn, delivered)
        self._complete(definition)
        return firing

    def _complete(self, definition: ScheduleDefinition) -> None:
        """``ActionAfterCompletion: DELETE`` of a fired one-time schedule; a failure is
        logged and retried on the next tick, never aborting the tick."""
        is_one_time = definition.expression.strip().startswith("at(")
        if not (is_one_time and definition.delete_after_completion and definition.group):
            return
        try:
            self._client.delete_schedule(GroupName=definition.group, Name=definition.name)
        except self._client.exceptions.ResourceNotFoundException:
            pass  # the application removed it itself already
        except Exception as exc:
            logger.warning("schedule %s not deleted yet: %s", definition.name, exc)

    def _payload(self, definition: ScheduleDefinition, due: datetime) -> str:
        if definition.input is None:
            return json.dumps(self.default_event(definition, due))
        # Scheduler's context attributes, substituted like the real service does.
        replacements = {
            "<aws.scheduler.schedule-arn>": definition.arn,
            "<aws.scheduler.scheduled-time>": due.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "<aws.scheduler.execution-id>": str(uuid.uuid4()),
            "<aws.scheduler.attempt-number>": "1",
        }
        payload = definition.input
        for placeholder, value in replacements.items():
            payload = payload.replace(placeholder, value)
        return payload

    def default_event(self, definition: ScheduleDefinition, due: datetime) -> dict[str, Any]:
        """The "Scheduled Event" a target receives when the schedule has no Input."""
        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.events" if definition.group is None else "aws.scheduler",
            "account": self._account_id,
            "time": due.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": self._region,
            "resources": [definition.arn],
            "detail": {},
        }

    def _deliver(self, definition: ScheduleDefinition, due: datetime) -> bool:
        arn = definition.target_arn
        service = arn.split(":")[2] if arn.count(":") >= 5 else ""
        try:
            if service == "sqs":
                self._send_to_queue(definition, due)
                return True
            if service == "lambda":
                function_name = arn.split(":")[6]
                logical_id = self._functions_by_name.get(function_name)
                if logical_id is not None:
                    event = json.loads(self._payload(definition, due))
                    self._executor.submit(self._invoke_async, logical_id, event)
                    return True
        except Exception:
            logger.exception("schedule %s could not deliver to %s", definition.name, arn)
            return False
        logger.warning("schedule %s: target %s is not supported locally", definition.name, arn)
        return False

    def _send_to_queue(self, definition: ScheduleDefinition, due: datetime) -> None:
        queue_name = definition.target_arn.rsplit(":", 1)[-1]
        if queue_name not in self._queue_urls:
            self._queue_urls[queue_name] = self._sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
        request: dict[str, Any] = {
            "QueueUrl": self._queue_urls[queue_name],
            "MessageBody": self._payload(definition, due),
        }
        if definition.message_group_id and not queue_name.endswith(".fifo"):
            # A standard queue's group id names the message's tenant (fair queues, issue 30).
            request["MessageGroupId"] = definition.message_group_id
        if queue_name.endswith(".fifo"):
            request["MessageGroupId"] = definition.message_group_id or definition.name
            request["MessageDeduplicationId"] = hashlib.sha256(
                f"{definition.arn}|{due.isoformat()}".encode()
            ).hexdigest()
        self._sqs.send_message(**request)


def rule_definition(
    *,
    name: str,
    arn: str,
    expression: str,
    target_arn: str,
    created: datetime,
    input_json: str | None = None,
    enabled: bool = True,
) -> ScheduleDefinition:
    """A static definition for a SAM ``Schedule`` event (an EventBridge rule)."""
    return replace(
        ScheduleDefinition(
            name=name,
            group=None,
            arn=arn,
            expression=expression,
            target_arn=target_arn,
            created=created,
            input=input_json,
        ),
        state="ENABLED" if enabled else "DISABLED",
    )
