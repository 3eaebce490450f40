"""Alerts through the real AlertNotifierFunction handler on mock_aws, every resource from
template.yaml: dead-letter records read from the table's real stream and filtered by the
template's FilterCriteria, Slack on a real local HTTP receiver, email through moto's SES."""

from __future__ import annotations

import json
import logging
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from boto3.dynamodb.types import TypeDeserializer
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from devstack.cfn import TemplateError, load_template
from devstack.event_filter import matches_any, parse_patterns
from devstack.stream_source import lambda_record
from hub import wiring
from hub.adapters.aws import reset_clients
from hub.alerts.notifier import AlertOutcome
from hub.errors import AlertChannelUnavailable
from tests.aws import AWS_TEST_ENV, REGION, TEMPLATE, LambdaContext, load_handler, provision
from tests.destinations import Answer, HttpDestination

ALERT_TO = "ops@example.com"
ALERT_FROM = "alerts@example.com"
SECRET_PATH = "/services/T0HUB/B0HUB/secret-webhook-token"
T13 = datetime(2024, 5, 1, 13, 5, tzinfo=UTC)


def ts(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class AlertStack:
    table: str
    stream_arn: str
    topic_arn: str
    env: dict[str, str]
    slack: HttpDestination
    webhook_url: str
    handler: Any
    seen: set[str] = field(default_factory=set)

    def put_status(self, message_id: str, status: str, at: datetime, **attributes: Any) -> None:
        item = {
            "PK": {"S": f"MSG#{message_id}"},
            "SK": {"S": attributes.pop("sk", "STATUS")},
            "message_id": {"S": message_id},
            "tenant_id": {"S": attributes.pop("tenant_id", "t1")},
            "integration_id": {"S": attributes.pop("integration_id", "int_a")},
            "message_type": {"S": "purchase_order"},
            "pipeline_status": {"S": status},
            "last_retry_error_class": {"S": "http_5xx"},
            "retry_count": {"N": "2"},
            "updated_at": {"S": ts(at)},
            "payload_sha256": {"S": "0" * 64},
        }
        boto3.client("dynamodb").put_item(TableName=self.table, Item=item)

    def dead_letter(self, message_id: str, at: datetime = T13, **attributes: Any) -> None:
        """What the retry orchestrator does: error -> dead_letter on the status record."""
        self.put_status(message_id, "error", at - timedelta(seconds=1), **dict(attributes))
        self.put_status(message_id, "dead_letter", at, **attributes)

    def new_stream_records(self) -> list[dict[str, Any]]:
        """Stream records written since the last call, shaped as Lambda delivers them."""
        streams = boto3.client("dynamodbstreams")
        records = []
        for shard in streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]:
            iterator = streams.get_shard_iterator(
                StreamArn=self.stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
            for raw in streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]:
                if raw["dynamodb"]["SequenceNumber"] not in self.seen:
                    self.seen.add(raw["dynamodb"]["SequenceNumber"])
                    records.append(lambda_record(raw, self.stream_arn, REGION))
        return records

    def dead_letter_event(self) -> dict[str, Any]:
        """The notifier's stream event: new records that pass the template's FilterCriteria."""
        patterns = notifier_filter()
        return {"Records": [r for r in self.new_stream_records() if matches_any(patterns, r)]}

    def invoke(self, event: dict[str, Any]) -> Any:
        return self.handler(event, LambdaContext())

    def slack_texts(self) -> list[str]:
        return [json.loads(r.body)["text"] for r in self.slack.requests]

    def alert_item(self, pk: str) -> dict[str, Any]:
        item = boto3.client("dynamodb").get_item(
            TableName=self.table, Key={"PK": {"S": pk}, "SK": {"S": "ALERT"}}
        )
        return item["Item"]


def notifier_filter() -> list[dict[str, Any]]:
    events = load_template(TEMPLATE)["Resources"]["AlertNotifierFunction"]["Properties"]["Events"]
    return parse_patterns(events["DeadLetters"]["Properties"]["FilterCriteria"])


def new_image(record: dict[str, Any]) -> dict[str, Any]:
    return {k: TypeDeserializer().deserialize(v) for k, v in record["dynamodb"]["NewImage"].items()}


def emails() -> list[Any]:
    return list(ses_backends[DEFAULT_ACCOUNT_ID][REGION].sent_messages)


