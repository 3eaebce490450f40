"""The template for a `sam build` this machine can run (`python -m devstack.build OUT_DIR`).

`sam build` of template.yaml packs the layer for Lambda's arm64: its compiled wheels (pydantic-core,
cryptography, lxml) do not import on an x86_64 machine. To run the built handlers here (the
built-layer tests, `make run BUILT=1`), the Makefile also builds this copy of the template, which
differs only in the architecture (this machine's) and in code paths made absolute, so the copy
can live outside the source tree. Everything else - handlers, layer contents, pins - is the
deployed build's.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path
from typing import Any

from samtranslator.yaml_helper import yaml_parse

_LAMBDA_ARCHITECTURES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}
_CODE_PROPERTIES = {"AWS::Serverless::Function": "CodeUri", "AWS::Serverless::LayerVersion": "ContentUri"}


def host_architecture() -> str:
    """This machine's architecture in Lambda's spelling (x86_64 or arm64)."""
    machine = platform.machine().lower()
    try:
        return _LAMBDA_ARCHITECTURES[machine]
    except KeyError:
        raise SystemExit(f"no Lambda architecture for this machine ({machine})") from None


def host_template(template: dict[str, Any], root: Path, architecture: str) -> dict[str, Any]:
    """``template`` with every architecture set to ``architecture`` and local code folders made
    absolute (relative to ``root``, the source template's folder)."""
    functions = template.get("Globals", {}).get("Function", {})
    if "Architectures" in functions:
        functions["Architectures"] = [architecture]
    for resource in template.get("Resources", {}).values():
        props = resource.get("Properties") or {}
        kind = resource.get("Type", "")
        if "Architectures" in props:
            props["Architectures"] = [architecture]
        if "CompatibleArchitectures" in props:
            props["CompatibleArchitectures"] = [architecture]
        metadata = resource.get("Metadata") or {}
        if "BuildArchitecture" in metadata:
            metadata["BuildArchitecture"] = architecture
        code = _CODE_PROPERTIES.get(kind)
        if code and isinstance(props.get(code), str) and not props[code].startswith("s3://"):
            props[code] = str((root / props[code]).resolve())
    return template


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m devstack.build OUT_DIR  (writes OUT_DIR/template.json)", file=sys.stderr)
        return 2
    source = Path("template.yaml").resolve()
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    template = host_template(yaml_parse(source.read_text()), source.parent, host_architecture())
    (out / "template.json").write_text(json.dumps(template, indent=1) + "\n")
    print(out / "template.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
