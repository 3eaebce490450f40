"""Runs the SAM transform on a template offline (`python -m devstack.validate template.yaml`).

cfn-lint checks the CloudFormation; this checks that AWS::Serverless-2016-10-31 expands the
template without errors, as `sam build` / `sam deploy` would, without calling AWS.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import boto3
from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator
from samtranslator.yaml_helper import yaml_parse


class _NoManagedPolicies:
    """The transform asks IAM for managed policy ARNs only for names it does not know; the
    template uses SAM policy templates, so an empty map keeps this offline."""

    def load(self) -> dict[str, str]:
        return {}


_CODE_PROPERTIES = {
    "AWS::Serverless::Function": "CodeUri",
    "AWS::Serverless::LayerVersion": "ContentUri",
}


def _point_code_at_s3(document: dict[str, Any], root: Path) -> None:
    """Like `sam validate`: local code folders must exist, then stand in as S3 URIs (what
    `sam package` would upload them to), since the transform only accepts S3 locations."""
    for logical_id, resource in document.get("Resources", {}).items():
        prop = _CODE_PROPERTIES.get(resource.get("Type", ""))
        location = resource.get("Properties", {}).get(prop) if prop else None
        if isinstance(location, str) and not location.startswith("s3://"):
            if not (root / location).is_dir():
                raise FileNotFoundError(f"{logical_id}: {prop} folder {location!r} does not exist")
            resource["Properties"][prop] = f"s3://local-validate/{logical_id}.zip"


def transform_template(
    path: Path, region: str = "us-east-1", parameter_values: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The CloudFormation the SAM transform produces for these template parameter values (SAM
    resolves a few at transform time, like AutoPublishCodeSha256; the defaults otherwise).
    Raises InvalidDocumentException."""
    return transform_document(load_document(path), region, parameter_values)


def load_document(path: Path) -> dict[str, Any]:
    """The parsed template, its local code folders standing in as S3 URIs (see above)."""
    document: dict[str, Any] = yaml_parse(path.read_text())
    _point_code_at_s3(document, path.parent)
    return document


def transform_document(
    document: dict[str, Any], region: str = "us-east-1", parameter_values: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`transform_template` for a parsed template whose code points at S3 (`load_document`)."""
    translator = Translator(
        _NoManagedPolicies().load(), Parser(), boto_session=boto3.session.Session(region_name=region)
    )
    return translator.translate(document, parameter_values=dict(parameter_values or {}))


def main(argv: list[str]) -> int:
    """``python -m devstack.validate [TEMPLATE] [--output FILE]``: FILE gets the transformed
    CloudFormation as JSON (what checkov reads in `make validate`)."""
    args = list(argv[1:])
    target: Path | None = None
    if "--output" in args:
        at = args.index("--output")
        target = Path(args[at + 1])
        del args[at : at + 2]
    path = Path(args[0] if args else "template.yaml")
    try:
        output = transform_template(path)
    except InvalidDocumentException as exc:
        for cause in exc.causes:
            print(f"SAM transform error: {cause.message}", file=sys.stderr)
        return 1
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(output, indent=1, default=str) + "\n")
    print(f"SAM transform ok: {len(output['Resources'])} CloudFormation resources")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
