"""Imports point down: the domain imports nothing above it."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

DOMAIN = Path(__file__).resolve().parents[2] / "layers" / "hub" / "hub" / "domain"

#: Besides the standard library: pydantic (the models), typing_extensions (pydantic's own
#: dependency, for TypeAliasType on 3.11) and jmespath (the expression language of duplicate keys
#: and mapping specs; pure, and loaded by botocore in every function anyway).
THIRD_PARTY = frozenset({"pydantic", "typing_extensions", "jmespath"})
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
