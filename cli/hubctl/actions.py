"""Operator actions on messages: `reprocess`, `cancel`, and `bulk` jobs that act on every
message matching a filter (created, followed with --wait, cancelled). Each prints one line."""

from __future__ import annotations

import time
from typing import Any

from hubctl.client import ApiError, TransportError
from hubctl.context import EXIT_API, Context, UsageError, message_path, p, tenant_path
from hubctl.nouns import BULK_JOB, MESSAGE, split_ref

REPROCESS = "/api/edi-hub/reprocess-message"
BULK_JOBS = "/api/admin/bulk-jobs"
#: A job in these states is still moving (contracts-28 §4; `cancelling` answers a cancel).
MOVING = frozenset({"running", "cancelling"})
#: `bulk reprocess|cancel` options that make the job's filter (its `filter` keys).
FILTER_OPTIONS = {
    "tab": "tab",
    "integration": "integration_id",
    "error_class": "error_class",
    "since": "since",
    "until": "until",
    "find": "q",
    "by": "by",
}


def cmd_reprocess(ctx: Context) -> int:
    """A new execution of the message. One that reached its destination (`sent`,
    `received_observed`) needs --force: the API refuses it with 409 already_delivered."""
    message_id, force = ctx.args.message_id, bool(getattr(ctx.args, "force", False))
    body: dict[str, Any] = {"message_id": message_id}
    if force:
        body["force"] = True
    try:
        answer = ctx.client.post(REPROCESS, body).body
    except ApiError as error:
        if error.code == "already_delivered":
            status = (error.details or {}).get("pipeline_status") if isinstance(error.details, dict) else None
            error.hint = (
                f"the destination already accepted message {message_id}"
                + (f" ({status})" if status else "")
                + f"; to send it again anyway: hubctl reprocess {message_id} --force"
            )
        raise
    execution = _execution_of(ctx, answer, message_id)
    said = "reprocessed" + (" with --force" if force else "")
    if execution:
        said += f" (execution {execution})"
    elif isinstance(answer, dict) and answer.get("pipeline_status"):
        said += f" (pipeline_status {answer['pipeline_status']})"
    ctx.done(answer, MESSAGE, message_id, said)
    return 0


def _execution_of(ctx: Context, answer: Any, message_id: str) -> str | None:
    """The new execution's id: from the answer, else from the message as it is now (one read;
    the action is done whatever that read meets)."""
    if isinstance(answer, dict) and answer.get("execution_id"):
        return str(answer["execution_id"])
    if ctx.json or ctx.output == "name":
        return None
    try:
        view = ctx.client.get(message_path(message_id)).body
    except (ApiError, TransportError):
        return None
    return str(view["execution_id"]) if isinstance(view, dict) and view.get("execution_id") else None


def cmd_cancel(ctx: Context) -> int:
    """Cancels a message's waiting retry (or a dead letter): it is not sent again."""
    message_id = ctx.args.message_id
    answer = ctx.client.post(message_path(message_id, "cancel-retry")).body
    status = answer.get("pipeline_status") if isinstance(answer, dict) else None
    ctx.done(answer, MESSAGE, message_id, "cancelled" + (f" (pipeline_status {status})" if status else ""))
    return 0


# --- erasure (issue 29) ---------------------------------------------------------------------

#: Calls of one `erase --external-id|--business-key` at most (each erases up to 100 messages).
MAX_ERASE_CALLS = 100


