"""Creates the template's AWS resources on moto, in dependency order.

Supported: AWS::DynamoDB::Table (and AWS::Serverless::SimpleTable), AWS::SQS::Queue,
AWS::Scheduler::ScheduleGroup, AWS::Scheduler::Schedule, AWS::SNS::Topic, AWS::SNS::Subscription
AWS::CloudWatch::Alarm (stored: moto never evaluates an alarm, so none ever notifies),
AWS::KMS::Key, AWS::KMS::Alias, AWS::SecretsManager::Secret (a given SecretString) and
AWS::Events::EventBus (moto routes its rules' SQS targets).
Serverless functions, layers and HTTP APIs only get their Ref/GetAtt values here
(``devstack.functions`` runs them). Every other type is skipped, but Refs and GetAtts to it
resolve to placeholders so templates with IAM or KMS still load.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from devstack.cfn import ACCOUNT_ID, Resolver, TemplateError, referenced_names, to_string

logger = logging.getLogger(__name__)

FUNCTION = "AWS::Serverless::Function"
LAYER_TYPES = ("AWS::Serverless::LayerVersion", "AWS::Lambda::LayerVersion")
HTTP_API = "AWS::Serverless::HttpApi"
IMPLICIT_HTTP_API = "ServerlessHttpApi"
SCHEDULER_ROLE = f"arn:aws:iam::{ACCOUNT_ID}:role/devstack-scheduler"

# Types whose Ref is an ARN rather than a name (placeholders follow CloudFormation).
_ARN_REF_TYPES = {
    "AWS::SNS::Topic",
    "AWS::IAM::ManagedPolicy",
    "AWS::StepFunctions::StateMachine",
    "AWS::SecretsManager::Secret",
}
_QUEUE_ATTRIBUTES = (
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "SqsManagedSseEnabled",
    "RedrivePolicy",
    "RedriveAllowPolicy",
)
_SCHEDULE_FIELDS = (
    "Name",
    "GroupName",
    "Description",
    "ScheduleExpression",
    "ScheduleExpressionTimezone",
    "FlexibleTimeWindow",
    "Target",
    "State",
    "StartDate",
    "EndDate",
    "KmsKeyArn",
    "ActionAfterCompletion",
)


def api_id_for(stack_name: str, logical_id: str) -> str:
    """A stable 10-character id shaped like an API Gateway id."""
    return hashlib.sha1(f"{stack_name}/{logical_id}".encode()).hexdigest()[:10]  # noqa: S324


class _Placeholders(dict[Any, Any]):
    """Refs/attributes that fall back to placeholders for resources the stack ignores."""

    def __init__(self, owner: Provisioner, kind: str) -> None:
        super().__init__()
        self._owner = owner
        self._kind = kind

    def __missing__(self, key: Any) -> Any:
        logical_id = key if self._kind == "ref" else key[0]
        if not self._owner.is_placeholder(logical_id):
            raise KeyError(key)
        name = f"{self._owner.stack_name}-{logical_id}"
        resource_type = self._owner.ignored_types.get(logical_id, "AWS::Lambda::Unknown")
        arn = f"arn:aws:{resource_type.split('::')[1].lower()}:{self._owner.region}:{ACCOUNT_ID}:{name}"
        if self._kind == "ref":
            return arn if resource_type in _ARN_REF_TYPES else name
        attribute = key[1]
        return arn if attribute.endswith("Arn") else f"{name}-{attribute}"


@dataclass
class Provisioned:
    """The values a template's resources resolve to, once created."""

    refs: dict[str, Any] = field(default_factory=dict)
    attributes: dict[tuple[str, str], Any] = field(default_factory=dict)
    queue_urls_by_arn: dict[str, str] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)


