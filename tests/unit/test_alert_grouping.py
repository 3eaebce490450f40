"""Alerts without I/O: hour buckets, grouping, alert text, and the notifier's claim logic over
in-memory fakes (seed 000, scenario C: one alert per integration and hour)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from hub.adapters.slack import slack_text
from hub.alerts.model import (
    AlarmNotification,
    Alert,
    AlertGroup,
    AlertKind,
    DeadLetter,
    alarm_alert,
    dead_letter_alert,
    group_dead_letters,
    hour_bucket,
)
from hub.alerts.notifier import AlertNotifier, AlertOutcome
from hub.errors import AlertChannelUnavailable, ValidationFailed
from hub.ports import AlertClaim

T13 = datetime(2024, 5, 1, 13, 5, tzinfo=UTC)


def dead_letter(
    message_id: str, integration_id: str = "int_a", at: datetime = T13, **extra: Any
) -> DeadLetter:
    return DeadLetter(
        message_id=message_id,
        tenant_id=extra.pop("tenant_id", "t1"),
        integration_id=integration_id,
        message_type=extra.pop("message_type", "purchase_order"),
        error_class=extra.pop("error_class", "http_5xx"),
        retry_count=2,
        dead_lettered_at=at,
    )


def status_image(message_id: str, **overrides: Any) -> dict[str, Any]:
    """A status record image as the stream carries it (values deserialized)."""
    return {
        "PK": f"MSG#{message_id}",
        "SK": "STATUS",
        "message_id": message_id,
        "tenant_id": "t1",
        "integration_id": "int_a",
        "message_type": "purchase_order",
        "pipeline_status": "dead_letter",
        "last_retry_error_class": "http_5xx",
        "retry_count": 2,
        "updated_at": "2024-05-01T13:05:00.000000Z",
        **overrides,
    }


# --- hour bucket and grouping ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("at", "bucket"),
    [
        (datetime(2024, 5, 1, 13, 0, 0, tzinfo=UTC), "2024-05-01T13"),
        (datetime(2024, 5, 1, 13, 59, 59, 999999, tzinfo=UTC), "2024-05-01T13"),
        (datetime(2024, 5, 1, 14, 0, 0, tzinfo=UTC), "2024-05-01T14"),
        # São Paulo 10:30 is 13:30 UTC; buckets are UTC hours.
        (datetime(2024, 5, 1, 10, 30, tzinfo=timezone(timedelta(hours=-3))), "2024-05-01T13"),
        (datetime(2024, 12, 31, 23, 30, tzinfo=timezone(timedelta(hours=-1))), "2025-01-01T00"),
        (datetime(2024, 5, 1, 13, 30), "2024-05-01T13"),  # naive: taken as UTC
    ],
)
def test_hour_bucket_is_the_utc_hour(at: datetime, bucket: str) -> None:
    assert hour_bucket(at) == bucket


def test_a_group_is_one_integration_in_one_hour() -> None:
    assert dead_letter("m1").group == dead_letter("m2", at=T13.replace(minute=59)).group
    assert dead_letter("m1").group != dead_letter("m2", at=T13 + timedelta(hours=1)).group
    assert dead_letter("m1").group != dead_letter("m2", integration_id="int_b").group
    # Integration ids are unique within a tenant only: another tenant's int_a is another group.
    assert dead_letter("m1").group != dead_letter("m2", tenant_id="t2").group
    assert dead_letter("m1").group == AlertGroup(AlertKind.DEAD_LETTER, "int_a", "2024-05-01T13", "t1")
    assert AlertGroup.for_alarm("int_a", T13) != dead_letter("m1").group  # an alarm named like an integration


def test_dead_letters_are_grouped_per_integration_and_hour_in_arrival_order() -> None:
    batch = [
        dead_letter("m1"),
        dead_letter("m2", integration_id="int_b"),
        dead_letter("m3", at=T13.replace(minute=40)),
        dead_letter("m4", at=T13 + timedelta(hours=1)),
        dead_letter("m5", at=T13.replace(minute=59)),
    ]

    groups = group_dead_letters(batch)

    assert [[d.message_id for d in group] for group in groups] == [["m1", "m3", "m5"], ["m2"], ["m4"]]


# --- alert text -------------------------------------------------------------------------------


def test_the_dead_letter_alert_names_ids_classes_count_and_where_to_look() -> None:
    group = [
        dead_letter("msg_first", tenant_id="tnt 1&x"),
        dead_letter("msg_second", tenant_id="tnt 1&x", message_type="invoice", error_class="network"),
        dead_letter("msg_third", tenant_id="tnt 1&x"),
    ]

    alert = dead_letter_alert(group, stage="prod")

    assert alert.title == "[Integration Hub prod] 3 messages dead-lettered on integration int_a"
    assert alert.group == AlertGroup(AlertKind.DEAD_LETTER, "int_a", "2024-05-01T13", "tnt 1&x")
    assert (alert.tenant_id, alert.first_message_id) == ("tnt 1&x", "msg_first")
    lines = alert.lines
    assert "Integration: int_a" in lines
    assert "Tenant: tnt 1&x" in lines
    assert "Message type: purchase_order, invoice" in lines
    assert "Error class: http_5xx, network" in lines
    assert "First message: msg_first (retries: 2, dead-lettered 2024-05-01 13:05:00 UTC)" in lines
    assert "Dead-lettered in this batch: 3" in lines
    assert "Where to look: GET /api/admin/queue?tab=dead_letter&tenant_id=tnt+1%26x" in lines
    assert "msg_second" not in alert.text  # only the first message is named


def test_one_dead_letter_reads_singular_and_unknown_classes_say_so() -> None:
    alert = dead_letter_alert([dead_letter("m1", error_class=None)])

    assert alert.title == "[Integration Hub] 1 message dead-lettered on integration int_a"
    assert "Error class: unknown" in alert.lines


def test_an_alert_never_mixes_integrations_or_hours() -> None:
    with pytest.raises(ValueError, match="separate alerts"):
        dead_letter_alert([dead_letter("m1"), dead_letter("m2", integration_id="int_b")])
    with pytest.raises(ValueError, match="separate alerts"):
        dead_letter_alert([dead_letter("m1"), dead_letter("m2", at=T13 + timedelta(hours=1))])
    with pytest.raises(ValueError, match="at least one"):
        dead_letter_alert([])


def test_a_status_image_becomes_a_dead_letter_and_its_other_attributes_are_dropped() -> None:
    image = status_image("m1", payload='{"card": "4111"}', dest_status_text="token=abc")

    parsed = DeadLetter.from_status_image(image)
    text = dead_letter_alert([parsed]).text

    assert parsed.dead_lettered_at == datetime(2024, 5, 1, 13, 5, tzinfo=UTC)
    assert (parsed.error_class, parsed.retry_count) == ("http_5xx", 2)
    assert "4111" not in text
    assert "token=abc" not in text


def test_an_image_that_is_not_a_dead_letter_names_the_missing_fields_not_values() -> None:
    image = status_image("m1", tenant_id=None)
    del image["integration_id"]

    with pytest.raises(ValidationFailed) as caught:
        DeadLetter.from_status_image(image)

    assert caught.value.details == {"fields": ["integration_id", "tenant_id"]}


def test_the_event_id_tells_a_redelivery_from_a_second_dead_lettering() -> None:
    first = dead_letter("m1")
    assert DeadLetter.from_status_image(status_image("m1")).event_id == first.event_id
    assert dead_letter("m1", at=T13 + timedelta(minutes=30)).event_id != first.event_id


ALARM = {
    "AlarmName": "hub-prod-pipeline-dlq-not-empty",
    "AlarmDescription": "Step messages sit in the DLQ.",
    "AWSAccountId": "123456789012",
    "NewStateValue": "ALARM",
    "NewStateReason": "Threshold Crossed: 1 datapoint [3.0 (01/05/24 13:04:00)] > 0.0",
    "StateChangeTime": "2024-05-01T13:05:22.123+0000",
    "Region": "US East (N. Virginia)",
    "OldStateValue": "OK",
    "Trigger": {"MetricName": "ApproximateNumberOfMessagesVisible", "Namespace": "AWS/SQS"},
}


def test_a_cloudwatch_alarm_notification_is_read_from_its_sns_message() -> None:
    alarm = AlarmNotification.from_sns_message(json.dumps(ALARM))

    assert alarm is not None
    assert alarm.is_alarm
    assert alarm.group == AlertGroup(AlertKind.ALARM, "hub-prod-pipeline-dlq-not-empty", "2024-05-01T13")
    alert = alarm_alert(alarm, stage="prod")
    assert alert.title == "[Integration Hub prod] ALARM hub-prod-pipeline-dlq-not-empty"
    assert "Reason: Threshold Crossed: 1 datapoint [3.0 (01/05/24 13:04:00)] > 0.0" in alert.lines
    assert "What it watches: Step messages sit in the DLQ." in alert.lines
    assert "Changed at: 2024-05-01 13:05:22 UTC" in alert.lines


@pytest.mark.parametrize(
    "message", ["not json", "[]", json.dumps({"AlarmName": "x"}), json.dumps({"hello": 1})]
)
def test_a_message_that_is_not_an_alarm_is_not_read_as_one(message: str) -> None:
    assert AlarmNotification.from_sns_message(message) is None


def test_only_a_move_into_alarm_is_alerted() -> None:
    ok = AlarmNotification.from_sns_message(json.dumps({**ALARM, "NewStateValue": "OK"}))
    assert ok is not None
    assert not ok.is_alarm


def test_slack_text_escapes_its_control_characters() -> None:
    alert = Alert(
        group=AlertGroup(AlertKind.ALARM, "a", "2024-05-01T13"),
        title="t <!channel>",
        lines=("GET /x?a=1&b=2", "<https://evil|click>"),
    )

    assert slack_text(alert) == "t &lt;!channel&gt;\nGET /x?a=1&amp;b=2\n&lt;https://evil|click&gt;"


# --- the notifier over fakes -------------------------------------------------------------------


@dataclass
class FakeClaims:
    """The claim store's contract in memory: one record per group, first writer wins."""

    records: dict[AlertGroup, dict[str, Any]] = field(default_factory=dict)

    def claim(self, alert: Alert, owner: str, occurrences: int, now: datetime) -> AlertClaim:
        record = self.records.get(alert.group)
        if record is None:
            self.records[alert.group] = {"owner": owner, "sent": set(), "occurrences": occurrences}
            return AlertClaim(owner=owner, sent_channels=frozenset(), created=True)
        return AlertClaim(owner=record["owner"], sent_channels=frozenset(record["sent"]), created=False)

    def count(self, group: AlertGroup, occurrences: int) -> None:
        self.records[group]["occurrences"] += occurrences

    def mark_sent(self, group: AlertGroup, channels: Iterable[str], now: datetime) -> None:
        self.records[group]["sent"] |= set(channels)


