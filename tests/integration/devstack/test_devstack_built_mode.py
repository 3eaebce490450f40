"""Built mode (`make run BUILT=1`): an instance sees its code, its layers and the standard
library, and nothing else - a handler that needs a package the build did not pack fails its
init, as it would on Lambda, instead of quietly importing it from the dev venv."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.__main__ import built_template
from devstack.lambda_runtime import FunctionPool, imported_outside
from tests.function_pools import pool_of

HANDLER = """
import json, sys
{imports}

def handler(event, context):
    return {{"path": sys.path, "answer": {answer}}}
"""


def _pool(tmp_path: Path, imports: str, answer: str, *, isolated: bool) -> FunctionPool:
    code = tmp_path / "code"
    layer = tmp_path / "layer" / "python"
    for folder in (code, layer):
        folder.mkdir(parents=True, exist_ok=True)
    (layer / "packed.py").write_text("VALUE = 'from the layer'\n")
    source = HANDLER.format(imports=imports, answer=answer)
    return pool_of(code, source, layer_dirs=(str(layer.parent), str(layer)), isolated=isolated)


@pytest.fixture
def pools() -> Iterator[list[FunctionPool]]:
    made: list[FunctionPool] = []
    yield made
    for pool in made:
        pool.close()


def test_an_isolated_instance_imports_from_its_layer_and_the_standard_library(tmp_path, pools):
    pools.append(pool := _pool(tmp_path, "import packed, decimal", "packed.VALUE", isolated=True))
    result = pool.invoke({})
    assert result.error is None, result.error
    assert result.payload["answer"] == "from the layer"
    assert not any("site-packages" in entry for entry in result.payload["path"])


def test_an_isolated_instance_refuses_a_package_of_the_dev_venv(tmp_path, pools):
    # yaml is in the dev venv (PyYAML) but not in this function's layer.
    pools.append(pool := _pool(tmp_path, "import yaml", "yaml.__name__", isolated=True))
    result = pool.invoke({})
    assert result.error is not None
    assert result.error["errorType"] == "Runtime.ImportModuleError"
    assert "yaml" in result.error["errorMessage"]


def test_an_isolated_instance_refuses_the_source_tree_at_init_and_at_run_time(tmp_path, pools):
    # hub and hubctl are installed editable: the dev venv's finder maps them to the source tree.
    pools.append(at_init := _pool(tmp_path / "a", "import hubctl", "1", isolated=True))
    result = at_init.invoke({})
    assert result.error is not None
    assert result.error["errorType"] == "Runtime.ImportModuleError"
    assert "hubctl" in result.error["errorMessage"]

    pools.append(at_run := _pool(tmp_path / "b", "", "__import__('hub').__file__", isolated=True))
    result = at_run.invoke({})
    assert result.error is not None
    assert result.error["errorType"] == "ModuleNotFoundError"


def test_a_module_that_reaches_into_site_packages_fails_the_init(tmp_path, pools):
    # Past the sys.path fence by hand: the check of what the init imported still catches it.
    site = next(entry for entry in sys.path if entry.endswith("site-packages"))
    imports = f"sys.path.append({site!r}); import yaml"
    pools.append(pool := _pool(tmp_path, imports, "1", isolated=True))
    result = pool.invoke({})
    assert result.error is not None
    assert "imported from outside the function and its layers" in result.error["errorMessage"]
    assert "yaml" in result.error["errorMessage"]


def test_the_source_mode_instance_still_sees_the_dev_venv(tmp_path, pools):
    pools.append(pool := _pool(tmp_path, "import yaml", "yaml.__name__", isolated=False))
    result = pool.invoke({})
    assert result.error is None, result.error
    assert result.payload["answer"] == "yaml"


def test_imported_outside_names_only_modules_outside_the_roots(tmp_path):
    before = {name for name in sys.modules if name != "yaml"}
    import yaml  # noqa: PLC0415

    strays = [s for s in imported_outside(before, [str(tmp_path)]) if s.lstrip("_").startswith("yaml")]
    assert any(stray.startswith("yaml ") for stray in strays)
    site_root = str(Path(yaml.__file__).parent.parent)
    assert not [s for s in imported_outside(before, [site_root]) if s.lstrip("_").startswith("yaml")]


def test_built_template_points_at_the_build_or_refuses(tmp_path):
    assert built_template({}) is None
    with pytest.raises(SystemExit, match=r"no template\.yaml"):
        built_template({"HUB_LOCAL_BUILT_DIR": str(tmp_path)})
    (tmp_path / "template.yaml").write_text("Resources: {}\n")
    assert built_template({"HUB_LOCAL_BUILT_DIR": str(tmp_path)}) == tmp_path / "template.yaml"
