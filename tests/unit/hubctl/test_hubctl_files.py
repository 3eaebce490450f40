"""The file loader, the configuration (flags, environment, profiles) and the output formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hubctl.config import ConfigError, resolve
from hubctl.manifest import Kind, ManifestError, load, substitute
from hubctl.output import cell, fields, table

MULTI = """
kind: Integration
tenant: t1
id: int_1
spec: {name: Orders, connection_id: conn_1}
---
kind: Connection
tenant: t1
id: conn_1
spec:
  url: ${ERP_URL}
  auth: {kind: bearer, token: "${ERP_TOKEN}"}
---
kind: Tenant
tenant: t1
spec: {name: T1}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_multi_document_yaml_loads_in_apply_order_with_variables_filled(tmp_path):
    resources = load(write(tmp_path, "f.yaml", MULTI), {"ERP_URL": "https://erp", "ERP_TOKEN": "tok"})

    assert [(r.kind, r.id) for r in resources] == [
        (Kind.TENANT, "t1"),
        (Kind.CONNECTION, "conn_1"),
        (Kind.INTEGRATION, "int_1"),
    ]
    assert resources[1].spec == {"url": "https://erp", "auth": {"kind": "bearer", "token": "tok"}}
    assert resources[1].name == "Connection t1/conn_1"
    assert resources[0].name == "Tenant t1"


def test_json_files_take_one_object_or_a_list(tmp_path):
    one = {"kind": "Tenant", "tenant": "t1", "spec": {"name": "T"}}
    assert len(load(write(tmp_path, "a.json", json.dumps(one)), {})) == 1
    assert len(load(write(tmp_path, "b.json", json.dumps([one, {**one, "tenant": "t2"}])), {})) == 2


def test_a_missing_variable_is_an_error_naming_it_not_a_silent_empty_value(tmp_path):
    with pytest.raises(ManifestError, match=r"spec\.auth\.token: environment variable ERP_TOKEN is not set"):
        load(write(tmp_path, "f.yaml", MULTI), {"ERP_URL": "https://erp"})


def test_a_doubled_dollar_writes_a_literal_placeholder():
    assert substitute({"a": ["x $${KEEP} ${V}"]}, {"V": "v"}) == {"a": ["x ${KEEP} v"]}


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ("kind: Widget\ntenant: t1\nid: x\n", "kind must be one of"),
        ("kind: Connection\nid: c1\n", "tenant must be a tenant id"),
        ("kind: Connection\ntenant: t1\n", "id must be a connection id"),
        ("kind: Connection\ntenant: t1\nid: 'a#b'\n", "id must be"),
        ("kind: Connection\ntenant: t1\nid: c1\nurl: x\n", "unknown top-level field"),
        ("kind: Connection\ntenant: t1\nid: c1\nspec: [1]\n", "spec must be a mapping"),
        ("kind: Tenant\ntenant: t1\nid: t2\n", "a Tenant's id is its tenant"),
        ("- 1\n", "a document is a mapping"),
        ("kind: Tenant\ntenant: t1\n---\nkind: Tenant\ntenant: t1\n", "defined twice"),
        ("a: [\n", "not YAML"),
    ],
)
def test_malformed_documents_are_refused_with_where_and_why(tmp_path, document, problem):
    with pytest.raises(ManifestError, match=problem):
        load(write(tmp_path, "bad.yaml", document), {})


def test_an_unreadable_file_is_a_manifest_error(tmp_path):
    with pytest.raises(ManifestError, match="cannot read"):
        load(tmp_path / "missing.yaml", {})


# --- configuration ----------------------------------------------------------------------------

PROFILES = """
default_profile = "local"

[profiles.local]
url = "http://127.0.0.1:3001/"
token = "tok-local"

[profiles.prod]
url = "https://admin.example.com"
token_env = "PROD_HUB_TOKEN"
"""


def test_flags_win_over_the_environment_and_the_profile_file(tmp_path):
    env = {
        "HUBCTL_CONFIG": str(write(tmp_path, "c.toml", PROFILES)),
        "HUB_ADMIN_URL": "http://env",
        "HUB_ADMIN_TOKEN": "tok-env",
    }

    target = resolve("http://flag", "tok-flag", None, env)

    assert (target.url, target.token, target.token_source) == ("http://flag", "tok-flag", "--token")


def test_the_environment_wins_over_the_default_profile(tmp_path):
    env = {"HUBCTL_CONFIG": str(write(tmp_path, "c.toml", PROFILES)), "HUB_ADMIN_TOKEN": "tok-env"}

    target = resolve(None, None, None, env)

    assert (target.url, target.token, target.token_source) == (
        "http://127.0.0.1:3001",
        "tok-env",
        "HUB_ADMIN_TOKEN",
    )


def test_a_named_profile_wins_over_the_environment_and_may_read_its_token_from_a_variable(tmp_path):
    env = {
        "HUBCTL_CONFIG": str(write(tmp_path, "c.toml", PROFILES)),
        "HUB_ADMIN_URL": "http://env",
        "PROD_HUB_TOKEN": "tok-prod",
    }

    target = resolve(None, None, "prod", env)

    assert (target.url, target.token, target.token_source) == (
        "https://admin.example.com",
        "tok-prod",
        "profile prod",
    )
    assert "tok-prod" not in repr(target)


def test_the_profile_file_defaults_to_xdg_config_home(tmp_path):
    (tmp_path / "hubctl").mkdir()
    write(tmp_path / "hubctl", "config.toml", PROFILES)

    assert resolve(None, None, None, {"XDG_CONFIG_HOME": str(tmp_path)}).token == "tok-local"


@pytest.mark.parametrize(
    ("profile", "env", "problem"),
    [
        ("nope", {}, "no profile 'nope'"),
        ("prod", {}, r"takes its token from \$PROD_HUB_TOKEN"),
    ],
)
def test_profile_problems_are_config_errors(tmp_path, profile, env, problem):
    with pytest.raises(ConfigError, match=problem):
        resolve(None, None, profile, {"HUBCTL_CONFIG": str(write(tmp_path, "c.toml", PROFILES)), **env})


def test_without_a_url_or_a_token_the_error_says_where_to_put_them(tmp_path):
    env = {"HUBCTL_CONFIG": str(tmp_path / "none.toml")}
    with pytest.raises(ConfigError, match="no admin API URL"):
        resolve(None, None, None, env)
    with pytest.raises(ConfigError, match="no admin token"):
        resolve("http://x", None, None, env)


def test_a_broken_profile_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        resolve(None, None, None, {"HUBCTL_CONFIG": str(write(tmp_path, "c.toml", "x = [\n"))})


# --- output -----------------------------------------------------------------------------------


def test_a_table_aligns_columns_and_shows_missing_values_as_dashes():
    text = table(
        [
            {"key_id": "key_1", "label": "ERP", "integration_ids": ["a", "b"]},
            {"key_id": "key_22", "label": None},
        ],
        ["key_id", "label", "integration_ids"],
    )

    assert text.splitlines() == [
        "KEY_ID  LABEL  INTEGRATION_IDS",
        'key_1   ERP    ["a","b"]',
        "key_22  -      -",
    ]
    assert table([], ["a"]) == "(none)"


def test_fields_show_one_object_as_key_value_lines():
    assert fields({"ok": True, "lane": "pipeline", "moved": 3}).splitlines() == [
        "ok:    yes",
        "lane:  pipeline",
        "moved: 3",
    ]
    assert cell({"a": 1}) == '{"a":1}'
