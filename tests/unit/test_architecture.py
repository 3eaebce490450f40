"""Imports point down: the domain imports nothing above it. And each function loads only what
its routes use: a fresh process per handler shows which heavy libraries it imported."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from devstack.cfn import load_template

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = ROOT / "layers" / "hub" / "hub" / "domain"

#: Besides the standard library: pydantic (the models), typing_extensions (pydantic's own
#: dependency, for TypeAliasType on 3.11), pydantic_core (pydantic's core, for an error type of
#: our own: PydanticCustomError) and jmespath (the expression language of duplicate keys and
#: mapping specs; pure, and loaded by botocore in every function anyway).
THIRD_PARTY = frozenset({"pydantic", "pydantic_core", "typing_extensions", "jmespath"})
#: The only hub modules outside the domain it may use.
HUB = frozenset({"hub.errors"})


def _imported(tree: ast.Module) -> list[str]:
    """Every module an import statement names, at any depth (functions, TYPE_CHECKING blocks)."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            # A relative import is reported as such: the domain spells its imports out.
            names.append("." * node.level + (node.module or ""))
    return names


def _allowed(module: str) -> bool:
    top = module.partition(".")[0]
    if top in sys.stdlib_module_names or top in THIRD_PARTY:
        return True
    return module in HUB or module == "hub.domain" or module.startswith("hub.domain.")


def _domain_modules() -> list[Path]:
    return sorted(DOMAIN.glob("*.py"))


def test_the_domain_folder_is_where_this_test_looks() -> None:
    assert {"status.py", "tenancy.py", "clock.py"} <= {p.name for p in _domain_modules()}


@pytest.mark.parametrize("path", _domain_modules(), ids=lambda p: p.name)
def test_a_domain_module_imports_only_the_standard_library_pydantic_and_the_domain(path: Path) -> None:
    imports = _imported(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    assert [name for name in imports if not _allowed(name)] == []


def test_the_import_check_catches_an_upward_import() -> None:
    tree = ast.parse(
        "import json\nfrom hub.webhooks.config import X\nif True:\n    import httpx\nfrom . import status\n"
    )
    assert {name for name in _imported(tree) if not _allowed(name)} == {"hub.webhooks.config", "httpx", "."}


# --- what each function loads ---------------------------------------------------------------

#: Libraries a function should load only when a route or a delivery needs them (and the OpenAPI
#: generator: Powertools' schema models, for the OpenAPI route only).
OPENAPI_GENERATOR = ("hub.api.openapi_document", "aws_lambda_powertools.event_handler.openapi.dependant")
HEAVY = ("zeep", "lxml", "nfelib", "requests", "httpx", "cryptography", "aws_xray_sdk", *OPENAPI_GENERATOR)

#: Runs in a fresh interpreter: imports the handler module as Lambda does, then runs each stage
#: (Python statements, with `wiring` and its function modules, `DestinationProtocol` and the
#: `handler` module at hand) and
#: reports which of the HEAVY libraries are loaded after each.
_CHILD = """
import importlib.util, json, sys
path, heavy, stages = sys.argv[1], sys.argv[2].split(","), json.loads(sys.argv[3])
spec = importlib.util.spec_from_file_location("handler_under_test", path)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
from hub import wiring
from hub.wiring import admin, alerts, cert_expiry, common, ingest, worker
from hub.domain.tenancy import DestinationProtocol

class NoCertificates:
    def client_certificate(self, destination, tenant_id=None):
        return None

namespace = {
    "wiring": wiring,
    "ingest": ingest,
    "worker": worker,
    "admin": admin,
    "alerts": alerts,
    "cert_expiry": cert_expiry,
    "common": common,
    "DestinationProtocol": DestinationProtocol,
    "NoCertificates": NoCertificates,
    "handler": module,
}
loaded = []
for stage in stages:
    exec(stage, namespace)
    loaded.append(sorted(name for name in heavy if name in sys.modules))
print(json.dumps(loaded))
"""

#: The environment of a function on the local stack, tracing off, no Slack or email configured.
_FUNCTION_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_SERVICE_NAME": "integration-hub-test",
    "POWERTOOLS_METRICS_NAMESPACE": "IntegrationHubTest",
    "HUB_STAGE": "test",
    "HUB_TABLE_NAME": "hub-test",
    "HUB_PIPELINE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/pipeline",
    "HUB_PIPELINE_QUEUE_ARN": "arn:aws:sqs:us-east-1:123456789012:pipeline",
    "HUB_PIPELINE_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/pipeline-dlq",
    "HUB_SCHEDULE_GROUP": "hub-test",
    "HUB_SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/scheduler",
    "HUB_SCHEDULES_DLQ_ARN": "arn:aws:sqs:us-east-1:123456789012:schedules-dlq",
    "HUB_CERTIFICATE_KEY_ID": "alias/hub-test-certificates",
    "HUB_WEBHOOKS_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/webhooks",
    "HUB_WEBHOOKS_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/webhooks-dlq",
    "HUB_OUTBOX_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/outbox-dlq",
}


