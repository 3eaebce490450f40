"""`hubctl`: the operator's command line for the hub's admin API (docs/hubctl.md).

Exit status: 0 done; 1 the API refused (its error code and message are printed) or a preview /
connection test failed; 2 a usage, configuration or file error; 3 the API could not be reached.
"""

from __future__ import annotations

import argparse
import base64
import getpass
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from hubctl import __version__
from hubctl.client import AdminClient, Answer, ApiError, TransportError
from hubctl.config import ConfigError, resolve
from hubctl.manifest import Kind, ManifestError, Resource, load
from hubctl.output import as_json, cell, fields, table
from hubctl.plan import Action, diff_text, masked, normalized, plan

EXIT_API, EXIT_USAGE, EXIT_UNREACHABLE = 1, 2, 3
SHOWN_ONCE = "Store it now: the hub keeps only its hash and cannot show it again."

TENANT_COLUMNS = ("tenant_id", "name", "default_mode", "state", "created_at")
INTEGRATION_COLUMNS = ("integration_id", "name", "mode", "connection_id", "version", "last_received_at")
CONNECTION_COLUMNS = ("connection_id", "name", "protocol", "platform", "url", "version")
SUBSCRIPTION_COLUMNS = ("subscription_id", "url", "event_types", "integration_ids", "enabled", "version")
FAILURE_COLUMNS = (
    "event_id",
    "event_type",
    "failed_at",
    "error_class",
    "dest_status",
    "attempts",
    "replayed_at",
)
KEY_COLUMNS = (
    "key_id",
    "prefix",
    "label",
    "state",
    "created_at",
    "last_used_day",
    "expires_at",
    "integration_ids",
)
TOKEN_COLUMNS = ("token_id", "prefix", "label", "role", "tenant_id", "created_at", "revoked_at")
MESSAGE_COLUMNS = (
    "message_id",
    "integration_id",
    "message_type",
    "pipeline_status",
    "dest_status",
    "last_retry_error_class",
    "retry_count",
    "updated_at",
)
AUDIT_COLUMNS = ("at", "actor", "action", "target")
CALLBACK_COLUMNS = ("received_at", "status", "occurred_at", "external_ref", "detail", "callback_id")
TABS = ("error", "waiting", "dead_letter", "all")


class UsageError(Exception):
    """A command that cannot run as given (exit 2)."""


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
    def json(self) -> bool:
        return bool(self.args.output == "json")

    def say(self, text: str) -> None:
        print(text, file=self.out)

    def note(self, text: str) -> None:
        print(text, file=self.err)

    def show(self, document: Any, columns: Sequence[str] | None = None) -> None:
        """A listing (`{"items", "next_cursor"}`) as a table, an object as fields; JSON as is."""
        if self.json:
            self.say(as_json(document))
            return
        if columns is not None and isinstance(document, dict) and isinstance(document.get("items"), list):
            rows = [_flat(row) for row in document["items"]]
            self.say(table(rows, columns))
            if document.get("next_cursor"):
                self.note(f"more: add --cursor {document['next_cursor']}")
            return
        self.say(fields(document) if isinstance(document, dict) else str(document))


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """A listing row for a table: an audit entry's actor by its label, its target compact."""
    actor = row.get("actor")
    if isinstance(actor, dict):
        row = {**row, "actor": actor.get("label") or actor.get("token_id")}
    target = row.get("target")
    if isinstance(target, dict):
        row = {**row, "target": " ".join(f"{k}={v}" for k, v in target.items())}
    return row


def _p(value: str) -> str:
    """One path segment, escaped."""
    return quote(value, safe="")


def _tenant_path(tenant: str, *parts: str) -> str:
    return "/".join(["/api/admin/tenants", _p(tenant), *(_p(p) for p in parts)])


def _page(args: argparse.Namespace) -> dict[str, Any]:
    return {"limit": args.limit, "cursor": args.cursor}


# --- get / list / delete / disable / enable ---------------------------------------------------


