"""The wiring (hub.wiring): one module per function, each validating its settings at the cold
start; `reset` forgets every builder's instance; the template gives each function every variable
its settings require."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from hub import config, wiring
from hub.adapters.aws import reset_clients
from hub.errors import ConfigurationError
from hub.wiring import registry
from tests.function_wiring import (
    ROOT,
    calls_init_at_import,
    functions,
    may_be_empty,
    template_environment,
    wiring_module,
)

HUB = ROOT / "layers" / "hub" / "hub"


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"hub.wiring.{name}")


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """No hub variable set (each test sets what it needs); nothing built before or after."""
    for name in config._ENV.values():
        monkeypatch.delenv(name, raising=False)
    wiring.reset()
    yield monkeypatch
    wiring.reset()


def _stand_ins(function: str) -> dict[str, str]:
    return {name: f"stand-in-{name.lower()}" for name in wiring.required_variables(function)}


# --- one module per function ------------------------------------------------------------------------


def test_every_function_of_the_template_initialises_its_own_wiring_module_at_import() -> None:
    modules = {logical_id: wiring_module(logical_id) for logical_id in functions()}

    assert sorted(modules.values()) == sorted(wiring.FUNCTIONS)  # one each, none left over
    assert [f for f in functions() if not calls_init_at_import(f)] == []


@pytest.mark.parametrize("logical_id", functions())
def test_every_variable_a_functions_settings_require_is_in_its_template_environment(logical_id: str) -> None:
    environment = template_environment(logical_id)
    required = wiring.required_variables(wiring_module(logical_id))

    assert {"HUB_TABLE_NAME", "HUB_PIPELINE_QUEUE_URL"} <= required
    assert sorted(required - set(environment)) == []
    # ... and never one the template may leave empty (an optional feature's "off")
    assert sorted(name for name in required if may_be_empty(environment[name])) == []


@pytest.mark.parametrize("function", wiring.FUNCTIONS)
def test_init_without_a_required_variable_fails_naming_it(clean: pytest.MonkeyPatch, function: str) -> None:
    module = _module(function)
    given = _stand_ins(function)
    for name, value in given.items():
        clean.setenv(name, value)
    assert isinstance(module.init(), module.SETTINGS)

    for missing in sorted(given):
        clean.delenv(missing)
        wiring.reset()
        with pytest.raises(ConfigurationError) as caught:
            module.init()
        assert caught.value.message.startswith("invalid or missing settings of the ")
        assert caught.value.message.endswith(f": {missing}")
        clean.setenv(missing, given[missing])


def test_an_empty_or_malformed_variable_is_named_too(clean: pytest.MonkeyPatch) -> None:
    for name, value in _stand_ins("admin").items():
        clean.setenv(name, value)
    clean.setenv("HUB_PIPELINE_DLQ_URL", "")
    clean.setenv("HUB_ADMIN_TOKEN_BURST", "many")

    with pytest.raises(ConfigurationError) as caught:
        _module("admin").init()

    assert caught.value.message == (
        "invalid or missing settings of the admin API: HUB_ADMIN_TOKEN_BURST, HUB_PIPELINE_DLQ_URL"
    )
    assert "many" not in str(caught.value)


def test_a_function_requires_only_what_it_needs(clean: pytest.MonkeyPatch) -> None:
    """The ingest API starts without the worker's retries or the admin API's DLQs."""
    for name, value in _stand_ins("ingest").items():
        clean.setenv(name, value)

    assert _module("ingest").init().schedule_group is None
    with pytest.raises(ConfigurationError, match="HUB_SCHEDULE_GROUP"):
        _module("worker").init()


@pytest.mark.parametrize("function", wiring.FUNCTIONS)
def test_a_function_builds_its_graph_from_its_own_settings_only(
    clean: pytest.MonkeyPatch, function: str
) -> None:
    """One settings model validated per process (each model costs its schema at the cold start):
    whatever a function keeps is built from its own settings, never the process-wide ones."""
    for name, value in {**_stand_ins(function), "HUB_CERTIFICATE_KEY_ID": "alias/stand-in"}.items():
        clean.setenv(name, value)
    clean.setenv("AWS_DEFAULT_REGION", "us-east-1")
    module = _module(function)
    kept = [
        value for name, value in vars(module).items() if hasattr(value, "cache_clear") and name != "settings"
    ]

    try:
        for builder in kept:
            builder()
        assert all(builder.cache_info().currsize == 1 for builder in kept)
        assert config.settings.cache_info().currsize == 0
    finally:
        reset_clients()


# --- reset ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", wiring.MODULES)
def test_every_cache_of_the_wiring_is_one_reset_clears(name: str) -> None:
    module = _module(name)
    caches = {n: value for n, value in vars(module).items() if hasattr(value, "cache_clear")}

    if name in wiring.FUNCTIONS:
        assert {"settings"} < set(caches)  # its settings and what it keeps
    if name == "common":
        assert caches == {}  # it builds; the functions keep
    assert [n for n, cache in caches.items() if cache not in registry.built()] == []


def test_no_module_of_the_wiring_caches_by_hand() -> None:
    """`@once`, never `lru_cache` / `cache` directly: reset would not know the builder."""
    for path in sorted((HUB / "wiring").glob("*.py")):
        if path.name == "registry.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named = [
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
            if "functools" in (alias.name, getattr(node, "module", None))
        ]
        assert named == [], path.name


def test_reset_forgets_every_instance_built(clean: pytest.MonkeyPatch) -> None:
    for function in wiring.FUNCTIONS:
        for name, value in _stand_ins(function).items():
            clean.setenv(name, value)
    clean.setenv("AWS_DEFAULT_REGION", "us-east-1")
    ingest, admin = _module("ingest"), _module("admin")
    throttle, guard, egress = ingest.tenant_throttle(), admin.failed_token_guard(), admin.egress_policy()
    for function in wiring.FUNCTIONS:
        _module(function).init()

    wiring.reset()

    assert [cache for cache in registry.built() if cache.cache_info().currsize] == []
    assert ingest.tenant_throttle() is not throttle
    assert admin.failed_token_guard() is not guard
    assert admin.egress_policy() is not egress


# --- the package's names --------------------------------------------------------------------------------


def test_every_name_the_package_offers_is_its_modules_own() -> None:
    for name, module in wiring._EXPORTS.items():
        found = getattr(wiring, name)
        assert found is getattr(_module(module), name)
        assert found.__module__ == f"hub.wiring.{module}" or hasattr(found, "__wrapped__"), name
    assert wiring.settings is config.settings
    with pytest.raises(AttributeError):
        wiring.no_such_builder  # noqa: B018


def _imports_of(path: Path) -> list[str]:
    """What `path` takes from hub.wiring: `wiring` for the package itself, else the names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    taken: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "hub":
            taken += [alias.name for alias in node.names if alias.name == "wiring"]
        elif isinstance(node, ast.ImportFrom) and node.module == "hub.wiring":
            taken += [alias.name for alias in node.names]
    return taken


def test_function_code_imports_the_wiring_modules_never_the_packages_names() -> None:
    """The package's names load their module at first use (tests, the local stack), which the
    IAM scan (tests/iam_scan.py) cannot follow: a handler and the hub import modules only."""
    paths = [*HUB.rglob("*.py"), *(ROOT / "functions").glob("*/*.py")]
    taken = {
        str(path.relative_to(ROOT)): names
        for path in paths
        if path.parent != HUB / "wiring"
        and (names := [name for name in _imports_of(path) if name not in wiring.MODULES])
    }

    assert taken == {}
