"""`get NOUN [ID]`, `describe NOUN ID` and `find VALUE`: reading resources, the queue, a
message's timeline and the search, in every `-o` format."""

from __future__ import annotations

import argparse
from typing import Any

from hubctl.context import DELIVERED, Context, NotFound, UsageError, message_path, p, page, tenant_path
from hubctl.nouns import (
    BULK_JOB,
    CONNECTION,
    INTEGRATION,
    KEY,
    MESSAGE,
    SUBSCRIPTION,
    TENANT,
    TOKEN,
    Noun,
    Ref,
)
from hubctl.output import cell, fields, table

#: The options of `get messages` (the queue's filters and the search), refused with another noun.
MESSAGE_OPTIONS = ("tab", "integration", "since", "until", "find", "by")
#: What a search row shows: how it matched first.
FOUND_COLUMNS = (
    "message_id",
    "matched_by",
    "integration_id",
    "message_type",
    "external_id",
    "pipeline_status",
    "dest_status",
    "received_at",
)
FOUND_WIDE = ("updated_at", "retry_count", "last_retry_error_class")
#: A message's fields `describe message` prints above its timeline (those it has).
SUMMARY = (
    "message_id",
    "tenant_id",
    "integration_id",
    "message_type",
    "external_id",
    "pipeline_status",
    "dest_status",
    "dest_status_text",
    "delivery_status",
    "retry_count",
    "next_retry_at",
    "last_retry_error_class",
    "held_reason",
    "held_on",
    "uncertain",
    "superseded_by",
    "execution_id",
    "occurred_at",
    "received_at",
    "updated_at",
)
#: The longest destination excerpt in a timeline row's DETAIL cell.
_DETAIL_MAX = 70
#: How many pages of a listing `get key|token ID` reads looking for it (no route shows one).
_PAGES = 20
COLLECTIONS = {
    INTEGRATION: "integrations",
    CONNECTION: "connections",
    KEY: "api-keys",
    SUBSCRIPTION: "subscriptions",
}


def _ref(args: argparse.Namespace, *, need_id: bool) -> tuple[Noun, str | None]:
    ref: Ref = args.noun
    ident = getattr(args, "id", None)
    if ref.id and ident:
        raise UsageError(f"two ids: {ref.noun.name}/{ref.id} and {ident}")
    ident = ref.id or ident
    if need_id and not ident:
        raise UsageError(f"which {ref.noun.name}? give its id: hubctl {args.command} {ref.noun.name} ID")
    return ref.noun, ident


def _check_message_options(args: argparse.Namespace, noun: Noun, ident: str | None) -> None:
    given = [name for name in MESSAGE_OPTIONS if getattr(args, name, None) is not None]
    if given and (noun is not MESSAGE or ident is not None):
        flags = ", ".join(f"--{name}" for name in given)
        raise UsageError(f"{flags}: only for a listing or a search of messages (hubctl get messages ...)")
    if args.by is not None and args.find is None:
        raise UsageError("--by says how to match --find VALUE: give --find too")
    if args.find is not None and (args.tab or args.since or args.until):
        raise UsageError("--find searches every tab and time: without --tab, --since, --until")


# --- get --------------------------------------------------------------------------------------


def cmd_get(ctx: Context) -> int:
    """`get NOUN`: a page of them (a table); `get NOUN ID`: that one (a row)."""
    noun, ident = _ref(ctx.args, need_id=False)
    _check_message_options(ctx.args, noun, ident)
    if ident is None:
        if noun is MESSAGE and ctx.args.find is not None:
            return search(ctx, ctx.args.find)
        ctx.show(listing(ctx, noun), noun=noun)
        return 0
    found = one(ctx, noun, ident)
    ctx.row(found, noun)
    return 0


def listing(ctx: Context, noun: Noun) -> Any:
    """One page of a noun's listing, as the API answers it."""
    args = ctx.args
    if noun is TENANT:
        return ctx.client.get("/api/admin/tenants", **page(args)).body
    if noun is TOKEN:
        return ctx.client.get("/api/admin/tokens", tenant_id=ctx.explicit_tenant(), **page(args)).body
    if noun is MESSAGE:
        return queue(ctx, args.tab or args.default_tab)
    if noun is BULK_JOB:
        return ctx.client.get("/api/admin/bulk-jobs", tenant_id=ctx.tenant(), **page(args)).body
    return ctx.client.get(tenant_path(ctx.tenant(), COLLECTIONS[noun]), **page(args)).body


def queue(ctx: Context, tab: str) -> Any:
    args = ctx.args
    filters = {"integration_id": args.integration, "since": args.since, "until": args.until}
    query = {
        "tenant_id": ctx.tenant(),
        "tab": tab,
        **{name: value for name, value in filters.items() if value},
        **page(args),
    }
    return ctx.client.get("/api/admin/queue", **query).body


