"""``LocalStack``: the SAM template running locally on an embedded moto server.

One object owns everything: the moto server, the provisioned resources, one process pool
per function, the HTTP API and Function URL servers, the SQS and DynamoDB stream pollers,
the SNS gateway, the scheduler and the demo echo destination. Every port may be 0 (pick a free one); the
chosen ports are then readable from ``aws_endpoint``, ``api_url``, ``function_urls`` and
``echo_url``, so parallel test workers never collide.
"""

from __future__ import annotations

import logging
import threading
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from botocore.config import Config

from devstack.async_invoke import AsyncInvoker
from devstack.cfn import ACCOUNT_ID, UnresolvedReference, load_template
from devstack.destinations import Destinations
from devstack.echo import EchoServer
from devstack.emf import EmfPublisher
from devstack.functions import FunctionBuilder, FunctionModel, needs_implicit_http_api, url_function_ids
from devstack.http_gateway import Gateway, Route
from devstack.lambda_runtime import FunctionPool, InvocationError, InvocationResult, Trigger
from devstack.poller import Poller
from devstack.provision import IMPLICIT_HTTP_API, Provisioner, api_id_for, resolve_parameters
from devstack.request_counter import RequestCounter
from devstack.request_counter import install as install_request_counter
from devstack.scheduler import Scheduler
from devstack.sns_source import SnsGateway
from devstack.sqs_metrics import SqsMetricsPublisher
from devstack.sqs_source import STARTING_CONCURRENCY, SqsPoller, SqsSourceConfig
from devstack.stream_source import StreamPoller
from hub.adapters.aws import new_session

logger = logging.getLogger(__name__)

_live_stacks_lock = threading.Lock()
_live_stacks = 0  # moto keeps state per process: reset only when the last stack stops
#: The stacks started in this process and not yet stopped (see ``running_stacks``).
_running: list[LocalStack] = []


#: What the local stack (and the tests' stacks) set EgressAllowedCidrs to: loopback only.
LOCAL_EGRESS_ALLOWED_CIDRS = "127.0.0.0/8,::1/128"