def topological_order(resources: Mapping[str, Any], extra_deps: Mapping[str, set[str]]) -> list[str]:
    """Resource ids so that each comes after everything it references (template order
    otherwise). Raises TemplateError on a dependency cycle."""
    ids = list(resources)
    deps: dict[str, set[str]] = {}
    for logical_id, resource in resources.items():
        depends_on = resource.get("DependsOn", [])
        if isinstance(depends_on, str):
            depends_on = [depends_on]
        found = referenced_names(resource.get("Properties", {})) | set(depends_on)
        found |= extra_deps.get(logical_id, set())
        deps[logical_id] = {name for name in found if name in resources and name != logical_id}
    ordered: list[str] = []
    placed: set[str] = set()
    while len(ordered) < len(ids):
        ready = [i for i in ids if i not in placed and deps[i] <= placed]
        if not ready:
            cycle = sorted(i for i in ids if i not in placed)
            raise TemplateError(f"dependency cycle between {cycle}")
        ordered.extend(ready)
        placed.update(ready)
    return ordered


class Provisioner:
    """Walks the template and creates what it describes through the given boto3 clients."""

    def __init__(
        self,
        template: Mapping[str, Any],
        *,
        stack_name: str,
        region: str,
        parameter_overrides: Mapping[str, Any],
        clients: Mapping[str, Any],
        endpoints: Mapping[str, str] | None = None,
    ) -> None:
        self.template = template
        self.stack_name = stack_name
        self.region = region
        self.clients = clients
        self.endpoints = dict(endpoints or {})  # (logical id → URL) for APIs and function URLs
        self.resources: dict[str, Any] = dict(template.get("Resources") or {})
        self.result = Provisioned()
        self.result.refs = _Placeholders(self, "ref")
        self.result.attributes = _Placeholders(self, "attribute")
        self.parameters = resolve_parameters(template.get("Parameters") or {}, parameter_overrides)
        self.resolver = Resolver(
            region=region,
            stack_name=stack_name,
            parameters=self.parameters,
            refs=self.result.refs,
            attributes=self.result.attributes,
            mappings=template.get("Mappings") or {},
            conditions=template.get("Conditions") or {},
        )
        self.skipped: set[str] = set()
        self.ignored_types: dict[str, str] = {}
        self.check_rules()

    def check_rules(self) -> None:
        """The template's Rules, as CloudFormation checks them before creating anything: an
        assertion that does not hold (where its RuleCondition holds) is a TemplateError."""
        for name, rule in (self.template.get("Rules") or {}).items():
            condition = rule.get("RuleCondition")
            if condition is not None and not self.resolver.resolve(condition):
                continue
            for assertion in rule.get("Assertions") or []:
                if not self.resolver.resolve(assertion["Assert"]):
                    description = assertion.get("AssertDescription", "an assertion does not hold")
                    raise TemplateError(f"rule {name}: {description}")

    def is_placeholder(self, logical_id: str) -> bool:
        """Ignored template resources, and SAM's implicit ones (e.g. ``MyFunctionRole``)."""
        if logical_id in self.resources:
            return self.result.types.get(logical_id) == "ignored"
        return any(
            logical_id.startswith(function_id) and resource.get("Type") == FUNCTION
            for function_id, resource in self.resources.items()
        )

    def physical_name(self, logical_id: str, given: Any = None) -> str:
        return str(given) if given else f"{self.stack_name}-{logical_id}"

    def provision(self) -> Provisioned:
        """Create every supported resource; returns the Ref/GetAtt values of all of them."""
        globals_deps = referenced_names((self.template.get("Globals") or {}).get("Function", {}))
        extra = {
            logical_id: globals_deps
            for logical_id, resource in self.resources.items()
            if resource.get("Type") == FUNCTION
        }
        for logical_id in topological_order(self.resources, extra):
            resource = self.resources[logical_id]
            condition = resource.get("Condition")
            if condition and not self.resolver.condition(condition):
                self.skipped.add(logical_id)
                continue
            self._provision_one(logical_id, resource.get("Type", ""), resource)
        return self.result

    def _provision_one(self, logical_id: str, resource_type: str, resource: Any) -> None:
        self.result.types[logical_id] = resource_type
        if resource_type == FUNCTION:
            # Only names here: properties are resolved later, once everything exists.
            raw_name = (resource.get("Properties") or {}).get("FunctionName")
            name = self.physical_name(logical_id, self.resolver.resolve(raw_name))
            self.result.refs[logical_id] = name
            self.result.attributes[(logical_id, "Arn")] = function_arn(self.region, name)
            return
        handler = {
            "AWS::DynamoDB::Table": self._table,
            "AWS::Serverless::SimpleTable": self._simple_table,
            "AWS::SQS::Queue": self._queue,
            "AWS::Scheduler::ScheduleGroup": self._schedule_group,
            "AWS::Scheduler::Schedule": self._schedule,
            "AWS::SNS::Topic": self._topic,
            "AWS::SNS::Subscription": self._subscription,
            "AWS::CloudWatch::Alarm": self._alarm,
            "AWS::KMS::Key": self._kms_key,
            "AWS::KMS::Alias": self._kms_alias,
            "AWS::SecretsManager::Secret": self._secret,
            "AWS::Events::EventBus": self._event_bus,
            HTTP_API: self._http_api,
            LAYER_TYPES[0]: self._layer,
            LAYER_TYPES[1]: self._layer,
        }.get(resource_type)
        if handler is None:
            self.result.types[logical_id] = "ignored"
            self.ignored_types[logical_id] = resource_type
            logger.debug("%s (%s) is not provisioned locally", logical_id, resource_type)
            return
        handler(logical_id, self.resolver.resolve(resource.get("Properties") or {}))

    # --- resource types --------------------------------------------------------------------

    def _table(self, logical_id: str, props: dict[str, Any]) -> None:
        name = self.physical_name(logical_id, props.get("TableName"))
        billing = props.get("BillingMode", "PROVISIONED")
        request: dict[str, Any] = {
            "TableName": name,
            "AttributeDefinitions": props["AttributeDefinitions"],
            "KeySchema": props["KeySchema"],
            "BillingMode": billing,
        }
        throughput = props.get("ProvisionedThroughput") or {
            "ReadCapacityUnits": 5,
            "WriteCapacityUnits": 5,
        }
        if billing == "PROVISIONED":
            request["ProvisionedThroughput"] = _capacity(throughput)
        for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
            if props.get(key):
                indexes = []
                for index in props[key]:
                    shaped = {k: index[k] for k in ("IndexName", "KeySchema", "Projection")}
                    if billing == "PROVISIONED" and key == "GlobalSecondaryIndexes":
                        shaped["ProvisionedThroughput"] = _capacity(
                            index.get("ProvisionedThroughput") or throughput
                        )
                    indexes.append(shaped)
                request[key] = indexes
        stream = props.get("StreamSpecification")
        if stream:
            request["StreamSpecification"] = {
                "StreamEnabled": True,
                "StreamViewType": stream["StreamViewType"],
            }
        dynamodb = self.clients["dynamodb"]
        table = dynamodb.create_table(**request)["TableDescription"]
        ttl = props.get("TimeToLiveSpecification")
        if ttl and _truthy(ttl.get("Enabled")):
            dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]},
            )
        self.result.refs[logical_id] = name
        self.result.attributes[(logical_id, "Arn")] = table["TableArn"]
        if "LatestStreamArn" in table:
            self.result.attributes[(logical_id, "StreamArn")] = table["LatestStreamArn"]

    def _simple_table(self, logical_id: str, props: dict[str, Any]) -> None:
        key = props.get("PrimaryKey") or {"Name": "id", "Type": "String"}
        attribute_type = {"String": "S", "Number": "N", "Binary": "B"}[key.get("Type", "String")]
        self._table(
            logical_id,
            {
                "TableName": props.get("TableName"),
                "BillingMode": "PROVISIONED" if props.get("ProvisionedThroughput") else "PAY_PER_REQUEST",
                "ProvisionedThroughput": props.get("ProvisionedThroughput"),
                "AttributeDefinitions": [{"AttributeName": key["Name"], "AttributeType": attribute_type}],
                "KeySchema": [{"AttributeName": key["Name"], "KeyType": "HASH"}],
            },
        )

    def _queue(self, logical_id: str, props: dict[str, Any]) -> None:
        fifo = _truthy(props.get("FifoQueue"))
        name = self.physical_name(logical_id, props.get("QueueName"))
        if fifo and not name.endswith(".fifo"):
            name += ".fifo"
        attributes = {}
        for key in _QUEUE_ATTRIBUTES:
            if key in props:
                value = props[key]
                attributes[key] = json.dumps(value) if isinstance(value, dict) else to_string(value)
        sqs = self.clients["sqs"]
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.result.refs[logical_id] = url
        self.result.attributes.update(
            {
                (logical_id, "Arn"): arn,
                (logical_id, "QueueName"): name,
                (logical_id, "QueueUrl"): url,
            }
        )
        self.result.queue_urls_by_arn[arn] = url

    def _schedule_group(self, logical_id: str, props: dict[str, Any]) -> None:
        name = self.physical_name(logical_id, props.get("Name"))
        arn = self.clients["scheduler"].create_schedule_group(Name=name)["ScheduleGroupArn"]
        self.result.refs[logical_id] = name
        self.result.attributes[(logical_id, "Arn")] = arn

    def _schedule(self, logical_id: str, props: dict[str, Any]) -> None:
        name = self.create_schedule(logical_id, props)
        self.result.refs[logical_id] = name

    def create_schedule(self, logical_id: str, props: Mapping[str, Any]) -> str:
        """Create an EventBridge Scheduler schedule; returns its name."""
        request = {key: props[key] for key in _SCHEDULE_FIELDS if props.get(key) is not None}
        request["Name"] = self.physical_name(logical_id, props.get("Name"))[:64]
        request.setdefault("FlexibleTimeWindow", {"Mode": "OFF"})
        target = dict(request["Target"])
        target.setdefault("RoleArn", SCHEDULER_ROLE)
        request["Target"] = target
        arn = self.clients["scheduler"].create_schedule(**request)["ScheduleArn"]
        self.result.attributes[(logical_id, "Arn")] = arn
        return str(request["Name"])

    def _topic(self, logical_id: str, props: dict[str, Any]) -> None:
        name = self.physical_name(logical_id, props.get("TopicName"))
        attributes = {key: to_string(props[key]) for key in ("DisplayName", "FifoTopic") if key in props}
        arn = self.clients["sns"].create_topic(Name=name, Attributes=attributes)["TopicArn"]
        self.result.refs[logical_id] = arn
        self.result.attributes[(logical_id, "TopicArn")] = arn
        self.result.attributes[(logical_id, "TopicName")] = name

    def _event_bus(self, logical_id: str, props: dict[str, Any]) -> None:
        name = self.physical_name(logical_id, props.get("Name"))
        arn = self.clients["events"].create_event_bus(Name=name)["EventBusArn"]
        self.result.refs[logical_id] = name
        self.result.attributes[(logical_id, "Arn")] = arn
        self.result.attributes[(logical_id, "Name")] = name

    def _subscription(self, logical_id: str, props: dict[str, Any]) -> None:
        arn = self.clients["sns"].subscribe(
            TopicArn=props["TopicArn"],
            Protocol=props["Protocol"],
            Endpoint=to_string(props["Endpoint"]),
            ReturnSubscriptionArn=True,
        )["SubscriptionArn"]
        self.result.refs[logical_id] = arn
        self.result.attributes[(logical_id, "Arn")] = arn

    def _alarm(self, logical_id: str, props: dict[str, Any]) -> None:
        name = self.physical_name(logical_id, props.get("AlarmName"))
        request = {key: convert(props[key]) for key, convert in _ALARM_FIELDS.items() if key in props}
        self.clients["cloudwatch"].put_metric_alarm(AlarmName=name, **request)
        self.result.refs[logical_id] = name
        # An alarm's ARN is built from its name (as CloudWatch does; no DescribeAlarms per alarm).
        arn = f"arn:aws:cloudwatch:{self.region}:{ACCOUNT_ID}:alarm:{name}"
        self.result.attributes[(logical_id, "Arn")] = arn

    def _kms_key(self, logical_id: str, props: dict[str, Any]) -> None:
        request: dict[str, Any] = {
            key: props[key] for key in ("Description", "KeyUsage", "KeySpec") if key in props
        }
        if "KeyPolicy" in props:
            policy = props["KeyPolicy"]
            request["Policy"] = policy if isinstance(policy, str) else json.dumps(policy)
        kms = self.clients["kms"]
        metadata = kms.create_key(**request)["KeyMetadata"]
        if _truthy(props.get("EnableKeyRotation")):
            kms.enable_key_rotation(KeyId=metadata["KeyId"])
        self.result.refs[logical_id] = metadata["KeyId"]
        self.result.attributes[(logical_id, "Arn")] = metadata["Arn"]
        self.result.attributes[(logical_id, "KeyId")] = metadata["KeyId"]

    def _kms_alias(self, logical_id: str, props: dict[str, Any]) -> None:
        self.clients["kms"].create_alias(AliasName=props["AliasName"], TargetKeyId=props["TargetKeyId"])
        self.result.refs[logical_id] = props["AliasName"]

    def _secret(self, logical_id: str, props: dict[str, Any]) -> None:
        if "SecretString" not in props:
            raise TemplateError(f"{logical_id}: only secrets with a SecretString are provisioned locally")
        request: dict[str, Any] = {
            "Name": self.physical_name(logical_id, props.get("Name")),
            "SecretString": to_string(props["SecretString"]),
        }
        for key in ("Description", "KmsKeyId"):
            if key in props:
                request[key] = props[key]
        arn = self.clients["secretsmanager"].create_secret(**request)["ARN"]
        # CloudFormation: Ref and GetAtt Id of a secret are its ARN.
        self.result.refs[logical_id] = arn
        self.result.attributes[(logical_id, "Id")] = arn

    def _http_api(self, logical_id: str, props: dict[str, Any]) -> None:
        api_id = api_id_for(self.stack_name, logical_id)
        self.result.refs[logical_id] = api_id
        self.result.attributes[(logical_id, "ApiId")] = api_id
        self.result.attributes[(logical_id, "ApiEndpoint")] = self.endpoints.get(
            "HttpApi", f"https://{api_id}.execute-api.{self.region}.amazonaws.com"
        )

    def _layer(self, logical_id: str, props: dict[str, Any]) -> None:
        name = self.physical_name(logical_id, props.get("LayerName"))
        self.result.refs[logical_id] = f"arn:aws:lambda:{self.region}:{ACCOUNT_ID}:layer:{name}:1"