def loaded_by(logical_id: str, stages: list[str], env: dict[str, str] | None = None) -> list[set[str]]:
    """The HEAVY libraries loaded after importing the template's handler of `logical_id` in a
    fresh process, and after each of `stages`. Builds clients, never calls AWS."""
    properties = load_template(ROOT / "template.yaml")["Resources"][logical_id]["Properties"]
    module_name = properties["Handler"].rpartition(".")[0]
    path = ROOT / properties["CodeUri"] / f"{module_name}.py"
    child_env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "hub"), str(ROOT)]),
        **_FUNCTION_ENV,
        **(env or {}),
    }
    answer = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), ",".join(HEAVY), json.dumps(["", *stages])],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert answer.returncode == 0, answer.stderr
    return [set(names) for names in json.loads(answer.stdout.strip().splitlines()[-1])]


def test_the_ingest_api_loads_no_soap_tls_http_client_or_tracing_library() -> None:
    imported, built = loaded_by(
        "IngestApiFunction", ["ingest.ingestor(); ingest.webhook_receiver(); ingest.status_callbacks()"]
    )
    assert imported == set()
    assert built == set()


def test_the_worker_loads_a_protocols_libraries_at_its_first_delivery_only() -> None:
    imported, built, rest, soap = loaded_by(
        "PipelineWorkerFunction",
        [
            "worker.pipeline_worker()",
            "connectors = worker.delivery_connectors(NoCertificates())\nconnectors[DestinationProtocol.HTTP]",
            "connectors[DestinationProtocol.SOAP]",
        ],
    )
    assert imported == set()
    assert built == set()  # no SOAP stack, no certificate code, not even httpx before a delivery
    assert rest == {"httpx"}
    assert {"zeep", "lxml"} <= soap
    assert "aws_xray_sdk" not in soap


def test_the_admin_api_loads_certificate_code_on_the_certificate_routes_only() -> None:
    imported, operations, certificates, opened = loaded_by(
        "AdminApiFunction",
        [
            "admin.operations()",
            "admin.certificate_service()",
            "from hub.certificates import envelope\ntry:\n    envelope.open_sealed(None, None, {})\n"
            "except AttributeError:\n    pass",
        ],
    )
    assert imported == set()
    assert operations == set()
    assert certificates == set()  # cryptography loads when a certificate is opened or sealed
    assert opened == {"cryptography"}


SLACK_SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:slack-AbCdEf"


def test_the_admin_api_loads_connectors_only_when_a_connection_is_tested() -> None:
    imported, built, tester = loaded_by(
        "AdminApiFunction",
        ["admin.connection_admin()", "admin._connection_tester()"],
    )
    assert imported == set()
    assert built == set()  # saving a connection needs cryptography only for a CA bundle
    assert tester == set()  # httpx / zeep load at the first test of their protocol


def test_the_alert_notifier_loads_httpx_at_its_first_slack_alert_only() -> None:
    _, without_slack = loaded_by("AlertNotifierFunction", ["alerts.alert_notifier()"])
    _, with_slack, sent = loaded_by(
        "AlertNotifierFunction",
        [
            "alerts.alert_notifier()",
            "slack = common.slack(alerts.settings(), alerts.secret_values, alerts.egress_policy())[0]\n"
            "try:\n    slack.send(None)\nexcept AttributeError:\n    pass",
        ],
        {"HUB_SLACK_WEBHOOK_SECRET_ARN": SLACK_SECRET_ARN},
    )
    assert without_slack == set()
    assert with_slack == set()
    assert sent == {"httpx"}


def test_the_expiry_check_loads_no_soap_http_client_crypto_or_tracing_library() -> None:
    imported, built = loaded_by(
        "CertExpiryFunction",
        ["cert_expiry.cert_expiry_alerter()"],
        {"HUB_SLACK_WEBHOOK_SECRET_ARN": SLACK_SECRET_ARN},
    )
    assert imported == set()
    assert built == set()  # httpx with the first alert; it only reads certificates' metadata


@pytest.mark.parametrize("logical_id", ["IngestApiFunction", "AdminApiFunction"])
def test_an_api_loads_the_openapi_generator_for_its_openapi_route_only(logical_id: str) -> None:
    imported, built, served = loaded_by(
        logical_id,
        [
            "ingest.ingestor()" if logical_id == "IngestApiFunction" else "admin.operations()",
            "handler.openapi_document()",
        ],
    )
    assert imported == set()
    assert built == set()
    assert set(OPENAPI_GENERATOR) <= served


def _handler_files() -> list[Path]:
    template = load_template(ROOT / "template.yaml")
    found = []
    for resource in template["Resources"].values():
        if resource.get("Type") == "AWS::Serverless::Function":
            properties = resource["Properties"]
            module_name = properties["Handler"].rpartition(".")[0]
            found.append(ROOT / properties["CodeUri"] / f"{module_name}.py")
    return sorted(found)


@pytest.mark.parametrize("path", _handler_files(), ids=lambda p: p.parent.name)
def test_a_handler_pauses_the_collector_from_its_first_import_to_its_first_invocation(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    first = next(
        node for node in imports if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    )
    assert isinstance(first, ast.Import)
    assert [alias.name for alias in first.names] == ["hub.cold_start"]
    handler = next(
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "lambda_handler"
    )
    # Outermost, so the first invocation's Powertools work runs paused too (and it resumes).
    outermost = handler.decorator_list[0]
    assert isinstance(outermost, ast.Name)
    assert outermost.id == "gc_after_first_invocation"
