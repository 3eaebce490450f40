"""Issue 14, operations: what template.yaml promises an operator - isolation and limits, log
retention, dead-letter queues for schedules and the alarms - read from the template itself (so a
new function, queue or event source cannot arrive without them), and the retry schedules the
code creates, read back from moto."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from devstack.cfn import load_template
from devstack.validate import transform_template
from hub import wiring
from hub.adapters.scheduler import RETRY_POLICY
from hub.config import settings
from hub.errors import ConfigurationError
from tests.aws import TEMPLATE

#: CloudWatch Logs' allowed retention periods (PutRetentionPolicy).
LOG_RETENTION_DAYS = {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557}
LOG_RETENTION_DAYS |= {2922, 3288, 3653}
FUNCTION = "AWS::Serverless::Function"

TEMPLATE_DOC = load_template(TEMPLATE)
RESOURCES: dict[str, Any] = TEMPLATE_DOC["Resources"]
PARAMETERS: dict[str, Any] = TEMPLATE_DOC["Parameters"]
FUNCTIONS = {lid: r["Properties"] for lid, r in RESOURCES.items() if r["Type"] == FUNCTION}
ALARMS = {lid: r["Properties"] for lid, r in RESOURCES.items() if r["Type"] == "AWS::CloudWatch::Alarm"}


def events(kind: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(function, event id, event properties) of every event of `kind`."""
    for function, props in FUNCTIONS.items():
        for event_id, event in (props.get("Events") or {}).items():
            if event["Type"] == kind:
                yield function, event_id, event["Properties"]


def parameter_default(node: Any) -> Any:
    """A value, or the default of the parameter it refers to."""
    if isinstance(node, dict) and set(node) == {"Ref"}:
        return PARAMETERS[node["Ref"]]["Default"]
    return node


def timeout_of(function: str) -> int:
    return int(FUNCTIONS[function].get("Timeout", TEMPLATE_DOC["Globals"]["Function"]["Timeout"]))


def referenced_resource(node: Any) -> str:
    """The logical id a `Ref` or `GetAtt` names."""
    if "Ref" in node:
        return str(node["Ref"])
    return str(node["Fn::GetAtt"][0])


def test_every_function_logs_to_its_own_group_kept_log_retention_days():
    retention = PARAMETERS["LogRetentionDays"]
    assert retention["Default"] == 30
    assert set(retention["AllowedValues"]) == LOG_RETENTION_DAYS
    groups = [referenced_resource(props["LoggingConfig"]["LogGroup"]) for props in FUNCTIONS.values()]
    assert len(set(groups)) == len(FUNCTIONS)  # one each
    for group in groups:
        assert RESOURCES[group]["Type"] == "AWS::Logs::LogGroup"
        assert RESOURCES[group]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
        name = RESOURCES[group]["Properties"]["LogGroupName"]["Fn::Sub"]
        assert name.startswith("/aws/lambda/${AWS::StackName}/")
    every_group = {lid for lid, r in RESOURCES.items() if r["Type"] == "AWS::Logs::LogGroup"}
    for group in every_group:  # the access log's too: nothing is kept forever
        assert RESOURCES[group]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_the_partner_api_writes_a_json_access_log_without_headers_or_bodies():
    settings = RESOURCES["PartnerApi"]["Properties"]["AccessLogSettings"]
    assert RESOURCES[referenced_resource(settings["DestinationArn"])]["Type"] == "AWS::Logs::LogGroup"
    line = json.loads(settings["Format"])  # one JSON object per request
    assert {"requestId", "ip", "routeKey", "status", "latency", "integrationErrorMessage"} <= set(line)
    variables = " ".join(line.values())
    for secret_bearing in ("$context.authorizer", "header", "Authorization", "body", "querystring"):
        assert secret_bearing.lower() not in variables.lower()
    # What SAM gives the stage API Gateway runs.
    stage = transform_template(TEMPLATE)["Resources"]["PartnerApiApiGatewayDefaultStage"]["Properties"]
    assert stage["AccessLogSettings"]["DestinationArn"] == {"Fn::GetAtt": ["PartnerApiAccessLogs", "Arn"]}


@pytest.mark.parametrize(
    ("function", "parameter", "condition", "default"),
    [
        ("IngestApiFunction", "IngestReservedConcurrency", "HasIngestReservation", 100),
        ("AdminApiFunction", "AdminReservedConcurrency", "HasAdminReservation", 10),
    ],
)
def test_the_functions_outsiders_invoke_have_concurrency_reserved(function, parameter, condition, default):
    reserved = FUNCTIONS[function]["ReservedConcurrentExecutions"]
    assert reserved == {"Fn::If": [condition, {"Ref": parameter}, {"Ref": "AWS::NoValue"}]}
    assert PARAMETERS[parameter]["Default"] == default
    # 0 switches the reservation off; it never becomes ReservedConcurrentExecutions 0 (a disabled function).
    assert TEMPLATE_DOC["Conditions"][condition] == {"Fn::Not": [{"Fn::Equals": [{"Ref": parameter}, "0"]}]}


