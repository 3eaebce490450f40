"""SAM functions: Globals merging, runtime specs and their event source configurations."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from devstack.async_invoke import AsyncInvokeConfig
from devstack.cfn import ACCOUNT_ID, TemplateError, to_string
from devstack.event_filter import parse_patterns
from devstack.http_gateway import Route
from devstack.lambda_runtime import FunctionSpec
from devstack.provision import FUNCTION, IMPLICIT_HTTP_API, LAYER_TYPES, Provisioner, api_id_for
from devstack.scheduler import ScheduleDefinition, rule_definition
from devstack.sns_source import SnsSourceConfig
from devstack.sqs_source import SqsSourceConfig
from devstack.stream_source import StreamSourceConfig

logger = logging.getLogger(__name__)

_IGNORED_EVENTS_LOGGED: set[str] = set()


@dataclass
class FunctionModel:
    """Every runnable function of the template and what triggers it."""

    specs: dict[str, FunctionSpec] = field(default_factory=dict)
    routes: list[Route] = field(default_factory=list)
    sqs_sources: list[SqsSourceConfig] = field(default_factory=list)
    stream_sources: list[StreamSourceConfig] = field(default_factory=list)
    sns_sources: list[SnsSourceConfig] = field(default_factory=list)
    rules: list[ScheduleDefinition] = field(default_factory=list)
    #: Each function's EventInvokeConfig (asynchronous invocations: retries, destinations).
    async_configs: dict[str, AsyncInvokeConfig] = field(default_factory=dict)
    #: ReservedConcurrentExecutions, for the functions that set it.
    reserved_concurrency: dict[str, int] = field(default_factory=dict)


def url_function_ids(template: Mapping[str, Any]) -> list[str]:
    """Logical ids of functions with a FunctionUrlConfig, sorted (their port order)."""
    return sorted(
        logical_id
        for logical_id, resource in (template.get("Resources") or {}).items()
        if resource.get("Type") == FUNCTION and (resource.get("Properties") or {}).get("FunctionUrlConfig")
    )


def needs_implicit_http_api(template: Mapping[str, Any]) -> bool:
    """SAM's rule: ``ServerlessHttpApi`` exists only when some HttpApi event names no ApiId."""
    return any(
        event.get("Type") == "HttpApi" and not (event.get("Properties") or {}).get("ApiId")
        for resource in (template.get("Resources") or {}).values()
        if resource.get("Type") == FUNCTION
        for event in ((resource.get("Properties") or {}).get("Events") or {}).values()
    )


def _is_intrinsic(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and len(value) == 1
        and ("Ref" in value or next(iter(value)).startswith("Fn::"))
    )


