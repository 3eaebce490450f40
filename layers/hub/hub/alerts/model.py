"""What an operator is told, and how alerts are grouped (seed 000, scenario C: dead letters are
alerted per integration and hour bucket). Pure: no I/O.

Two sources raise alerts: dead-lettered messages (the status record's stream image) and
CloudWatch alarm notifications (SNS). Each alert belongs to one `AlertGroup` — an integration or
an alarm, in one UTC hour — and at most one alert is sent per group. Alert text names ids and
classes only: never a payload, a credential or a webhook URL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any
from urllib.parse import urlencode

from pydantic import ConfigDict, Field, ValidationError

from hub.domain.model import HubModel
from hub.errors import ValidationFailed

#: How long a group's alert record is kept (DynamoDB TTL): well past its hour, so a late retry of
#: a stream record still finds it and sends nothing twice.
ALERT_RETENTION = timedelta(days=2)
#: Where an operator finds dead-lettered messages (the admin API of a later issue).
ADMIN_QUEUE_PATH = "/api/admin/queue"
PRODUCT = "Integration Hub"


class AlertKind(StrEnum):
    DEAD_LETTER = "dead_letter"
    ALARM = "alarm"
    #: A client certificate nearing or past its expiry (the daily check, not the notifier).
    CERT_EXPIRY = "cert_expiry"


def hour_bucket(at: datetime) -> str:
    """The UTC hour `at` falls in, as ``YYYY-MM-DDTHH``. Naive datetimes are taken as UTC."""
    aware = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H")


@dataclass(frozen=True)
class AlertGroup:
    """One alert at most per group: an integration's dead letters, or one alarm, in one hour."""

    kind: AlertKind
    #: The integration id (dead letters) or the alarm name.
    subject: str
    hour: str
    #: The integration's tenant (dead letters: integration ids are unique within a tenant only);
    #: "" for an alarm.
    tenant_id: str = ""

    @classmethod
    def for_dead_letters(cls, tenant_id: str, integration_id: str, at: datetime) -> AlertGroup:
        return cls(AlertKind.DEAD_LETTER, integration_id, hour_bucket(at), tenant_id)

    @classmethod
    def for_alarm(cls, alarm_name: str, at: datetime) -> AlertGroup:
        return cls(AlertKind.ALARM, alarm_name, hour_bucket(at))


@dataclass(frozen=True)
class Alert:
    """One alert, ready for any channel: a title (email subject, Slack headline) and lines."""

    group: AlertGroup
    title: str
    lines: tuple[str, ...]
    tenant_id: str | None = None
    first_message_id: str | None = None

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


# --- dead letters -------------------------------------------------------------------------


class DeadLetter(HubModel):
    """A message that reached `dead_letter`, as its status record's stream image shows it."""

    # By alias from a stored image; by name when built in code.
    model_config = ConfigDict(frozen=True, extra="ignore", validate_by_name=True)

    message_id: str
    tenant_id: str
    integration_id: str
    message_type: str
    error_class: str | None = Field(default=None, validation_alias="last_retry_error_class")
    retry_count: int = 0
    #: The status record's `updated_at`: when it was dead-lettered.
    dead_lettered_at: datetime = Field(validation_alias="updated_at")

    @classmethod
    def from_status_image(cls, image: Mapping[str, Any]) -> DeadLetter:
        """From a status record's image (attribute values already deserialized). Raises
        ValidationFailed naming the missing or invalid attributes, never their values."""
        try:
            return cls.model_validate(dict(image))
        except ValidationError as exc:
            fields = sorted({str(err["loc"][0]) for err in exc.errors() if err["loc"]})
            raise ValidationFailed("not a dead-letter status record", details={"fields": fields}) from None

    @property
    def group(self) -> AlertGroup:
        return AlertGroup.for_dead_letters(self.tenant_id, self.integration_id, self.dead_lettered_at)

    @property
    def event_id(self) -> str:
        """This dead-lettering (a message dead-lettered again after a reprocess is a new one):
        the same for every delivery of the same stream record."""
        return f"{self.message_id}@{self.dead_lettered_at.astimezone(UTC).isoformat()}"