def test_only_the_partner_and_admin_apis_reserve_concurrency():
    """The queue consumers are bounded by MaximumConcurrency, the stream readers by the shards."""
    reserving = [f for f, p in FUNCTIONS.items() if "ReservedConcurrentExecutions" in p]
    assert reserving == ["IngestApiFunction", "AdminApiFunction"]


def test_every_sqs_event_source_has_a_maximum_concurrency():
    sources = list(events("SQS"))
    assert {function for function, _, _ in sources} == {"PipelineWorkerFunction", "WebhookSenderFunction"}
    for function, event_id, props in sources:
        maximum = props["ScalingConfig"]["MaximumConcurrency"]
        assert int(parameter_default(maximum)) >= 2, (function, event_id)  # AWS's minimum
        if isinstance(maximum, dict):
            assert PARAMETERS[maximum["Ref"]]["MinValue"] >= 2
            assert PARAMETERS[maximum["Ref"]]["MaxValue"] <= 1000


def test_every_queue_feeding_a_function_hides_a_batch_six_times_its_timeout():
    """AWS: visibility >= 6 x the function's timeout, so a batch is not redelivered while it runs
    or while Lambda retries a throttled invocation."""
    checked = []
    for function, _, props in events("SQS"):
        queue = referenced_resource(props["Queue"])
        visibility = int(RESOURCES[queue]["Properties"]["VisibilityTimeout"])
        assert visibility >= 6 * timeout_of(function), (queue, visibility, function)
        checked.append(queue)
    assert sorted(checked) == ["PipelineQueue", "WebhooksQueue"]


