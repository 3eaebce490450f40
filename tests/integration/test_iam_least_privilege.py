"""Least privilege, checked before a deploy: each function's role in the SAM-transformed
template grants every AWS action its code can call, and nothing else but the documented
implicit needs of its event sources. moto never enforces IAM, so a missing grant would otherwise
show only on AWS (as AccessDenied on the first call of that path).

The code side is tests.iam_scan (a static call graph of the handler over the `hub` package); a
dynamic check records every botocore call real handlers make on moto in a representative run
and requires it to be in the static set, so the scanner cannot silently miss a call path.
"""

from __future__ import annotations

import fnmatch
import inspect
import json
from functools import cache
from typing import Any

import boto3
import pytest

from devstack.cfn import load_template
from devstack.validate import transform_template
from hub import wiring
from hub.adapters import aws
from hub.adapters.aws import reset_clients
from hub.domain.retry import RetryPolicy
from tests.aws import REGION, TEMPLATE, LambdaContext, load_handler
from tests.destinations import Answer, HttpDestination
from tests.events import admin_event, http_event
from tests.iam_scan import (
    TRANSACTION_ENTRIES,
    Call,
    Grant,
    Usage,
    expand,
    function_usage,
    iam_action,
    program,
    role_grants,
)
from tests.integration.conftest import ADMIN_TOKEN
from tests.outbox import Outbox, StreamReader
from tests.pipeline import configure, fire_all, pump, send
from tests.pipeline import status as status_of

#: Managed policies SAM attaches, by what the function declares: CloudWatch Logs always
#: (AWSLambdaBasicExecutionRole), X-Ray with `Tracing: Active`, and the event source mapping's
#: own reads (Lambda polls with the function's role: sqs:ReceiveMessage/DeleteMessage/
#: GetQueueAttributes, dynamodb:GetRecords/GetShardIterator/DescribeStream/ListStreams).
BASIC = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
XRAY = "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess"
MANAGED_BY_EVENT_SOURCE = {
    "SQS": "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole",
    "DynamoDB": "arn:aws:iam::aws:policy/service-role/AWSLambdaDynamoDBExecutionRole",
}

#: IAM prefixes whose grants must name their resources: "*" only for the actions listed in
#: RESOURCE_STAR_ALLOWED (no resource-level permissions exist for them).
SCOPED_PREFIXES = frozenset({"dynamodb", "sqs", "kms", "secretsmanager", "scheduler", "events", "iam"})
RESOURCE_STAR_ALLOWED = frozenset({"cloudwatch:GetMetricData"})

#: Statements that must carry a `dynamodb:LeadingKeys` condition: the function writes only
#: items under these partition key prefixes.
LEADING_KEYS = {
    "AlertNotifierFunction": {"ALERT#*", "ALARM#*"},
    "CertExpiryFunction": {"CERTALERT#*", "EVENT#*"},
}


@cache
def template() -> dict[str, Any]:
    return load_template(TEMPLATE)


@cache
def transformed() -> dict[str, Any]:
    return transform_template(TEMPLATE)


def functions() -> list[str]:
    return [lid for lid, r in template()["Resources"].items() if r["Type"] == "AWS::Serverless::Function"]


@cache
def usage(function: str) -> Usage:
    properties = template()["Resources"][function]["Properties"]
    return function_usage(properties["CodeUri"], properties["Handler"])


def grants(function: str) -> list[Grant]:
    return role_grants(transformed(), f"{function}Role")


def implicit_actions(function: str) -> set[str]:
    """What Lambda itself does with the function's role, beyond the managed policies: it sends a
    failed stream batch's or async event's record to an SQS on-failure destination."""
    properties = template()["Resources"][function]["Properties"]
    destinations = [
        event["Properties"].get("DestinationConfig", {}).get("OnFailure", {})
        for event in properties.get("Events", {}).values()
    ]
    destinations.append(
        properties.get("EventInvokeConfig", {}).get("DestinationConfig", {}).get("OnFailure", {})
    )
    return {"sqs:SendMessage" for d in destinations if d.get("Type") == "SQS"}