def cmd_list(ctx: Context) -> int:
    args = ctx.args
    if args.what == "tenants":
        ctx.show(ctx.client.get("/api/admin/tenants", **_page(args)).body, TENANT_COLUMNS)
        return 0
    tenant = _need_tenant(args)
    if args.what == "integrations":
        ctx.show(
            ctx.client.get(_tenant_path(tenant, "integrations"), **_page(args)).body, INTEGRATION_COLUMNS
        )
    else:
        ctx.show(ctx.client.get(_tenant_path(tenant, "connections"), **_page(args)).body, CONNECTION_COLUMNS)
    return 0


def cmd_get(ctx: Context) -> int:
    args = ctx.args
    if args.what == "tenant":
        ctx.show(ctx.client.get(_tenant_path(args.id)).body)
    else:
        kind = "integrations" if args.what == "integration" else "connections"
        ctx.show(ctx.client.get(_tenant_path(_need_tenant(args), kind, args.id)).body)
    return 0


def cmd_delete(ctx: Context) -> int:
    args = ctx.args
    kind = "integrations" if args.what == "integration" else "connections"
    ctx.client.call("DELETE", _tenant_path(_need_tenant(args), kind, args.id), if_match=args.if_version)
    ctx.show(
        {"deleted": f"{args.what} {args.tenant}/{args.id}"}
        if not ctx.json
        else {"deleted": True, "id": args.id}
    )
    return 0


def cmd_tenant_state(ctx: Context) -> int:
    answer = ctx.client.post(_tenant_path(ctx.args.id, ctx.args.command))
    ctx.show(answer.body)
    return 0


def _need_tenant(args: argparse.Namespace) -> str:
    if not args.tenant:
        raise UsageError("--tenant is required here")
    return str(args.tenant)


# --- keys and tokens --------------------------------------------------------------------------


def _show_secret(ctx: Context, answer: Answer, what: str) -> None:
    ctx.show(answer.body)
    ctx.note(f"warning: this is the only time the {what} is shown. {SHOWN_ONCE}")


def cmd_keys(ctx: Context) -> int:
    args = ctx.args
    base = _tenant_path(args.tenant, "api-keys")
    if args.action == "create":
        body: dict[str, Any] = {}
        if args.label:
            body["label"] = args.label
        if args.integration:
            body["integration_ids"] = args.integration
        _show_secret(ctx, ctx.client.post(base, body), "key")
    elif args.action == "list":
        ctx.show(ctx.client.get(base, **_page(args)).body, KEY_COLUMNS)
    elif args.action == "revoke":
        ctx.show(ctx.client.post(f"{base}/{_p(args.key_id)}/revoke").body)
    else:
        body = {} if args.grace_hours is None else {"grace_hours": args.grace_hours}
        _show_secret(ctx, ctx.client.post(f"{base}/{_p(args.key_id)}/rotate", body), "new key")
    return 0


def cmd_tokens(ctx: Context) -> int:
    args = ctx.args
    if args.action == "create":
        body = {"label": args.label, "role": args.role, "tenant_id": args.tenant}
        _show_secret(ctx, ctx.client.post("/api/admin/tokens", body), "token")
    elif args.action == "list":
        ctx.show(
            ctx.client.get("/api/admin/tokens", tenant_id=args.tenant, **_page(args)).body, TOKEN_COLUMNS
        )
    else:
        ctx.show(ctx.client.post(f"/api/admin/tokens/{_p(args.token_id)}/revoke").body)
    return 0


def cmd_audit(ctx: Context) -> int:
    args = ctx.args
    path = _tenant_path(args.tenant, "audit") if args.tenant else "/api/admin/audit"
    ctx.show(ctx.client.get(path, **_page(args)).body, AUDIT_COLUMNS)
    return 0


# --- messages, DLQ ----------------------------------------------------------------------------