def test_every_function_has_an_errors_and_a_throttles_alarm():
    for function in FUNCTIONS:
        for metric in ("Errors", "Throttles"):
            watching = [
                a
                for a in ALARMS.values()
                if a.get("Namespace") == "AWS/Lambda"
                and a.get("MetricName") == metric
                and a["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function}}]
            ]
            assert len(watching) == 1, (function, metric)
            (alarm,) = watching
            assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == (
                "Sum",
                0,
                "GreaterThanThreshold",
            )


def test_every_stream_reader_has_an_iterator_age_alarm():
    readers = {function for function, _, _ in events("DynamoDB")}
    assert readers == {"AlertNotifierFunction", "OutboxPublisherFunction"}
    for function in readers:
        (alarm,) = [
            a
            for a in ALARMS.values()
            if a.get("MetricName") == "IteratorAge"
            and a["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function}}]
        ]
        assert alarm["Statistic"] == "Maximum"
        assert alarm["Threshold"] < 24 * 3600 * 1000  # milliseconds, well before the stream drops records


def test_the_api_table_and_certificate_alarms_watch_what_the_issue_names():
    api = ALARMS["PartnerApi5xxAlarm"]
    stats = {m["Id"]: m["MetricStat"]["Metric"] for m in api["Metrics"] if "MetricStat" in m}
    assert {(m["Namespace"], m["MetricName"]) for m in stats.values()} == {
        ("AWS/ApiGateway", "5xx"),
        ("AWS/ApiGateway", "Count"),
    }
    assert all(m["Dimensions"] == [{"Name": "ApiId", "Value": {"Ref": "PartnerApi"}}] for m in stats.values())
    [returned] = [m for m in api["Metrics"] if m.get("ReturnData")]
    assert "errors / requests" in returned["Expression"]

    table = ALARMS["HubTableThrottlesAlarm"]
    metrics = [m["MetricStat"]["Metric"] for m in table["Metrics"] if "MetricStat" in m]
    assert {m["MetricName"] for m in metrics} == {"ReadThrottleEvents", "WriteThrottleEvents"}
    dimensions = [d for m in metrics for d in m["Dimensions"]]
    indexes = {d["Value"] for d in dimensions if d["Name"] == "GlobalSecondaryIndexName"}
    declared = {i["IndexName"] for i in RESOURCES["HubTable"]["Properties"]["GlobalSecondaryIndexes"]}
    assert indexes == declared  # a new index comes with its throttles watched
    assert len(metrics) <= 10  # CloudWatch's most for an alarm on a metric math expression

    certificates = ALARMS["CertificateExpiryAlarm"]
    assert (certificates["MetricName"], certificates["Threshold"], certificates["ComparisonOperator"]) == (
        "CertificateMinDaysToExpiry",
        7,
        "LessThanOrEqualToThreshold",
    )


def test_every_alarm_notifies_the_alert_topic_and_treats_missing_data_as_fine():
    assert len(ALARMS) >= 2 * len(FUNCTIONS)
    for logical_id, alarm in ALARMS.items():
        assert alarm["AlarmActions"] == [{"Ref": "AlertTopic"}], logical_id
        assert alarm["TreatMissingData"] == "notBreaching", logical_id
        assert alarm["AlarmName"]["Fn::Sub"].startswith("${AWS::StackName}-"), logical_id
    names = [a["AlarmName"]["Fn::Sub"] for a in ALARMS.values()]
    assert len(set(names)) == len(names)


def test_the_table_refuses_deletion():
    table = RESOURCES["HubTable"]
    assert table["Properties"]["DeletionProtectionEnabled"] is True
    assert table["DeletionPolicy"] == "Retain"


def test_every_schedule_has_a_dead_letter_queue_the_scheduler_may_send_to():
    schedules = list(events("ScheduleV2"))
    assert schedules
    for function, event_id, props in schedules:
        dead_letters = {"Arn": {"Fn::GetAtt": ["SchedulesDLQ", "Arn"]}}
        assert props["DeadLetterConfig"] == dead_letters, (function, event_id)
        assert props["RetryPolicy"]["MaximumRetryAttempts"] >= 1
        # SAM would name it after its logical id: a second stack in the account could not deploy.
        assert props["Name"] == {"Fn::Sub": "${AWS::StackName}-cert-expiry"}, (function, event_id)
    # A daily run that fails after Lambda's own retries (asynchronous invocation) lands there too.
    on_failure = FUNCTIONS["CertExpiryFunction"]["EventInvokeConfig"]["DestinationConfig"]["OnFailure"]
    assert on_failure == {"Type": "SQS", "Destination": {"Fn::GetAtt": ["SchedulesDLQ", "Arn"]}}
    # The retries the code schedules run as RetrySchedulerRole: it may put them in the DLQ.
    policies = RESOURCES["RetrySchedulerRole"]["Properties"]["Policies"]
    statements = [s for p in policies for s in p["PolicyDocument"]["Statement"]]
    assert any(
        s["Action"] == "sqs:SendMessage" and {"Fn::GetAtt": ["SchedulesDLQ", "Arn"]} in s["Resource"]
        for s in statements
    )
    # Every function that creates retry schedules is told where their dead letters go.
    for function, props in FUNCTIONS.items():
        env = props.get("Environment", {}).get("Variables", {})
        if "HUB_SCHEDULER_ROLE_ARN" in env:
            assert env["HUB_SCHEDULES_DLQ_ARN"] == {"Fn::GetAtt": ["SchedulesDLQ", "Arn"]}, function


# --- on moto: the schedules themselves --------------------------------------------------------


def test_a_retry_schedule_dead_letters_to_the_schedules_dlq(stack):
    """Given the stack from template.yaml, when the worker's scheduler schedules a retry, then
    EventBridge Scheduler holds it with the DLQ and the retry policy."""
    dlq_arn = stack.env["HUB_SCHEDULES_DLQ_ARN"]
    sqs = boto3.client("sqs")
    dlq_url = sqs.get_queue_url(QueueName=dlq_arn.rsplit(":", 1)[-1])["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]
    assert attributes["QueueArn"] == dlq_arn
    due = datetime.now(UTC) + timedelta(minutes=5)

    wiring.retry_scheduler().send_at('{"step": "deliver"}', due, "retry-1")

    group = stack.env["HUB_SCHEDULE_GROUP"]
    schedule = boto3.client("scheduler").get_schedule(Name="retry-1", GroupName=group)
    assert schedule["Target"]["DeadLetterConfig"] == {"Arn": dlq_arn}
    assert schedule["Target"]["RetryPolicy"] == RETRY_POLICY
    assert schedule["Target"]["Arn"] == stack.env["HUB_PIPELINE_QUEUE_ARN"]


def test_the_daily_expiry_schedule_dead_letters_to_the_same_queue(stack):
    scheduler = boto3.client("scheduler")
    [summary] = [s for s in scheduler.list_schedules()["Schedules"] if s["Name"].endswith("-cert-expiry")]
    schedule = scheduler.get_schedule(Name=summary["Name"])
    assert schedule["Target"]["DeadLetterConfig"] == {"Arn": stack.env["HUB_SCHEDULES_DLQ_ARN"]}


def test_a_worker_without_the_schedules_dlq_refuses_to_start(stack, monkeypatch):
    """A retry that could fail silently is a deployment error, not a default."""
    monkeypatch.delenv("HUB_SCHEDULES_DLQ_ARN")
    settings.cache_clear()
    wiring.reset()
    with pytest.raises(ConfigurationError, match="HUB_SCHEDULES_DLQ_ARN"):
        wiring.retry_scheduler()


def test_the_retry_schedules_policy_is_within_eventbridge_schedulers_limits():
    # Scheduler accepts 0-185 retries and an event age of 60-86400 s; moto accepts anything.
    assert 0 <= RETRY_POLICY["MaximumRetryAttempts"] <= 185
    assert 60 <= RETRY_POLICY["MaximumEventAgeInSeconds"] <= 86400
