"""Cold start per function: a fresh Python process importing the handler and answering one
event, divided by a fresh process doing ``import boto3; boto3.client("dynamodb")``.

For each AWS::Serverless::Function of template.yaml (handler module from its CodeUri and Handler,
the hub layer on the path), a child process (bench/_cold_child.py, ``sys.executable``) imports
the handler module and answers one realistic event:

- IngestApiFunction: an HTTP API v2 receive-message event (tests/events.py) with a ~1 KiB order;
- PipelineWorkerFunction: an SQS event holding the step message that ingest enqueued;
- AdminApiFunction: a Function URL event, GET /api/admin/queue (error tab);
- AlertNotifierFunction: a DynamoDB stream event, a status record entering dead_letter, read from
  the table's stream and kept by the template's FilterCriteria; Slack posts go to a local sink;
- CertExpiryFunction: an EventBridge Scheduler event.

Each function's environment comes from template.yaml through tests/aws.py ``provision`` (on a
moto server started here, outside every timed process), with POWERTOOLS_TRACE_DISABLED=true as the
tests and the local stack set it, and as the template does by default. On AWS its ``Tracing=Active``
parameter enables the X-Ray tracer, which imports and does more: not measured here. AWS calls go
to a replay server (bench/replay.py): each function's calls were recorded once against moto, then
every timed run gets the recorded answers at once, so no emulator time is in the figures.

Packages as Lambda has them: the children run with ``python -S`` on a site directory built once
(``pip install --target``, kept under ``.bench-cache/``) from ``layers/hub/requirements.txt``, what
``sam build`` packs into the layer, plus the boto3 pyproject.toml pins (the runtime's own copy on
Lambda); the development virtualenv is not on their path. It matters: there, httpx imports its
command-line client's packages (click, pygments), which the layer does not have. If pip cannot
build the directory (offline), the children use the virtualenv and the results say so.

What is timed (inside the child, ``time.perf_counter``): from just before the first import of
interest to the end of the work (handler import + the event; baseline import + client). The
interpreter's own start-up (the same for both) is left out of the ratio; the wall clock of the
whole subprocess, start-up included, is reported beside it. Runs are paired and alternate
(function, baseline / baseline, function), ``--pairs`` per function after one untimed warm-up run
(.pyc caches filled for both sides: pip-installed dependencies ship theirs; on Lambda the read-only
task root keeps uncompiled code of ours from caching, which is not measured). Reported per
function: the median
ratio and its spread (min-max over pairs), the import alone (Lambda's init phase) and peak RSS
of both (VmHWM of the child: see bench/_cold_child.py for why not ru_maxrss). A replay that does
not follow its tape stops that function's measurement (reported). Targets: IngestApiFunction
<= 1.5x, every other function <= 2x.

    python -m bench.cold_start [--pairs 7]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import (
    ROOT,
    lean_transaction_snapshots,
    median,
    merge_results,
    moto_server,
    now_iso,
    purchase_order,
    seed_tenant,
)

CHILD = Path(__file__).with_name("_cold_child.py")
CHILD_TIMEOUT = 180.0  # generous: a loaded 2-core machine
TENANT_ID = "tnt_cold"
INTEGRATION_ID = "int_cold"
API_KEY = "hub_bench_cold-key-00000000000000000000000000"  # bench only, in its own moto
ADMIN_TOKEN = "hub_admin_bench_cold-token-000000000000000000"  # noqa: S105 - bench only
TARGETS = {"IngestApiFunction": 1.5}
DEFAULT_TARGET = 2.0
_PASSTHROUGH_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT", "BENCH_COLD_PROFILE")


@dataclass(frozen=True)
class FunctionUnderTest:
    logical_id: str
    code_dir: str
    handler: str
    memory_mb: int
    environment: dict[str, str]


@dataclass
class Run:
    total_s: float
    init_s: float
    wall_s: float
    peak_rss_kib: int
    answer: str


@dataclass
class FunctionResult:
    logical_id: str
    answer: str = ""
    pairs: list[tuple[Run, Run]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


# --- the stack and the events ------------------------------------------------------------------


class _Sink:
    """A local HTTP receiver answering 200 to everything (Slack webhook, destinations)."""

    def __init__(self) -> None:
        from devstack.http_server import AppHandler, BackgroundHttpServer  # noqa: PLC0415

        class Handler(AppHandler[Any]):
            def serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                self.send_response(200)
                self.send_header("content-type", "text/plain")
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = BackgroundHttpServer("sink", "127.0.0.1", 0, Handler)

    @property
    def url(self) -> str:
        return self.server.base_url


def _functions(environments: dict[str, dict[str, str]]) -> list[FunctionUnderTest]:
    from devstack.cfn import load_template  # noqa: PLC0415
    from devstack.functions import merge_globals  # noqa: PLC0415
    from tests.aws import TEMPLATE  # noqa: PLC0415

    template = load_template(TEMPLATE)
    global_props = (template.get("Globals") or {}).get("Function") or {}
    found = []
    for logical_id, resource in template["Resources"].items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        props = merge_globals(global_props, resource.get("Properties") or {})
        found.append(
            FunctionUnderTest(
                logical_id=logical_id,
                code_dir=str((ROOT / props["CodeUri"]).resolve()),
                handler=str(props["Handler"]),
                memory_mb=int(props.get("MemorySize", 128)),
                environment=environments.get(logical_id, {}),
            )
        )
    return found


def _seed(table: str, destination: str) -> None:
    from hub.adapters.dynamo.api_keys import DynamoKeyUse  # noqa: PLC0415
    from hub.domain.tenancy import hash_api_key  # noqa: PLC0415

    seed_tenant(
        table,
        tenant_id=TENANT_ID,
        integration_id=INTEGRATION_ID,
        api_key=API_KEY,
        destination=destination,
        name="bench cold start",
    )
    # The key was already used today, as it is for every cold start of a day but the first per
    # key: ingest then skips its once-a-day last-used write (and that write's client). The first
    # cold start of a key's day pays one more UpdateItem and about 40 ms for its client.
    DynamoKeyUse(table).record_use(hash_api_key(API_KEY), datetime.now(UTC).date().isoformat())


class Events:
    """The sample event of each function; some are read from what earlier recordings left in
    moto (the worker's step message, the notifier's stream record)."""

    def __init__(self, refs: dict[str, Any]) -> None:
        import boto3  # noqa: PLC0415

        self.refs = refs
        self.dynamodb = boto3.client("dynamodb")
        self.sqs = boto3.client("sqs")

    def build(self, logical_id: str) -> dict[str, Any]:
        builders: dict[str, Callable[[], dict[str, Any]]] = {
            "IngestApiFunction": self.ingest,
            "PipelineWorkerFunction": self.worker,
            "AdminApiFunction": self.admin,
            "AlertNotifierFunction": self.alert_notifier,
            "CertExpiryFunction": self.cert_expiry,
            "OutboxPublisherFunction": self.outbox_publisher,
        }
        builder = builders.get(logical_id)
        if builder is None:
            raise KeyError(f"no sample event for {logical_id}: add one to bench/cold_start.py")
        return builder()

    def ingest(self) -> dict[str, Any]:
        from tests.events import http_event  # noqa: PLC0415

        payload = purchase_order("cold", 1)
        body = {
            "integration_id": INTEGRATION_ID,
            "message_type": "purchase_order",
            "external_id": payload["po_number"],
            "payload": payload,
        }
        headers: dict[str, str | None] = {"authorization": f"Bearer {API_KEY}", "idempotency-key": "cold-1"}
        return http_event("receive_message.json", body=body, headers=headers)

    def worker(self) -> dict[str, Any]:
        from devstack.sqs_source import lambda_record  # noqa: PLC0415

        queue_url = self.refs["PipelineQueue"]
        arn = self.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        messages = self.sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=1, AttributeNames=["All"], MessageAttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            raise RuntimeError("no step message on the pipeline queue: did the ingest recording fail?")
        return {"Records": [lambda_record(messages[0], arn, "us-east-1")]}

    def admin(self) -> dict[str, Any]:
        from tests.events import admin_event  # noqa: PLC0415

        return admin_event(
            "GET", "/api/admin/queue", token=ADMIN_TOKEN, query={"tenant_id": TENANT_ID, "tab": "error"}
        )

    def alert_notifier(self) -> dict[str, Any]:

        table = self.refs["HubTable"]
        for status in ("error", "dead_letter"):
            self.dynamodb.put_item(
                TableName=table,
                Item={
                    "PK": {"S": "MSG#msg_cold_dead_letter"},
                    "SK": {"S": "STATUS"},
                    "message_id": {"S": "msg_cold_dead_letter"},
                    "tenant_id": {"S": TENANT_ID},
                    "integration_id": {"S": INTEGRATION_ID},
                    "message_type": {"S": "purchase_order"},
                    "pipeline_status": {"S": status},
                    "last_retry_error_class": {"S": "http_5xx"},
                    "retry_count": {"N": "5"},
                    "updated_at": {"S": "2026-11-30T12:00:00.000000Z"},
                },
            )
        records = self._stream_records("AlertNotifierFunction", "DeadLetters")
        if not records:
            raise RuntimeError("no dead-letter stream record passed the template's filter")
        return {"Records": records[-1:]}

    def outbox_publisher(self) -> dict[str, Any]:
        """What the recordings wrote, as the outbox's event source hands it on (with the
        template's default bus types, only the dead-letter sample's events are put on the bus)."""
        records = self._stream_records("OutboxPublisherFunction", "Outbox")
        if not records:
            raise RuntimeError("no stream record passed the outbox publisher's filter")
        return {"Records": records[:10]}

    def _stream_records(self, logical_id: str, event_id: str) -> list[dict[str, Any]]:
        import boto3  # noqa: PLC0415

        from devstack.cfn import load_template  # noqa: PLC0415
        from devstack.event_filter import matches_any, parse_patterns  # noqa: PLC0415
        from devstack.stream_source import lambda_record  # noqa: PLC0415
        from tests.aws import TEMPLATE  # noqa: PLC0415

        table = self.refs["HubTable"]
        stream_arn = self.dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        events = load_template(TEMPLATE)["Resources"][logical_id]["Properties"]["Events"]
        patterns = parse_patterns(events[event_id]["Properties"]["FilterCriteria"])
        streams = boto3.client("dynamodbstreams")
        records = []
        for shard in streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]:
            iterator = streams.get_shard_iterator(
                StreamArn=stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
            for raw in streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]:
                record = lambda_record(raw, stream_arn, "us-east-1")
                if matches_any(patterns, record):
                    records.append(record)
        return records

    def cert_expiry(self) -> dict[str, Any]:
        return {"source": "aws.scheduler", "detail-type": "Scheduled Event", "detail": {}}


# --- the children ----------------------------------------------------------------------------


def _lambda_env(function: FunctionUnderTest, endpoint: str) -> dict[str, str]:
    return {
        "AWS_LAMBDA_FUNCTION_NAME": function.logical_id,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
        "LAMBDA_TASK_ROOT": function.code_dir,
        **function.environment,
        **_base_env(endpoint),
    }


def _base_env(endpoint: str) -> dict[str, str]:
    env = {key: os.environ[key] for key in _PASSTHROUGH_ENV if key in os.environ}
    env.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
            "AWS_ENDPOINT_URL": endpoint,
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
    )
    return env


#: Where the Lambda-like site directories are kept (one per requirements digest).
SITE_CACHE = ROOT / ".bench-cache"
#: {"site": path} while a run uses a Lambda-like site directory (set by `run`).
_SITE: dict[str, str] = {}


def lambda_site() -> tuple[Path | None, str]:
    """The site directory the children import from, and how it was made. Built once per digest
    of the layer's requirements and the boto3 pin; None (use the virtualenv) if pip fails."""
    import boto3  # noqa: PLC0415 - the pin the project installed
    import botocore  # noqa: PLC0415

    requirements = (ROOT / "layers" / "hub" / "requirements.txt").read_text()
    pins = [f"boto3=={boto3.__version__}", f"botocore=={botocore.__version__}"]
    digest = hashlib.sha256("\n".join([requirements, *pins]).encode()).hexdigest()[:16]
    site = SITE_CACHE / f"lambda-site-{digest}"
    if site.is_dir():
        return site, "layers/hub/requirements.txt + boto3 (pip --target, cached)"
    building = SITE_CACHE / f"building-{digest}-{os.getpid()}"
    print(f"  building the Lambda-like site directory {site.name} (once)...", flush=True)
    finished = subprocess.run(  # noqa: S603 - our own interpreter's pip
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--target",
            str(building),
            "-r",
            str(ROOT / "layers" / "hub" / "requirements.txt"),
            *pins,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if finished.returncode != 0:
        print(f"  pip failed ({finished.returncode}); children use the virtualenv", flush=True)
        return None, f"development virtualenv (pip --target failed: {finished.stderr.strip()[-200:]})"
    building.rename(site)
    return site, "layers/hub/requirements.txt + boto3 (pip --target, built now)"


def _child(spec: dict[str, Any], env: dict[str, str], workdir: Path) -> Run:
    spec_path, out_path = workdir / "spec.json", workdir / "out.json"
    spec = {**spec, **_SITE}
    spec_path.write_text(json.dumps(spec))
    out_path.unlink(missing_ok=True)
    started = time.perf_counter()
    finished = subprocess.run(  # noqa: S603 - our own interpreter and script
        [
            sys.executable,
            *(["-S"] if spec.get("site") else []),
            "-P",
            str(CHILD),
            str(spec_path),
            str(out_path),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    wall = time.perf_counter() - started
    if finished.returncode != 0 or not out_path.exists():
        raise RuntimeError(f"cold-start child failed ({finished.returncode}): {finished.stderr[-1500:]}")
    out = json.loads(out_path.read_text())
    return Run(out["total_s"], out["init_s"], wall, int(out["peak_rss_kib"]), out["answer"])


def _function_spec(function: FunctionUnderTest, event: dict[str, Any]) -> dict[str, Any]:
    return {
        "mode": "function",
        "paths": [function.code_dir, str(ROOT / "layers" / "hub")],
        "code_dir": function.code_dir,
        "handler": function.handler,
        "event": event,
        "function_name": function.logical_id,
        "memory_mb": function.memory_mb,
    }


def _replayed(tapes: Any, tape: str, spec: dict[str, Any], env: dict[str, str], workdir: Path) -> Run:
    """One function child on its tape; RuntimeError when the replay did not follow the tape."""
    from bench.replay import replay_complete  # noqa: PLC0415

    before = tapes.select(tape, "replay")["mismatches"]
    run = _child(spec, env, workdir)
    summary = tapes.select("idle", "off")
    if not replay_complete(summary, before):
        raise RuntimeError(f"replay off its tape: {summary}")
    return run


def _measure(
    functions: list[FunctionUnderTest],
    events: dict[str, dict[str, Any]],
    tapes: Any,
    pairs: int,
    workdir: Path,
) -> list[FunctionResult]:
    baseline_spec = {"mode": "baseline"}
    baseline_env = _base_env(tapes.url)
    results = []
    for function in functions:
        result = FunctionResult(function.logical_id)
        results.append(result)
        if function.logical_id not in events:
            continue
        spec, env = _function_spec(function, events[function.logical_id]), _lambda_env(function, tapes.url)
        tape = f"cold-{function.logical_id}"
        try:
            _replayed(tapes, tape, spec, env, workdir)  # warm-up: bytecode and file system caches
            _child(baseline_spec, baseline_env, workdir)
            for index in range(pairs):
                if index % 2 == 0:
                    function_run = _replayed(tapes, tape, spec, env, workdir)
                    baseline_run = _child(baseline_spec, baseline_env, workdir)
                else:
                    baseline_run = _child(baseline_spec, baseline_env, workdir)
                    function_run = _replayed(tapes, tape, spec, env, workdir)
                result.pairs.append((function_run, baseline_run))
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            result.failures.append(str(exc)[-600:])
        print(f"  measured {function.logical_id}: {len(result.pairs)} pairs", flush=True)
    return results


def _record(
    functions: list[FunctionUnderTest], events: Events, tapes: Any, workdir: Path
) -> tuple[dict[str, dict[str, Any]], dict[str, str], dict[str, str]]:
    """Runs each function once against moto (through the tape server, recording); returns the
    events, the answers and the failures."""
    recorded: dict[str, dict[str, Any]] = {}
    answers: dict[str, str] = {}
    failures: dict[str, str] = {}
    order = ["IngestApiFunction", "PipelineWorkerFunction"]  # the worker's event comes from ingest
    rank = {logical_id: index for index, logical_id in enumerate(order)}
    for function in sorted(functions, key=lambda f: rank.get(f.logical_id, len(order))):
        try:
            event = events.build(function.logical_id)
            tapes.select(f"cold-{function.logical_id}", "record")
            run = _child(_function_spec(function, event), _lambda_env(function, tapes.url), workdir)
        except (RuntimeError, KeyError, subprocess.TimeoutExpired) as exc:
            failures[function.logical_id] = str(exc)[-600:]
            continue
        finally:
            tapes.select("idle", "off")
        recorded[function.logical_id] = event
        answers[function.logical_id] = run.answer
    return recorded, answers, failures


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run(pairs: int, only: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    from bench.replay import TapeServer  # noqa: PLC0415
    from tests.aws import AWS_TEST_ENV, provision  # noqa: PLC0415

    site, site_note = lambda_site()
    _SITE.clear()
    if site is not None:
        _SITE["site"] = str(site)
    sink = _Sink()
    sink.server.start()
    try:
        with (
            lean_transaction_snapshots(),
            moto_server() as moto_url,
            _environment({**AWS_TEST_ENV, "AWS_ENDPOINT_URL": moto_url}),
            tempfile.TemporaryDirectory(prefix="hub-bench-cold-") as tmp,
        ):
            stack = provision(
                "hub-bench-cold",
                {
                    "AdminTokenSha256": hashlib.sha256(ADMIN_TOKEN.encode()).hexdigest(),
                    "SlackAlertsWebhookUrl": f"{sink.url}/slack",
                },
            )
            _seed(stack.refs["HubTable"], f"{sink.url}/destination")
            functions = [f for f in _functions(stack.environments) if not only or f.logical_id in only]
            with TapeServer(upstream=moto_url) as tapes:
                events, answers, failures = _record(functions, Events(stack.refs), tapes, Path(tmp))
                results = _measure(functions, events, tapes, pairs, Path(tmp))
    finally:
        sink.server.stop()
    for result in results:
        result.answer = answers.get(result.logical_id, "")
        if result.logical_id in failures:
            result.failures.insert(0, "recording: " + failures[result.logical_id])
    return {**_summarize(results, pairs), "packages": site_note}


def _summary_of(result: FunctionResult) -> dict[str, Any]:
    ratios = [f.total_s / b.total_s for f, b in result.pairs]
    functions = [f for f, _ in result.pairs]
    baselines = [b for _, b in result.pairs]
    return {
        "pairs": len(result.pairs),
        "ratio_median": median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "wall_clock_ratio_median": median([f.wall_s / b.wall_s for f, b in result.pairs]),
        "init_only_ratio_median": median([f.init_s / b.total_s for f, b in result.pairs]),
        "function_ms": {
            "total_median": median([r.total_s for r in functions]) * 1000,
            "init_median": median([r.init_s for r in functions]) * 1000,
            "wall_median": median([r.wall_s for r in functions]) * 1000,
        },
        "baseline_ms": {
            "total_median": median([r.total_s for r in baselines]) * 1000,
            "wall_median": median([r.wall_s for r in baselines]) * 1000,
        },
        "peak_rss_mib": {
            "function_median": median([r.peak_rss_kib / 1024 for r in functions]),
            "baseline_median": median([r.peak_rss_kib / 1024 for r in baselines]),
        },
        "target": TARGETS.get(result.logical_id, DEFAULT_TARGET),
        "answer": result.answer,
        "failures": result.failures,
    }


def _summarize(results: list[FunctionResult], pairs: int) -> dict[str, Any]:
    per_function: dict[str, Any] = {}
    for result in results:
        if result.pairs:
            per_function[result.logical_id] = _summary_of(result)
        else:
            per_function[result.logical_id] = {
                "pairs": 0,
                "failures": result.failures,
                "answer": result.answer,
            }
    return {
        "measured_at": now_iso(),
        "pairs_requested": pairs,
        "timed": "inside the child: from just before the first import of interest to the end of the work",
        "tracing": "POWERTOOLS_TRACE_DISABLED=true; Tracing: Active on AWS enables X-Ray (not measured)",
        "functions": per_function,
    }


def cold_start_ratio(summary: dict[str, Any]) -> dict[str, Any]:
    """The results file's ``cold_start_ratio``: function -> median ratio, plus ``spread``."""
    measured = {fid: s for fid, s in summary["functions"].items() if s.get("pairs")}
    ratio: dict[str, Any] = {fid: s["ratio_median"] for fid, s in measured.items()}
    ratio["spread"] = {fid: {"min": s["ratio_min"], "max": s["ratio_max"]} for fid, s in measured.items()}
    return ratio


def report(summary: dict[str, Any]) -> list[str]:
    lines = [
        "cold start: fresh process importing the handler and answering one event, / a fresh process"
        ' doing `import boto3; boto3.client("dynamodb")`',
        "  timed inside the child (perf_counter, from just before the first import of interest; interpreter"
        " start-up excluded, shown in the wall-clock column); AWS answered by a replay server;"
        " POWERTOOLS_TRACE_DISABLED=true (X-Ray tracing, on with Tracing: Active, not measured)",
        f"  packages: {summary.get('packages', 'development virtualenv')}",
        f"  {'function':<24}{'ratio':>7} {'(min-max)':<13}{'target':>7}  {'fn ms':>7}"
        f" {'init ms':>8} {'base ms':>8} {'wall ratio':>10} {'RSS fn/base MiB':>16}",
    ]
    for fid, s in summary["functions"].items():
        if not s.get("pairs"):
            lines.append(f"  {fid:<24} not measured: {'; '.join(s.get('failures') or ['no event'])[:300]}")
            continue
        verdict = "met" if s["ratio_median"] <= s["target"] else "NOT met"
        lines.append(
            f"  {fid:<24}{s['ratio_median']:>6.2f}x ({s['ratio_min']:.2f}-{s['ratio_max']:.2f}x)"
            f" <={s['target']:.1f}x {verdict:<7}{s['function_ms']['total_median']:>7.0f}"
            f" {s['function_ms']['init_median']:>8.0f} {s['baseline_ms']['total_median']:>8.0f}"
            f" {s['wall_clock_ratio_median']:>9.2f}x"
            f" {s['peak_rss_mib']['function_median']:>8.0f}/{s['peak_rss_mib']['baseline_median']:.0f}"
        )
        if s["failures"]:
            lines.append(f"    WARNING: {'; '.join(s['failures'])[:400]}")
    lines.append(
        "  (ratio: median over pairs of function / baseline; init ms: the handler module's import alone,"
        " Lambda's init phase; wall ratio: whole subprocess, interpreter start-up included)"
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=7, help="paired runs per function")
    parser.add_argument("--only", action="append", help="measure only this function (logical id)")
    parser.add_argument(
        "--profile", metavar="DIR", help="write a cProfile of each function's last run to DIR/<id>.prof"
    )
    args = parser.parse_args()
    if args.profile:
        os.environ["BENCH_COLD_PROFILE"] = str(Path(args.profile).resolve())
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    summary = run(args.pairs, only=set(args.only or ()))
    if args.only or args.profile:  # a partial or profiled run is not a figure to keep
        for line in report(summary):
            print(line)
        return 0
    for line in report(summary):
        print(line)
    merge_results({"cold_start_ratio": cold_start_ratio(summary), "cold_start": summary})
    return 0


if __name__ == "__main__":
    sys.exit(main())