def group_dead_letters(dead_letters: Sequence[DeadLetter]) -> list[list[DeadLetter]]:
    """Dead letters grouped by (tenant, integration, hour), groups and members in arrival order."""
    groups: dict[AlertGroup, list[DeadLetter]] = {}
    for dead_letter in dead_letters:
        groups.setdefault(dead_letter.group, []).append(dead_letter)
    return list(groups.values())


def admin_queue_hint(tenant_id: str) -> str:
    return f"GET {ADMIN_QUEUE_PATH}?{urlencode({'tab': 'dead_letter', 'tenant_id': tenant_id})}"


def _distinct(values: Sequence[str | None], missing: str) -> str:
    seen = dict.fromkeys(value or missing for value in values)
    return ", ".join(seen)


def dead_letter_alert(group: Sequence[DeadLetter], stage: str | None = None) -> Alert:
    """The alert for one group of dead letters (same integration, same hour), first one first."""
    if not group:
        raise ValueError("an alert needs at least one dead letter")
    first = group[0]
    alert_group = first.group
    if any(member.group != alert_group for member in group):
        raise ValueError("dead letters of different integrations or hours are separate alerts")
    count = len(group)
    noun = "message" if count == 1 else "messages"
    lines = (
        f"Integration: {first.integration_id}",
        f"Tenant: {first.tenant_id}",
        f"Message type: {_distinct([m.message_type for m in group], 'unknown')}",
        f"Error class: {_distinct([m.error_class for m in group], 'unknown')}",
        f"First message: {first.message_id} (retries: {first.retry_count}, "
        f"dead-lettered {first.dead_lettered_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC)",
        f"Dead-lettered in this batch: {count}",
        f"Hour bucket (UTC): {alert_group.hour} - more dead letters of this integration in this hour "
        "are counted, not alerted again.",
        f"Where to look: {admin_queue_hint(first.tenant_id)}",
    )
    return Alert(
        group=alert_group,
        title=f"{_prefix(stage)} {count} {noun} dead-lettered on integration {first.integration_id}",
        lines=lines,
        tenant_id=first.tenant_id,
        first_message_id=first.message_id,
    )


# --- CloudWatch alarms ----------------------------------------------------------------------


class AlarmNotification(HubModel):
    """The JSON CloudWatch publishes to SNS when an alarm changes state (the fields we use)."""

    model_config = ConfigDict(frozen=True, extra="ignore", validate_by_name=True)

    alarm_name: str = Field(validation_alias="AlarmName", min_length=1)
    description: str | None = Field(default=None, validation_alias="AlarmDescription")
    new_state: str = Field(validation_alias="NewStateValue")
    reason: str = Field(default="", validation_alias="NewStateReason")
    changed_at: datetime = Field(validation_alias="StateChangeTime")
    region: str | None = Field(default=None, validation_alias="Region")

    @classmethod
    def from_sns_message(cls, message: str) -> AlarmNotification | None:
        """The notification in an SNS message, or None when the message is not one."""
        try:
            return cls.model_validate(json.loads(message))
        except (ValueError, ValidationError):  # not JSON, or not an alarm's JSON
            return None

    @property
    def is_alarm(self) -> bool:
        """Only a move into ALARM is alerted (OK and INSUFFICIENT_DATA are not)."""
        return self.new_state == "ALARM"

    @property
    def group(self) -> AlertGroup:
        return AlertGroup.for_alarm(self.alarm_name, self.changed_at)


def alarm_alert(alarm: AlarmNotification, stage: str | None = None) -> Alert:
    lines = [f"Alarm: {alarm.alarm_name} is {alarm.new_state}"]
    if alarm.description:
        lines.append(f"What it watches: {alarm.description}")
    lines += [
        f"Reason: {alarm.reason}" if alarm.reason else "Reason: (none given)",
        f"Changed at: {alarm.changed_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC",
        f"Where to look: the CloudWatch alarm {alarm.alarm_name}"
        + (f" ({alarm.region})" if alarm.region else "")
        + f"; dead-lettered messages: GET {ADMIN_QUEUE_PATH}?tab=dead_letter",
    ]
    return Alert(
        group=alarm.group,
        title=f"{_prefix(stage)} ALARM {alarm.alarm_name}",
        lines=tuple(lines),
    )


def _prefix(stage: str | None) -> str:
    return f"[{PRODUCT} {stage}]" if stage else f"[{PRODUCT}]"