def function_arn(region: str, name: str) -> str:
    return f"arn:aws:lambda:{region}:{ACCOUNT_ID}:function:{name}"


def resolve_parameters(declared: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Template parameter values: overrides, else defaults; AllowedValues are enforced."""
    unknown = set(overrides) - set(declared)
    if unknown:
        raise TemplateError(f"unknown parameters: {sorted(unknown)}")
    values: dict[str, Any] = {}
    for name, spec in declared.items():
        if name in overrides:
            value: Any = to_string(overrides[name])
        elif "Default" in spec:
            value = to_string(spec["Default"])
        else:
            raise TemplateError(f"parameter {name} has no default and no override")
        allowed = spec.get("AllowedValues")
        if allowed and value not in [to_string(option) for option in allowed]:
            raise TemplateError(f"parameter {name}={value!r} not in {allowed}")
        if str(spec.get("Type", "")).startswith("List<") or spec.get("Type") == ("CommaDelimitedList"):
            value = [item.strip() for item in value.split(",")] if value else []
        values[name] = value
    return values


def _capacity(throughput: Mapping[str, Any]) -> dict[str, int]:
    return {
        "ReadCapacityUnits": int(throughput.get("ReadCapacityUnits", 5)),
        "WriteCapacityUnits": int(throughput.get("WriteCapacityUnits", 5)),
    }


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() == "true"


#: put_metric_alarm's fields, each with how a resolved template value becomes its API type.
_ALARM_FIELDS: dict[str, Callable[[Any], Any]] = {
    "AlarmDescription": str,
    "ActionsEnabled": _truthy,
    "AlarmActions": list,
    "OKActions": list,
    "InsufficientDataActions": list,
    "MetricName": str,
    "Namespace": str,
    "Statistic": str,
    "ExtendedStatistic": str,
    "Dimensions": list,
    "Period": int,
    "Unit": str,
    "EvaluationPeriods": int,
    "DatapointsToAlarm": int,
    "Threshold": float,
    "ComparisonOperator": str,
    "TreatMissingData": str,
    "EvaluateLowSampleCountPercentile": str,
    "Metrics": list,
    "ThresholdMetricId": str,
}
