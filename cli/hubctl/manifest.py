"""The files `hubctl apply -f` reads: one or more documents (YAML, multi-document with `---`,
or JSON: one object or a list of them), each::

    kind: Tenant | Connection | Integration | Subscription
    tenant: tnt_acme          # the tenant it belongs to (a Tenant's own id)
    id: conn_erp              # the resource's id (connection_id / integration_id / subscription_id)
    spec: {...}               # the body the admin API takes, without the ids

A string `${NAME}` anywhere in a spec is replaced by the environment variable NAME (a missing
one is an error), so files need not hold secrets; `$${` writes a literal `${`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any


class ManifestError(Exception):
    """The file cannot be read or a document is not a resource hubctl can apply."""


class Kind(StrEnum):
    TENANT = "Tenant"
    CONNECTION = "Connection"
    INTEGRATION = "Integration"
    #: An outbound webhook subscription (issue 12).
    SUBSCRIPTION = "Subscription"


#: Apply order: a connection exists before the integration naming it, a tenant before both; a
#: subscription after the integrations its filter may name.
ORDER = {Kind.TENANT: 0, Kind.CONNECTION: 1, Kind.INTEGRATION: 2, Kind.SUBSCRIPTION: 3}
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_VARIABLE = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Resource:
    kind: Kind
    tenant: str
    id: str
    spec: dict[str, Any]
    #: Where it came from, for messages ("rest.yaml#2").
    origin: str = ""

    @property
    def name(self) -> str:
        return (
            f"{self.kind.value} {self.tenant}"
            if self.kind is Kind.TENANT
            else f"{self.kind.value} {self.tenant}/{self.id}"
        )


def substitute(node: Any, environ: Mapping[str, str], where: str = "spec") -> Any:
    """`node` with every `${NAME}` in its strings replaced by the variable's value."""
    if isinstance(node, dict):
        return {key: substitute(value, environ, f"{where}.{key}") for key, value in node.items()}
    if isinstance(node, list):
        return [substitute(value, environ, f"{where}[{i}]") for i, value in enumerate(node)]
    if isinstance(node, str):

        def value_of(match: re.Match[str]) -> str:
            if match.group(1):  # $${NAME}: a literal ${NAME}
                return "${" + match.group(2) + "}"
            name = match.group(2)
            if name not in environ:
                raise ManifestError(f"{where}: environment variable {name} is not set")
            return environ[name]

        return _VARIABLE.sub(value_of, node)
    return node


def _documents(text: str, path: Path) -> list[Any]:
    if path.suffix.lower() == ".json":
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as error:
            raise ManifestError(f"{path}: not JSON: {error}") from error
        return loaded if isinstance(loaded, list) else [loaded]
    try:
        import yaml  # noqa: PLC0415 - only YAML files need it (the `cli` extra)
    except ImportError as error:  # pragma: no cover - the dev and cli extras install it
        raise ManifestError(
            f"{path}: reading YAML needs PyYAML (pip install 'integration-hub[cli]'); or give a .json file"
        ) from error
    try:
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as error:
        raise ManifestError(f"{path}: not YAML: {error}") from error


def parse(documents: list[Any], origin: str, environ: Mapping[str, str]) -> list[Resource]:
    """Resources from loaded documents, in apply order (tenants, connections, integrations,
    subscriptions)."""
    resources: list[Resource] = []
    seen: set[tuple[Kind, str, str]] = set()
    for number, document in enumerate(documents, start=1):
        where = f"{origin}#{number}"
        if not isinstance(document, dict):
            raise ManifestError(f"{where}: a document is a mapping with kind, tenant, id and spec")
        unknown = set(document) - {"kind", "tenant", "id", "spec"}
        if unknown:
            raise ManifestError(f"{where}: unknown top-level field(s) {sorted(unknown)}; put them under spec")
        try:
            kind = Kind(str(document.get("kind")))
        except ValueError:
            raise ManifestError(
                f"{where}: kind must be one of {[k.value for k in Kind]}, got {document.get('kind')!r}"
            ) from None
        tenant = document.get("tenant")
        if not isinstance(tenant, str) or not _ID.match(tenant):
            raise ManifestError(f"{where}: tenant must be a tenant id")
        resource_id = document.get("id", tenant if kind is Kind.TENANT else None)
        if not isinstance(resource_id, str) or not _ID.match(resource_id):
            raise ManifestError(f"{where}: id must be a {kind.value.lower()} id (letters, digits, _ . : -)")
        if kind is Kind.TENANT and resource_id != tenant:
            raise ManifestError(f"{where}: a Tenant's id is its tenant")
        spec = document.get("spec", {})
        if not isinstance(spec, dict):
            raise ManifestError(f"{where}: spec must be a mapping")
        if (kind, tenant, resource_id) in seen:
            raise ManifestError(f"{where}: {kind.value} {tenant}/{resource_id} is defined twice")
        seen.add((kind, tenant, resource_id))
        resources.append(Resource(kind, tenant, resource_id, substitute(spec, environ), where))
    return sorted(resources, key=lambda r: ORDER[r.kind])


def load(path: Path, environ: Mapping[str, str] | None = None) -> list[Resource]:
    """The resources of a manifest file, `${NAME}`s filled from `environ` (default: os.environ)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ManifestError(f"cannot read {path}: {error.strerror}") from error
    return parse(_documents(text, path), path.name, os.environ if environ is None else environ)