class LocalStack:
    """The template's stack on moto, with its functions wired to their event sources."""

    def __init__(
        self,
        template_path: Path = Path("template.yaml"),
        project_root: Path = Path("."),
        *,
        aws_port: int = 5000,
        api_port: int = 3000,
        url_port: int = 3001,
        echo_port: int = 3100,
        stack_name: str = "hub-local",
        parameter_overrides: Mapping[str, Any] | None = None,
        region: str = "us-east-1",
        poll_interval: float = 0.2,
        host: str = "127.0.0.1",
        max_instances: int = STARTING_CONCURRENCY,
        scheduler_interval: float = 1.0,
        sqs_pollers_per_source: int = STARTING_CONCURRENCY,
        sqs_scale_interval: float = 0.5,
        async_retry_delays: tuple[float, ...] = (1.0, 2.0),
        env_overrides: Mapping[str, Mapping[str, str]] | None = None,
        count_aws_requests: bool = False,
        sqs_metrics_interval: float = 60.0,
        isolated_functions: bool = False,
        function_log: Path | None = None,
    ) -> None:
        #: Built mode: run `sam build`'s output (template_path = its template.yaml) with each
        #: instance seeing only its code, its layers and the standard library.
        self.isolated_functions = isolated_functions
        #: Where every function instance writes its stdout and stderr (its CloudWatch log stream:
        #: the handler's output, Powertools' JSON logs, EMF lines), appended; None: this
        #: process's own stdout and stderr.
        self.function_log = function_log
        self.project_root = Path(project_root).resolve()
        template = Path(template_path)
        self.template_path = template if template.is_absolute() else self.project_root / template
        self.stack_name = stack_name
        self.region = region
        self.host = host
        self.poll_interval = poll_interval
        self.scheduler_interval = scheduler_interval
        #: Instances per function at most (Lambda: the account's concurrency); a function's
        #: ReservedConcurrentExecutions lowers it.
        self.max_instances = max_instances
        #: Concurrent batches an SQS event source starts with (Lambda: 5), and how often it
        #: may add or drop one (Lambda: up to 300 a minute).
        self.sqs_pollers_per_source = sqs_pollers_per_source
        self.sqs_scale_interval = sqs_scale_interval
        #: Delays before the retries of a failed asynchronous invocation (AWS: ~1 and ~2 min).
        self.async_retry_delays = tuple(async_retry_delays)
        self._async: AsyncInvoker | None = None
        #: Destinations, subscribers and moto all listen on this machine: the local stack lets
        #: its functions reach loopback through the template's own EgressAllowedCidrs, so the
        #: egress policy is the real one (a caller may set the parameter, "" included).
        self.parameter_overrides = dict(parameter_overrides or {})
        self.env_overrides = {key: dict(value) for key, value in (env_overrides or {}).items()}
        self._ports = {"aws": aws_port, "api": api_port, "url": url_port, "echo": echo_port}
        self._moto: Any = None
        self._started = False
        self._pools: dict[str, FunctionPool] = {}
        self._gateways: list[Gateway] = []
        self._api: Gateway | None = None
        self._url_gateways: dict[str, Gateway] = {}
        self._pollers: list[Poller] = []
        #: CloudWatch's part, locally: functions' EMF lines become metrics, and every queue's
        #: AWS/SQS metrics are published each `sqs_metrics_interval` seconds (AWS: a minute).
        self.sqs_metrics_interval = sqs_metrics_interval
        self.emf: EmfPublisher | None = None
        self.sqs_metrics: SqsMetricsPublisher | None = None
        self.scheduler: Scheduler | None = None
        self.echo: EchoServer | None = None
        self._sns: SnsGateway | None = None
        self.model = FunctionModel()
        self.aws_endpoint = ""
        self.resources: dict[str, Any] = {}
        self.attributes: dict[tuple[str, str], Any] = {}
        self.outputs: dict[str, Any] = {}
        # Opt-in: every request moto receives, by operation (devstack/request_counter.py).
        self.count_aws_requests = count_aws_requests
        self.aws_requests: RequestCounter | None = None

    # --- public API --------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        return self._api.url if self._api else ""

    @property
    def function_urls(self) -> dict[str, str]:
        return {logical_id: gateway.url for logical_id, gateway in self._url_gateways.items()}

    @property
    def echo_url(self) -> str:
        return self.echo.url if self.echo else ""

    @property
    def env(self) -> dict[str, str]:
        """Environment a client in this process needs to talk to the embedded moto."""
        return {
            "AWS_ENDPOINT_URL": self.aws_endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        }

    def function_environment(self, logical_id: str) -> dict[str, str]:
        """The environment a function's instances run with: this stack's moto and the
        function's own variables from the template (after overrides)."""
        return {**self.env, "POWERTOOLS_TRACE_DISABLED": "true", **self.model.specs[logical_id].environment}

    def client(self, service: str) -> Any:
        """A boto3 client bound to the embedded moto (independent of os.environ)."""
        session = new_session(
            aws_access_key_id="testing",
            aws_secret_access_key="testing",  # noqa: S106 - moto
            region_name=self.region,
        )
        config = Config(
            retries={"max_attempts": 3, "mode": "standard"},
            account_id_endpoint_mode="disabled",
            max_pool_connections=20,
        )
        return session.client(service, endpoint_url=self.aws_endpoint, config=config)

    def sqs_poller(self, logical_id: str) -> SqsPoller:
        """The SQS event source of function ``logical_id`` (the first, when it has several)."""
        for poller in self._pollers:
            if isinstance(poller, SqsPoller) and poller.config.function == logical_id:
                return poller
        raise KeyError(f"no SQS event source for {logical_id!r}")

    def invoke(self, logical_id: str, event: Any) -> Any:
        """Invoke a function synchronously through its pool; raises InvocationError when
        the handler raised, timed out or failed to import."""
        result = self.invoke_result(logical_id, event)
        if not result.ok:
            raise InvocationError(result)
        return result.payload

    def invoke_result(self, logical_id: str, event: Any) -> InvocationResult:
        """Like ``invoke`` but returns the result object instead of raising."""
        pool = self._pools.get(logical_id)
        if pool is None:
            raise KeyError(f"no function {logical_id!r} in the stack")
        return pool.invoke(event, trigger="request")

    def invocations(self, trigger: Trigger | None = None) -> dict[str, int]:
        """Invocations finished so far per function, failed ones included: those of ``trigger``
        ("event": the stack's event sources; "request": HTTP and ``invoke``), or all."""
        return {logical_id: pool.invocations(trigger) for logical_id, pool in self._pools.items()}

    def activity(self, trigger: Trigger | None = "event") -> int:
        """How many times an invocation started or finished, over every function: by default
        those of the stack's own event sources (SQS, streams, SNS, schedules, asynchronous
        retries), which move while the stack works on its own and stand still when it is idle.
        A caller's requests (HTTP, ``invoke``: "request") are left out unless asked for (None:
        every invocation), so a test polling the API does not look like progress
        (tests/waiting.py)."""
        return sum(pool.started(trigger) + pool.invocations(trigger) for pool in self._pools.values())

    def busy(self, trigger: Trigger | None = "event") -> bool:
        """An invocation (by default an event source's) is under way now: waiting for an
        instance or running."""
        return any(pool.in_flight(trigger) for pool in self._pools.values())

    def crash(self, logical_id: str, *, busy: bool = True, every: bool = False) -> list[int]:
        """Crashes instances of function ``logical_id`` (see ``FunctionPool.crash``): busy ones
        by default, mid-invocation; one at random or ``every`` one. The pids killed."""
        pool = self._pools.get(logical_id)
        if pool is None:
            raise KeyError(f"no function {logical_id!r} in the stack")
        return pool.crash(busy=busy, every=every)

    def start(self) -> LocalStack:
        """Bring the whole stack up; on failure everything started so far is stopped."""
        if self._started:
            return self
        self._started = True
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        with _live_stacks_lock:
            _running.append(self)
        return self

    def stop(self) -> None:
        """Stop servers, pollers and function processes, and free every port. Idempotent."""
        global _live_stacks
        with _live_stacks_lock:
            if self in _running:
                _running.remove(self)
        for poller in self._pollers:
            poller.stop()
        if self._async is not None:
            self._async.stop()
            self._async = None
        if self.emf is not None:
            self.emf.stop()
            self.emf = None
        if self.scheduler is not None:
            self.scheduler.stop()
        for gateway in self._gateways:
            gateway.stop()
        self._gateways.clear()
        if self.echo is not None:
            self.echo.stop()
        if self._sns is not None:
            self._sns.stop()
            self._sns = None
        for pool in self._pools.values():
            pool.close()
        for poller in self._pollers:
            poller.join(timeout=5)
        self._pollers.clear()
        if self._moto is not None:
            with _live_stacks_lock:
                _live_stacks -= 1
                last = _live_stacks == 0
            if last:
                self._reset_moto()
            self._moto.stop()
            self._moto = None
        self._started = False

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # --- start-up ----------------------------------------------------------------------

    def _start(self) -> None:
        global _live_stacks
        template = load_template(self.template_path)
        if "EgressAllowedCidrs" in (template.get("Parameters") or {}):
            self.parameter_overrides.setdefault("EgressAllowedCidrs", LOCAL_EGRESS_ALLOWED_CIDRS)
        # Fail on bad parameters before anything is started.
        resolve_parameters(template.get("Parameters") or {}, self.parameter_overrides)
        self._start_moto()
        with _live_stacks_lock:
            if _live_stacks:
                logger.warning("another LocalStack runs in this process; moto state is shared")
            _live_stacks += 1
        clients = {
            name: self.client(name)
            for name in (
                "dynamodb",
                "dynamodbstreams",
                "sqs",
                "scheduler",
                "sns",
                "cloudwatch",
                "kms",
                "secretsmanager",
                "events",
            )
        }

        invoke = self._invoke_for_gateway
        self._api = Gateway(
            "HttpApi",
            self.host,
            self._ports["api"],
            [],
            invoke,
            account_id=ACCOUNT_ID,
            api_id=api_id_for(self.stack_name, IMPLICIT_HTTP_API),
        )
        self._gateways.append(self._api)
        for index, logical_id in enumerate(url_function_ids(template)):
            port = self._ports["url"] + index if self._ports["url"] else 0
            gateway = Gateway(
                f"url:{logical_id}",
                self.host,
                port,
                [],
                invoke,
                account_id=ACCOUNT_ID,
                api_id=api_id_for(self.stack_name, logical_id),
                function_url=True,
            )
            self._url_gateways[logical_id] = gateway
            self._gateways.append(gateway)
        self.echo = EchoServer(self.host, self._ports["echo"])

        provisioner = Provisioner(
            template,
            stack_name=self.stack_name,
            region=self.region,
            parameter_overrides=self.parameter_overrides,
            clients=clients,
            endpoints={"HttpApi": self.api_url},
        )
        provisioned = provisioner.provision()
        if needs_implicit_http_api(template):
            provisioned.refs.setdefault(IMPLICIT_HTTP_API, self._api.api_id)
            provisioned.attributes.setdefault((IMPLICIT_HTTP_API, "ApiEndpoint"), self.api_url)
        self.model = FunctionBuilder(
            provisioner,
            self.template_path.parent,
            function_urls=self.function_urls,
            env_overrides=self.env_overrides,
            isolated=self.isolated_functions,
        ).build()
        self.resources = dict(provisioned.refs)
        self.attributes = dict(provisioned.attributes)
        self.outputs = self._outputs(template, provisioner)

        runtime_env = self.env | {"POWERTOOLS_TRACE_DISABLED": "true"}  # see function_environment
        self.emf = EmfPublisher(clients["cloudwatch"])
        self.emf.start()
        self._pools = {
            logical_id: FunctionPool(
                spec,
                runtime_env,
                self._instance_cap(logical_id),
                on_emf=self.emf.submit,
                log_file=str(self.function_log) if self.function_log is not None else None,
            )
            for logical_id, spec in self.model.specs.items()
        }
        self._api.set_routes(self.model.routes)
        for logical_id, gateway in self._url_gateways.items():
            if logical_id in self._pools:
                gateway.set_routes([Route.create("ANY", "$default", logical_id)])
        self._start_sources(clients)
        for gateway in self._gateways:
            gateway.start()
        self.echo.start()

    def _start_moto(self) -> None:
        from moto.server import ThreadedMotoServer  # noqa: PLC0415 - heavy, only at start

        from devstack import stream_writes  # noqa: PLC0415
        from devstack.moto_fidelity import make_dynamodb_atomic  # noqa: PLC0415

        make_dynamodb_atomic()
        stream_writes.install()

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._moto = ThreadedMotoServer(ip_address=self.host, port=self._ports["aws"], verbose=False)
        self._moto.start()
        if self.count_aws_requests:
            self.aws_requests = install_request_counter(self._moto)
        host, port = self._moto.get_host_and_port()
        self.aws_endpoint = f"http://{host}:{port}"

    def _instance_cap(self, logical_id: str) -> int:
        """A function's local instance limit: the pool size, lowered by its reserved concurrency
        (0 reserved means throttled on AWS; locally one instance still runs)."""
        reserved = self.model.reserved_concurrency.get(logical_id)
        return max(1, min(self.max_instances, reserved)) if reserved is not None else self.max_instances

    def _check_visibility(self, sqs: Any, config: SqsSourceConfig) -> None:
        """AWS refuses an SQS event source whose queue's visibility timeout is shorter than the
        function's timeout (a batch still running would reach a second poller); locally: a warning."""
        attributes = sqs.get_queue_attributes(QueueUrl=config.queue_url, AttributeNames=["VisibilityTimeout"])
        visibility = float(attributes["Attributes"].get("VisibilityTimeout", 30))
        timeout = self.model.specs[config.function].timeout_seconds
        if visibility < timeout:
            logger.warning(
                "%s: queue visibility timeout %ss is less than the function timeout %ss (AWS refuses this)",
                config.function,
                f"{visibility:g}",
                f"{timeout:g}",
            )

    def _start_sources(self, clients: Mapping[str, Any]) -> None:
        destinations = Destinations(clients["sqs"], clients["sns"])
        self._async = AsyncInvoker(
            self._invoke_for_event,
            self.model.async_configs,
            {logical_id: spec.arn for logical_id, spec in self.model.specs.items()},
            destinations,
            retry_delays=self.async_retry_delays,
        )
        for sqs_config in self.model.sqs_sources:
            self._check_visibility(clients["sqs"], sqs_config)
            self._pollers.append(
                SqsPoller(
                    sqs_config,
                    clients["sqs"],
                    self._invoker(sqs_config.function),
                    self.region,
                    poll_interval=self.poll_interval,
                    starting_concurrency=self.sqs_pollers_per_source,
                    concurrency_cap=self._instance_cap(sqs_config.function),
                    scale_interval=self.sqs_scale_interval,
                )
            )
        for stream_config in self.model.stream_sources:
            self._pollers.append(
                StreamPoller(
                    stream_config,
                    clients["dynamodbstreams"],
                    self._invoker(stream_config.function),
                    self.region,
                    poll_interval=self.poll_interval,
                    destinations=destinations,
                    function_arn=self.model.specs[stream_config.function].arn,
                    writes_signalled=True,  # moto runs in this process (_start_moto)
                )
            )
        self.sqs_metrics = SqsMetricsPublisher(
            clients["cloudwatch"], ACCOUNT_ID, self.region, self.sqs_metrics_interval
        )
        self._pollers.append(self.sqs_metrics)
        for poller in self._pollers:
            poller.start()
        if self.model.sns_sources:
            self._sns = SnsGateway(self.host, self._invoke_async)
            for sns_config in self.model.sns_sources:
                self._sns.subscribe(clients["sns"], sns_config)
            self._sns.start()
        self.scheduler = Scheduler(
            clients["scheduler"],
            clients["sqs"],
            self._invoke_async,
            {spec.arn: logical_id for logical_id, spec in self.model.specs.items()},
            region=self.region,
            account_id=ACCOUNT_ID,
            poll_interval=self.scheduler_interval,
            rules=self.model.rules,
        )
        self.scheduler.start()

    def _outputs(self, template: Mapping[str, Any], provisioner: Provisioner) -> dict[str, Any]:
        outputs = {}
        for name, output in (template.get("Outputs") or {}).items():
            try:
                outputs[name] = provisioner.resolver.resolve(output.get("Value"))
            except UnresolvedReference as exc:
                logger.warning("output %s not resolved: %s", name, exc)
        return outputs

    # --- invocation plumbing -----------------------------------------------------------

    def _invoke_for_gateway(self, logical_id: str, event: dict[str, Any]) -> InvocationResult:
        return self._pools[logical_id].invoke(event, trigger="request")

    def _invoke_for_event(self, logical_id: str, event: dict[str, Any]) -> InvocationResult:
        return self._pools[logical_id].invoke(event, trigger="event")

    def _invoker(self, logical_id: str) -> Any:
        def invoke(event: dict[str, Any]) -> InvocationResult:
            return self._invoke_for_event(logical_id, event)

        return invoke

    def _invoke_async(self, logical_id: str, event: dict[str, Any]) -> None:
        """Lambda's asynchronous invocation (SNS, schedules): retries and destinations."""
        if self._async is not None:
            self._async.invoke(logical_id, event)

    def _reset_moto(self) -> None:
        url = f"{self.aws_endpoint}/moto-api/reset"
        request = urllib.request.Request(url, method="POST")  # noqa: S310 - always http://
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
        try:
            with opener.open(request, timeout=5):
                pass
        except OSError as exc:
            logger.warning("moto reset failed: %s", exc)


def running_stacks() -> list[LocalStack]:
    """The stacks started in this process and not stopped yet, oldest first: what a test's wait
    watches for progress (tests/waiting.py) without being handed its stack."""
    with _live_stacks_lock:
        return list(_running)