@dataclass
class FakeChannel:
    name: str
    fail: int = 0  # how many sends fail before one succeeds
    sent: list[Alert] = field(default_factory=list)

    def send(self, alert: Alert) -> None:
        if self.fail:
            self.fail -= 1
            raise AlertChannelUnavailable("down", details={"channel": self.name})
        self.sent.append(alert)


def notifier(claims: FakeClaims, *channels: FakeChannel) -> AlertNotifier:
    return AlertNotifier(
        claims, dead_letter_channels=channels, alarm_channels=channels[:1], clock=lambda: T13
    )


def test_the_first_event_of_a_group_sends_and_later_ones_are_counted() -> None:
    claims, slack, email = FakeClaims(), FakeChannel("slack"), FakeChannel("email")
    alerts = notifier(claims, slack, email)

    first = alerts.notify_dead_letters([dead_letter("m1"), dead_letter("m2")])
    later = alerts.notify_dead_letters([dead_letter("m3", at=T13.replace(minute=50))])

    assert (first, later) == (AlertOutcome.SENT, AlertOutcome.GROUPED)
    assert [a.first_message_id for a in slack.sent] == ["m1"]
    assert len(email.sent) == 1
    (record,) = claims.records.values()
    assert record == {"owner": dead_letter("m1").event_id, "sent": {"slack", "email"}, "occurrences": 3}