def cmd_messages(ctx: Context) -> int:
    args = ctx.args
    if args.action == "list":
        filters = {"integration_id": args.integration, "since": args.since, "until": args.until}
        query = {
            "tenant_id": args.tenant,
            "tab": args.tab,
            **{name: value for name, value in filters.items() if value},
            **_page(args),
        }
        ctx.show(ctx.client.get("/api/admin/queue", **query).body, MESSAGE_COLUMNS)
    elif args.action == "show":
        ctx.show(ctx.client.get(f"/api/admin/messages/{_p(args.message_id)}").body)
    elif args.action == "callbacks":
        path = f"/api/admin/messages/{_p(args.message_id)}/callbacks"
        ctx.show(ctx.client.get(path, **_page(args)).body, CALLBACK_COLUMNS)
    elif args.action == "reprocess":
        ctx.show(ctx.client.post("/api/edi-hub/reprocess-message", {"message_id": args.message_id}).body)
    else:
        ctx.show(ctx.client.post(f"/api/admin/messages/{_p(args.message_id)}/cancel-retry").body)
    return 0


def cmd_connections(ctx: Context) -> int:
    """`connections callback-token <id>`: mint (rotating the current one), show or revoke the
    connection's status-callback token."""
    args = ctx.args
    path = _tenant_path(args.tenant, "connections", args.connection_id, "callback-token")
    if args.show:
        ctx.show(ctx.client.get(path).body)
    elif args.revoke:
        ctx.client.call("DELETE", path)
        ctx.say(f"callback token of {args.connection_id} revoked: its callbacks now answer 401")
    else:
        body = {} if args.grace_hours is None else {"grace_hours": args.grace_hours}
        _show_secret(ctx, ctx.client.post(path, body), "callback token")
    return 0


def cmd_dlq(ctx: Context) -> int:
    ctx.show(ctx.client.post(f"/api/admin/dlq/{_p(ctx.args.lane)}/redrive").body)
    return 0


# --- certificates -----------------------------------------------------------------------------


def _pfx_password(ctx: Context) -> str:
    if ctx.args.password_stdin:
        line = ctx.stdin.readline()
        return line.removesuffix("\n").removesuffix("\r")
    return getpass.getpass("PFX password: ")


def cmd_certificates(ctx: Context) -> int:
    args = ctx.args
    path = f"/api/admin/connections/{_p(args.connection_id)}/certificate"
    if args.action == "show":
        ctx.show(ctx.client.get(path, tenant_id=args.tenant).body)
        return 0
    try:
        pfx = Path(args.pfx).read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {args.pfx}: {error.strerror}") from error
    body = {
        "tenant_id": args.tenant,
        "pkcs12_base64": base64.b64encode(pfx).decode("ascii"),
        "password": _pfx_password(ctx),
    }
    ctx.show(ctx.client.post(path, body).body)
    return 0


# --- preview and test -------------------------------------------------------------------------


def _payload(source: str, stdin: TextIO) -> Any:
    """A sample payload: JSON when it parses as JSON (a .json file must), else the text (XML)."""
    import json  # noqa: PLC0415

    try:
        text = stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot read {source}: {error.strerror}") from error
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        if source.lower().endswith(".json"):
            raise UsageError(f"{source}: not JSON: {error}") from error
        return text


def cmd_preview(ctx: Context) -> int:
    args = ctx.args
    path = _tenant_path(
        args.tenant, "integrations", args.integration_id, "message-types", args.message_type, "preview"
    )
    answer = ctx.client.post(path, {"payload": _payload(args.payload, ctx.stdin)}).body
    if ctx.json:
        ctx.say(as_json(answer))
    elif isinstance(answer, dict) and answer.get("ok"):
        body = answer.get("body")
        ctx.say(f"ok: content_type {answer.get('content_type')}")
        if answer.get("duplicate_key") is not None:
            ctx.say(f"duplicate_key: {cell(answer['duplicate_key'])}")
        ctx.say(body if isinstance(body, str) else as_json(body))
    else:
        error = answer.get("error", {}) if isinstance(answer, dict) else {}
        ctx.say(f"mapping failed: {error.get('code', '?')}: {error.get('message', '')}")
        if error.get("details"):
            ctx.say(as_json(error["details"]))
    return 0 if isinstance(answer, dict) and answer.get("ok") else EXIT_API