@pytest.fixture
def slack() -> Iterator[HttpDestination]:
    with HttpDestination() as receiver:
        yield receiver


@pytest.fixture
def alerts(monkeypatch: pytest.MonkeyPatch, slack: HttpDestination) -> Iterator[AlertStack]:
    for name, value in AWS_TEST_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    webhook_url = slack.url.replace("/orders", SECRET_PATH)
    with mock_aws():
        reset_clients()
        wiring.reset()
        provisioned = provision(
            parameter_overrides={
                "SlackAlertsWebhookUrl": webhook_url,
                "AlertEmail": ALERT_TO,
                "AlertEmailFrom": ALERT_FROM,
                "Stage": "staging",
            }
        )
        env = provisioned.environments["AlertNotifierFunction"]
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        # SES sends only from a verified identity (on moto as on AWS).
        boto3.client("ses").verify_email_identity(EmailAddress=ALERT_FROM)
        table = provisioned.refs["HubTable"]
        stream_arn = boto3.client("dynamodb").describe_table(TableName=table)["Table"]["LatestStreamArn"]
        yield AlertStack(
            table=table,
            stream_arn=stream_arn,
            topic_arn=provisioned.refs["AlertTopic"],
            env=env,
            slack=slack,
            webhook_url=webhook_url,
            handler=load_handler("AlertNotifierFunction"),
        )
        reset_clients()
        wiring.reset()


def test_three_dead_letters_of_one_integration_and_one_of_another_send_two_alerts(alerts: AlertStack):
    alerts.dead_letter("msg_a1", T13)
    alerts.dead_letter("msg_b1", T13 + timedelta(minutes=5), integration_id="int_b", tenant_id="t2")
    alerts.dead_letter("msg_a2", T13 + timedelta(minutes=20))
    alerts.dead_letter("msg_a3", T13 + timedelta(minutes=54))
    event = alerts.dead_letter_event()

    answer = alerts.invoke(event)

    assert len(event["Records"]) == 4  # the four error -> dead_letter changes, nothing else
    assert answer == {"batchItemFailures": []}
    texts = alerts.slack_texts()
    assert len(texts) == 2
    int_a, int_b = texts
    assert int_a.startswith("[Integration Hub staging] 3 messages dead-lettered on integration int_a\n")
    assert "First message: msg_a1 " in int_a
    assert "Dead-lettered in this batch: 3" in int_a
    assert "Error class: http_5xx" in int_a
    assert "GET /api/admin/queue?tab=dead_letter&amp;tenant_id=t1" in int_a
    assert "Tenant: t2" in int_b
    assert "Dead-lettered in this batch: 1" in int_b
    sent = emails()
    assert len(sent) == 2
    assert {m.source for m in sent} == {ALERT_FROM}
    assert all(m.destinations["ToAddresses"] == [ALERT_TO] for m in sent)
    assert sorted(m.subject for m in sent) == [
        "[Integration Hub staging] 1 message dead-lettered on integration int_b",
        "[Integration Hub staging] 3 messages dead-lettered on integration int_a",
    ]
    assert "tenant_id=t1" in next(m.body for m in sent if "int_a" in m.subject)
    record = alerts.alert_item("ALERT#t1#int_a#2024-05-01T13")
    assert record["occurrences"] == {"N": "3"}
    assert record["first_message_id"] == {"S": "msg_a1"}
    assert set(record["sent_channels"]["SS"]) == {"slack", "email"}
    assert int(record["expires_at"]["N"]) > int(datetime.now(UTC).timestamp()) + 24 * 3600


def test_later_dead_letters_in_the_same_hour_are_counted_not_alerted_again(alerts: AlertStack):
    alerts.dead_letter("msg_a1", T13)
    alerts.invoke(alerts.dead_letter_event())
    alerts.dead_letter("msg_a2", T13 + timedelta(minutes=30))
    alerts.dead_letter("msg_a3", T13 + timedelta(minutes=31))

    answer = alerts.invoke(alerts.dead_letter_event())

    assert answer == {"batchItemFailures": []}
    assert len(alerts.slack_texts()) == 1
    assert len(emails()) == 1
    assert alerts.alert_item("ALERT#t1#int_a#2024-05-01T13")["occurrences"] == {"N": "3"}

    alerts.dead_letter("msg_a4", T13 + timedelta(hours=1))  # the next hour is a new bucket
    alerts.invoke(alerts.dead_letter_event())

    assert len(alerts.slack_texts()) == 2
    assert "First message: msg_a4 " in alerts.slack_texts()[1]