def test_a_failed_channel_raises_and_the_owners_retry_sends_only_what_is_pending() -> None:
    claims, slack, email = FakeClaims(), FakeChannel("slack", fail=1), FakeChannel("email")
    alerts = notifier(claims, slack, email)
    group = [dead_letter("m1")]

    with pytest.raises(AlertChannelUnavailable) as caught:
        alerts.notify_dead_letters(group)
    assert caught.value.details == {"channels": ["slack"], "sent": ["email"]}
    # Another event of the group meanwhile: counted, and it does not steal the alert.
    assert alerts.notify_dead_letters([dead_letter("m9")]) is AlertOutcome.GROUPED
    retried = alerts.notify_dead_letters(group)
    again = alerts.notify_dead_letters(group)

    assert (retried, again) == (AlertOutcome.SENT, AlertOutcome.ALREADY_SENT)
    assert len(slack.sent) == 1
    assert len(email.sent) == 1


def test_without_channels_the_alert_is_only_logged(caplog: pytest.LogCaptureFixture) -> None:
    claims = FakeClaims()

    outcome = notifier(claims).notify_dead_letters([dead_letter("m1")])

    assert outcome is AlertOutcome.NO_CHANNEL
    assert "no alert channel configured" in caplog.text


def test_alarm_notifications_go_to_the_alarm_channels_once_per_alarm_and_hour() -> None:
    claims, slack, email = FakeClaims(), FakeChannel("slack"), FakeChannel("email")
    alerts = notifier(claims, slack, email)
    message = json.dumps(ALARM)

    outcomes = [
        alerts.notify_alarm(message, "sns-1"),
        alerts.notify_alarm(message, "sns-1"),  # SNS redelivered it
        alerts.notify_alarm(
            json.dumps({**ALARM, "StateChangeTime": "2024-05-01T13:40:00.000+0000"}), "sns-2"
        ),
        alerts.notify_alarm(json.dumps({**ALARM, "NewStateValue": "OK"}), "sns-3"),
        alerts.notify_alarm("hello", "sns-4"),
    ]

    assert outcomes == [
        AlertOutcome.SENT,
        AlertOutcome.ALREADY_SENT,
        AlertOutcome.GROUPED,
        AlertOutcome.IGNORED,
        AlertOutcome.IGNORED,
    ]
    assert [a.group.subject for a in slack.sent] == ["hub-prod-pipeline-dlq-not-empty"]
    assert email.sent == []


def test_a_batch_alerts_each_group_on_its_first_record_and_batches_the_rest() -> None:
    claims, slack = FakeClaims(), FakeChannel("slack")
    images = [
        ("s1", status_image("m1")),
        ("s2", status_image("m2", integration_id="int_b")),
        ("s3", status_image("m3")),
        ("s4", {"message_id": "m4"}),
    ]
    batch = notifier(claims, slack).dead_letter_batch(images)

    outcomes = [batch.handle(record_id) for record_id in ("s1", "s2", "s3")]

    assert outcomes == [AlertOutcome.SENT, AlertOutcome.SENT, AlertOutcome.BATCHED]
    assert ["Dead-lettered in this batch: 2" in a.lines for a in slack.sent] == [True, False]
    with pytest.raises(ValidationFailed):
        batch.handle("s4")
    with pytest.raises(ValueError, match="not part of this batch"):
        batch.handle("s5")