def granted(function: str) -> set[str]:
    return {iam_action(a) for g in grants(function) for action in g.actions for a in expand(action)}


def where(function: str, action: str) -> str:
    found = usage(function)
    lines = []
    for call, sites in found.callers.items():
        if iam_action(call.action) == action or (
            call.operation == "TransactWriteItems" and action.startswith("dynamodb:")
        ):
            lines += [" -> ".join(found.chain(site)[-4:]) for site in sorted(sites)[:2]]
    return "; ".join(lines) or "(a dependent action)"


@pytest.mark.parametrize("function", functions())
def test_the_role_grants_every_action_the_code_calls(function):
    used = usage(function).actions()
    missing = used - granted(function)
    assert not missing, f"{function} calls {sorted(missing)} without a grant: " + " | ".join(
        f"{a}: {where(function, a)}" for a in sorted(missing)
    )


@pytest.mark.parametrize("function", functions())
def test_the_role_grants_nothing_the_code_does_not_call(function):
    excess = granted(function) - usage(function).actions() - implicit_actions(function)
    assert not excess, f"{function} is granted {sorted(excess)}, which its code never calls"


def test_the_scanner_sees_the_calls_each_function_is_known_for():
    """A floor under the scanner: a few calls each function's purpose implies."""
    expected = {
        "IngestApiFunction": {"dynamodb:PutItem", "sqs:SendMessage", "kms:Decrypt"},
        "PipelineWorkerFunction": {"dynamodb:UpdateItem", "scheduler:CreateSchedule", "iam:PassRole"},
        "AdminApiFunction": {"sqs:ReceiveMessage", "kms:GenerateDataKey", "cloudwatch:GetMetricData"},
        "AlertNotifierFunction": {"ses:SendEmail", "secretsmanager:GetSecretValue"},
        "CertExpiryFunction": {"dynamodb:Query", "dynamodb:PutItem"},
        "OutboxPublisherFunction": {"events:PutEvents", "sqs:SendMessage"},
        "WebhookSenderFunction": {"kms:Decrypt", "scheduler:CreateSchedule"},
    }
    assert set(expected) == set(functions())
    for function, actions in expected.items():
        assert actions <= usage(function).actions(), function
    # and what they must not do: the ingest API never schedules, the notifier reads no queue
    assert not any(a.startswith("scheduler:") for a in usage("IngestApiFunction").actions())
    assert not any(a.startswith("sqs:") for a in usage("AlertNotifierFunction").actions())


def test_clearing_a_factory_s_cache_does_not_count_as_calling_it():
    """Every handler registers hub.wiring.after_restore (SnapStart) when it imports its
    function's wiring module (the package loads first), and that clears every factory's cache
    (wiring.reset): that runs none of their code, so the ingest API still reaches no factory but
    its own."""
    ingest = usage("IngestApiFunction")
    assert {"hub.wiring.after_restore", "hub.wiring.registry.reset"} <= ingest.reachable
    assert "hub.wiring.alerts.alert_notifier" not in ingest.reachable
    assert not any(name.startswith("hub.wiring.admin.") for name in ingest.reachable)
    assert "hub.wiring.ingest.ingestor" in ingest.reachable


@pytest.mark.parametrize("function", functions())
def test_managed_policies_are_only_what_the_function_declares(function):
    properties = template()["Resources"][function]["Properties"]
    wanted = {BASIC, XRAY}
    wanted |= {
        MANAGED_BY_EVENT_SOURCE[e["Type"]]
        for e in properties.get("Events", {}).values()
        if e["Type"] in MANAGED_BY_EVENT_SOURCE
    }
    role = transformed()["Resources"][f"{function}Role"]["Properties"]
    assert set(role["ManagedPolicyArns"]) == wanted
    # Why XRAY is expected: SAM attaches it for any Tracing it cannot resolve (the parameter's
    # If), and it is what tracing needs when an operator turns it on.
    assert template()["Globals"]["Function"]["Tracing"] == {"Fn::If": ["HasTracing", "Active", "PassThrough"]}


