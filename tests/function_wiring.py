"""Which `hub.wiring` module each of the template's functions initialises at its cold start,
read from its handler (the module it imports `init` from), and the Environment the template
gives it (Globals merged)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import Any

from devstack.cfn import load_template

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"


@cache
def _template() -> dict[str, Any]:
    return load_template(TEMPLATE)


def functions() -> list[str]:
    """The logical ids of the template's functions."""
    return sorted(
        name for name, spec in _template()["Resources"].items() if spec["Type"] == "AWS::Serverless::Function"
    )


def handler_path(logical_id: str) -> Path:
    properties = _template()["Resources"][logical_id]["Properties"]
    return ROOT / properties["CodeUri"] / f"{properties['Handler'].rpartition('.')[0]}.py"


def wiring_module(logical_id: str) -> str:
    """The `hub.wiring` module the function's handler imports `init` from (e.g. "ingest")."""
    tree = ast.parse(handler_path(logical_id).read_text(encoding="utf-8"))
    found = [
        (node.module or "").removeprefix("hub.wiring.")
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("hub.wiring.")
        and any(alias.name == "init" and alias.asname is None for alias in node.names)
    ]
    assert len(found) == 1, f"{logical_id}: its handler imports init from {found or 'no wiring module'}"
    return found[0]


def calls_init_at_import(logical_id: str) -> bool:
    """Whether the handler module calls `init()` in its own body (at import: the cold start)."""
    tree = ast.parse(handler_path(logical_id).read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "init"
        for node in tree.body
    )


def template_environment(logical_id: str) -> dict[str, Any]:
    """The function's Environment as the template writes it: Globals, then its own."""
    template = _template()
    shared = template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    own = template["Resources"][logical_id]["Properties"].get("Environment", {}).get("Variables", {})
    return {**shared, **own}


def may_be_empty(value: Any) -> bool:
    """Whether a template value can come out "" (a literal, a condition's branch, a parameter
    whose default is empty): such a variable can be "off", so no function may require it."""
    if value == "":
        return True
    if isinstance(value, dict) and "Fn::If" in value:
        return any(may_be_empty(branch) for branch in value["Fn::If"][1:])
    if isinstance(value, dict) and "Ref" in value:
        parameter = _template().get("Parameters", {}).get(value["Ref"])
        return parameter is not None and parameter.get("Default") == ""
    return False