def merge_globals(global_props: Mapping[str, Any], props: Mapping[str, Any]) -> dict[str, Any]:
    """SAM Globals semantics: maps merge (function wins), lists add (globals first),
    scalars and intrinsic functions are overridden by the function's value."""
    merged = copy.deepcopy(dict(global_props))
    for key, value in props.items():
        current = merged.get(key)
        if (
            isinstance(current, dict)
            and isinstance(value, dict)
            and not (_is_intrinsic(current) or _is_intrinsic(value))
        ):
            merged[key] = merge_globals(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            merged[key] = current + value
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def logging_environment(logging_config: Mapping[str, Any]) -> dict[str, str]:
    """What Lambda sets from a function's (resolved) LoggingConfig: AWS_LAMBDA_LOG_FORMAT, its
    LogFormat; with the JSON format, AWS_LAMBDA_LOG_LEVEL, its ApplicationLogLevel (Powertools'
    Logger takes its level from it). Reserved names: they win over the template's Environment.
    Lambda's own filtering (system lines, application lines below the level) is not emulated:
    the local stack writes no platform lines, and the hub's loggers emit nothing below it."""
    environment: dict[str, str] = {}
    log_format = logging_config.get("LogFormat")
    if log_format is not None:
        environment["AWS_LAMBDA_LOG_FORMAT"] = to_string(log_format)
    level = logging_config.get("ApplicationLogLevel")
    if level is not None and str(log_format).upper() == "JSON":
        environment["AWS_LAMBDA_LOG_LEVEL"] = to_string(level)
    return environment


class FunctionBuilder:
    """Resolves each function against provisioned values (run after ``Provisioner``)."""

    def __init__(
        self,
        provisioner: Provisioner,
        template_dir: Path,
        *,
        function_urls: Mapping[str, str],
        env_overrides: Mapping[str, Mapping[str, str]] | None = None,
        isolated: bool = False,
    ) -> None:
        self.provisioner = provisioner
        self.template_dir = template_dir
        self.isolated = isolated
        self.function_urls = function_urls
        self.env_overrides = env_overrides or {}
        self.model = FunctionModel()
        self._created = datetime.now(UTC)

    def build(self) -> FunctionModel:
        template = self.provisioner.template
        global_props = (template.get("Globals") or {}).get("Function") or {}
        for logical_id, resource in self.provisioner.resources.items():
            if resource.get("Type") != FUNCTION or logical_id in self.provisioner.skipped:
                continue
            props = merge_globals(global_props, resource.get("Properties") or {})
            events = props.pop("Events", None) or {}
            resolved = self.provisioner.resolver.resolve(props)
            spec = self._spec(logical_id, resolved)
            if spec is None:
                continue
            self.model.specs[logical_id] = spec
            invoke_config = AsyncInvokeConfig.from_properties(resolved.get("EventInvokeConfig"))
            self.model.async_configs[logical_id] = invoke_config
            if resolved.get("ReservedConcurrentExecutions") is not None:
                self.model.reserved_concurrency[logical_id] = int(resolved["ReservedConcurrentExecutions"])
            for event_id, event in events.items():
                self._event(spec, event_id, event)
            if logical_id in self.function_urls:
                url = self.function_urls[logical_id]
                self.provisioner.result.attributes[(f"{logical_id}Url", "FunctionUrl")] = url + "/"
        return self.model

    def _spec(self, logical_id: str, props: Mapping[str, Any]) -> FunctionSpec | None:
        if props.get("PackageType") == "Image" or "InlineCode" in props:
            logger.warning("%s: image and inline functions are not run locally", logical_id)
            return None
        code_uri = props.get("CodeUri")
        if not isinstance(code_uri, str):
            raise TemplateError(f"{logical_id}: CodeUri must be a local folder")
        runtime = str(props.get("Runtime", "python"))
        if not runtime.startswith("python"):
            logger.warning("%s: runtime %s is not run locally", logical_id, runtime)
            return None
        name = self.provisioner.result.refs[logical_id]
        environment = {
            key: to_string(value)
            for key, value in ((props.get("Environment") or {}).get("Variables") or {}).items()
        }
        environment.update(logging_environment(props.get("LoggingConfig") or {}))
        environment.update(self.env_overrides.get("*", {}))
        environment.update(self.env_overrides.get(logical_id, {}))
        return FunctionSpec(
            logical_id=logical_id,
            name=name,
            arn=self.provisioner.result.attributes[(logical_id, "Arn")],
            code_dir=str((self.template_dir / code_uri).resolve()),
            handler=str(props["Handler"]),
            layer_dirs=tuple(self._layer_dirs(logical_id, props.get("Layers") or [])),
            environment=environment,
            timeout_seconds=float(props.get("Timeout", 3)),
            memory_mb=int(props.get("MemorySize", 128)),
            function_url=props.get("FunctionUrlConfig"),
            isolated=self.isolated,
        )

    def _layer_dirs(self, logical_id: str, layers: list[Any]) -> list[str]:
        by_arn = {
            self.provisioner.result.refs[layer_id]: resource
            for layer_id, resource in self.provisioner.resources.items()
            if resource.get("Type") in LAYER_TYPES and layer_id not in self.provisioner.skipped
        }
        folders = []
        for arn in layers:
            resource = by_arn.get(arn)
            content = (resource or {}).get("Properties", {}).get("ContentUri")
            if resource is None or not isinstance(content, str):
                logger.warning("%s: layer %s is not a local layer; skipped", logical_id, arn)
                continue
            root = (self.template_dir / content).resolve()
            folders.append(str(root))
            if (root / "python").is_dir():  # the /opt/python convention of built layers
                folders.append(str(root / "python"))
        return folders

    # --- events ------------------------------------------------------------------------

    def _event(self, spec: FunctionSpec, event_id: str, event: Mapping[str, Any]) -> None:
        event_type = event.get("Type", "")
        props = self.provisioner.resolver.resolve(event.get("Properties") or {})
        if event_type == "HttpApi":
            api_id = props.get("ApiId") or api_id_for(self.provisioner.stack_name, IMPLICIT_HTTP_API)
            self.model.routes.append(
                Route.create(
                    str(props.get("Method", "ANY")),
                    str(props.get("Path", "$default")),
                    spec.logical_id,
                    str(api_id),
                )
            )
        elif event_type == "SQS":
            self.model.sqs_sources.append(self._sqs(spec, props))
        elif event_type == "DynamoDB":
            self.model.stream_sources.append(
                StreamSourceConfig(
                    function=spec.logical_id,
                    stream_arn=str(props["Stream"]),
                    starting_position=str(props.get("StartingPosition", "LATEST")),
                    batch_size=int(props.get("BatchSize", 100)),
                    report_batch_item_failures=_reports_failures(props),
                    maximum_retry_attempts=_retry_attempts(props.get("MaximumRetryAttempts")),
                    enabled=props.get("Enabled", True) is not False,
                    filter_patterns=tuple(parse_patterns(props.get("FilterCriteria"))),
                    on_failure_arn=_on_failure(props),
                    batching_window_seconds=float(props.get("MaximumBatchingWindowInSeconds", 0)),
                    bisect_on_error=props.get("BisectBatchOnFunctionError") is True,
                )
            )
        elif event_type == "SNS":
            self.model.sns_sources.append(
                SnsSourceConfig(
                    function=spec.logical_id,
                    topic_arn=str(props["Topic"]),
                    filter_policy=props.get("FilterPolicy"),
                    filter_policy_scope=props.get("FilterPolicyScope"),
                )
            )
        elif event_type == "ScheduleV2":
            self._schedule_v2(spec, event_id, props)
        elif event_type == "Schedule":
            name = self.provisioner.physical_name(f"{spec.logical_id}{event_id}", props.get("Name"))
            input_value = props.get("Input")
            self.model.rules.append(
                rule_definition(
                    name=name,
                    arn=f"arn:aws:events:{self.provisioner.region}:{ACCOUNT_ID}:rule/{name}",
                    expression=str(props["Schedule"]),
                    target_arn=spec.arn,
                    created=self._created,
                    input_json=input_value
                    if isinstance(input_value, str) or input_value is None
                    else json.dumps(input_value),
                    enabled=props.get("Enabled", True) is not False
                    and props.get("State", "ENABLED") == "ENABLED",
                )
            )
        elif event_type not in _IGNORED_EVENTS_LOGGED:
            _IGNORED_EVENTS_LOGGED.add(event_type)
            logger.warning("event type %s is not run locally (%s.%s)", event_type, spec.logical_id, event_id)

    def _sqs(self, spec: FunctionSpec, props: Mapping[str, Any]) -> SqsSourceConfig:
        queue_arn = str(props["Queue"])
        queue_url = self.provisioner.result.queue_urls_by_arn.get(queue_arn)
        if queue_url is None:
            queue_url = self.provisioner.clients["sqs"].get_queue_url(QueueName=queue_arn.rsplit(":", 1)[-1])[
                "QueueUrl"
            ]
        return SqsSourceConfig(
            function=spec.logical_id,
            queue_arn=queue_arn,
            queue_url=queue_url,
            batch_size=int(props.get("BatchSize", 10)),
            batching_window_seconds=float(props.get("MaximumBatchingWindowInSeconds", 0)),
            report_batch_item_failures=_reports_failures(props),
            enabled=props.get("Enabled", True) is not False,
            filter_patterns=tuple(parse_patterns(props.get("FilterCriteria"))),
            maximum_concurrency=_maximum_concurrency(props),
        )

    def _schedule_v2(self, spec: FunctionSpec, event_id: str, props: Mapping[str, Any]) -> None:
        # The event's target fields sit beside the schedule's; create_schedule keeps only
        # the schedule's own fields of the rest.
        target: dict[str, Any] = {"Arn": spec.arn}
        for key in ("Input", "RoleArn", "RetryPolicy", "DeadLetterConfig"):
            if props.get(key) is not None:
                target[key] = props[key]
        logical_id = f"{spec.logical_id}{event_id}"
        schedule = {**props, "Target": target}
        self.provisioner.result.refs[logical_id] = self.provisioner.create_schedule(logical_id, schedule)


def _reports_failures(props: Mapping[str, Any]) -> bool:
    return "ReportBatchItemFailures" in (props.get("FunctionResponseTypes") or [])


def _maximum_concurrency(props: Mapping[str, Any]) -> int | None:
    value = (props.get("ScalingConfig") or {}).get("MaximumConcurrency")
    return int(value) if value is not None else None


def _on_failure(props: dict[str, Any]) -> str | None:
    """DestinationConfig.OnFailure.Destination of an event source mapping, if any."""
    destination = ((props.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
    return str(destination) if destination else None


def _retry_attempts(value: Any) -> int:
    """Lambda's -1 ("until the record expires") is bounded locally."""
    if value is None or int(value) < 0:
        return 3
    return int(value)
