"""template.yaml is deployable: cfn-lint reports no errors and the SAM transform expands it.
`make validate` runs the same two checks from the command line."""

from __future__ import annotations

import re
import tomllib

from cfnlint.api import lint_all

from devstack.cfn import load_template
from devstack.validate import transform_template
from hub.adapters.dynamo.status_index import QUEUE_ROW_FIELDS
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
    # boto3 comes with the Lambda runtime; everything else must be packed into the layer.
    assert names(layer) == names(project) - {"boto3"}
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