def test_concurrent_notifiers_on_the_same_integration_and_hour_send_exactly_one_alert(alerts: AlertStack):
    notifiers = 8
    for n in range(notifiers):
        alerts.dead_letter(f"msg_{n}", T13 + timedelta(minutes=n))
    records = alerts.dead_letter_event()["Records"]
    assert len(records) == notifiers
    start = threading.Barrier(notifiers)
    outcomes: list[AlertOutcome] = []

    def notifier(record: dict[str, Any]) -> None:
        # One Lambda instance per shard: each sees its own record as a batch of one.
        batch = wiring.alert_notifier().dead_letter_batch(
            [(record["dynamodb"]["SequenceNumber"], new_image(record))]
        )
        start.wait()
        outcomes.append(batch.handle(record["dynamodb"]["SequenceNumber"]))

    threads = [threading.Thread(target=notifier, args=(record,)) for record in records]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert sorted(outcomes) == sorted([AlertOutcome.SENT] + [AlertOutcome.GROUPED] * (notifiers - 1))
    assert len(alerts.slack.requests) == 1
    assert len(emails()) == 1
    assert alerts.alert_item("ALERT#t1#int_a#2024-05-01T13")["occurrences"] == {"N": str(notifiers)}


def test_slack_failing_keeps_the_alert_and_the_stream_retry_sends_it_once(alerts: AlertStack):
    alerts.slack.script(Answer(500, "internal_error"), Answer(200, "ok"))
    alerts.dead_letter("msg_a1", T13)
    alerts.dead_letter("msg_b1", T13, integration_id="int_b")
    alerts.dead_letter("msg_a2", T13 + timedelta(minutes=1))
    event = alerts.dead_letter_event()
    first_seq = event["Records"][0]["dynamodb"]["SequenceNumber"]

    failed = alerts.invoke(event)

    # The group's first record is reported; the stream resumes there, so int_a comes back whole.
    assert failed == {"batchItemFailures": [{"itemIdentifier": first_seq}]}
    assert set(alerts.alert_item("ALERT#t1#int_a#2024-05-01T13")["sent_channels"]["SS"]) == {"email"}
    assert len(emails()) == 2  # int_a's email went out; int_b's alert is complete

    retried = alerts.invoke(event)  # what the event source mapping redelivers
    again = alerts.invoke(event)

    assert retried == {"batchItemFailures": []}
    assert again == {"batchItemFailures": []}
    assert [r.path for r in alerts.slack.requests] == [SECRET_PATH] * 3  # int_a failed, int_b, int_a again
    assert sum("on integration int_a" in text for text in alerts.slack_texts()) == 2
    assert "Dead-lettered in this batch: 2" in alerts.slack_texts()[-1]
    assert len(emails()) == 2  # the retry did not email again
    assert set(alerts.alert_item("ALERT#t1#int_a#2024-05-01T13")["sent_channels"]["SS"]) == {"slack", "email"}


def sns_event(message: dict[str, Any] | str, topic_arn: str, message_id: str = "sns-msg-1") -> dict[str, Any]:
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": f"{topic_arn}:sub",
                "Sns": {
                    "Type": "Notification",
                    "MessageId": message_id,
                    "TopicArn": topic_arn,
                    "Subject": 'ALARM: "hub-pipeline-dlq-not-empty" in US East (N. Virginia)',
                    "Message": message if isinstance(message, str) else json.dumps(message),
                    "Timestamp": "2024-05-01T13:05:22.200Z",
                    "SignatureVersion": "1",
                    "Signature": "x",
                    "SigningCertUrl": "https://sns.us-east-1.amazonaws.com/cert.pem",
                    "UnsubscribeUrl": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
                    "MessageAttributes": {},
                },
            }
        ]
    }


ALARM = {
    "AlarmName": "hub-test-pipeline-dlq-not-empty",
    "AlarmDescription": "Step messages of the pipeline lane failed on every SQS delivery.",
    "AWSAccountId": "123456789012",
    "NewStateValue": "ALARM",
    "NewStateReason": "Threshold Crossed: 1 datapoint [2.0 (01/05/24 13:04:00)] was greater than 0.0",
    "StateChangeTime": "2024-05-01T13:05:22.150+0000",
    "Region": "US East (N. Virginia)",
    "OldStateValue": "OK",
    "Trigger": {"MetricName": "ApproximateNumberOfMessagesVisible", "Namespace": "AWS/SQS"},
}


