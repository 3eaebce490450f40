"""The commands that configure and operate the hub besides `get`, `describe`, `find`, `reprocess`,
`cancel` and `bulk` (hubctl.views, hubctl.actions): apply, delete, tenants' state, keys, tokens,
the audit log, the old `messages` group, callback tokens, DLQ redrive, certificates, previews,
connection tests, subscriptions, pause and resume."""

from __future__ import annotations

import base64
import getpass
from pathlib import Path
from typing import Any, TextIO

from hubctl import actions, views
from hubctl.client import Answer, ApiError
from hubctl.context import EXIT_API, Context, UsageError, message_path, p, page, tenant_path
from hubctl.manifest import Kind, ManifestError, Resource, load
from hubctl.nouns import CONNECTION, INTEGRATION, KEY, MESSAGE, SUBSCRIPTION, TENANT, TOKEN
from hubctl.output import as_json, cell
from hubctl.plan import Action, diff_text, masked, normalized, plan

SHOWN_ONCE = "Store it now: the hub keeps only its hash and cannot show it again."

FAILURE_COLUMNS = (
    "event_id",
    "event_type",
    "failed_at",
    "error_class",
    "dest_status",
    "attempts",
    "replayed_at",
)
AUDIT_COLUMNS = ("at", "actor", "action", "target")
CALLBACK_COLUMNS = ("received_at", "status", "occurred_at", "external_ref", "detail", "callback_id")
_DELETABLE = {"integration": INTEGRATION, "connection": CONNECTION, "subscription": SUBSCRIPTION}


# --- delete / disable / enable ----------------------------------------------------------------


def cmd_delete(ctx: Context) -> int:
    args = ctx.args
    noun = _DELETABLE[args.what]
    tenant = ctx.tenant()
    ctx.client.call("DELETE", tenant_path(tenant, views.COLLECTIONS[noun], args.id), if_match=args.if_version)
    ctx.done({"deleted": True, "id": args.id}, noun, args.id, f"deleted (tenant {tenant})")
    return 0


def cmd_tenant_state(ctx: Context) -> int:
    verb = ctx.args.command
    answer = ctx.client.post(tenant_path(ctx.args.id, verb)).body
    state = answer.get("state") if isinstance(answer, dict) else None
    ctx.done(answer, TENANT, ctx.args.id, f"{verb}d" + (f" (state {state})" if state else ""))
    return 0


# --- keys and tokens --------------------------------------------------------------------------


def refuse_name_output(ctx: Context, what: str) -> None:
    """A secret shown once cannot be left out: `-o name` would lose it for good."""
    if ctx.output == "name":
        raise UsageError(f"-o name would hide the {what}, shown only this once: use -o table, json or yaml")


def _show_secret(ctx: Context, answer: Answer, what: str) -> None:
    ctx.show(answer.body)
    ctx.note(f"warning: this is the only time the {what} is shown. {SHOWN_ONCE}")


def cmd_keys(ctx: Context) -> int:
    args = ctx.args
    if args.action == "list":
        ctx.show(views.listing(ctx, KEY), noun=KEY)
        return 0
    base = tenant_path(ctx.tenant(), "api-keys")
    if args.action == "create":
        refuse_name_output(ctx, "key")
        body: dict[str, Any] = {}
        if args.label:
            body["label"] = args.label
        if args.integration:
            body["integration_ids"] = args.integration
        _show_secret(ctx, ctx.client.post(base, body), "key")
    elif args.action == "revoke":
        answer = ctx.client.post(f"{base}/{p(args.key_id)}/revoke").body
        ctx.done(answer, KEY, args.key_id, "revoked" + _state(answer))
    else:
        refuse_name_output(ctx, "new key")
        body = {} if args.grace_hours is None else {"grace_hours": args.grace_hours}
        _show_secret(ctx, ctx.client.post(f"{base}/{p(args.key_id)}/rotate", body), "new key")
    return 0


def _state(answer: Any) -> str:
    state = answer.get("state") if isinstance(answer, dict) else None
    return f" (state {state})" if state else ""