def test_tracing_is_off_by_default_and_then_the_handlers_skip_the_x_ray_sdk():
    """X-Ray bills a trace per invocation (issue 29): off unless the operator deploys
    Tracing=Active, and with it off the handlers are told not to load the SDK."""
    loaded = template()
    assert loaded["Parameters"]["Tracing"]["Default"] == "Disabled"
    assert loaded["Conditions"]["HasTracing"] == {"Fn::Equals": [{"Ref": "Tracing"}, "Active"]}
    variables = loaded["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["POWERTOOLS_TRACE_DISABLED"] == {"Fn::If": ["HasTracing", "false", "true"]}


@pytest.mark.parametrize("function", functions())
def test_data_plane_grants_name_their_resources(function):
    for grant in grants(function):
        resources = grant.resource if isinstance(grant.resource, list) else [grant.resource]
        for action in grant.actions:
            if action in RESOURCE_STAR_ALLOWED:
                continue
            assert action.partition(":")[0] in SCOPED_PREFIXES | {"ses"}, (function, action)
            assert "*" not in resources, f"{function}: {action} on every resource ({grant.policy})"
            assert all(r is not None for r in resources), (function, action)


def _leading_keys(grant: Grant) -> set[str] | None:
    condition = grant.condition or {}
    for operator, tests in condition.items():
        if "dynamodb:LeadingKeys" in tests:
            assert operator == "ForAllValues:StringLike", operator  # every key of the request
            return set(tests["dynamodb:LeadingKeys"])
    return None


def _sample_partition_keys(usage_: Usage) -> dict[str, str]:
    """The partition key each reachable key builder of hub.adapters.dynamo.keys makes from
    sample arguments (only builders of table keys, PK)."""
    from hub.adapters.dynamo import keys  # noqa: PLC0415

    found = {}
    for qualname in usage_.reachable:
        module, _, name = qualname.rpartition(".")
        if module != "hub.adapters.dynamo.keys":
            continue
        builder = getattr(keys, name, None)
        if not inspect.isfunction(builder) or inspect.signature(builder).return_annotation != "Key":
            continue
        arguments = [
            1 if p.annotation in (int, "int") else "x" for p in inspect.signature(builder).parameters.values()
        ]
        built = builder(*arguments)
        if isinstance(built, dict) and "PK" in built:
            found[name] = built["PK"]
    return found


@pytest.mark.parametrize("function", sorted(LEADING_KEYS))
def test_item_writes_are_confined_to_the_function_s_own_partitions(function):
    """Every table-level item grant of these roles carries LeadingKeys, and every table key the
    function's code can build matches it (a key outside would be AccessDenied on AWS)."""
    item_grants = [
        g
        for g in grants(function)
        if any(a.startswith("dynamodb:") and a != "dynamodb:Query" for a in g.actions)
    ]
    assert item_grants
    for grant in item_grants:
        assert _leading_keys(grant) == LEADING_KEYS[function], (function, grant.actions)
    built = _sample_partition_keys(usage(function))
    assert built, f"{function} builds no table key?"
    outside = {
        name: pk
        for name, pk in built.items()
        if not any(fnmatch.fnmatchcase(pk, p) for p in LEADING_KEYS[function])
    }
    assert not outside, f"{function} builds keys outside its LeadingKeys: {outside}"
    # Query is granted only on GSI1 (no LeadingKeys there: the expiry partition, subscriptions)
    for grant in grants(function):
        if "dynamodb:Query" in grant.actions:
            assert json.dumps(grant.resource).endswith('/index/GSI1"}'), grant.resource


def test_alert_email_is_sent_only_from_the_configured_sender():
    """ses:SendEmail is conditioned on ses:FromAddress = AlertEmailFrom, which is exactly what the
    notifier passes as Source (HUB_ALERT_EMAIL_FROM -> SesEmailChannel(sender))."""
    (grant,) = [g for g in grants("AlertNotifierFunction") if "ses:SendEmail" in g.actions]
    assert grant.condition == {"StringEquals": {"ses:FromAddress": {"Ref": "AlertEmailFrom"}}}
    environment = template()["Resources"]["AlertNotifierFunction"]["Properties"]["Environment"]["Variables"]
    assert environment["HUB_ALERT_EMAIL_FROM"] == {"Ref": "AlertEmailFrom"}
    ses = program().definitions["hub.adapters.ses.SesEmailChannel.send"]
    assert "Source=self._sender" in ast_source(ses.node)
    wiring = program().definitions["hub.wiring.alerts.alert_notifier"]
    assert "SesEmailChannel(s.alert_email_from, s.alert_email_to)" in ast_source(wiring.node)


def ast_source(node: Any) -> str:
    import ast  # noqa: PLC0415

    return ast.unparse(node)


# --- the dynamic check: what real handlers call on moto is in the static set ---------------------


class CallRecorder:
    """Every botocore call the hub's clients make (a `before-parameter-build` handler on the hub's
    session: it sees the call's own parameters), under the function whose handler is running;
    IAM actions as tests.iam_scan spells them."""

    def __init__(self) -> None:
        self.function: str | None = None
        self.actions: dict[str, set[str]] = {}
        #: (function, dynamodb action, "HubTable" or "HubTable/index/<name>")
        self.table_uses: set[tuple[str, str, str]] = set()
        #: (function, kms action, the encryption context's keys and purpose)
        self.key_uses: set[tuple[str, str, frozenset[str], str | None]] = set()

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if self.function is None:
            return  # the test's own setup through hub code
        service = model.service_model.service_name
        if service == "dynamodb" and model.name == "TransactWriteItems":
            found = {TRANSACTION_ENTRIES[kind] for entry in params["TransactItems"] for kind in entry}
        else:
            found = {iam_action(Call(service, model.name).action)}
        self.actions.setdefault(self.function, set()).update(found)
        if service == "dynamodb":
            index = params.get("IndexName")
            target = f"HubTable/index/{index}" if index else "HubTable"
            self.table_uses.update((self.function, action, target) for action in found)
        if service == "kms":
            context = params.get("EncryptionContext", {})
            use = (self.function, f"kms:{model.name}", frozenset(context), context.get("purpose"))
            self.key_uses.add(use)

    def handler(self, function: str) -> Any:
        """The function's real handler, recorded as `function` while it runs."""
        real = load_handler(function)

        def run(event: dict[str, Any], context: Any) -> Any:
            self.function = function
            try:
                return real(event, context)
            finally:
                self.function = None

        return run


@pytest.fixture
def recorder(stack, monkeypatch) -> CallRecorder:
    # Every outbox event onto the bus, so the publisher's PutEvents runs too.
    monkeypatch.setenv("HUB_BUS_EVENT_TYPES", "*")
    wiring.reset()
    reset_clients()  # clients made from here on carry the handler
    found = CallRecorder()
    aws._session().events.register("before-parameter-build", found)
    return found


def _http(handler: Any, event: dict[str, Any]) -> tuple[int, Any]:
    answer = handler(event, LambdaContext())
    return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None


def test_every_call_real_handlers_make_is_one_the_scanner_found(stack, tenancy, destination, recorder):
    """A representative run of all seven functions on moto: a subscription, sent twice with one
    Idempotency-Key, and the operator's reads (admin), a message received (ingest), failed once
    and retried on the scheduler (worker), its events published (outbox) and delivered to the
    subscriber (webhook sender), an alarm (notifier) and the daily expiry check."""
    sqs = boto3.client("sqs", region_name=REGION)
    admin = recorder.handler("AdminApiFunction")
    with HttpDestination() as subscriber:
        subscribe = admin_event(
            "POST",
            "/api/admin/tenants/t1/subscriptions",
            token=ADMIN_TOKEN,
            body={"url": subscriber.url, "event_types": ["message.*"]},
            headers={"idempotency-key": "subscribe-1"},
        )
        status, body = _http(admin, subscribe)
        assert status == 201, body
        # A repeat opens the kept answer (sealed: it shows the signing secret once).
        assert _http(admin, subscribe) == (status, body)
        configure(stack, tenancy, destination, retry_policy=RetryPolicy(retry_auto_enabled=True, retry_max=2))
        destination.script(Answer(503, '{"error": "maintenance"}'), Answer(200))

        ingest = recorder.handler("IngestApiFunction")
        message_id = send(lambda event: _answer(ingest, event), tenancy, {"n": 1}, "order")
        read = http_event(
            "get_message.json",
            path_parameters={"message_id": message_id},
            headers={"authorization": f"Bearer {tenancy.key}"},
        )
        status, body = _http(ingest, read)
        assert status == 200, body

        worker = recorder.handler("PipelineWorkerFunction")
        pump(stack.queue_url, stack.env["HUB_PIPELINE_QUEUE_ARN"], worker)
        assert fire_all(stack) == 1
        pump(stack.queue_url, stack.env["HUB_PIPELINE_QUEUE_ARN"], worker)
        assert status_of(stack, message_id)["pipeline_status"] == "sent"

        outbox = Outbox(StreamReader(stack.table), handler=recorder.handler("OutboxPublisherFunction"))
        assert outbox.publish() == {"batchItemFailures": []}
        webhooks = stack.env["HUB_WEBHOOKS_QUEUE_URL"]
        sender = recorder.handler("WebhookSenderFunction")
        assert pump(webhooks, stack.env["HUB_WEBHOOKS_QUEUE_ARN"], sender) >= 1
        assert subscriber.requests, "the subscriber got no webhook"

    for method, path, query in (
        ("GET", "/api/admin/queue", {"tenant_id": "t1", "tab": "all"}),
        ("GET", "/api/admin/health", None),
        ("GET", f"/api/admin/messages/{message_id}", None),
    ):
        status, body = _http(admin, admin_event(method, path, token=ADMIN_TOKEN, query=query))
        assert status == 200, (path, body)
    sqs.send_message(QueueUrl=stack.dlq_url, MessageBody="{}")
    status, body = _http(admin, admin_event("POST", "/api/admin/dlq/pipeline/redrive", token=ADMIN_TOKEN))
    assert status == 200, body
    stack.drain_queue()

    notifier = recorder.handler("AlertNotifierFunction")
    notifier(_alarm_notification(), LambdaContext())
    recorder.handler("CertExpiryFunction")({}, LambdaContext())

    assert set(recorder.actions) == set(functions()), "a function made no AWS call"
    for function, seen in recorder.actions.items():
        unseen = seen - usage(function).actions()
        assert not unseen, f"{function} called {sorted(unseen)} at run time; the scanner missed them"
    # and the run did reach the paths that matter
    assert "scheduler:CreateSchedule" in recorder.actions["PipelineWorkerFunction"]
    assert "events:PutEvents" in recorder.actions["OutboxPublisherFunction"]
    assert "sqs:SendMessage" in recorder.actions["OutboxPublisherFunction"]  # SendMessageBatch
    assert "kms:Decrypt" in recorder.actions["WebhookSenderFunction"]
    assert {"kms:GenerateDataKey", "cloudwatch:GetMetricData", "sqs:ReceiveMessage", "sqs:DeleteMessage"} <= (
        recorder.actions["AdminApiFunction"]
    )
    assert "dynamodb:Query" in recorder.actions["CertExpiryFunction"]
    # every table call at run time is granted on its resource (the table, or the index queried)
    for function, action, target in recorder.table_uses:
        assert any(action in g.actions and _covers(g, target) for g in grants(function)), (
            f"{function}: {action} on {target} is not granted"
        )
    assert ("CertExpiryFunction", "dynamodb:Query", "HubTable/index/GSI1") in recorder.table_uses
    # every key use at run time is one a grant's encryption-context condition admits
    assert recorder.key_uses
    for function, action, context_keys, purpose in recorder.key_uses:
        assert any(_admits(g, action, context_keys, purpose) for g in grants(function)), (
            f"{function}: {action} with purpose {purpose!r} matches no grant's condition"
        )


def _table_resource(resource: Any) -> str:
    """A grant's resource on the hub table, symbolically: "HubTable", "HubTable/index/GSI1"."""
    if resource == {"Fn::GetAtt": ["HubTable", "Arn"]}:
        return "HubTable"
    if isinstance(resource, dict) and isinstance(resource.get("Fn::Sub"), str):
        return str(resource["Fn::Sub"]).replace("${HubTable.Arn}", "HubTable")
    if isinstance(resource, dict) and isinstance(resource.get("Fn::Sub"), list):  # SAM policy templates
        text, variables = resource["Fn::Sub"]
        if variables == {"tableName": {"Ref": "HubTable"}}:
            return "HubTable" + str(text).split(":table/${tableName}")[-1]
    return json.dumps(resource)


def _covers(grant: Grant, target: str) -> bool:
    resources = grant.resource if isinstance(grant.resource, list) else [grant.resource]
    return any(fnmatch.fnmatchcase(target, _table_resource(r)) for r in resources)


def _admits(grant: Grant, action: str, context_keys: frozenset[str], purpose: str | None) -> bool:
    if action not in grant.actions:
        return False
    if grant.condition == CERTIFICATE_CONTEXT:
        return purpose is None and "connection_id" in context_keys
    wanted = (grant.condition or {}).get("StringEquals", {}).get("kms:EncryptionContext:purpose")
    return purpose is not None and purpose in ([wanted] if isinstance(wanted, str) else wanted or [])


def _answer(handler: Any, event: dict[str, Any]) -> Any:
    from tests.integration.conftest import HttpAnswer  # noqa: PLC0415

    status, body = _http(handler, event)
    return HttpAnswer(status, body, {})


def _alarm_notification() -> dict[str, Any]:
    alarm = {
        "AlarmName": "hub-test-pipeline-dlq-not-empty",
        "NewStateValue": "ALARM",
        "NewStateReason": "Threshold Crossed",
        "StateChangeTime": "2024-05-01T13:05:22.150+0000",
        "OldStateValue": "OK",
    }
    topic = f"arn:aws:sns:{REGION}:123456789012:alerts"
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": f"{topic}:sub",
                "Sns": {
                    "Type": "Notification",
                    "MessageId": "sns-1",
                    "TopicArn": topic,
                    "Subject": "ALARM",
                    "Message": json.dumps(alarm),
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


#: The one KMS grant not conditioned on a purpose: client certificates are sealed under
#: {tenant_id, connection_id} with no purpose (hub.certificates), which this condition matches.
CERTIFICATE_CONTEXT = {
    "Null": {"kms:EncryptionContext:purpose": "true", "kms:EncryptionContext:connection_id": "false"}
}


@pytest.mark.parametrize("function", functions())
def test_key_grants_are_bound_to_purposes_the_function_s_code_uses(function):
    """Every kms grant names an encryption-context purpose of hub.sealed_config that the
    function's own code reaches (a typo or a stale purpose would be AccessDenied on AWS), or is
    the client-certificate context."""
    from hub import sealed_config  # noqa: PLC0415

    constants = {
        name: getattr(sealed_config, name)
        for name in ("WEBHOOK_SECRET", "DESTINATION_CREDENTIAL", "SUBSCRIPTION_SECRET", "ADMIN_ANSWER")
    }
    assert set(constants.values()) == set(sealed_config.PURPOSES)
    reachable = {
        value for name, value in constants.items() if f"hub.sealed_config.{name}" in usage(function).reachable
    }
    for grant in grants(function):
        if not any(a.startswith("kms:") for a in grant.actions):
            continue
        if grant.condition == CERTIFICATE_CONTEXT:
            continue
        purposes = grant.condition["StringEquals"]["kms:EncryptionContext:purpose"]
        purposes = {purposes} if isinstance(purposes, str) else set(purposes)
        assert purposes <= reachable, (
            f"{function}: {sorted(grant.actions)} for {sorted(purposes - reachable)}"
        )