def test_an_sns_wrapped_cloudwatch_alarm_posts_one_slack_message(alerts: AlertStack):
    event = sns_event(ALARM, alerts.topic_arn)

    answer = alerts.invoke(event)
    alerts.invoke(event)  # SNS redelivery of the same notification
    alerts.invoke(
        sns_event({**ALARM, "StateChangeTime": "2024-05-01T13:45:00.000+0000"}, alerts.topic_arn, "n2")
    )
    alerts.invoke(sns_event({**ALARM, "NewStateValue": "OK"}, alerts.topic_arn, "n3"))

    assert answer == {}
    (text,) = alerts.slack_texts()
    assert text.startswith("[Integration Hub staging] ALARM hub-test-pipeline-dlq-not-empty\n")
    assert "Reason: Threshold Crossed: 1 datapoint [2.0 (01/05/24 13:04:00)] was greater than 0.0" in text
    assert emails() == []  # alarms reach email through the topic's own subscription
    assert alerts.alert_item("ALARM#hub-test-pipeline-dlq-not-empty#2024-05-01T13")["occurrences"] == {
        "N": "2"
    }


def test_an_alarm_notification_slack_refuses_fails_the_invocation_for_lambda_to_retry(alerts: AlertStack):
    alerts.slack.script(Answer(404, "no_service"), Answer(200, "ok"))
    event = sns_event(ALARM, alerts.topic_arn)

    with pytest.raises(AlertChannelUnavailable, match="alert not delivered on slack"):
        alerts.invoke(event)
    alerts.invoke(event)  # Lambda's retry of the asynchronous invocation

    assert [r.path for r in alerts.slack.requests] == [SECRET_PATH, SECRET_PATH]


def test_only_a_status_record_entering_dead_letter_passes_the_template_filter(alerts: AlertStack):
    alerts.dead_letter("msg_entering", T13)
    alerts.put_status("msg_entering", "dead_letter", T13 + timedelta(minutes=1))  # rewritten while there
    alerts.put_status("msg_inserted", "dead_letter", T13)  # INSERT, no old image
    alerts.put_status("msg_other_item", "error", T13, sk="MAPPED")
    alerts.put_status("msg_other_item", "dead_letter", T13, sk="MAPPED")
    alerts.put_status("msg_sent", "error", T13)
    alerts.put_status("msg_sent", "sent", T13)

    records = alerts.new_stream_records()
    passing = [r for r in records if matches_any(notifier_filter(), r)]

    assert len(records) == 8
    assert [(r["eventName"], r["dynamodb"]["Keys"]["PK"]["S"]) for r in passing] == [
        ("MODIFY", "MSG#msg_entering")
    ]
    assert passing[0]["dynamodb"]["OldImage"]["pipeline_status"] == {"S": "error"}


def test_the_webhook_url_reaches_no_log_alert_or_error(
    alerts: AlertStack, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
):
    caplog.set_level(logging.DEBUG)
    alerts.slack.script(Answer(404, "no_service"))
    alerts.dead_letter("msg_a1", T13)

    # Every record failed: the whole batch fails and is retried.
    with pytest.raises(BatchProcessingError) as batch_failure:
        alerts.invoke(alerts.dead_letter_event())
    with pytest.raises(AlertChannelUnavailable) as alarm_failure:
        alerts.invoke(sns_event(ALARM, alerts.topic_arn))

    assert alerts.slack.requests  # the secret URL was used...
    captured = capsys.readouterr()
    seen = [caplog.text, captured.out, captured.err]
    for failure in (batch_failure.value, alarm_failure.value):
        seen += traceback.format_exception(failure)
    seen += [r.body.decode() for r in alerts.slack.requests] + [m.body for m in emails()]
    assert "alert channel failed" in captured.out + caplog.text  # ...the failure was logged...
    for text in seen:  # ...and the URL's secret part appears nowhere
        assert "secret-webhook-token" not in text
        assert alerts.webhook_url not in text