def cmd_tokens(ctx: Context) -> int:
    args = ctx.args
    if args.action == "create":
        refuse_name_output(ctx, "token")
        body = {"label": args.label, "role": args.role, "tenant_id": ctx.explicit_tenant()}
        _show_secret(ctx, ctx.client.post("/api/admin/tokens", body), "token")
    elif args.action == "list":
        ctx.show(views.listing(ctx, TOKEN), noun=TOKEN)
    else:
        answer = ctx.client.post(f"/api/admin/tokens/{p(args.token_id)}/revoke").body
        ctx.done(answer, TOKEN, args.token_id, "revoked")
    return 0


def cmd_audit(ctx: Context) -> int:
    tenant = ctx.explicit_tenant()
    path = tenant_path(tenant, "audit") if tenant else "/api/admin/audit"
    ctx.show(ctx.client.get(path, **page(ctx.args)).body, AUDIT_COLUMNS)
    return 0


# --- the `messages` group (kept: each is a word of the noun grammar) --------------------------


def cmd_messages(ctx: Context) -> int:
    args = ctx.args
    if args.action == "list":
        ctx.show(views.queue(ctx, args.tab), noun=MESSAGE)
        return 0
    if args.action == "show":
        return views.cmd_describe(ctx)
    if args.action == "find":
        return views.search(ctx, args.value)
    if args.action == "callbacks":
        path = message_path(args.message_id, "callbacks")
        ctx.show(ctx.client.get(path, **page(args)).body, CALLBACK_COLUMNS)
        return 0
    if args.action == "reprocess":
        return actions.cmd_reprocess(ctx)
    return actions.cmd_cancel(ctx)


def cmd_connections(ctx: Context) -> int:
    """`connections callback-token <id>`: mint (rotating the current one), show or revoke the
    connection's status-callback token."""
    args = ctx.args
    path = tenant_path(ctx.tenant(), "connections", args.connection_id, "callback-token")
    if args.show:
        ctx.show(ctx.client.get(path).body)
    elif args.revoke:
        ctx.client.call("DELETE", path)
        ctx.done(
            {"revoked": True, "connection_id": args.connection_id},
            CONNECTION,
            args.connection_id,
            "callback token revoked: its callbacks now answer 401",
        )
    else:
        refuse_name_output(ctx, "callback token")
        body = {} if args.grace_hours is None else {"grace_hours": args.grace_hours}
        _show_secret(ctx, ctx.client.post(path, body), "callback token")
    return 0


def cmd_dlq(ctx: Context) -> int:
    answer = ctx.client.post(f"/api/admin/dlq/{p(ctx.args.lane)}/redrive").body
    if ctx.json:
        ctx.document(answer)
    else:
        moved = answer.get("moved") if isinstance(answer, dict) else answer
        ctx.say(f"lane/{ctx.args.lane} redriven: {moved} step message(s) moved back to its work queue")
    return 0


# --- certificates -----------------------------------------------------------------------------


def _pfx_password(ctx: Context) -> str:
    if ctx.args.password_stdin:
        line = ctx.stdin.readline()
        return line.removesuffix("\n").removesuffix("\r")
    return getpass.getpass("PFX password: ")


