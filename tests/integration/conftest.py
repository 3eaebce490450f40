"""Integration tier: real handlers and adapters against moto's in-process AWS (`mock_aws`),
with every resource created from template.yaml."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from hub import wiring
from hub.adapters.aws import client, reset_clients
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.adapters.kms import KmsDataKeys
from hub.domain.tenancy import ApiKey, Integration, IntegrationMode, MessageTypeConfig, Tenant, hash_api_key
from hub.sealed_config import PURPOSES, Sealer
from tests.aws import LambdaContext, load_handler, mocked_aws, provision
from tests.destinations import HttpDestination
from tests.events import admin_event
from tests.pipeline import pump
from tests.pki import Pki, build_pki
from tests.soap_server import SoapServer

#: The bootstrap admin token these stacks are deployed with (its SHA-256 is the parameter).
ADMIN_TOKEN = "hub_admin_integration-test-token"


@dataclass
class Stack:
    table: str
    queue_url: str
    dlq_url: str
    env: dict[str, str]

    def scan(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": self.table}
        while True:
            page = boto3.client("dynamodb").scan(**kwargs)
            items += page["Items"]
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def message_items(self) -> list[dict[str, Any]]:
        return [i for i in self.scan() if i["PK"]["S"].startswith("MSG#") and i["SK"]["S"] == "STATUS"]

    def drain_queue(self) -> list[dict[str, Any]]:
        """Every step message waiting on the pipeline queue (bodies parsed)."""
        sqs = boto3.client("sqs")
        bodies: list[dict[str, Any]] = []
        while True:
            answer = sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
            )
            messages = answer.get("Messages", [])
            if not messages:
                return bodies
            for message in messages:
                bodies.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    with mocked_aws(monkeypatch):
        reset_clients()
        wiring.reset()
        provisioned = provision(
            parameter_overrides={"AdminTokenSha256": hashlib.sha256(ADMIN_TOKEN.encode()).hexdigest()}
        )
        # One process plays every function here: the union of their template environments.
        env = {
            **provisioned.environments["IngestApiFunction"],
            **provisioned.environments["PipelineWorkerFunction"],
            **provisioned.environments["AdminApiFunction"],
            **provisioned.environments["OutboxPublisherFunction"],
            **provisioned.environments["WebhookSenderFunction"],
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        yield Stack(
            table=provisioned.refs["HubTable"],
            queue_url=provisioned.refs["PipelineQueue"],
            dlq_url=provisioned.refs["PipelineDLQ"],
            env=env,
        )
        reset_clients()
        wiring.reset()


def opening_config(stack: Stack) -> DynamoConfigRepository:
    """The configuration as a function that opens every sealed secret would read it (ingest opens
    webhook secrets, the worker destination credentials): what the stored secrets are."""
    return DynamoConfigRepository(stack.table, opening_sealer(stack))


def opening_sealer(stack: Stack) -> Sealer:
    """A sealer opening every purpose under the stack's key."""
    return Sealer(KmsDataKeys(stack.env["HUB_CERTIFICATE_KEY_ID"]), PURPOSES)


@dataclass(frozen=True)
class Tenancy:
    key: str
    other_key: str
    limited_key: str
    revoked_key: str
    #: The tenant of `key`, `limited_key`, `revoked_key` and `integration_id` (t2: `other_*`).
    tenant_id: str = "t1"
    integration_id: str = "int_erp"
    other_integration_id: str = "int_other"
    second_integration_id: str = "int_erp_2"


