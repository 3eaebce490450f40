"""Where hubctl finds the admin API, its token and the default tenant: flags, then an explicitly
chosen profile, then the environment (HUB_ADMIN_URL, HUB_ADMIN_TOKEN, HUB_TENANT), then the
profile file's default profile.

The profile file is TOML (`~/.config/hubctl/config.toml`, or `$XDG_CONFIG_HOME/hubctl/...`, or
`$HUBCTL_CONFIG`)::

    default_profile = "local"

    [profiles.local]
    url = "http://127.0.0.1:3001"
    token_env = "HUB_LOCAL_ADMIN_TOKEN"   # the token from this variable (or `token = "..."`)
    tenant = "tnt_demo"                   # the tenant of commands given no --tenant

The token itself is never printed: `describe()` says only where it came from.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

URL_ENV = "HUB_ADMIN_URL"
TOKEN_ENV = "HUB_ADMIN_TOKEN"  # noqa: S105 - the variable's name, not a token
TENANT_ENV = "HUB_TENANT"
CONFIG_ENV = "HUBCTL_CONFIG"


class ConfigError(Exception):
    """The URL or token cannot be found, or the profile file is unreadable."""


@dataclass(frozen=True)
class Target:
    url: str
    token: str
    #: Where the token came from ("--token", "HUB_ADMIN_TOKEN", "profile local"), for messages.
    token_source: str

    def __repr__(self) -> str:  # never the token
        return f"Target(url={self.url!r}, token=<from {self.token_source}>)"


def config_path(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return base / "hubctl" / "config.toml"


def _profiles(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from error


def _profile(
    document: dict[str, Any], name: str, path: Path, env: dict[str, str], *, strict: bool = True
) -> dict[str, str]:
    """A profile's settings. `strict`: a token read from an unset variable is an error (not
    when only its tenant is wanted)."""
    profiles = document.get("profiles", {})
    profile = profiles.get(name) if isinstance(profiles, dict) else None
    if not isinstance(profile, dict):
        raise ConfigError(f"no profile {name!r} in {path}")
    found: dict[str, str] = {}
    for setting in ("url", "tenant"):
        if isinstance(profile.get(setting), str):
            found[setting] = profile[setting]
    if isinstance(profile.get("token"), str):
        found["token"] = profile["token"]
    elif isinstance(profile.get("token_env"), str):
        variable = profile["token_env"]
        if env.get(variable):
            found["token"] = env[variable]
        elif strict:
            raise ConfigError(f"profile {name!r} takes its token from ${variable}, which is not set")
    return found


def resolve(
    url: str | None,
    token: str | None,
    profile: str | None,
    environ: dict[str, str] | None = None,
) -> Target:
    """The admin API's URL and token. Each is taken from the first place that has it: the flag,
    the profile named by --profile, the environment, the file's default profile."""
    env = dict(os.environ if environ is None else environ)
    path = config_path(env)
    document = _profiles(path)
    sources: list[tuple[str, dict[str, str]]] = []
    if url or token:
        sources.append(("flag", {k: v for k, v in {"url": url, "token": token}.items() if v}))
    if profile:
        sources.append((f"profile {profile}", _profile(document, profile, path, env)))
    sources.append(
        ("environment", {k: env[v] for k, v in {"url": URL_ENV, "token": TOKEN_ENV}.items() if env.get(v)})
    )
    default = document.get("default_profile")
    if not profile and isinstance(default, str):
        sources.append((f"profile {default}", _profile(document, default, path, env)))

    def first(field: str) -> tuple[str, str] | None:
        for source, values in sources:
            if values.get(field):
                return values[field], source
        return None

    found_url, found_token = first("url"), first("token")
    if found_url is None:
        raise ConfigError(f"no admin API URL: pass --url, set {URL_ENV}, or add a profile to {path}")
    if found_token is None:
        raise ConfigError(f"no admin token: set {TOKEN_ENV}, pass --token, or add a profile to {path}")
    token_source = {"flag": "--token", "environment": TOKEN_ENV}.get(found_token[1], found_token[1])
    return Target(url=found_url[0].rstrip("/"), token=found_token[0], token_source=token_source)


def resolve_tenant(
    flag: str | None, profile: str | None, environ: dict[str, str] | None = None
) -> tuple[str, str] | None:
    """The tenant of a command and where it came from: --tenant, the tenant of the profile named
    by --profile, $HUB_TENANT, the default profile's tenant; None when none has one."""
    if flag:
        return flag, "--tenant"
    env = dict(os.environ if environ is None else environ)
    path = config_path(env)
    document = _profiles(path)
    if profile:
        named = _profile(document, profile, path, env, strict=False).get("tenant")
        if named:
            return named, f"profile {profile}"
    if env.get(TENANT_ENV):
        return env[TENANT_ENV], TENANT_ENV
    default = document.get("default_profile")
    if not profile and isinstance(default, str):
        tenant = _profile(document, default, path, env, strict=False).get("tenant")
        if tenant:
            return tenant, f"profile {default}"
    return None