def test_alarms_watch_every_lane_and_notify_the_alert_topic(alerts: AlertStack):
    template = load_template(TEMPLATE)
    resources = template["Resources"]
    queues = {lid for lid, r in resources.items() if r["Type"] == "AWS::SQS::Queue"}
    work_queues = {q for q in queues if "RedrivePolicy" in resources[q]["Properties"]}
    dead_letter_queues = queues - work_queues
    name_of = {q: f"hub-test-{q}" for q in queues}  # the provisioned physical names
    urls = boto3.client("sqs").list_queues()["QueueUrls"]
    assert sorted(url.rsplit("/", 1)[-1] for url in urls) == sorted(name_of.values())
    alarms = boto3.client("cloudwatch").describe_alarms()["MetricAlarms"]

    def watching(metric: str, queue: str) -> list[dict[str, Any]]:
        return [
            a
            for a in alarms
            if a.get("MetricName") == metric  # metric-math alarms have none
            and a["Dimensions"] == [{"Name": "QueueName", "Value": name_of[queue]}]
        ]

    assert work_queues == {"PipelineQueue", "WebhooksQueue"}
    assert dead_letter_queues == {
        "PipelineDLQ",
        "AlertNotifierDLQ",
        "OutboxPublisherDLQ",
        "WebhooksDLQ",
        "SchedulesDLQ",
    }
    for queue in work_queues:  # a new lane must come with its alarms
        (age,) = watching("ApproximateAgeOfOldestMessage", queue)
        assert (age["Threshold"], age["ComparisonOperator"]) == (900.0, "GreaterThanThreshold")
    for queue in dead_letter_queues:
        (depth,) = watching("ApproximateNumberOfMessagesVisible", queue)
        assert (depth["Threshold"], depth["ComparisonOperator"], depth["Statistic"]) == (
            0.0,
            "GreaterThanThreshold",
            "Maximum",
        )
    (dead_lettered,) = [a for a in alarms if a.get("MetricName") == "DeadLettered"]
    # The service dimension the functions of this stack write their metrics with.
    service = alerts.env["POWERTOOLS_SERVICE_NAME"]
    assert service == "integration-hub-staging"
    namespace = template["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"]
    assert dead_lettered["Namespace"] == namespace == "IntegrationHub"
    assert dead_lettered["Dimensions"] == [{"Name": "service", "Value": service}]
    assert (dead_lettered["Statistic"], dead_lettered["Threshold"], dead_lettered["TreatMissingData"]) == (
        "Sum",
        0.0,
        "notBreaching",
    )
    # Every alarm of the template was created (issue 14 added the functions', API's, table's,
    # streams' and certificates' alarms; tests/integration/test_template_ops.py checks what they watch).
    declared = [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert len(alarms) == len(declared) == 27
    assert all(a["AlarmActions"] == [alerts.topic_arn] for a in alarms)
    subscriptions = boto3.client("sns").list_subscriptions_by_topic(TopicArn=alerts.topic_arn)[
        "Subscriptions"
    ]
    assert [(s["Protocol"], s["Endpoint"]) for s in subscriptions] == [("email", ALERT_TO)]
    # The URL is in Secrets Manager, not in the environment: the function gets the secret's ARN.
    secret = boto3.client("secretsmanager").get_secret_value(
        SecretId=alerts.env["HUB_SLACK_WEBHOOK_SECRET_ARN"]
    )
    assert secret["SecretString"] == alerts.webhook_url
    assert alerts.webhook_url not in json.dumps(alerts.env)
    assert (alerts.env["HUB_ALERT_EMAIL"], alerts.env["HUB_ALERT_EMAIL_FROM"]) == (ALERT_TO, ALERT_FROM)


def test_without_alert_parameters_there_is_no_email_subscription_and_no_channel(alerts: AlertStack):
    bare = provision(stack_name="hub-bare")

    topic = bare.refs["AlertTopic"]
    assert boto3.client("sns").list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"] == []
    env = bare.environments["AlertNotifierFunction"]
    assert (env["HUB_SLACK_WEBHOOK_SECRET_ARN"], env["HUB_ALERT_EMAIL"], env["HUB_ALERT_EMAIL_FROM"]) == (
        "",
        "",
        "",
    )


def test_half_an_email_configuration_is_refused_before_anything_is_created(alerts: AlertStack):
    with pytest.raises(TemplateError, match="AlertEmail needs AlertEmailFrom"):
        provision(stack_name="hub-half", parameter_overrides={"AlertEmail": ALERT_TO})

    assert not [q for q in boto3.client("sqs").list_queues()["QueueUrls"] if "hub-half" in q]
