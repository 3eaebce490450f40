"""What every command works with: the parsed arguments, the admin API client, where to write,
the tenant it acts in, and one way to print each kind of answer in the chosen `-o` format."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import quote

from hubctl.client import AdminClient
from hubctl.config import TENANT_ENV, config_path, resolve_tenant
from hubctl.nouns import Noun
from hubctl.output import as_json, as_yaml, fields, table

EXIT_API, EXIT_USAGE, EXIT_UNREACHABLE = 1, 2, 3
OUTPUTS = ("table", "wide", "json", "yaml", "name")
#: A delivered message keeps its last error class in the record; shown as current it reads as
#: if the delivery had failed (issue 28): tables leave it to the attempt that had it.
DELIVERED = frozenset({"sent", "received_observed"})


class UsageError(Exception):
    """A command that cannot run as given (exit 2): nothing was sent."""


class NotFound(Exception):
    """What was asked for is not in the API's answer (exit 1, like the API's 404)."""


@dataclass
class Context:
    """What a command needs: the client, where to write, and the process's inputs."""

    args: argparse.Namespace
    client_factory: Callable[[], AdminClient]
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    stdin: TextIO = field(default_factory=lambda: sys.stdin)
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    _client: AdminClient | None = None

    @property
    def client(self) -> AdminClient:
        if self._client is None:
            self._client = self.client_factory()
        return self._client

    @property
    def output(self) -> str:
        return str(getattr(self.args, "output", "table"))

    @property
    def json(self) -> bool:
        """Whether the answer is printed as a document (json or yaml), not for people."""
        return self.output in ("json", "yaml")

    @property
    def wide(self) -> bool:
        return self.output == "wide"

    def say(self, text: str) -> None:
        print(text, file=self.out)

    def note(self, text: str) -> None:
        print(text, file=self.err)

    # --- the tenant ---------------------------------------------------------------------------

    def tenant(self) -> str:
        """The tenant the command acts in: --tenant, else the profile's or $HUB_TENANT."""
        found = resolve_tenant(getattr(self.args, "tenant", None), self.args.profile, self.environ)
        if found is None:
            raise UsageError(
                f'no tenant: pass --tenant TENANT_ID, set {TENANT_ENV}, or add tenant = "..." to '
                f"a profile of {config_path(self.environ)}"
            )
        return found[0]

    def explicit_tenant(self) -> str | None:
        """--tenant only (commands whose absent tenant means the platform: tokens, audit)."""
        return getattr(self.args, "tenant", None)

    # --- printing -------------------------------------------------------------------------------

    def document(self, document: Any) -> None:
        """The API's answer as it came: JSON or YAML."""
        self.say(as_yaml(document) if self.output == "yaml" else as_json(document))

    def show(self, document: Any, columns: Sequence[str] | None = None, noun: Noun | None = None) -> None:
        """A listing (`{"items", "next_cursor"}`) as a table, an object as fields; as a document
        with -o json|yaml; `kind/id` lines with -o name."""
        if noun is not None and columns is None:
            columns = noun.wide_columns() if self.wide else noun.columns
        if self.json:
            self.document(document)
            return
        listing = isinstance(document, dict) and isinstance(document.get("items"), list)
        if self.output == "name" and noun is not None:
            rows = document["items"] if listing else [document]
            for row in rows:
                self.say(f"{noun.name}/{row.get(noun.id_field)}")
            return
        if columns is not None and listing:
            self.say(table([_flat(row) for row in document["items"]], columns))
            if document.get("next_cursor"):
                self.note(f"more: add --cursor {document['next_cursor']}")
            return
        self.say(fields(document) if isinstance(document, dict) else str(document))

    def row(self, document: dict[str, Any], noun: Noun) -> None:
        """One resource as `get NOUN ID` shows it: a one-row table (a listing of one); the
        document as it came with -o json|yaml."""
        if self.json:
            self.document(document)
        else:
            self.show({"items": [document], "next_cursor": None}, noun=noun)

    def done(self, document: Any, noun: Noun, ident: str, line: str) -> None:
        """An action's answer: one line for people (`message/msg_1 reprocessed ...`), the
        document with -o json|yaml, `kind/id` with -o name."""
        if self.json:
            self.document(document)
        elif self.output == "name":
            self.say(f"{noun.name}/{ident}")
        else:
            self.say(f"{noun.name}/{ident} {line}")


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """A listing row for a table: an audit entry's actor by its label, its target compact; a
    delivered message without the error class of an earlier attempt."""
    actor = row.get("actor")
    if isinstance(actor, dict):
        row = {**row, "actor": actor.get("label") or actor.get("token_id")}
    target = row.get("target")
    if isinstance(target, dict):
        row = {**row, "target": " ".join(f"{k}={v}" for k, v in target.items())}
    if row.get("pipeline_status") in DELIVERED and row.get("last_retry_error_class"):
        row = {**row, "last_retry_error_class": None}
    return row


def p(value: str) -> str:
    """One path segment, escaped."""
    return quote(value, safe="")


def tenant_path(tenant: str, *parts: str) -> str:
    return "/".join(["/api/admin/tenants", p(tenant), *(p(part) for part in parts)])


def message_path(message_id: str, *parts: str) -> str:
    return "/".join(["/api/admin/messages", p(message_id), *parts])


def page(args: argparse.Namespace) -> dict[str, Any]:
    return {"limit": getattr(args, "limit", None), "cursor": getattr(args, "cursor", None)}
