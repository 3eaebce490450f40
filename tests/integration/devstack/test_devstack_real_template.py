"""The project's own template.yaml provisions on the local stack as it is declared."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.cfn import load_template
from devstack.stack import LocalStack
from tests.aws import TEMPLATE, local_stack_on_free_ports

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with local_stack_on_free_ports(stack_name="hub-test") as running:
        yield running


def test_hub_table_has_its_index_stream_and_ttl(stack: LocalStack) -> None:
    dynamodb = stack.client("dynamodb")
    table = dynamodb.describe_table(TableName=stack.resources["HubTable"])["Table"]

    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert [k["AttributeName"] for k in table["KeySchema"]] == ["PK", "SK"]
    indexes = {gsi["IndexName"]: gsi for gsi in table["GlobalSecondaryIndexes"]}
    assert set(indexes) == {"GSI1", "GSI2", "GSI3"}
    gsi = indexes["GSI1"]
    assert [k["AttributeName"] for k in gsi["KeySchema"]] == ["GSI1PK", "GSI1SK"]
    assert gsi["Projection"]["ProjectionType"] == "INCLUDE"
    assert {"message_id", "pipeline_status", "updated_at"} <= set(gsi["Projection"]["NonKeyAttributes"])
    # Issue 13: every message by receipt, projecting only what never changes.
    received = indexes["GSI2"]
    assert [k["AttributeName"] for k in received["KeySchema"]] == ["GSI2PK", "received_at"]
    assert "pipeline_status" not in received["Projection"]["NonKeyAttributes"]
    # Issue 28 (search): a tenant's messages by external id or correlation id, keys only.
    lookup = indexes["GSI3"]
    assert [k["AttributeName"] for k in lookup["KeySchema"]] == ["GSI3PK", "received_at"]
    assert lookup["Projection"]["ProjectionType"] == "KEYS_ONLY"
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert stack.attributes[("HubTable", "StreamArn")] == table["LatestStreamArn"]
    ttl = dynamodb.describe_time_to_live(TableName=stack.resources["HubTable"])
    assert ttl["TimeToLiveDescription"] == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires_at"}


def test_pipeline_queue_redrives_to_its_dlq_after_ten_receives(stack: LocalStack) -> None:
    sqs = stack.client("sqs")
    attributes = sqs.get_queue_attributes(QueueUrl=stack.resources["PipelineQueue"], AttributeNames=["All"])[
        "Attributes"
    ]

    assert attributes["VisibilityTimeout"] == "1260"  # 6 x the worker's 210 s timeout (issue 14)
    assert attributes["MessageRetentionPeriod"] == "1209600"
    redrive = json.loads(attributes["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"] == stack.attributes[("PipelineDLQ", "Arn")]
    assert int(redrive["maxReceiveCount"]) == 10


def test_schedule_group_and_function_wiring_come_from_the_template(stack: LocalStack) -> None:
    groups = stack.client("scheduler").list_schedule_groups()["ScheduleGroups"]

    assert "integration-hub-dev" in {group["Name"] for group in groups}
    assert stack.resources["HubScheduleGroup"] == "integration-hub-dev"
    spec = stack.model.specs["IngestApiFunction"]
    assert spec.environment["HUB_TABLE_NAME"] == stack.resources["HubTable"]
    assert spec.environment["HUB_PIPELINE_QUEUE_URL"] == stack.resources["PipelineQueue"]
    assert spec.environment["HUB_MAX_BODY_BYTES"] == "262144"
    assert spec.timeout_seconds == 10
    assert spec.memory_mb == 512
    assert spec.layer_dirs[0] == str(ROOT / "layers" / "hub")
    assert {route.route_key for route in stack.model.routes} == {
        "POST /api/edi-hub/receive-message",
        "GET /api/edi-hub/messages/{message_id}",
        "POST /api/webhook/{tenant_id}/{integration_id}",
        "GET /api/openapi.json",
        "POST /api/edi-hub/status-callback/{message_id}",  # destinations' delivery-status callbacks
        "$default",  # every other request: the function answers 404 / 405 in the one shape
    }
    assert {route.function for route in stack.model.routes} == {"IngestApiFunction"}
    assert stack.outputs["HubTableName"] == stack.resources["HubTable"]


def test_every_function_gets_the_logging_environment_of_the_template_logging_config(
    stack: LocalStack,
) -> None:
    # Given the template's one description of logging (Globals LoggingConfig, LogLevel parameter)
    template = load_template(TEMPLATE)
    config = template["Globals"]["Function"]["LoggingConfig"]
    assert config["ApplicationLogLevel"] == {"Ref": "LogLevel"}
    level = template["Parameters"]["LogLevel"]["Default"]
    # Then each function runs with what Lambda sets from it, and no second level beside it
    for logical_id, spec in stack.model.specs.items():
        assert spec.environment["AWS_LAMBDA_LOG_FORMAT"] == config["LogFormat"] == "JSON", logical_id
        assert spec.environment["AWS_LAMBDA_LOG_LEVEL"] == level, logical_id
        assert "POWERTOOLS_LOG_LEVEL" not in spec.environment, logical_id


def test_parameter_overrides_are_validated() -> None:
    stack = local_stack_on_free_ports(parameter_overrides={"Stage": "qa"})

    with pytest.raises(ValueError, match="Stage"):
        stack.start()
    assert stack.aws_endpoint == ""  # rejected before moto or any server started


def test_no_implicit_api_when_every_http_api_event_names_its_api(stack: LocalStack) -> None:
    assert "ServerlessHttpApi" not in stack.resources
    assert {route.api_id for route in stack.model.routes} == {stack.resources["PartnerApi"]}


def test_the_alert_notifier_is_wired_to_the_stream_and_the_alert_topic(stack: LocalStack) -> None:
    (stream,) = [s for s in stack.model.stream_sources if s.function == "AlertNotifierFunction"]
    assert stream.stream_arn == stack.attributes[("HubTable", "StreamArn")]
    assert stream.on_failure_arn == stack.attributes[("AlertNotifierDLQ", "Arn")]
    assert (stream.batch_size, stream.maximum_retry_attempts, stream.report_batch_item_failures) == (
        100,
        10,
        True,
    )
    (pattern,) = stream.filter_patterns
    assert pattern["eventName"] == ["MODIFY"]
    assert pattern["dynamodb"]["NewImage"] == {"pipeline_status": {"S": ["dead_letter"]}}
    (sns,) = stack.model.sns_sources
    assert (sns.function, sns.topic_arn) == ("AlertNotifierFunction", stack.resources["AlertTopic"])
    subscriptions = stack.client("sns").list_subscriptions_by_topic(TopicArn=sns.topic_arn)["Subscriptions"]
    # The local SNS gateway only: no AlertEmail, so no email subscription.
    assert [s["Protocol"] for s in subscriptions] == ["http"]
    spec = stack.model.specs["AlertNotifierFunction"]
    assert spec.environment["HUB_SLACK_WEBHOOK_SECRET_ARN"] == ""
    assert spec.timeout_seconds == 60
    alarms = stack.client("cloudwatch").describe_alarms()["MetricAlarms"]
    names = {a["AlarmName"] for a in alarms}
    # Every alarm of the template, metric-math ones included (issue 14).
    declared = load_template(TEMPLATE)["Resources"].values()
    assert len(names) == sum(r["Type"] == "AWS::CloudWatch::Alarm" for r in declared)
    assert {
        "hub-test-pipeline-dlq-not-empty",
        "hub-test-pipeline-queue-stalled",
        "hub-test-messages-dead-lettered",
        "hub-test-alert-notifier-failed",
        "hub-test-outbox-publisher-failed",
        "hub-test-webhooks-dlq-not-empty",
        "hub-test-webhooks-queue-stalled",
        "hub-test-schedules-failed",
        "hub-test-partner-api-5xx",
        "hub-test-table-throttled",
        "hub-test-certificate-expiring",
        "hub-test-alert-notifier-stream-behind",
        "hub-test-ingest-api-errors",
        "hub-test-ingest-api-throttled",
    } <= names
    assert {tuple(a["AlarmActions"]) for a in alarms} == {(stack.resources["AlertTopic"],)}
    # Each alarm's Arn attribute (built from its name, not described) is the one CloudWatch gives.
    arns = {a["AlarmName"]: a["AlarmArn"] for a in alarms}
    provisioned = {
        stack.resources[logical_id]: arn
        for (logical_id, name), arn in stack.attributes.items()
        if name == "Arn"
    }
    assert {name: provisioned[name] for name in arns} == arns


def test_the_outbox_publisher_reads_the_stream_and_puts_on_the_stacks_bus(stack: LocalStack) -> None:
    (source,) = [s for s in stack.model.stream_sources if s.function == "OutboxPublisherFunction"]
    assert source.stream_arn == stack.attributes[("HubTable", "StreamArn")]
    assert source.on_failure_arn == stack.attributes[("OutboxPublisherDLQ", "Arn")]
    assert source.starting_position == "TRIM_HORIZON"
    assert (source.maximum_retry_attempts, source.report_batch_item_failures) == (10, True)
    statuses, event_items = source.filter_patterns
    assert statuses["dynamodb"]["Keys"] == {"SK": {"S": ["STATUS"]}}
    assert event_items["dynamodb"]["Keys"] == {"SK": {"S": ["EVENT"]}}
    bus = stack.resources["OutboxBus"]
    assert bus == "integration-hub-dev-events"
    assert bus in {b["Name"] for b in stack.client("events").list_event_buses()["EventBuses"]}
    env = stack.model.specs["OutboxPublisherFunction"].environment
    assert env["HUB_EVENT_BUS_NAME"] == bus
    assert env["HUB_BUS_EVENT_TYPES"].split(",") == [
        "message.error",
        "message.dead_lettered",
        "connection.*",
        "integration.*",
        "subscription.*",
    ]


def test_async_invocations_and_sqs_sources_follow_the_templates_limits(stack: LocalStack) -> None:
    notifier = stack.model.async_configs["AlertNotifierFunction"]
    assert (notifier.maximum_retry_attempts, notifier.on_failure_arn) == (
        2,
        stack.attributes[("AlertNotifierDLQ", "Arn")],
    )
    assert stack.model.sqs_sources
    for source in stack.model.sqs_sources:
        concurrency = stack.sqs_poller(source.function).concurrency
        limits = [
            stack.max_instances,
            source.maximum_concurrency,
            stack.model.reserved_concurrency.get(source.function),
        ]
        assert concurrency.cap == min(limit for limit in limits if limit is not None)
        assert concurrency.limit == min(5, concurrency.cap)  # Lambda starts SQS sources at 5
