"""Writes both APIs' OpenAPI 3.1 documents from the code, without a stack: `make openapi`
(`python -m devstack.openapi [OUT_DIR]`, default `build/openapi/`). The same documents the
deployed APIs serve at `GET /api/openapi.json` and `GET /api/admin/openapi.json`."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from devstack.cfn import load_template
from hub import wiring
from hub.api.openapi_document import generate

ROOT = Path(__file__).resolve().parent.parent
#: The file each API's document goes to, by the template's function.
DOCUMENTS = {"IngestApiFunction": "partner.json", "AdminApiFunction": "admin.json"}


def handler_module(logical_id: str) -> ModuleType:
    """The template's handler module of `logical_id`, imported from its CodeUri."""
    properties = load_template(ROOT / "template.yaml")["Resources"][logical_id]["Properties"]
    path = ROOT / properties["CodeUri"] / f"{properties['Handler'].rpartition('.')[0]}.py"
    name = f"_openapi_{logical_id}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves the module's annotations through it
    with _stand_in_settings():
        spec.loader.exec_module(module)
    return module


@contextmanager
def _stand_in_settings() -> Iterator[None]:
    """A handler validates its function's settings at import (hub.wiring.<function>.init); the
    documents need none of them. While the module loads, each variable a function requires that
    the environment lacks gets a stand-in; afterwards they are removed, and the settings built
    from them forgotten (wiring.reset)."""
    missing = {
        name
        for function in wiring.FUNCTIONS
        for name in wiring.required_variables(function)
        if name not in os.environ
    }
    os.environ.update(dict.fromkeys(missing, "openapi-stand-in"))
    try:
        yield
    finally:
        for name in missing:
            os.environ.pop(name, None)
        wiring.reset()


def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for logical_id, file_name in DOCUMENTS.items():
        module = handler_module(logical_id)
        document = generate(module.app, module.OPENAPI)
        (out_dir / file_name).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
        print(out_dir / file_name)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "openapi")
