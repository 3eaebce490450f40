"""The local SNS event source: moto's HTTP notification becomes the event Lambda gets."""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes import SNSEvent

from devstack.__main__ import parameter_overrides, startup_lines
from devstack.sns_source import lambda_event

NOTIFICATION = {
    "Type": "Notification",
    "MessageId": "5b8a-1",
    "TopicArn": "arn:aws:sns:us-east-1:123456789012:hub-AlertTopic",
    "Message": '{"AlarmName": "a"}',
    "Timestamp": "2024-05-01T13:05:22.123Z",
    "SignatureVersion": "2",
    "Signature": "c2ln",
    "SigningCertURL": "https://sns.us-east-1.amazonaws.com/cert.pem",
    "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
    "Subject": "ALARM",
    "MessageAttributes": {"kind": {"Type": "String", "Value": "alarm"}},
}


def test_an_http_notification_becomes_one_lambda_sns_record() -> None:
    event = SNSEvent(lambda_event(NOTIFICATION, "arn:aws:sns:us-east-1:123456789012:hub-AlertTopic:sub"))

    (record,) = list(event.records)
    assert record.event_source == "aws:sns"
    assert record.event_subscription_arn.endswith(":sub")
    assert (record.sns.message_id, record.sns.message, record.sns.subject) == (
        "5b8a-1",
        '{"AlarmName": "a"}',
        "ALARM",
    )
    assert record.sns.topic_arn == NOTIFICATION["TopicArn"]
    assert record.sns.signing_cert_url == NOTIFICATION["SigningCertURL"]
    assert record.sns.unsubscribe_url == NOTIFICATION["UnsubscribeURL"]
    assert record.sns.message_attributes["kind"].value == "alarm"


def test_the_slack_webhook_comes_from_the_environment_and_is_never_printed() -> None:
    secret = "https://hooks.slack.com/services/T0/B0/secret-part"

    assert parameter_overrides({"SLACK_ALERTS_WEBHOOK_URL": secret}) == {"SlackAlertsWebhookUrl": secret}
    assert parameter_overrides({"SLACK_ALERTS_WEBHOOK_URL": " "}) == {}
    assert parameter_overrides({}) == {}
    lines = startup_lines(
        api_url="http://a",
        function_urls={},
        aws_endpoint="http://m",
        echo_url="http://e",
        demo_lines=[],
        slack_alerts=True,
    )
    alerts = next(line for line in lines if line.startswith("alerts:"))
    assert "Slack" in alerts
    assert "never fire on moto" in alerts
    assert "secret-part" not in "\n".join(lines)