def cmd_erase(ctx: Context) -> int:
    """`erase message ID`: one message; `erase --external-id|--business-key VALUE`: the tenant's
    messages the search finds by it, calling again while the API says there are more."""
    args = ctx.args
    message_id = _erased_message(args.what, args.id)
    given = [
        (field, value)
        for field, value in (("external_id", args.external_id), ("business_key", args.business_key))
        if value is not None
    ]
    if (message_id is None) == (not given):
        raise UsageError("erase message MESSAGE_ID, or erase --external-id VALUE | --business-key VALUE")
    if message_id is not None:
        answer = ctx.client.post(message_path(message_id, "erase")).body
        ctx.done(answer, MESSAGE, message_id, "erased (its payload, callbacks and the message)")
        return 0
    [(field, value)] = given
    tenant = ctx.tenant()
    erased: list[str] = []
    more = True
    for _ in range(MAX_ERASE_CALLS):
        answer = ctx.client.post(tenant_path(tenant, "erasures"), {field: value}).body
        erased += [str(m) for m in answer.get("erased", [])]
        more = bool(answer.get("more"))
        if not more:
            break
    if ctx.json:
        ctx.document({"tenant_id": tenant, "by": field, "erased": erased, "more": more})
    elif ctx.output == "name":
        for erased_id in erased:
            ctx.say(f"{MESSAGE.name}/{erased_id}")
    else:
        ctx.say(f"erased {len(erased)} message(s) of tenant {tenant} by {field}")
        for erased_id in erased:
            ctx.say(f"  {MESSAGE.name}/{erased_id}")
    if more:
        ctx.note("more messages are left: run the same command again")
        return EXIT_API
    return 0


def _erased_message(what: str | None, ident: str | None) -> str | None:
    """The message `erase` names: `message ID`, `message/ID` or a bare id; None for none."""
    if what is None:
        return None
    noun, rest = split_ref(what)
    if noun is MESSAGE:
        if ident is not None:
            raise UsageError(f"{what} names the message already: no MESSAGE_ID after it")
        return rest
    if noun is not None:
        raise UsageError(f"only a message is erased by id, not a {noun.name}")
    if what.lower() in MESSAGE.names:
        if ident is None:
            raise UsageError("erase message needs MESSAGE_ID")
        return ident
    if ident is not None:
        raise UsageError(f"erase {what} {ident}: say erase message MESSAGE_ID")
    return what  # a bare id, as reprocess and cancel take it


# --- bulk jobs --------------------------------------------------------------------------------


def cmd_bulk_create(ctx: Context) -> int:
    """`bulk reprocess|cancel --tab ...`: a job acting on every matching message; `bulk cancel
    JOB_ID`: stops that job."""
    args = ctx.args
    action = args.bulk_action
    given = {key: getattr(args, name, None) for name, key in FILTER_OPTIONS.items()}
    if action == "cancel" and args.job_id:
        if any(value is not None for value in given.values()):
            raise UsageError("bulk cancel JOB_ID stops that job: without filters (--tab ...)")
        return _cancel_job(ctx, args.job_id)
    if not args.tab:
        hint = " (or bulk cancel JOB_ID to stop a job)" if action == "cancel" else ""
        raise UsageError(f"bulk {action} needs --tab dead_letter|waiting|error|all{hint}")
    if args.by is not None and args.find is None:
        raise UsageError("--by says how to match --find VALUE: give --find too")
    body: dict[str, Any] = {
        "tenant_id": ctx.tenant(),
        "action": action,
        "filter": {key: value for key, value in given.items() if value is not None},
    }
    if action == "reprocess":
        body["force"] = bool(args.force)
    job = _job(ctx.client.post(BULK_JOBS, body).body)
    if args.wait:
        if not ctx.json:
            ctx.note(f"{BULK_JOB.name}/{job.get('job_id')} created: {_described(job)}")
        return wait(ctx, job)
    ctx.done(
        job,
        BULK_JOB,
        str(job.get("job_id")),
        f"created: {_described(job)}, matched so far {_n(job, 'matched')}",
    )
    return 0


def _cancel_job(ctx: Context, job_id: str) -> int:
    path = f"{BULK_JOBS}/{p(job_id)}/cancel"
    job = _job(ctx.client.post(path, tenant_id=ctx.tenant()).body)
    if ctx.args.wait:
        return wait(ctx, job)
    ctx.done(job, BULK_JOB, job_id, f"{job.get('state', 'cancelling')}: {progress(job)}")
    return 0


