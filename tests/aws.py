"""Shared test plumbing: the stack from template.yaml inside moto, and handlers loaded the way
the template names them. Tests never describe a table or queue by hand."""

from __future__ import annotations

import copy
import copyreg
import functools
import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import boto3
from moto import mock_aws
from moto.core.base_backend import BackendDict

from devstack.cfn import load_template
from devstack.functions import FunctionBuilder
from devstack.moto_fidelity import make_dynamodb_atomic
from devstack.provision import Provisioner
from devstack.stack import LOCAL_EGRESS_ALLOWED_CIDRS, LocalStack
from hub.adapters.aws import new_session
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


T = TypeVar("T")


class MotoBackends:
    """A copy of in-process moto's service backends (every account and region in use), taken
    with `take` and put back, as a fresh copy each time, with `restore` (under an active
    `mock_aws`, whose end resets them as usual)."""

    def __init__(self, backends: list[tuple[BackendDict[Any], str, str, Any]]) -> None:
        self._backends = backends

    @staticmethod
    def _memo(backends: list[tuple[BackendDict[Any], str, str, Any]]) -> dict[int, Any]:
        # The registries stay themselves: only the backends they hold are copied.
        return {id(registry): registry for registry, *_ in backends}

    @classmethod
    def take(cls) -> MotoBackends:
        with _copying_locks():
            found = [
                (registry, account, region, backend)
                for registry in list(_registries())
                for account, regions in registry.items()
                for region, backend in dict(regions).items()
            ]
            return cls(copy.deepcopy(found, cls._memo(found)))

    def restore(self) -> None:
        with _copying_locks():
            copied = copy.deepcopy(self._backends, self._memo(self._backends))
        for registry, account, region, backend in copied:
            dict.__setitem__(registry[account], region, backend)
            if registry not in _registries():
                _registries().append(registry)


def _registries() -> list[BackendDict[Any]]:
    """moto's list of the service registries in use (those its reset walks)."""
    registries: list[BackendDict[Any]] = getattr(BackendDict, "_instances")  # noqa: B009 - generic class attribute
    return registries


def _new_lock_of(make: Callable[[], Any]) -> Callable[[Any], tuple[Callable[[], Any], tuple[()]]]:
    return lambda _lock: (make, ())


@contextmanager
def _copying_locks() -> Iterator[None]:
    """Locks inside moto's backends (and conditions and events around them) are copied as new
    ones, unlocked and unset: a copy of a condition would keep the original lock's methods."""
    kinds: dict[type, Callable[[], Any]] = {
        type(threading.Lock()): threading.Lock,
        type(threading.RLock()): threading.RLock,
        threading.Condition: threading.Condition,
        threading.Event: threading.Event,
    }
    saved = {kind: copyreg.dispatch_table.get(kind) for kind in kinds}
    for kind, make in kinds.items():
        copyreg.dispatch_table[kind] = _new_lock_of(make)
    try:
        yield
    finally:
        for kind, before in saved.items():
            if before is None:
                copyreg.dispatch_table.pop(kind, None)
            else:
                copyreg.dispatch_table[kind] = before


@dataclass(frozen=True)
class TestStack:
    """What template.yaml became: resource refs and each function's resolved environment."""

    refs: dict[str, Any]
    environments: dict[str, dict[str, str]]


def provision(stack_name: str = "hub-test", parameter_overrides: dict[str, Any] | None = None) -> TestStack:
    """Creates every resource of template.yaml in the current (mocked) AWS, the way the local
    stack does, and resolves each function's Environment (Globals merged).

    In-process moto (no AWS_ENDPOINT_URL): the first provisioning of a stack in this process is
    kept as a copy of moto's backends, and later ones restore that copy (a few ms instead of the
    ~60 requests of provisioning). The copy is taken right after provisioning, so each test still
    starts from exactly what provisioning makes; the test's own writes go to its restored copy
    and end with its `mock_aws`."""
    make_dynamodb_atomic()
    in_process = not os.environ.get("AWS_ENDPOINT_URL")
    key = (stack_name, tuple(sorted((parameter_overrides or {}).items())))
    kept = _PROVISIONED.get(key) if in_process else None
    if kept is not None:
        stack, backends = kept
        backends.restore()
        return TestStack(dict(stack.refs), {fid: dict(env) for fid, env in stack.environments.items()})
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
    stack = TestStack(
        refs=dict(provisioned.refs),
        environments={fid: dict(spec.environment) for fid, spec in model.specs.items()},
    )
    if in_process:
        _PROVISIONED[key] = (stack, MotoBackends.take())
    return TestStack(dict(stack.refs), {fid: dict(env) for fid, env in stack.environments.items()})


def built_once(key: Hashable, build: Callable[[], T]) -> T:
    """What `build` returns, built in the current (mocked) AWS once per process and `key`: the
    first call builds it and keeps a copy of moto's backends as the build left them; later calls
    put that copy back and return the same value. For a module's world of many requests that
    every test starts from (its tokens, ids...): `build` must return plain data, and must
    start from the same state each time (a freshly restored stack)."""
    if key in _BUILT:
        value, backends = _BUILT[key]
        backends.restore()
        return cast(T, value)
    value = build()
    _BUILT[key] = (value, MotoBackends.take())
    return value


#: What `built_once` built, by key, with moto's backends as the build left them.
_BUILT: dict[Hashable, tuple[Any, MotoBackends]] = {}


#: Stacks provisioned in this process, by name and parameters, with moto's backends as
#: provisioning left them.
_PROVISIONED: dict[tuple[str, tuple[tuple[str, Any], ...]], tuple[TestStack, MotoBackends]] = {}


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
    resource = _functions()[logical_id]
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
    return list(_functions())


@functools.cache
def _functions() -> dict[str, dict[str, Any]]:
    """Each function's Properties in template.yaml, by logical id, read once per process (not to
    be changed): the integration tier loads a handler per test, and `load_template` gives each
    caller its own deep copy of the whole template."""
    resources = load_template(TEMPLATE)["Resources"]
    return {
        name: spec.get("Properties", {})
        for name, spec in resources.items()
        if spec.get("Type") == "AWS::Serverless::Function"
    }


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
        share_models_with_default_session()
        yield


def share_models_with_default_session() -> None:
    """Inside a mock: boto3's default session (moto's mock empties it, so each test's first
    ``boto3.client(...)`` built a new one) on the process's one reader of botocore's model files,
    and one such session per process and AWS settings (the ``AWS_*`` variables: credentials,
    region, endpoints), as a session keeps the credentials it resolved: a new botocore session
    registers its ~130 built-in handlers again (~5 ms). Tests register their own handlers on the
    clients they create, never on the default session. moto puts back the session it found when
    the mock stops."""
    settings = tuple(sorted((name, value) for name, value in os.environ.items() if name.startswith("AWS_")))
    if settings not in _DEFAULT_SESSIONS:
        _DEFAULT_SESSIONS[settings] = new_session()
    boto3.DEFAULT_SESSION = _DEFAULT_SESSIONS[settings]


#: boto3 default sessions by AWS settings (`share_models_with_default_session`).
_DEFAULT_SESSIONS: dict[tuple[tuple[str, str], ...], boto3.session.Session] = {}
