"""template.yaml is deployable: cfn-lint reports no errors and the SAM transform expands it.
`make validate` runs the same two checks from the command line."""

from __future__ import annotations

import re
import tomllib

from cfnlint.api import lint_all

from devstack.cfn import load_template
from devstack.validate import load_document, transform_document, transform_template
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


# --- issue 29: SnapStart ------------------------------------------------------------------------


def _functions(output: dict) -> list[str]:
    return sorted(k for k, r in output["Resources"].items() if r["Type"] == "AWS::Lambda::Function")


def _versions(output: dict) -> dict[str, str]:
    """function -> the logical id of the version the deploy publishes (it changes when a new
    version must be published)."""
    found = {}
    for logical_id, resource in output["Resources"].items():
        if resource["Type"] == "AWS::Lambda::Version":
            found[resource["Properties"]["FunctionName"]["Ref"]] = logical_id
    return found


def test_snapstart_is_off_by_default_and_applies_to_every_function_when_on():
    template = load_template(TEMPLATE)
    assert template["Parameters"]["SnapStart"]["Default"] == "Disabled"
    assert template["Conditions"]["HasSnapStart"] == {
        "Fn::Equals": [{"Ref": "SnapStart"}, "PublishedVersions"]
    }
    output = transform_template(TEMPLATE)
    for function in _functions(output):
        properties = output["Resources"][function]["Properties"]
        assert properties["SnapStart"] == {
            "Fn::If": ["HasSnapStart", {"ApplyOn": "PublishedVersions"}, {"Ref": "AWS::NoValue"}]
        }, function


def test_every_event_source_api_route_and_url_invokes_the_published_alias():
    output = transform_template(TEMPLATE)
    resources = output["Resources"]
    aliases = {
        r["Properties"]["FunctionName"]["Ref"]: k
        for k, r in resources.items()
        if r["Type"] == "AWS::Lambda::Alias"
    }
    assert set(aliases) == set(_functions(output))
    for logical_id, resource in resources.items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::Lambda::EventSourceMapping":
            assert properties["FunctionName"]["Ref"] in aliases.values(), logical_id
        elif resource["Type"] == "AWS::Lambda::Url":
            assert properties["TargetFunctionArn"]["Ref"] in aliases.values(), logical_id
        elif resource["Type"] == "AWS::Lambda::Permission":
            assert properties["FunctionName"]["Ref"] in aliases.values(), logical_id
        elif resource["Type"] == "AWS::Lambda::Version":
            assert resource["DeletionPolicy"] == "Delete", logical_id  # a snapshot is billed while it exists


def test_a_change_of_the_layer_or_a_function_s_code_publishes_a_new_version_of_it():
    default = _versions(transform_template(TEMPLATE))
    document = load_document(TEMPLATE)
    document["Resources"]["HubLayer"]["Properties"]["ContentUri"] = "s3://local-validate/HubLayer-changed.zip"
    new_layer = _versions(transform_document(document))
    document = load_document(TEMPLATE)
    document["Resources"]["IngestApiFunction"]["Properties"]["CodeUri"] = (
        "s3://local-validate/ingest-changed.zip"
    )
    new_ingest_code = _versions(transform_document(document))
    switched = _versions(transform_template(TEMPLATE, parameter_values={"SnapStart": "PublishedVersions"}))

    assert set(default) == set(_functions(transform_template(TEMPLATE)))
    # A version keeps the code and configuration it was published with: without a new one, the
    # alias would go on invoking the old code (most of it is in the layer).
    assert all(new_layer[function] != version for function, version in default.items())
    assert {f for f, version in default.items() if new_ingest_code[f] != version} == {"IngestApiFunction"}
    # Known and documented (docs/operations.md): SAM resolves no parameter in what it hashes, so
    # switching SnapStart alone publishes no version; it applies from the next deploy that does.
    assert switched == default
