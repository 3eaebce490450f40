"""`hubctl`: the operator's command line for the hub's admin API (docs/hubctl.md).

Exit status: 0 done; 1 the API refused (its error code and message are printed), or a preview,
a connection test or a waited-for bulk job failed; 2 a usage, configuration or file error
(nothing was sent); 3 the API could not be reached.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from hubctl.client import AdminClient, ApiError, BadUrl, TransportError
from hubctl.config import ConfigError, resolve
from hubctl.context import EXIT_API, EXIT_UNREACHABLE, EXIT_USAGE, Context, NotFound, UsageError
from hubctl.output import as_json
from hubctl.parser import build_parser

__all__ = ["Context", "build_parser", "main", "run"]

#: What to do about an API refusal whose command left no hint of its own.
_HINTS = {
    "route_not_found": "this admin API has no such route: is the hub older than this hubctl?",
    "idempotency_key_in_use": "the same action is still running: look at its result in a moment",
    "rate_limited": "too many requests with this token: wait for Retry-After, then run it again",
}


def run(argv: Sequence[str] | None, ctx_factory: Callable[[argparse.Namespace], Context]) -> int:
    args = build_parser().parse_args(argv)
    ctx = ctx_factory(args)
    try:
        if args.output == "name" and getattr(args, "nameless", False):
            raise UsageError(
                f"-o name: {args.command}'s answer names no resource; use table, wide, json or yaml"
            )
        return int(args.func(ctx))
    except ApiError as error:
        ctx.note(f"error: {error.code}: {error.message} (HTTP {error.status})")
        if error.details:
            ctx.note(f"details: {as_json(error.details)}")
        hint = error.hint or _HINTS.get(error.code)
        if hint:
            ctx.note(f"hint: {hint}")
        return EXIT_API
    except NotFound as error:
        ctx.note(f"error: not_found: {error}")
        return EXIT_API
    except (UsageError, ConfigError, BadUrl) as error:
        ctx.note(f"error: {error}")
        return EXIT_USAGE
    except TransportError as error:
        ctx.note(f"error: cannot reach the admin API at {error.url}: {error.cause}")
        return EXIT_UNREACHABLE
    finally:
        if ctx._client is not None:
            ctx._client.close()


def main(argv: Sequence[str] | None = None) -> int:
    def context(args: argparse.Namespace) -> Context:
        ctx: Context

        def client() -> AdminClient:
            target = resolve(args.url, args.token, args.profile)
            return AdminClient(target.url, target.token, on_retry=lambda text: ctx.note(f"note: {text}"))

        ctx = Context(args, client)
        return ctx

    return run(argv, context)
