"""The alert notifier: dead letters and alarm notifications in, at most one alert per group
(integration or alarm) and UTC hour out, on every configured channel.

Exactly one: the group's alert record is created by one conditional write, so of any number of
concurrent notifiers one creates it and sends; the others only count their occurrences on it.

Never lost: the record remembers its owner (the event that created it) and the channels that
took the alert. A channel failure raises AlertChannelUnavailable after recording the channels
that succeeded, so the event is retried (the stream retries the record, Lambda retries the SNS
invocation); the retry is the owner again and sends only on the channels still pending. A crash
between sending and recording may send an alert twice; it never sends it zero times.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from hub.alerts.model import (
    AlarmNotification,
    Alert,
    AlertGroup,
    DeadLetter,
    alarm_alert,
    dead_letter_alert,
)
from hub.domain.clock import utcnow
from hub.errors import AlertChannelUnavailable, ValidationFailed
from hub.ports import AlertChannel, AlertClaimStore

logger = logging.getLogger(__name__)


class AlertOutcome(StrEnum):
    #: This event's alert went out on every channel still pending.
    SENT = "sent"
    #: A redelivered event whose alert had already gone out: nothing sent.
    ALREADY_SENT = "already_sent"
    #: Another event already raised this group's alert: counted on it, nothing sent.
    GROUPED = "grouped"
    #: Alerted together with the first dead letter of its group in the same batch.
    BATCHED = "batched"
    #: No channel is configured: the alert is only logged.
    NO_CHANNEL = "no_channel"
    #: Not alert-worthy (an alarm moving to OK, a message that is not an alarm).
    IGNORED = "ignored"


def _ids(alert: Alert, owner: str) -> dict[str, Any]:
    return {
        "alert_kind": alert.group.kind.value,
        "alert_subject": alert.group.subject,
        "hour_bucket": alert.group.hour,
        "alert_owner": owner,
        "tenant_id": alert.tenant_id,
        "first_message_id": alert.first_message_id,
    }


class AlertNotifier:
    def __init__(
        self,
        claims: AlertClaimStore,
        *,
        dead_letter_channels: Sequence[AlertChannel],
        alarm_channels: Sequence[AlertChannel],
        stage: str | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._claims = claims
        self._dead_letter_channels = tuple(dead_letter_channels)
        self._alarm_channels = tuple(alarm_channels)
        self._stage = stage
        self._clock = clock

    def dead_letter_batch(self, images: Sequence[tuple[str, Mapping[str, Any]]]) -> DeadLetterBatch:
        """The dead letters of one stream batch: (record id, status record image) in stream order."""
        return DeadLetterBatch(self, images)

    def notify_dead_letters(self, group: Sequence[DeadLetter]) -> AlertOutcome:
        """One alert for dead letters of one integration and hour (the first one owns it)."""
        alert = dead_letter_alert(group, self._stage)
        return self._deliver(alert, group[0].event_id, len(group), self._dead_letter_channels)

    def notify_alarm(self, message: str, notification_id: str) -> AlertOutcome:
        """One alert per alarm and hour for an SNS message carrying a CloudWatch alarm."""
        alarm = AlarmNotification.from_sns_message(message)
        if alarm is None:
            logger.warning("not a CloudWatch alarm notification: ignored", extra={"sns_id": notification_id})
            return AlertOutcome.IGNORED
        if not alarm.is_alarm:
            logger.info("alarm state %s is not alerted", alarm.new_state, extra={"alarm": alarm.alarm_name})
            return AlertOutcome.IGNORED
        return self._deliver(alarm_alert(alarm, self._stage), notification_id, 1, self._alarm_channels)

    def _deliver(
        self, alert: Alert, owner: str, occurrences: int, channels: Sequence[AlertChannel]
    ) -> AlertOutcome:
        ids = _ids(alert, owner)
        claim = self._claims.claim(alert, owner, occurrences, self._clock())
        if not claim.created and claim.owner != owner:
            self._claims.count(alert.group, occurrences)
            logger.info("alert grouped with one already raised", extra={**ids, "occurrences": occurrences})
            return AlertOutcome.GROUPED
        if not channels:
            logger.warning("alert not sent: no alert channel configured", extra={**ids, "title": alert.title})
            return AlertOutcome.NO_CHANNEL
        pending = [channel for channel in channels if channel.name not in claim.sent_channels]
        if not pending:
            return AlertOutcome.ALREADY_SENT
        sent: list[str] = []
        failed: list[str] = []
        for channel in pending:
            try:
                channel.send(alert)
            except AlertChannelUnavailable as exc:
                failed.append(channel.name)
                logger.warning(
                    "alert channel failed", extra={**ids, "channel": channel.name, "details": exc.details}
                )
            else:
                sent.append(channel.name)
        if sent:
            self._claims.mark_sent(alert.group, sent, self._clock())
        if failed:
            raise AlertChannelUnavailable(
                f"alert not delivered on {', '.join(failed)}; the event is retried",
                details={"channels": failed, "sent": sent},
            )
        logger.info("alert sent", extra={**ids, "channels": sent, "occurrences": occurrences})
        return AlertOutcome.SENT


class DeadLetterBatch:
    """One stream batch of dead letters, grouped per (integration, hour) up front so an alert can
    say how many arrived together. Records are then handled one by one (Powertools'
    BatchProcessor): the first record of a group raises the group's alert, the others are
    `BATCHED` with it. If the first one fails, the stream resumes from it, so its whole group
    comes back with it."""

    def __init__(self, notifier: AlertNotifier, images: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        self._notifier = notifier
        self._invalid: dict[str, ValidationFailed] = {}
        self._leaders: dict[str, list[DeadLetter]] = {}
        self._known: set[str] = set()
        groups: dict[AlertGroup, list[tuple[str, DeadLetter]]] = {}
        for record_id, image in images:
            self._known.add(record_id)
            try:
                dead_letter = DeadLetter.from_status_image(image)
            except ValidationFailed as exc:
                self._invalid[record_id] = exc
                continue
            groups.setdefault(dead_letter.group, []).append((record_id, dead_letter))
        for members in groups.values():
            self._leaders[members[0][0]] = [dead_letter for _, dead_letter in members]

    def handle(self, record_id: str) -> AlertOutcome:
        if record_id not in self._known:
            raise ValueError(f"record {record_id} is not part of this batch")
        if record_id in self._invalid:
            raise self._invalid[record_id]
        group = self._leaders.get(record_id)
        if group is None:
            return AlertOutcome.BATCHED
        return self._notifier.notify_dead_letters(group)