@pytest.fixture
def tenancy(stack: Stack) -> Tenancy:
    """Tenant t1 with two integrations and keys (full, limited, revoked); tenant t2 with one."""
    config = DynamoConfigRepository(stack.table)
    t = Tenancy(
        key="hub_k1_full", other_key="hub_k2_other", limited_key="hub_k3_ltd", revoked_key="hub_k4_rev"
    )
    for tenant_id in ("t1", "t2"):
        config.put_tenant(Tenant(tenant_id=tenant_id, name=tenant_id.upper()))
    po = MessageTypeConfig(duplicate_key_fields=("po_number",))
    for integration_id, tenant_id in (
        (t.integration_id, "t1"),
        (t.second_integration_id, "t1"),
        (t.other_integration_id, "t2"),
    ):
        config.put_integration(
            Integration(
                integration_id=integration_id,
                tenant_id=tenant_id,
                name=integration_id,
                mode=IntegrationMode.ORCHESTRATION,
                message_types={"purchase_order": po},
            )
        )
    for key_id, raw, tenant_id, extra in (
        ("k1", t.key, "t1", {}),
        ("k2", t.other_key, "t2", {}),
        ("k3", t.limited_key, "t1", {"integration_ids": frozenset({t.second_integration_id})}),
        ("k4", t.revoked_key, "t1", {"active": False}),
    ):
        config.put_api_key(ApiKey(key_id=key_id, tenant_id=tenant_id, key_hash=hash_api_key(raw), **extra))
    return t


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


@pytest.fixture
def ingest_api(stack: Stack):
    """Calls the real IngestApiFunction handler with an HTTP API v2.0 event."""
    handler = load_handler("IngestApiFunction")

    def call(event: dict[str, Any]) -> HttpAnswer:
        answer = handler(event, LambdaContext())
        return HttpAnswer(answer["statusCode"], json.loads(answer["body"]), answer.get("headers", {}))

    return call


@pytest.fixture
def admin_api(stack: Stack):
    """Calls the real AdminApiFunction handler with a Function URL event (admin token unless
    `token=` says otherwise)."""
    handler = load_handler("AdminApiFunction")

    def call(method: str, path: str, *, token: str | None = ADMIN_TOKEN, **options: Any) -> HttpAnswer:
        answer = handler(admin_event(method, path, token=token, **options), LambdaContext())
        body = json.loads(answer["body"]) if answer.get("body") else {}  # a 204 has none
        return HttpAnswer(answer["statusCode"], body, answer.get("headers", {}))

    return call


@pytest.fixture
def destination() -> Iterator[HttpDestination]:
    """A real HTTP destination on 127.0.0.1 (scripted answers, recorded requests)."""
    with HttpDestination() as server:
        yield server


@pytest.fixture
def worker(stack: Stack):
    """Feeds the pipeline queue to the real PipelineWorkerFunction handler until it settles."""
    handler = load_handler("PipelineWorkerFunction")
    arn = stack.env["HUB_PIPELINE_QUEUE_ARN"]
    return lambda **kw: pump(stack.queue_url, arn, handler, **kw)


@pytest.fixture(scope="session")
def pki() -> Pki:
    """A test PKI built in code: CA, server and client certificates, PKCS#12 files."""
    return build_pki()


@pytest.fixture
def mtls_server(pki: Pki, tmp_path) -> Iterator[SoapServer]:
    """A SOAP 1.2 server over TLS that requires a client certificate from the test CA."""
    ca, cert, key = pki.write_server_files(tmp_path)
    with SoapServer(ca, cert, key) as running:
        yield running


@pytest.fixture
def resend_once() -> Iterator[Callable[..., list[dict[str, Any]]]]:
    """`resend_once(wanted, operation="UpdateItem")`: the first DynamoDB request of `operation`
    for which `wanted(body)` is sent twice, the second time after the first was applied - an
    answer lost to a read timeout, made real on moto through botocore's `needs-retry` event.
    Returns the list of the resent requests."""
    events = client("dynamodb").meta.events
    hooks: list[tuple[str, Callable[..., Any]]] = []

    def arm(wanted: Callable[[dict[str, Any]], bool], operation: str = "UpdateItem") -> list[dict[str, Any]]:
        resent: list[dict[str, Any]] = []

        def lose_the_answer(request_dict: dict[str, Any], attempts: int, **_: Any) -> int | None:
            body = json.loads(request_dict["body"])
            if resent or attempts > 1 or not wanted(body):
                return None
            resent.append(body)
            return 0  # retry now, as after a read timeout

        event = f"needs-retry.dynamodb.{operation}"
        events.register(event, lose_the_answer)
        hooks.append((event, lose_the_answer))
        return resent

    yield arm
    for event, hook in hooks:
        events.unregister(event, hook)
