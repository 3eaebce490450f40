"""Shared test plumbing: the stack from template.yaml inside moto, and handlers loaded the way
the template names them. Tests never describe a table or queue by hand."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from devstack.cfn import load_template
from devstack.functions import FunctionBuilder
from devstack.moto_fidelity import make_dynamodb_atomic
from devstack.provision import Provisioner
from devstack.stack import LOCAL_EGRESS_ALLOWED_CIDRS, LocalStack
from tests.openapi_contract import DOCUMENTED, conforming

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"
REGION = "us-east-1"

AWS_TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    # botocore + in-process moto: DynamoDB Streams needs this (see shared FACTS.md).
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_SERVICE_NAME": "integration-hub-test",
    "POWERTOOLS_METRICS_NAMESPACE": "IntegrationHubTest",
}


@dataclass(frozen=True)
class TestStack:
    """What template.yaml became: resource refs and each function's resolved environment."""

    refs: dict[str, Any]
    environments: dict[str, dict[str, str]]


def provision(stack_name: str = "hub-test", parameter_overrides: dict[str, Any] | None = None) -> TestStack:
    """Creates every resource of template.yaml in the current (mocked) AWS, the way the local
    stack does, and resolves each function's Environment (Globals merged)."""
    make_dynamodb_atomic()
    clients = {
        name: _provisioning_client(name)
        for name in ("dynamodb", "sqs", "scheduler", "sns", "cloudwatch", "kms", "secretsmanager", "events")
    }
    provisioner = Provisioner(
        load_template(TEMPLATE),
        stack_name=stack_name,
        region=REGION,
        # As the local stack does: its destinations listen on loopback (devstack.stack).
        parameter_overrides={"EgressAllowedCidrs": LOCAL_EGRESS_ALLOWED_CIDRS, **(parameter_overrides or {})},
        clients=clients,
    )
    provisioned = provisioner.provision()
    model = FunctionBuilder(provisioner, ROOT, function_urls={}).build()
    return TestStack(
        refs=dict(provisioned.refs),
        environments={fid: dict(spec.environment) for fid, spec in model.specs.items()},
    )


#: Provisioning clients, one per service and endpoint settings: creating a client takes ~50 ms
#: and the integration tier provisions a stack per test. moto's mock intercepts a client's
#: requests whenever a mock is active, whenever the client was created.
_CLIENTS: dict[tuple[str, str | None, str | None], Any] = {}


def _provisioning_client(name: str) -> Any:
    key = (name, os.environ.get("AWS_ENDPOINT_URL"), os.environ.get(f"AWS_ENDPOINT_URL_{name.upper()}"))
    if key not in _CLIENTS:
        _CLIENTS[key] = boto3.client(name, region_name=REGION)
    return _CLIENTS[key]


def load_handler(logical_id: str) -> Callable[[dict[str, Any], Any], Any]:
    """The handler the template names for `logical_id`, imported from its CodeUri (for the
    partner and admin APIs, checking each answer against their OpenAPI documents)."""
    resource = load_template(TEMPLATE)["Resources"][logical_id]["Properties"]
    module_name, _, function_name = resource["Handler"].rpartition(".")
    path = ROOT / resource["CodeUri"] / f"{module_name}.py"
    unique = f"_handler_{logical_id}"
    spec = importlib.util.spec_from_file_location(unique, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    spec.loader.exec_module(module)
    handler: Callable[[dict[str, Any], Any], Any] = getattr(module, function_name)
    if logical_id in DOCUMENTED:  # every answer must be one its OpenAPI document gives
        return conforming(logical_id, module, handler)
    return handler


class LambdaContext:
    """Just enough of the Lambda context for Powertools, and the time left, which runs down from
    `remaining_seconds` (by default the worker's Timeout, 210 s) as on Lambda."""

    function_name = "test-function"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:test-function"
    aws_request_id = "test-request"
    log_group_name = "/aws/lambda/test-function"
    log_stream_name = "test"

    def __init__(self, remaining_seconds: float = 210.0) -> None:
        self._deadline = time.monotonic() + remaining_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def function_names() -> list[str]:
    """The logical ids of the template's functions."""
    resources = load_template(TEMPLATE)["Resources"]
    return [name for name, spec in resources.items() if spec.get("Type") == "AWS::Serverless::Function"]


def local_stack_on_free_ports(**options: Any) -> LocalStack:
    """The project's template as a (not yet started) local stack on free ports, so parallel
    test workers never collide."""
    return LocalStack(
        template_path=TEMPLATE,
        project_root=ROOT,
        aws_port=0,
        api_port=0,
        url_port=0,
        echo_port=0,
        **options,
    )


def streamed_table(dynamodb: Any, name: str = "t") -> dict[str, Any]:
    """A bare table keyed by PK with a NEW_IMAGE stream (the stream sources' tests); returns its
    description (``LatestStreamArn``)."""
    description: dict[str, Any] = dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )["TableDescription"]
    return description


@contextmanager
def mocked_aws(monkeypatch: Any) -> Iterator[None]:
    """moto in this process (`mock_aws`) with the test credentials and region, and no endpoint
    left over that would send boto3 to a local stack."""
    for name, value in AWS_TEST_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield
