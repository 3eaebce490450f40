"""hubctl's command line: kubectl's grammar (`get NOUN [ID]`, `describe NOUN ID`, verbs on
messages, `bulk`), and the older groups (`keys list`, `messages list` ...) kept as they were.
Every command has a description and examples (`hubctl COMMAND --help`)."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from typing import Any

from hubctl import __version__, actions, commands, views
from hubctl.context import OUTPUTS
from hubctl.nouns import MESSAGE, NOUNS, Ref, job_ref, message_ref, noun_ref

TABS = ("error", "waiting", "dead_letter", "all")
SEARCH_BY = ("any", "message_id", "external_id", "idempotency_key", "correlation_id", "business_key")
Commands = Any  # argparse's _SubParsersAction, private
_FORMATTER = argparse.RawDescriptionHelpFormatter

GRAMMAR = """\
the grammar (kubectl's):
  hubctl get NOUN [ID]              list a kind of resource, or one of them
  hubctl describe NOUN ID           everything about one; a message with its timeline
  hubctl find VALUE [--by KIND]     a message by id, external_id, Idempotency-Key,
                                    correlation id or business-key value
  hubctl reprocess MESSAGE_ID [--force]
  hubctl cancel MESSAGE_ID
  hubctl erase message MESSAGE_ID | --external-id VALUE | --business-key VALUE
  hubctl bulk reprocess|cancel --tab dead_letter [filters] [--wait]
  hubctl bulk get [JOB_ID] [--wait]    hubctl bulk cancel JOB_ID
  hubctl apply -f FILE

{nouns}

the tenant: --tenant, else the tenant of --profile's profile, else $HUB_TENANT, else the
  default profile's tenant (docs/hubctl.md)
output: -o table (default) | wide | json | yaml | name (kind/id lines, like kubectl)
exit: 0 done; 1 the API refused (or a preview/test/--wait failed); 2 usage, configuration
      or file error (nothing sent); 3 the admin API could not be reached

examples:
  export HUB_ADMIN_URL=http://127.0.0.1:3001 HUB_ADMIN_TOKEN=... HUB_TENANT=tnt_demo
  hubctl get messages --tab dead_letter
  hubctl describe message msg_01j...
  hubctl find PO-4711
  hubctl bulk reprocess --tab dead_letter --integration int_demo_erp --wait"""


def build_parser() -> argparse.ArgumentParser:
    nouns = textwrap.fill(
        "nouns (singular, plural or short): " + "; ".join("|".join(noun.names) for noun in NOUNS),
        90,
        subsequent_indent="  ",
    )
    parser = argparse.ArgumentParser(
        prog="hubctl",
        description="The Integration Hub's admin API from the command line (docs/hubctl.md).",
        epilog=GRAMMAR.format(nouns=nouns),
        formatter_class=_FORMATTER,
    )
    parser.add_argument("--version", action="version", version=f"hubctl {__version__}")
    parser.add_argument("--url", help="admin API URL (else $HUB_ADMIN_URL or the profile)")
    parser.add_argument(
        "--token", help="admin token (prefer $HUB_ADMIN_TOKEN or a profile: flags stay in history)"
    )
    parser.add_argument("--profile", help="a profile of ~/.config/hubctl/config.toml")
    parser.add_argument(
        "-t", "--tenant", help="the tenant to act in (else the profile's tenant or $HUB_TENANT)"
    )
    parser.add_argument("-o", "--output", choices=OUTPUTS, default="table", help="how to print answers")
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _grammar(subcommands)
    _bulk(subcommands)
    _configuration(subcommands)
    _credentials(subcommands)
    _operations(subcommands)
    _subscriptions(subcommands)
    _everywhere(parser)
    return parser


def _command(
    subcommands: Commands,
    name: str,
    summary: str,
    examples: Sequence[str],
    details: str = "",
    *,
    nameless: bool = False,
) -> argparse.ArgumentParser:
    """A command with its one-line help, a description and examples."""
    description = (
        summary[0].upper() + summary[1:] + "." + (f"\n\n{textwrap.fill(details, 90)}" if details else "")
    )
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples)
    parser: argparse.ArgumentParser = subcommands.add_parser(
        name, help=summary, description=description, epilog=epilog, formatter_class=_FORMATTER
    )
    if nameless:
        parser.set_defaults(nameless=True)
    return parser


def _tenant(parser: argparse.ArgumentParser, meaning: str | None = None) -> None:
    """--tenant after the command too; absent, the global one's value (or the default tenant)."""
    parser.add_argument(
        "-t",
        "--tenant",
        default=argparse.SUPPRESS,
        help=meaning or "the tenant (else the profile's tenant or $HUB_TENANT)",
    )


def _paged(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, help="at most this many (1-100)")
    parser.add_argument("--cursor", help="the next_cursor of the previous page")


def _queue_filters(parser: argparse.ArgumentParser, default_tab: str | None) -> None:
    shown = f" (default {default_tab})" if default_tab else " (default all; with --find: every tab)"
    parser.add_argument("--tab", choices=TABS, default=default_tab, help="the queue tab" + shown)
    parser.add_argument("--integration", help="only this integration's messages")
    parser.add_argument("--since", help="ISO 8601 with offset: last change (tab all: receipt) at or after")
    parser.add_argument("--until", help="ISO 8601 with offset: before")


def _search(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--by", choices=SEARCH_BY, help="which kind of value it is (default any: every lookup)"
    )


def _everywhere(parser: argparse.ArgumentParser) -> None:
    """`-o json` after the command too (`hubctl keys list -o json`): each command's own option,
    which overrides the global one only when given."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
                    _everywhere(sub)
                elif "--output" not in sub._option_string_actions:
                    sub.add_argument(
                        "-o",
                        "--output",
                        choices=OUTPUTS,
                        default=argparse.SUPPRESS,
                        help="how to print answers",
                    )


# --- get, describe, find, reprocess, cancel ---------------------------------------------------


def _grammar(subcommands: Commands) -> None:
    nouns = ", ".join(noun.plural for noun in NOUNS)
    get = _command(
        subcommands,
        "get",
        "list a kind of resource, or show one",
        [
            "hubctl get tenants",
            "hubctl get integrations --tenant tnt_acme",
            "hubctl get int int_acme_orders -o yaml",
            "hubctl get messages --tab dead_letter --integration int_acme_orders",
            "hubctl get messages --find PO-4711 --by external_id",
            "hubctl get messages -o name | xargs -n1 hubctl describe",
        ],
        f"NOUN is one of {nouns} (or a singular or a short form: int, conn, sub, msg, tok, bj); "
        "NOUN/ID names one as `-o name` prints it. `get messages` lists the queue's tab "
        "(default all, newest first) or, with --find, the search's matches.",
    )
    _noun_arguments(get, with_id=True)

    listing = _command(
        subcommands,
        "list",
        "list a kind of resource (the same as get NOUN)",
        ["hubctl list tenants", "hubctl list connections --tenant tnt_acme"],
    )
    _noun_arguments(listing, with_id=False)

    describe = _command(
        subcommands,
        "describe",
        "show everything about one resource; a message with its timeline",
        [
            "hubctl describe message msg_01j...",
            "hubctl describe integration int_acme_orders --tenant tnt_acme",
            "hubctl describe bulk-job bulk_01j...",
        ],
        "A message: its state, then one row per step, delivery attempt, status event, operator "
        "action and status callback, oldest first (-o yaml also shows its payload and mapped body).",
    )
    describe.add_argument("noun", type=noun_ref, metavar="NOUN", help="what kind (or NOUN/ID)")
    describe.add_argument("id", nargs="?", metavar="ID")
    _tenant(describe)
    describe.set_defaults(func=views.cmd_describe)

    find = _command(
        subcommands,
        "find",
        "find a tenant's messages by an exact value",
        [
            "hubctl find PO-4711",
            "hubctl find PO-4711 --by business_key --integration int_acme_orders",
            "hubctl find demo-po-4711 --by idempotency_key -o name",
        ],
        "Looks the value up as a message id, an external_id, a partner's Idempotency-Key, a "
        "correlation id and a business-key value (the duplicate-key fields of the message type), "
        "newest received first; MATCHED_BY says which found it. No match prints (none).",
    )
    find.add_argument("value", metavar="VALUE")
    _find_options(find)
    find.set_defaults(func=views.cmd_find)

    reprocess = _command(
        subcommands,
        "reprocess",
        "run a message's pipeline again (a new execution)",
        [
            "hubctl reprocess msg_01j...",
            "hubctl reprocess msg_01j... --force   # it was delivered: send again",
        ],
        "A message its destination already accepted (sent, received_observed) is refused with "
        "409 already_delivered unless --force says to send it again.",
    )
    reprocess.add_argument("message_id", type=message_ref, metavar="MESSAGE_ID")
    reprocess.add_argument(
        "--force", action="store_true", help="also when the destination already accepted it"
    )
    reprocess.set_defaults(func=actions.cmd_reprocess)

    cancel = _command(
        subcommands,
        "cancel",
        "cancel a message's waiting retry or dead letter (it is not sent again)",
        ["hubctl cancel msg_01j..."],
    )
    cancel.add_argument("message_id", type=message_ref, metavar="MESSAGE_ID")
    cancel.set_defaults(func=actions.cmd_cancel)

    erase = _command(
        subcommands,
        "erase",
        "erase a message now, or a tenant's messages by external id or business key (LGPD / GDPR)",
        [
            "hubctl erase message msg_01j...",
            "hubctl erase message/msg_01j...",
            "hubctl erase --external-id cliente-4711 --tenant tnt_acme",
            "hubctl erase --business-key PO-4711 -o name",
        ],
        "Deletes the payload, the status callbacks, the pointers and the message itself before "
        "their retention would; the audit log keeps the ids, never the value. By value: every "
        "message of the tenant the search finds by it (a business key: the message holding it "
        "now), called again until none is left. A payload is shared by content: another message "
        "of the integration with the very same payload loses it too. Operator role.",
    )
    erase.add_argument("what", nargs="?", metavar="message", help="message (or message/ID)")
    erase.add_argument("id", nargs="?", metavar="MESSAGE_ID")
    value = erase.add_mutually_exclusive_group()
    value.add_argument("--external-id", metavar="VALUE", help="the tenant's messages with this external_id")
    value.add_argument("--business-key", metavar="VALUE", help="the tenant's message holding this key")
    _tenant(erase, "the tenant of --external-id / --business-key (else the profile's or $HUB_TENANT)")
    erase.set_defaults(func=actions.cmd_erase)


def _noun_arguments(parser: argparse.ArgumentParser, *, with_id: bool) -> None:
    parser.add_argument("noun", type=noun_ref, metavar="NOUN", help="what kind (or NOUN/ID)")
    if with_id:
        parser.add_argument("id", nargs="?", metavar="ID", help="just this one")
    _tenant(parser)
    messages = parser.add_argument_group("messages only")
    messages.add_argument("--tab", choices=TABS, help="the queue tab (default all)")
    messages.add_argument("--integration", help="only this integration's messages")
    messages.add_argument("--since", help="ISO 8601 with offset: last change (tab all: receipt) at or after")
    messages.add_argument("--until", help="ISO 8601 with offset: before")
    messages.add_argument("--find", metavar="VALUE", help="search instead of listing a tab (as hubctl find)")
    _search(messages)
    _paged(parser)
    parser.set_defaults(func=views.cmd_get, default_tab="all")


def _find_options(parser: argparse.ArgumentParser) -> None:
    _search(parser)
    parser.add_argument("--integration", help="only this integration's messages")
    _tenant(parser)
    _paged(parser)


# --- bulk -------------------------------------------------------------------------------------


def _bulk(subcommands: Commands) -> None:
    group = _command(
        subcommands,
        "bulk",
        "reprocess or cancel every message matching a filter, as a durable job",
        [
            "hubctl bulk reprocess --tab dead_letter --integration int_acme_orders --wait",
            "hubctl bulk cancel --tab waiting --error-class http_5xx --since 2026-12-01T00:00:00Z",
            "hubctl bulk get",
            "hubctl bulk get bulk_01j... --wait",
            "hubctl bulk cancel bulk_01j...",
        ],
        "A job works through the matching messages at each connection's pace (pause and the "
        "circuit breaker are honoured), acts on each at most once, and counts matched, done, "
        "skipped (with the reason) and failed.",
    )
    actions_of = group.add_subparsers(dest="bulk_action", required=True, metavar="ACTION")
    reprocess = _command(
        actions_of,
        "reprocess",
        "start a job reprocessing every matching message",
        [
            "hubctl bulk reprocess --tab dead_letter --since 2026-12-01T09:00:00Z "
            "--until 2026-12-01T10:00:00Z",
            "hubctl bulk reprocess --tab all --find PO-4711 --by business_key --force --wait",
        ],
        "Messages already delivered are skipped (already_delivered) unless --force.",
    )
    _bulk_filters(reprocess)
    reprocess.add_argument(
        "--force", action="store_true", help="also messages their destination already accepted"
    )
    cancel = _command(
        actions_of,
        "cancel",
        "start a job cancelling every matching message, or stop a job (JOB_ID)",
        ["hubctl bulk cancel --tab waiting --integration int_acme_orders", "hubctl bulk cancel bulk_01j..."],
    )
    cancel.add_argument("job_id", nargs="?", type=job_ref, metavar="JOB_ID", help="stop this job")
    _bulk_filters(cancel)
    for sub in (reprocess, cancel):
        _wait_options(sub)
        sub.set_defaults(func=actions.cmd_bulk_create)

    get = _command(
        actions_of,
        "get",
        "the tenant's bulk jobs, newest first, or one job's progress",
        ["hubctl bulk get", "hubctl bulk get bulk_01j...", "hubctl bulk get bulk_01j... --wait"],
    )
    get.add_argument("job_id", nargs="?", type=job_ref, metavar="JOB_ID")
    _tenant(get)
    _paged(get)
    _wait_options(get)
    get.set_defaults(func=actions.cmd_bulk_get)


def _bulk_filters(parser: argparse.ArgumentParser) -> None:
    _tenant(parser)
    filters = parser.add_argument_group("which messages")
    filters.add_argument("--tab", choices=TABS, help="the queue tab (required to start a job)")
    filters.add_argument("--integration", help="only this integration's messages")
    filters.add_argument(
        "--error-class", help="only messages whose last error is of this class (http_5xx ...)"
    )
    filters.add_argument("--since", help="ISO 8601 with offset: last change at or after")
    filters.add_argument("--until", help="ISO 8601 with offset: before")
    filters.add_argument("--find", metavar="VALUE", help="only the messages this search finds")
    _search(filters)


def _wait_options(parser: argparse.ArgumentParser) -> None:
    wait = parser.add_argument_group("following the job")
    wait.add_argument(
        "--wait", action="store_true", help="poll until the job ends (exit 0: completed, no message failed)"
    )
    wait.add_argument("--interval", type=float, default=2.0, help="seconds between polls (default 2)")
    wait.add_argument("--timeout", type=float, help="stop waiting after this many seconds (exit 1)")


# --- configuration: apply, delete, tenants ----------------------------------------------------


def _configuration(subcommands: Commands) -> None:
    apply = _command(
        subcommands,
        "apply",
        "create or update tenants, connections, integrations and subscriptions from a file",
        ["hubctl apply -f examples/rest.yaml --dry-run", "hubctl apply -f examples/rest.yaml"],
        "Shows the difference first; applying the same file again changes nothing.",
        nameless=True,
    )
    apply.add_argument("-f", "--file", required=True, help="YAML or JSON file (examples/)")
    apply.add_argument("--dry-run", action="store_true", help="show the diff, change nothing")
    apply.add_argument(
        "--resend-secrets",
        action="store_true",
        help="also update resources whose only difference may be a secret's value (views mask secrets)",
    )
    apply.set_defaults(func=commands.cmd_apply)

    delete = _command(
        subcommands,
        "delete",
        "delete an integration, a connection or a subscription",
        [
            "hubctl delete integration int_acme_orders --tenant tnt_acme",
            "hubctl delete connection conn_acme_erp --if-version 4",
        ],
        "Refused (409) while in use: an integration with messages waiting, a connection named by one.",
    )
    delete.add_argument("what", choices=("integration", "connection", "subscription"))
    delete.add_argument("id")
    _tenant(delete)
    delete.add_argument("--if-version", type=int, help="only if it is still at this version (If-Match)")
    delete.set_defaults(func=commands.cmd_delete)

    for verb in ("disable", "enable"):
        state = _command(
            subcommands,
            verb,
            f"{verb} a tenant (tenants are disabled, never deleted)",
            [f"hubctl {verb} tenant tnt_acme"],
            "A disabled tenant's keys answer 401; its messages are kept.",
        )
        state.add_argument("what", choices=("tenant",))
        state.add_argument("id")
        state.set_defaults(func=commands.cmd_tenant_state, command=verb)


# --- credentials: keys, tokens, audit ---------------------------------------------------------


def _credentials(subcommands: Commands) -> None:
    keys_group = _command(
        subcommands,
        "keys",
        "partners' API keys (get keys lists them too)",
        ["hubctl keys create --label 'ERP prod' --integration int_acme_orders", "hubctl keys list"],
    )
    keys = keys_group.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = _command(
        keys,
        "create",
        "a new key (printed once)",
        ["hubctl keys create --tenant tnt_acme --label 'ERP prod' --integration int_acme_orders"],
    )
    create.add_argument("--label")
    create.add_argument("--integration", action="append", help="limit the key to it (repeatable)")
    listed = _command(keys, "list", "the tenant's keys (as get keys)", ["hubctl keys list --tenant tnt_acme"])
    _paged(listed)
    revoke = _command(
        keys, "revoke", "revoke a key: it answers 401 from now on", ["hubctl keys revoke key_01j..."]
    )
    revoke.add_argument("key_id")
    rotate = _command(
        keys,
        "rotate",
        "a new key (printed once); the old one works for the grace period",
        ["hubctl keys rotate key_01j... --grace-hours 48"],
    )
    rotate.add_argument("key_id")
    rotate.add_argument("--grace-hours", type=int, help="how long the old key keeps working (default 24)")
    for sub in (create, listed, revoke, rotate):
        _tenant(sub)
        sub.set_defaults(func=commands.cmd_keys)

    tokens_group = _command(
        subcommands,
        "tokens",
        "admin tokens (people's and scripts'; roles viewer < operator < admin)",
        [
            "hubctl tokens create --label 'ops on call' --role operator --tenant tnt_acme",
            "hubctl tokens list",
        ],
        "Without --tenant: platform tokens (the default tenant does not apply here).",
    )
    tokens = tokens_group.add_subparsers(dest="action", required=True, metavar="ACTION")
    token_create = _command(
        tokens,
        "create",
        "a new admin token (printed once)",
        ["hubctl tokens create --label 'ops on call' --role operator --tenant tnt_acme"],
    )
    token_create.add_argument("--label", required=True)
    token_create.add_argument("--role", required=True, choices=("viewer", "operator", "admin"))
    _tenant(token_create, "the tenant it is limited to (absent: a platform token)")
    token_list = _command(
        tokens, "list", "admin tokens (as get tokens)", ["hubctl tokens list --tenant tnt_acme"]
    )
    _tenant(token_list, "its tenant's tokens (absent: platform tokens)")
    _paged(token_list)
    token_revoke = _command(tokens, "revoke", "revoke an admin token", ["hubctl tokens revoke tok_01j..."])
    token_revoke.add_argument("token_id")
    for sub in (token_create, token_list, token_revoke):
        sub.set_defaults(func=commands.cmd_tokens)

    audit = _command(
        subcommands,
        "audit",
        "the audit log, newest first",
        ["hubctl audit --tenant tnt_acme", "hubctl audit   # platform entries"],
        "Without --tenant: platform entries (the default tenant does not apply here).",
        nameless=True,
    )
    _tenant(audit, "its tenant's entries (absent: platform entries)")
    _paged(audit)
    audit.set_defaults(func=commands.cmd_audit)


# --- operations -------------------------------------------------------------------------------


def _operations(subcommands: Commands) -> None:
    _messages(subcommands)

    connections = _command(
        subcommands,
        "connections",
        "a connection's status-callback token",
        ["hubctl connections callback-token conn_acme_erp --tenant tnt_acme"],
    )
    connection_actions = connections.add_subparsers(dest="action", required=True, metavar="ACTION")
    token = _command(
        connection_actions,
        "callback-token",
        "mint (printed once; rotates the current one), --show or --revoke",
        [
            "hubctl connections callback-token conn_acme_erp                   # mint",
            "hubctl connections callback-token conn_acme_erp --grace-hours 0   # the previous stops now",
            "hubctl connections callback-token conn_acme_erp --show",
            "hubctl connections callback-token conn_acme_erp --revoke",
        ],
        nameless=True,
    )
    token.add_argument("connection_id")
    _tenant(token)
    token.add_argument(
        "--grace-hours", type=int, help="how long the previous token keeps working (default 24)"
    )
    which = token.add_mutually_exclusive_group()
    which.add_argument("--show", action="store_true", help="the token's metadata (never the token)")
    which.add_argument("--revoke", action="store_true", help="delete it: callbacks answer 401")
    token.set_defaults(func=commands.cmd_connections)

    dlq = _command(
        subcommands, "dlq", "dead-letter queues of the pipeline's lanes", ["hubctl dlq redrive pipeline"]
    )
    dlq_actions = dlq.add_subparsers(dest="action", required=True, metavar="ACTION")
    redrive = _command(
        dlq_actions,
        "redrive",
        "move a lane's dead-lettered step messages back to its work queue",
        ["hubctl dlq redrive pipeline"],
        nameless=True,
    )
    redrive.add_argument("lane")
    redrive.set_defaults(func=commands.cmd_dlq)

    certs = _command(
        subcommands,
        "certificates",
        "connections' client certificates (mTLS)",
        ["hubctl certificates upload conn_sefaz_sp_status --pfx a1.pfx"],
    )
    cert_actions = certs.add_subparsers(dest="action", required=True, metavar="ACTION")
    upload = _command(
        cert_actions,
        "upload",
        "upload or renew a PKCS#12 (.pfx/.p12) certificate; the password is prompted for",
        [
            "hubctl certificates upload conn_sefaz_sp_status --tenant tnt_acme --pfx a1.pfx",
            "hubctl certificates upload conn_sefaz_sp_status --pfx a1.pfx --password-stdin < a1.pass",
        ],
        nameless=True,
    )
    upload.add_argument("connection_id")
    upload.add_argument("--pfx", required=True, help="the .pfx/.p12 file")
    upload.add_argument(
        "--password-stdin", action="store_true", help="read the password from stdin (else it is prompted for)"
    )
    show = _command(
        cert_actions,
        "show",
        "the stored certificate's metadata and expiry badge",
        ["hubctl certificates show conn_sefaz_sp_status --tenant tnt_acme"],
        nameless=True,
    )
    show.add_argument("connection_id")
    for sub in (upload, show):
        _tenant(sub)
        sub.set_defaults(func=commands.cmd_certificates)

    preview = _command(
        subcommands,
        "preview",
        "run a message type's mapping on a sample payload",
        [
            "hubctl preview int_sap_orders sap_orders05 --tenant tnt_acme "
            "--payload examples/payloads/orders05.xml"
        ],
        "Prints the mapped body (and the duplicate key), or the mapping's error and exits 1.",
        nameless=True,
    )
    preview.add_argument("integration_id")
    preview.add_argument("message_type")
    _tenant(preview)
    preview.add_argument("--payload", required=True, help="a file (JSON, or XML/text), or - for stdin")
    preview.set_defaults(func=commands.cmd_preview)

    test = _command(
        subcommands,
        "test",
        "one harmless call to a connection (TLS, WSDL, GET)",
        ["hubctl test conn_acme_erp --tenant tnt_acme"],
        "Prints ok, error_class, dest_status and detail; exits 1 when the connection would fail.",
        nameless=True,
    )
    test.add_argument("connection_id")
    _tenant(test)
    test.set_defaults(func=commands.cmd_test)

    for name, text, example in (
        ("pause", "pause a connection: deliveries wait on it until resume", "hubctl pause conn_acme_erp"),
        (
            "resume",
            "resume a connection: its held messages are released at the bounded rate",
            "hubctl resume conn_acme_erp",
        ),
        ("state", "a connection's pause and circuit-breaker state", "hubctl state conn_acme_erp"),
    ):
        command = _command(
            subcommands, name, text, [f"{example} --tenant tnt_acme"], nameless=name == "state"
        )
        command.add_argument("connection_id")
        _tenant(command)
        command.set_defaults(func=commands.cmd_connection_state)


def _messages(subcommands: Commands) -> None:
    group = _command(
        subcommands,
        "messages",
        "the queue and operator actions (the older spelling of get/describe/find/reprocess/cancel)",
        [
            "hubctl messages list --tab error",
            "hubctl messages show msg_01j...",
            "hubctl messages find PO-4711",
        ],
    )
    actions_of = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    listed = _command(
        actions_of,
        "list",
        "a queue tab, newest first (as get messages; default tab error)",
        ["hubctl messages list --tenant tnt_acme --tab dead_letter --integration int_acme_orders"],
    )
    _tenant(listed)
    _queue_filters(listed, "error")
    _paged(listed)
    show = _command(
        actions_of,
        "show",
        "a message with its timeline (as describe message)",
        ["hubctl messages show msg_01j..."],
    )
    show.add_argument("id", type=message_ref, metavar="MESSAGE_ID")
    show.set_defaults(noun=Ref(MESSAGE))
    find = _command(
        actions_of,
        "find",
        "a tenant's messages by an exact value (as find)",
        ["hubctl messages find PO-4711 --by external_id"],
    )
    find.add_argument("value", metavar="VALUE")
    _find_options(find)
    callbacks = _command(
        actions_of,
        "callbacks",
        "its delivery-status callbacks as received, newest first",
        ["hubctl messages callbacks msg_01j..."],
        nameless=True,
    )
    callbacks.add_argument("message_id", type=message_ref, metavar="MESSAGE_ID")
    _paged(callbacks)
    reprocess = _command(
        actions_of,
        "reprocess",
        "a new execution (as reprocess)",
        ["hubctl messages reprocess msg_01j...", "hubctl messages reprocess msg_01j... --force"],
    )
    reprocess.add_argument("message_id", type=message_ref, metavar="MESSAGE_ID")
    reprocess.add_argument(
        "--force", action="store_true", help="also when the destination already accepted it"
    )
    cancel = _command(
        actions_of,
        "cancel",
        "cancel its waiting retry or dead letter (as cancel)",
        ["hubctl messages cancel msg_01j..."],
    )
    cancel.add_argument("message_id", type=message_ref, metavar="MESSAGE_ID")
    for sub in actions_of.choices.values():
        sub.set_defaults(func=commands.cmd_messages)


# --- outbound webhook subscriptions -----------------------------------------------------------


def _subscriptions(subcommands: Commands) -> None:
    group = _command(
        subcommands,
        "subscriptions",
        "outbound webhook subscriptions (signed events; get subscriptions lists them too)",
        [
            "hubctl subscriptions create --url https://erp.example.com/hub-events --event message.sent",
            "hubctl subscriptions failed sub_acme_erp_status",
        ],
    )
    actions_of = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    listed = _command(
        actions_of, "list", "the tenant's subscriptions (as get subscriptions)", ["hubctl subscriptions list"]
    )
    _paged(listed)
    create = _command(
        actions_of,
        "create",
        "a new subscription (its signing secret is printed once)",
        [
            "hubctl subscriptions create --tenant tnt_acme --url https://erp.example.com/hub-events "
            "--event message.sent --event 'connection.*' --integration int_acme_orders"
        ],
    )
    create.add_argument("--url", required=True, help="https (plain http to 127.0.0.1 only)")
    create.add_argument(
        "--event", action="append", required=True, help="an event type, message.* or * (repeatable)"
    )
    create.add_argument("--integration", action="append", help="only this integration's events (repeatable)")
    create.add_argument("--description")
    with_id = {
        "show": ("its settings, secrets masked (as describe subscription)", ""),
        "delete": ("delete it", ""),
        "rotate": (
            "add a signing secret (printed once); the current ones sign for the grace period",
            " --grace-hours 24",
        ),
        "retire-secrets": ("stop signing with every secret but the newest", ""),
        "enable": ("send to it again", ""),
        "disable": ("stop sending to it (emits subscription.disabled)", " --reason 'receiver moving'"),
        "failed": ("its failed deliveries, newest first", ""),
        "replay": ("send failed deliveries again (same webhook-id)", " --since 2026-12-01T00:00:00Z"),
    }
    for name, (text, extra) in with_id.items():
        sub = _command(
            actions_of,
            name,
            text,
            [f"hubctl subscriptions {name} sub_acme_erp_status{extra}"],
            nameless=name in ("failed", "show"),
        )
        sub.add_argument("subscription_id")
    actions_of.choices["delete"].add_argument("--if-version", type=int, help="only if still at this version")
    actions_of.choices["rotate"].add_argument(
        "--grace-hours", type=int, help="how long the current secrets keep signing (default 24; 0: stop now)"
    )
    actions_of.choices["disable"].add_argument("--reason")
    _paged(actions_of.choices["failed"])
    actions_of.choices["replay"].add_argument("--event", help="the failed delivery's event id")
    actions_of.choices["replay"].add_argument("--since", help="every failure at or after this ISO time (UTC)")
    for sub in actions_of.choices.values():
        _tenant(sub)
        sub.set_defaults(func=commands.cmd_subscriptions)