def one(ctx: Context, noun: Noun, ident: str) -> dict[str, Any]:
    """One resource's view."""
    if noun is TENANT:
        return _object(ctx.client.get(tenant_path(ident)).body)
    if noun is MESSAGE:
        return _object(ctx.client.get(message_path(ident)).body)
    if noun is BULK_JOB:
        return _object(ctx.client.get(f"/api/admin/bulk-jobs/{p(ident)}", tenant_id=ctx.tenant()).body)
    if noun in (KEY, TOKEN):
        return _listed(ctx, noun, ident)
    return _object(ctx.client.get(tenant_path(ctx.tenant(), COLLECTIONS[noun], ident)).body)


def _object(body: Any) -> dict[str, Any]:
    return body if isinstance(body, dict) else {"answer": body}


def _listed(ctx: Context, noun: Noun, ident: str) -> dict[str, Any]:
    """A key or a token by its id: the admin API lists them only, so the listing is read page by
    page until it is found."""
    if noun is KEY:
        tenant = ctx.tenant()
        path, query, where = tenant_path(tenant, "api-keys"), {}, f"tenant {tenant}"
    else:
        tenant_id = ctx.explicit_tenant()
        path, query = "/api/admin/tokens", {"tenant_id": tenant_id}
        where = f"tenant {tenant_id}" if tenant_id else "the platform's tokens (--tenant for a tenant's)"
    cursor = None
    for _ in range(_PAGES):
        body = ctx.client.get(path, limit=100, cursor=cursor, **query).body
        for row in body.get("items", []) if isinstance(body, dict) else []:
            if row.get(noun.id_field) == ident:
                return dict(row)
        cursor = body.get("next_cursor") if isinstance(body, dict) else None
        if not cursor:
            break
    raise NotFound(f"no {noun.name} {ident} in {where}")


# --- describe ---------------------------------------------------------------------------------


def cmd_describe(ctx: Context) -> int:
    """Everything about one resource: its fields; a message's summary and timeline."""
    noun, ident = _ref(ctx.args, need_id=True)
    assert ident is not None
    found = one(ctx, noun, ident)
    if ctx.json:
        ctx.document(found)
    elif ctx.output == "name":
        ctx.say(f"{noun.name}/{ident}")
    elif noun is MESSAGE:
        ctx.say(message_text(found))
    else:
        ctx.say(fields(found))
    return 0


def message_text(view: dict[str, Any]) -> str:
    """A message for people: its summary, then its timeline one compact row per entry."""
    delivered = view.get("pipeline_status") in DELIVERED
    summary = {
        name: view.get(name)
        for name in SUMMARY
        if view.get(name) not in (None, False, "")
        or name in ("pipeline_status", "dest_status", "retry_count")
    }
    if delivered:
        # The error of an earlier attempt is in that attempt's row, not the message's state.
        summary.pop("last_retry_error_class", None)
    lines = [fields(summary), "", "Timeline (oldest first):"]
    entries = view.get("timeline")
    rows = [timeline_row(entry) for entry in entries if isinstance(entry, dict)] if entries else []
    lines.append(table(rows, ("at", "kind", "what", "detail")))
    if view.get("timeline_complete") is False:
        lines.append("(older entries dropped off: a message keeps its last log entries)")
    if view.get("uncertain_meaning"):
        lines += ["", f"uncertain: {view['uncertain_meaning']}"]
    if view.get("callbacks_next_cursor"):
        lines.append(f"more callbacks: hubctl messages callbacks {view.get('message_id')}")
    lines += ["", "payload and mapped body: -o yaml or -o json"]
    return "\n".join(lines)


def timeline_row(entry: dict[str, Any]) -> dict[str, str]:
    return {
        "at": str(entry.get("at", "")),
        "kind": str(entry.get("kind", "")),
        "what": str(entry.get("title", "")),
        "detail": _detail(entry),
    }


def _detail(entry: dict[str, Any]) -> str:
    """A few of an entry's fields, compact: an event's id, who did it, how long it took, the
    destination's excerpt (cut)."""
    if entry.get("kind") == "event":
        return str(entry.get("event_id") or "")
    parts = []
    if entry.get("actor"):
        parts.append(f"by {cell(entry['actor'])}")
    if entry.get("execution_id"):
        parts.append(f"execution {entry['execution_id']}")
    if isinstance(entry.get("duration_ms"), int):
        parts.append(f"{entry['duration_ms']} ms")
    if entry.get("external_ref"):
        parts.append(f"ref {entry['external_ref']}")
    text = entry.get("detail")
    if text:
        flat = " ".join(str(text).split())
        parts.append(flat if len(flat) <= _DETAIL_MAX else flat[: _DETAIL_MAX - 1] + "…")
    return ", ".join(parts)


# --- find -------------------------------------------------------------------------------------


def cmd_find(ctx: Context) -> int:
    return search(ctx, ctx.args.value)


def search(ctx: Context, value: str) -> int:
    """The tenant's messages matching `value` exactly (id, external_id, Idempotency-Key,
    correlation id, business key), newest received first."""
    args = ctx.args
    query = {
        "tenant_id": ctx.tenant(),
        "q": value,
        "by": args.by,
        "integration_id": args.integration,
        **page(args),
    }
    answer = ctx.client.get("/api/admin/messages", **query).body
    columns = FOUND_COLUMNS + FOUND_WIDE if ctx.wide else FOUND_COLUMNS
    ctx.show(answer, columns=columns, noun=MESSAGE)
    return 0