def cmd_test(ctx: Context) -> int:
    args = ctx.args
    answer = ctx.client.post(_tenant_path(args.tenant, "connections", args.connection_id, "test")).body
    ctx.show(answer)
    return 0 if isinstance(answer, dict) and answer.get("ok") else EXIT_API


# --- outbound webhook subscriptions -----------------------------------------------------------


def cmd_subscriptions(ctx: Context) -> int:  # noqa: PLR0911 - one branch per action
    args = ctx.args
    base = _tenant_path(args.tenant, "subscriptions")
    own = f"{base}/{_p(args.subscription_id)}" if getattr(args, "subscription_id", None) else base
    if args.action == "list":
        ctx.show(ctx.client.get(base, **_page(args)).body, SUBSCRIPTION_COLUMNS)
        return 0
    if args.action == "show":
        ctx.show(ctx.client.get(own).body)
        return 0
    if args.action == "create":
        body: dict[str, Any] = {"url": args.url, "event_types": args.event}
        if args.integration:
            body["integration_ids"] = args.integration
        if args.description:
            body["description"] = args.description
        _show_secret(ctx, ctx.client.post(base, body), "signing secret")
        return 0
    if args.action == "delete":
        ctx.client.call("DELETE", own, if_match=args.if_version)
        ctx.show(
            {"deleted": True, "id": args.subscription_id} if ctx.json else {"deleted": args.subscription_id}
        )
        return 0
    if args.action == "rotate":
        rotation = {} if args.grace_hours is None else {"grace_hours": args.grace_hours}
        _show_secret(ctx, ctx.client.post(f"{own}/rotate-secret", rotation), "new signing secret")
        return 0
    if args.action == "failed":
        ctx.show(ctx.client.get(f"{own}/failed-deliveries", **_page(args)).body, FAILURE_COLUMNS)
        return 0
    if args.action == "replay":
        if (args.event is None) == (args.since is None):
            raise UsageError("give --event EVENT_ID or --since TIME (one of them)")
        replay = {"event_id": args.event} if args.event else {"since": args.since}
        ctx.show(ctx.client.post(f"{own}/failed-deliveries/replay", replay).body)
        return 0
    if args.action == "disable":
        ctx.show(ctx.client.post(f"{own}/disable", {"reason": args.reason} if args.reason else None).body)
        return 0
    path = {"enable": "enable", "retire-secrets": "retire-secrets"}[args.action]
    ctx.show(ctx.client.post(f"{own}/{path}").body)
    return 0


# --- pause and circuit breaker (issue 12) ------------------------------------------------------


def cmd_connection_state(ctx: Context) -> int:
    """pause / resume / state of a connection (operator role for pause and resume)."""
    args = ctx.args
    base = f"/api/admin/connections/{_p(args.connection_id)}"
    if args.command == "state":
        answer = ctx.client.get(f"{base}/state", tenant_id=args.tenant).body
    else:
        # Connection ids are unique within a tenant only: the tenant is part of the address.
        answer = ctx.client.call("POST", f"{base}/{args.command}", params={"tenant_id": args.tenant}).body
    ctx.show(answer)
    return 0


# --- apply ------------------------------------------------------------------------------------


_COLLECTIONS = {
    Kind.CONNECTION: "connections",
    Kind.INTEGRATION: "integrations",
    Kind.SUBSCRIPTION: "subscriptions",
}


def _paths(resource: Resource) -> tuple[str, str]:
    """(the resource's own path, the collection it is created in)."""
    if resource.kind is Kind.TENANT:
        return _tenant_path(resource.tenant), "/api/admin/tenants"
    collection = _tenant_path(resource.tenant, _COLLECTIONS[resource.kind])
    return f"{collection}/{_p(resource.id)}", collection


def _id_field(kind: Kind) -> str:
    return {
        Kind.TENANT: "tenant_id",
        Kind.CONNECTION: "connection_id",
        Kind.INTEGRATION: "integration_id",
        Kind.SUBSCRIPTION: "subscription_id",
    }[kind]