def cmd_bulk_get(ctx: Context) -> int:
    """`bulk get`: the tenant's jobs, newest first; `bulk get JOB_ID [--wait]`: one job."""
    args = ctx.args
    tenant = ctx.tenant()
    if not args.job_id:
        if args.wait:
            raise UsageError("--wait follows one job: bulk get JOB_ID --wait")
        listing = ctx.client.get(BULK_JOBS, tenant_id=tenant, limit=args.limit, cursor=args.cursor).body
        ctx.show(listing, noun=BULK_JOB)
        return 0
    job = _job(ctx.client.get(f"{BULK_JOBS}/{p(args.job_id)}", tenant_id=tenant).body)
    if args.wait:
        return wait(ctx, job)
    if ctx.json or ctx.output == "name":
        ctx.done(job, BULK_JOB, args.job_id, "")
    else:
        ctx.say(f"{BULK_JOB.name}/{args.job_id} {job.get('state')}: {_described(job)}; {progress(job)}")
    return 0


def wait(ctx: Context, job: dict[str, Any]) -> int:
    """Polls the job until it ends, a progress line on stderr at each change; then its last
    state on stdout. Exit 0 when it completed with no message failed, else 1."""
    args = ctx.args
    job_id = str(job.get("job_id"))
    deadline = time.monotonic() + args.timeout if args.timeout else None
    shown = None
    while job.get("state") in MOVING:
        line = f"{BULK_JOB.name}/{job_id} {job.get('state')}: {progress(job)}"
        if line != shown:
            ctx.note(line)
            shown = line
        if deadline is not None and time.monotonic() >= deadline:
            ctx.note(
                f"still {job.get('state')} after {args.timeout:g} s; "
                f"follow it with: hubctl bulk get {job_id} --wait"
            )
            return EXIT_API
        time.sleep(args.interval)
        job = _job(
            ctx.client.get(f"{BULK_JOBS}/{p(job_id)}", tenant_id=job.get("tenant_id") or ctx.tenant()).body
        )
    ctx.done(job, BULK_JOB, job_id, f"{job.get('state')}: {progress(job)}")
    if job.get("state") == "completed" and not _n(job, "failed"):
        return 0
    return EXIT_API


def progress(job: dict[str, Any]) -> str:
    """`matched 500, done 498, skipped 2 (already_delivered 2), failed 0`."""
    parts = [f"matched {_n(job, 'matched')}", f"done {_n(job, 'done')}"]
    for count, reasons in (("skipped", "skipped_reasons"), ("failed", "failed_reasons")):
        why = job.get(reasons)
        detail = (
            " (" + ", ".join(f"{reason} {n}" for reason, n in why.items()) + ")"
            if isinstance(why, dict) and why
            else ""
        )
        parts.append(f"{count} {_n(job, count)}{detail}")
    return ", ".join(parts)


def _described(job: dict[str, Any]) -> str:
    """`reprocess of dead_letter messages, integration int_erp, with --force`."""
    flt = job.get("filter") if isinstance(job.get("filter"), dict) else {}
    assert isinstance(flt, dict)
    text = f"{job.get('action')} of {flt.get('tab', '?')} messages"
    for key, label in (
        ("integration_id", "integration"),
        ("error_class", "error class"),
        ("since", "since"),
        ("until", "until"),
    ):
        if flt.get(key):
            text += f", {label} {flt[key]}"
    if flt.get("q"):
        text += f", matching {flt['q']!r}" + (f" by {flt['by']}" if flt.get("by") else "")
    if job.get("force"):
        text += ", with --force"
    return text


def _n(job: dict[str, Any], key: str) -> int:
    value = job.get(key)
    return value if isinstance(value, int) else 0


def _job(body: Any) -> dict[str, Any]:
    return body if isinstance(body, dict) else {"answer": body}
