"""template.yaml is deployable: cfn-lint reports no errors and the SAM transform expands it.
`make validate` runs the same two checks from the command line."""

from __future__ import annotations

import re
import tomllib

from cfnlint.api import lint_all

from devstack.cfn import load_template
from devstack.validate import transform_template
from hub.adapters.dynamo.status_index import QUEUE_ROW_FIELDS
from hub.sealed_config import PURPOSES
from tests.aws import ROOT, TEMPLATE


def test_cfn_lint_reports_no_errors():
    matches = lint_all(TEMPLATE.read_text())
    errors = [f"{m.rule.id} {m.message} (line {m.linenumber})" for m in matches if m.rule.id.startswith("E")]
    assert errors == []


def test_sam_transform_expands_every_function_and_layer():
    output = transform_template(TEMPLATE)
    types = {r["Type"] for r in output["Resources"].values()}
    assert {"AWS::Lambda::Function", "AWS::Lambda::LayerVersion", "AWS::ApiGatewayV2::Api"} <= types


def test_layer_requirements_match_the_project_dependencies():
    def names(lines: list[str]) -> set[str]:
        return {re.split(r"[\[=<>~ ]", line.strip(), maxsplit=1)[0].lower() for line in lines if line.strip()}

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    layer = [
        line
        for line in (ROOT / "layers/hub/requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    # Everything, boto3 included (the layer ships the boto3/botocore pair the tests ran).
    assert names(layer) == names(project)
    pinned = {line.strip() for line in layer}
    assert pinned <= {d.strip() for d in project}, "the same pins in both files"


def test_every_function_handler_exists():
    output = transform_template(TEMPLATE)
    from devstack.cfn import load_template  # noqa: PLC0415

    for logical_id, resource in load_template(TEMPLATE)["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        props = resource["Properties"]
        module = props["Handler"].rsplit(".", 1)[0]
        assert (ROOT / props["CodeUri"] / f"{module}.py").is_file(), logical_id
        assert logical_id in output["Resources"]


def test_the_status_index_projects_exactly_what_an_admin_queue_row_shows():
    table = load_template(TEMPLATE)["Resources"]["HubTable"]["Properties"]
    [index] = [i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == "GSI1"]
    assert set(index["Projection"]["NonKeyAttributes"]) == set(QUEUE_ROW_FIELDS)


def test_every_other_request_to_the_partner_api_reaches_the_ingest_function():
    # Issue 10, item 6: without a $default route API Gateway answers unknown routes and methods
    # itself ({"message":"Not Found"}), outside the one error shape.
    paths = transform_template(TEMPLATE)["Resources"]["PartnerApi"]["Properties"]["Body"]["paths"]
    catch_all = paths["$default"]["x-amazon-apigateway-any-method"]["x-amazon-apigateway-integration"]
    assert "IngestApiFunction" in str(catch_all["uri"])


def _kms_statements(function: str) -> list[dict]:
    """The KMS statements of `function`'s inline policies in template.yaml."""
    policies = load_template(TEMPLATE)["Resources"][function]["Properties"].get("Policies", [])
    statements = [s for p in policies if isinstance(p, dict) for s in p.get("Statement", [])]
    return [s for s in statements if any(str(a).startswith("kms:") for a in _listed(s["Action"]))]


def _listed(value) -> list:
    return value if isinstance(value, list) else [value]


def _purposes(statements: list[dict], action: str) -> set[str]:
    """The encryption-context purposes `action` is allowed for; "certificate" for the statement
    that allows only contexts without a purpose and with a connection id (client certificates)."""
    found: set[str] = set()
    for statement in statements:
        if action not in _listed(statement["Action"]):
            continue
        condition = statement.get("Condition")
        assert condition, f"{action} without an encryption-context condition"
        if "StringEquals" in condition:
            found |= set(_listed(condition["StringEquals"]["kms:EncryptionContext:purpose"]))
        else:
            assert condition == {
                "Null": {
                    "kms:EncryptionContext:purpose": "true",
                    "kms:EncryptionContext:connection_id": "false",
                }
            }
            found.add("certificate")
    return found


def test_each_function_opens_only_the_secrets_it_needs():
    """moto never enforces IAM: this checks the statements themselves (hub.sealed_config)."""
    assert _purposes(_kms_statements("IngestApiFunction"), "kms:Decrypt") == {"webhook-secret"}
    assert _purposes(_kms_statements("IngestApiFunction"), "kms:GenerateDataKey") == set()
    worker = _kms_statements("PipelineWorkerFunction")
    assert _purposes(worker, "kms:Decrypt") == {"destination-credential", "certificate"}
    assert _purposes(worker, "kms:GenerateDataKey") == set()
    admin = _kms_statements("AdminApiFunction")
    # The admin API seals everything, never opens a webhook secret; the connection test opens
    # the connection's credentials and client certificate.
    # It keeps Idempotency-Key answers sealed, and opens them for a repeat (issue 28).
    assert _purposes(admin, "kms:GenerateDataKey") == {
        "webhook-secret",
        "destination-credential",
        "subscription-secret",
        "admin-answer",
        "certificate",
    }
    assert _purposes(admin, "kms:Decrypt") == {"destination-credential", "admin-answer", "certificate"}
    # Subscriptions' signing secrets open in the webhook sender only (issue 12).
    sender = _kms_statements("WebhookSenderFunction")
    assert _purposes(sender, "kms:Decrypt") == {"subscription-secret"}
    assert _purposes(sender, "kms:GenerateDataKey") == set()
    for function, spec in load_template(TEMPLATE)["Resources"].items():
        if spec["Type"] == "AWS::Serverless::Function" and function not in (
            "IngestApiFunction",
            "PipelineWorkerFunction",
            "AdminApiFunction",
            "WebhookSenderFunction",
        ):
            assert _kms_statements(function) == [], function


def test_the_purposes_are_the_ones_the_code_seals_under():
    assert set(PURPOSES) == {
        "webhook-secret",
        "destination-credential",
        "subscription-secret",
        "admin-answer",
    }