def apply_one(ctx: Context, resource: Resource) -> dict[str, Any]:
    """Reads the current state, shows the diff and (unless --dry-run) creates or updates."""
    own, collection = _paths(resource)
    try:
        current: Answer | None = ctx.client.get(own)
    except ApiError as error:
        if error.status != 404:
            raise
        current = None
    view = current.body if current is not None and isinstance(current.body, dict) else None
    result = plan(
        view,
        resource.spec,
        current.version if current is not None else None,
        compared=normalized(resource.kind, resource.spec),
    )
    resend = (
        result.action is Action.UNCHANGED
        and ctx.args.resend_secrets
        and masked(resource.spec) != resource.spec
    )
    report: dict[str, Any] = {
        "kind": resource.kind.value,
        "tenant": resource.tenant,
        "id": resource.id,
        "action": "update" if resend else result.action.value,
        "changes": [
            {"path": c.path, "before": _jsonable(c.before), "after": c.after} for c in result.changes
        ],
        "version": result.version,
    }
    if not ctx.json:
        ctx.say(diff_text(resource.name, result) + ("  (secrets re-sent)" if resend else ""))
    if ctx.args.dry_run or (result.action is Action.UNCHANGED and not resend):
        return report
    if result.action is Action.CREATE:
        answer = ctx.client.post(collection, {_id_field(resource.kind): resource.id, **resource.spec})
    elif resource.kind is Kind.TENANT:
        answer = ctx.client.call("PATCH", own, json=resource.spec)
    else:
        body = resource.spec
        if resource.kind is Kind.SUBSCRIPTION and not _receiver_moves(view, body):
            # Its secret changes by rotation, or with a url on another host (the file's secret
            # is then sent: the hub binds the signing secret to the receiver).
            body = {key: value for key, value in body.items() if key != "secret"}
        answer = ctx.client.call("PUT", own, json=body, if_match=result.version)
    report["version"] = answer.version
    if not ctx.json:
        done = "created" if result.action is Action.CREATE else "updated"
        ctx.say(f"  {done}" + (f" (version {answer.version})" if answer.version is not None else ""))
    secret = answer.body.get("secret") if isinstance(answer.body, dict) else None
    if resource.kind is Kind.SUBSCRIPTION and result.action is Action.CREATE and secret:
        # The signing secret the hub generated (or took from the file): shown this once.
        report["secret"] = secret
        if not ctx.json:
            ctx.say(f"  secret: {secret}")
            ctx.note(f"warning: this is the only time the signing secret is shown. {SHOWN_ONCE}")
    return report


def _receiver_moves(view: dict[str, Any] | None, spec: dict[str, Any]) -> bool:
    """Whether the file points a subscription at another scheme, host or port than the hub's."""
    from hub.domain.destination_binding import subscription_moved  # noqa: PLC0415

    before, after = (view or {}).get("url"), spec.get("url")
    return isinstance(before, str) and isinstance(after, str) and subscription_moved(before, after)


def _jsonable(value: Any) -> Any:
    from hubctl.plan import ABSENT  # noqa: PLC0415

    return None if value is ABSENT else value


def cmd_apply(ctx: Context) -> int:
    args = ctx.args
    try:
        resources = load(Path(args.file), ctx.environ)
    except ManifestError as error:
        raise UsageError(str(error)) from error
    if not resources:
        raise UsageError(f"{args.file}: no resources")
    reports = []
    for resource in resources:
        try:
            reports.append(apply_one(ctx, resource))
        except ApiError as error:
            if error.code == "precondition_failed":
                error.message += f" ({resource.name} changed since hubctl read it: run apply again)"
            elif error.code == "secret_required":
                fields = ", ".join(str(d.get("field")) for d in error.details or [] if isinstance(d, dict))
                error.message += (
                    f" ({resource.name}, {resource.origin}: the file moves it to another host; "
                    f"put {fields or 'the secret'} in the file, the hub keeps a secret only for "
                    "the host it was given for)"
                )
            else:
                error.message += f" ({resource.name}, {resource.origin})"
            raise
    if ctx.json:
        ctx.say(as_json({"dry_run": bool(args.dry_run), "resources": reports}))
    elif args.dry_run:
        ctx.say("dry run: nothing was changed")
    return 0