def cmd_certificates(ctx: Context) -> int:
    args = ctx.args
    path = f"/api/admin/connections/{p(args.connection_id)}/certificate"
    tenant = ctx.tenant()
    if args.action == "show":
        ctx.show(ctx.client.get(path, tenant_id=tenant).body)
        return 0
    try:
        pfx = Path(args.pfx).read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {args.pfx}: {error.strerror}") from error
    body = {
        "tenant_id": tenant,
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
    path = tenant_path(
        ctx.tenant(), "integrations", args.integration_id, "message-types", args.message_type, "preview"
    )
    answer = ctx.client.post(path, {"payload": _payload(args.payload, ctx.stdin)}).body
    if ctx.json:
        ctx.document(answer)
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
    answer = ctx.client.post(tenant_path(ctx.tenant(), "connections", args.connection_id, "test")).body
    ctx.show(answer)
    return 0 if isinstance(answer, dict) and answer.get("ok") else EXIT_API


# --- outbound webhook subscriptions -----------------------------------------------------------


def cmd_subscriptions(ctx: Context) -> int:  # noqa: PLR0911 - one branch per action
    args = ctx.args
    if args.action == "list":
        ctx.show(views.listing(ctx, SUBSCRIPTION), noun=SUBSCRIPTION)
        return 0
    sub_id = str(getattr(args, "subscription_id", ""))
    if args.action == "show":
        ctx.show(views.one(ctx, SUBSCRIPTION, sub_id), noun=None)
        return 0
    base = tenant_path(ctx.tenant(), "subscriptions")
    own = f"{base}/{p(sub_id)}"
    if args.action == "create":
        refuse_name_output(ctx, "signing secret")
        body: dict[str, Any] = {"url": args.url, "event_types": args.event}
        if args.integration:
            body["integration_ids"] = args.integration
        if args.description:
            body["description"] = args.description
        _show_secret(ctx, ctx.client.post(base, body), "signing secret")
        return 0
    if args.action == "delete":
        ctx.client.call("DELETE", own, if_match=args.if_version)
        ctx.done({"deleted": True, "id": sub_id}, SUBSCRIPTION, sub_id, "deleted")
        return 0
    if args.action == "rotate":
        refuse_name_output(ctx, "new signing secret")
        rotation = {} if args.grace_hours is None else {"grace_hours": args.grace_hours}
        _show_secret(ctx, ctx.client.post(f"{own}/rotate-secret", rotation), "new signing secret")
        return 0
    if args.action == "failed":
        ctx.show(ctx.client.get(f"{own}/failed-deliveries", **page(args)).body, FAILURE_COLUMNS)
        return 0
    if args.action == "replay":
        if (args.event is None) == (args.since is None):
            raise UsageError("give --event EVENT_ID or --since TIME (one of them)")
        replay = {"event_id": args.event} if args.event else {"since": args.since}
        answer = ctx.client.post(f"{own}/failed-deliveries/replay", replay).body
        count = answer.get("replayed") if isinstance(answer, dict) else None
        ctx.done(
            answer, SUBSCRIPTION, sub_id, f"replayed {count if count is not None else '?'} delivery(ies)"
        )
        return 0
    if args.action == "disable":
        answer = ctx.client.post(f"{own}/disable", {"reason": args.reason} if args.reason else None).body
        ctx.done(answer, SUBSCRIPTION, sub_id, "disabled")
        return 0
    path = {"enable": "enable", "retire-secrets": "retire-secrets"}[args.action]
    answer = ctx.client.post(f"{own}/{path}").body
    ctx.done(
        answer,
        SUBSCRIPTION,
        sub_id,
        "enabled" if args.action == "enable" else "secrets retired: only the newest signs",
    )
    return 0


# --- pause and circuit breaker (issue 12) ------------------------------------------------------


def cmd_connection_state(ctx: Context) -> int:
    """pause / resume / state of a connection (operator role for pause and resume)."""
    args = ctx.args
    base = f"/api/admin/connections/{p(args.connection_id)}"
    tenant = ctx.tenant()
    if args.command == "state":
        ctx.show(ctx.client.get(f"{base}/state", tenant_id=tenant).body)
        return 0
    # Connection ids are unique within a tenant only: the tenant is part of the address.
    answer = ctx.client.post(f"{base}/{args.command}", tenant_id=tenant).body
    said = (
        "paused: deliveries wait on it" if args.command == "pause" else "resumed: held messages are released"
    )
    ctx.done(answer, CONNECTION, args.connection_id, said)
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
        return tenant_path(resource.tenant), "/api/admin/tenants"
    collection = tenant_path(resource.tenant, _COLLECTIONS[resource.kind])
    return f"{collection}/{p(resource.id)}", collection


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
        ctx.document({"dry_run": bool(args.dry_run), "resources": reports})
    elif args.dry_run:
        ctx.say("dry run: nothing was changed")
    return 0