# --- the parser -------------------------------------------------------------------------------


def _paged(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, help="at most this many (1-100)")
    parser.add_argument("--cursor", help="the next_cursor of the previous page")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hubctl", description="The Integration Hub's admin API from the command line (docs/hubctl.md)."
    )
    parser.add_argument("--version", action="version", version=f"hubctl {__version__}")
    parser.add_argument("--url", help="admin API URL (else $HUB_ADMIN_URL or the profile)")
    parser.add_argument(
        "--token", help="admin token (prefer $HUB_ADMIN_TOKEN or a profile: flags stay in history)"
    )
    parser.add_argument("--profile", help="a profile of ~/.config/hubctl/config.toml")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _configuration_commands(commands)
    _credential_commands(commands)
    _operation_commands(commands)
    _output_anywhere(parser)
    return parser


def _output_anywhere(parser: argparse.ArgumentParser) -> None:
    """`-o json` after the command too (`hubctl keys list --tenant t -o json`): each command's
    own option, which overrides the global one only when given."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
                    _output_anywhere(sub)
                elif "--output" not in sub._option_string_actions:
                    sub.add_argument("-o", "--output", choices=("table", "json"), default=argparse.SUPPRESS)


Commands = Any  # argparse's _SubParsersAction, private


def _configuration_commands(commands: Commands) -> None:
    apply = commands.add_parser(
        "apply", help="create or update tenants, connections and integrations from a file"
    )
    apply.add_argument("-f", "--file", required=True, help="YAML or JSON file (examples/)")
    apply.add_argument("--dry-run", action="store_true", help="show the diff, change nothing")
    apply.add_argument(
        "--resend-secrets",
        action="store_true",
        help="also update resources whose only difference may be a secret's value (views mask secrets)",
    )
    apply.set_defaults(func=cmd_apply)

    listing = commands.add_parser("list", help="list tenants, integrations or connections")
    listing.add_argument("what", choices=("tenants", "integrations", "connections"))
    listing.add_argument("--tenant")
    _paged(listing)
    listing.set_defaults(func=cmd_list)

    get = commands.add_parser("get", help="show a tenant, an integration or a connection")
    get.add_argument("what", choices=("tenant", "integration", "connection"))
    get.add_argument("id")
    get.add_argument("--tenant", help="the tenant (integration and connection ids are unique within one)")
    get.set_defaults(func=cmd_get)

    delete = commands.add_parser("delete", help="delete an integration or a connection")
    delete.add_argument("what", choices=("integration", "connection"))
    delete.add_argument("id")
    delete.add_argument("--tenant", required=True)
    delete.add_argument("--if-version", type=int, help="only if it is still at this version (If-Match)")
    delete.set_defaults(func=cmd_delete)

    for verb in ("disable", "enable"):
        state = commands.add_parser(verb, help=f"{verb} a tenant (tenants are disabled, never deleted)")
        state.add_argument("what", choices=("tenant",))
        state.add_argument("id")
        state.set_defaults(func=cmd_tenant_state, command=verb)


def _credential_commands(commands: Commands) -> None:
    keys = commands.add_parser("keys", help="partners' API keys").add_subparsers(dest="action", required=True)
    create = keys.add_parser("create", help="a new key (shown once)")
    create.add_argument("--tenant", required=True)
    create.add_argument("--label")
    create.add_argument("--integration", action="append", help="limit the key to it (repeatable)")
    listed = keys.add_parser("list")
    listed.add_argument("--tenant", required=True)
    _paged(listed)
    revoke = keys.add_parser("revoke")
    revoke.add_argument("key_id")
    revoke.add_argument("--tenant", required=True)
    rotate = keys.add_parser("rotate", help="a new key; the old one works for the grace period")
    rotate.add_argument("key_id")
    rotate.add_argument("--tenant", required=True)
    rotate.add_argument("--grace-hours", type=int, help="how long the old key keeps working (default 24)")
    for sub in (create, listed, revoke, rotate):
        sub.set_defaults(func=cmd_keys)

    tokens = commands.add_parser("tokens", help="admin tokens").add_subparsers(dest="action", required=True)
    token_create = tokens.add_parser("create", help="a new admin token (shown once)")
    token_create.add_argument("--label", required=True)
    token_create.add_argument("--role", required=True, choices=("viewer", "operator", "admin"))
    token_create.add_argument("--tenant", help="the tenant it is limited to (absent: a platform token)")
    token_list = tokens.add_parser("list")
    token_list.add_argument("--tenant", help="its tenant's tokens (absent: platform tokens)")
    _paged(token_list)
    token_revoke = tokens.add_parser("revoke")
    token_revoke.add_argument("token_id")
    for sub in (token_create, token_list, token_revoke):
        sub.set_defaults(func=cmd_tokens)

    audit = commands.add_parser("audit", help="the audit log, newest first")
    audit.add_argument("--tenant", help="its tenant's entries (absent: platform entries)")
    _paged(audit)
    audit.set_defaults(func=cmd_audit)


def _queue_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tab", choices=TABS, default="error")
    parser.add_argument("--integration", help="only this integration's messages")
    parser.add_argument("--since", help="ISO 8601 with offset: last change (tab all: receipt) at or after")
    parser.add_argument("--until", help="ISO 8601 with offset: before")


def _operation_commands(commands: Commands) -> None:
    messages = commands.add_parser("messages", help="the queue tabs and operator actions")
    actions = messages.add_subparsers(dest="action", required=True)
    message_list = actions.add_parser("list")
    message_list.add_argument("--tenant", required=True)
    _queue_filters(message_list)
    _paged(message_list)
    for name, text in (("show", None), ("reprocess", "a new execution"), ("cancel", "cancel its retries")):
        sub = actions.add_parser(name, help=text)
        sub.add_argument("message_id")
    callbacks = actions.add_parser(
        "callbacks", help="its delivery-status callbacks as received, newest first"
    )
    callbacks.add_argument("message_id")
    _paged(callbacks)
    for sub in actions.choices.values():
        sub.set_defaults(func=cmd_messages)

    connections = commands.add_parser("connections", help="a connection's status-callback token")
    connection_actions = connections.add_subparsers(dest="action", required=True)
    token = connection_actions.add_parser(
        "callback-token", help="mint (shown once; rotates the current one), --show or --revoke"
    )
    token.add_argument("connection_id")
    token.add_argument("--tenant", required=True)
    token.add_argument(
        "--grace-hours", type=int, help="how long the previous token keeps working (default 24)"
    )
    which = token.add_mutually_exclusive_group()
    which.add_argument("--show", action="store_true", help="the token's metadata (never the token)")
    which.add_argument("--revoke", action="store_true", help="delete it: callbacks answer 401")
    token.set_defaults(func=cmd_connections)

    dlq = commands.add_parser("dlq", help="dead-letter queues").add_subparsers(dest="action", required=True)
    redrive = dlq.add_parser("redrive", help="move a lane's DLQ back to its work queue")
    redrive.add_argument("lane")
    redrive.set_defaults(func=cmd_dlq)

    certs = commands.add_parser("certificates", help="connections' client certificates (mTLS)")
    cert_actions = certs.add_subparsers(dest="action", required=True)
    upload = cert_actions.add_parser("upload", help="upload or renew a PKCS#12 (.pfx/.p12) certificate")
    upload.add_argument("connection_id")
    upload.add_argument("--tenant", required=True)
    upload.add_argument("--pfx", required=True, help="the .pfx/.p12 file")
    upload.add_argument(
        "--password-stdin", action="store_true", help="read the password from stdin (else it is prompted for)"
    )
    show = cert_actions.add_parser("show", help="the stored certificate's metadata and expiry badge")
    show.add_argument("connection_id")
    show.add_argument("--tenant", required=True)
    for sub in (upload, show):
        sub.set_defaults(func=cmd_certificates)

    preview = commands.add_parser("preview", help="run a message type's mapping on a sample payload")
    preview.add_argument("integration_id")
    preview.add_argument("message_type")
    preview.add_argument("--tenant", required=True)
    preview.add_argument("--payload", required=True, help="a file (JSON, or XML/text), or - for stdin")
    preview.set_defaults(func=cmd_preview)

    _subscription_commands(commands)

    test = commands.add_parser("test", help="one harmless call to a connection (TLS, WSDL, GET)")
    test.add_argument("connection_id")
    test.add_argument("--tenant", required=True)
    test.set_defaults(func=cmd_test)
    _connection_state_commands(commands)


def _connection_state_commands(commands: Commands) -> None:
    for name, text in (
        ("pause", "pause a connection: deliveries wait on it until resume"),
        ("resume", "resume a connection: its held messages are released at the bounded rate"),
        ("state", "a connection's pause and circuit-breaker state"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument("connection_id")
        command.add_argument("--tenant", required=True)
        command.set_defaults(func=cmd_connection_state)


def _subscription_commands(commands: Commands) -> None:
    group = commands.add_parser("subscriptions", help="outbound webhook subscriptions (signed events)")
    actions = group.add_subparsers(dest="action", required=True)
    listed = actions.add_parser("list")
    _paged(listed)
    create = actions.add_parser("create", help="a new subscription (its signing secret is shown once)")
    create.add_argument("--url", required=True, help="https (plain http to 127.0.0.1 only)")
    create.add_argument(
        "--event", action="append", required=True, help="an event type, message.* or * (repeatable)"
    )
    create.add_argument("--integration", action="append", help="only this integration's events (repeatable)")
    create.add_argument("--description")
    with_id = {
        "show": None,
        "delete": "delete it",
        "rotate": "add a signing secret (shown once); the current ones sign for the grace period",
        "retire-secrets": "stop signing with every secret but the newest",
        "enable": None,
        "disable": "stop sending to it (emits subscription.disabled)",
        "failed": "its failed deliveries, newest first",
        "replay": "send failed deliveries again (same webhook-id)",
    }
    for name, text in with_id.items():
        sub = actions.add_parser(name, help=text)
        sub.add_argument("subscription_id")
    actions.choices["delete"].add_argument("--if-version", type=int, help="only if still at this version")
    actions.choices["rotate"].add_argument(
        "--grace-hours", type=int, help="how long the current secrets keep signing (default 24; 0: stop now)"
    )
    actions.choices["disable"].add_argument("--reason")
    _paged(actions.choices["failed"])
    actions.choices["replay"].add_argument("--event", help="the failed delivery's event id")
    actions.choices["replay"].add_argument("--since", help="every failure at or after this ISO time (UTC)")
    for sub in actions.choices.values():
        sub.add_argument("--tenant", required=True)
        sub.set_defaults(func=cmd_subscriptions)


def run(argv: Sequence[str] | None, ctx_factory: Callable[[argparse.Namespace], Context]) -> int:
    args = build_parser().parse_args(argv)
    ctx = ctx_factory(args)
    try:
        return int(args.func(ctx))
    except ApiError as error:
        ctx.note(f"error: {error.code}: {error.message} (HTTP {error.status})")
        if error.details:
            ctx.note(f"details: {as_json(error.details)}")
        return EXIT_API
    except (UsageError, ConfigError) as error:
        ctx.note(f"error: {error}")
        return EXIT_USAGE
    except TransportError as error:
        ctx.note(f"error: cannot reach the admin API: {error}")
        return EXIT_UNREACHABLE
    finally:
        if ctx._client is not None:
            ctx._client.close()


def main(argv: Sequence[str] | None = None) -> int:
    def context(args: argparse.Namespace) -> Context:
        def client() -> AdminClient:
            target = resolve(args.url, args.token, args.profile)
            return AdminClient(target.url, target.token)

        return Context(args, client)

    return run(argv, context)
