"""Tracing that costs nothing when it is off, and a cold start without garbage collections.

Powertools' `Tracer` imports the X-Ray SDK when it is constructed, even disabled
(POWERTOOLS_TRACE_DISABLED=true, the local stack and the tests), which is a large share of a cold
start. Handlers decorate with `traced` instead of holding a `Tracer`: on AWS (`Tracing: Active`)
it is Powertools' `capture_lambda_handler`; elsewhere the handler is left as it is.

A cold start allocates some hundred thousand long-lived objects (modules, classes, botocore's
service models, pydantic's validators) and almost no garbage: its collections (one full one among
them) are ~50 ms of CPU that free a few hundred objects. The collector is paused from the
handler module's first import (`hub.cold_start`) to the end of the first invocation
(`gc_after_first_invocation`), then what exists is frozen (it is the instance's working set:
never scanned again) and it collects normally after that.
"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

from aws_lambda_powertools import Tracer
from aws_lambda_powertools.shared import constants
from aws_lambda_powertools.shared.functions import resolve_truthy_env_var_choice

from hub import cold_start

Handler = TypeVar("Handler", bound=Callable[..., Any])


def in_lambda() -> bool:
    """In a Lambda execution environment (or the local stack's emulation of one): Powertools'
    own test, LAMBDA_TASK_ROOT set."""
    return bool(os.getenv(constants.LAMBDA_TASK_ROOT_ENV))


def tracing_enabled() -> bool:
    """Powertools' own rule: off when POWERTOOLS_TRACE_DISABLED is true, outside Lambda (no
    LAMBDA_TASK_ROOT) and under SAM local or Chalice; on otherwise."""
    if resolve_truthy_env_var_choice(env=os.getenv(constants.TRACER_DISABLED_ENV, "false")):
        return False
    emulated = bool(os.getenv(constants.SAM_LOCAL_ENV) or os.getenv(constants.CHALICE_LOCAL_ENV))
    return in_lambda() and not emulated


def traced(handler: Handler) -> Handler:
    """`handler` under `Tracer().capture_lambda_handler` when tracing is on; `handler` itself
    (and no X-Ray SDK loaded) when it is off. Decided once, when the handler module loads."""
    if not tracing_enabled():
        return handler
    return cast(Handler, Tracer().capture_lambda_handler(handler))


def gc_after_first_invocation(handler: Handler) -> Handler:
    """`handler` with the garbage collector paused until its first invocation returns or raises
    (paused since `hub.cold_start` was imported: the handler module's first import, or at the
    latest this module's); then everything alive is frozen (`gc.freeze`) and the collector runs
    as usual. In Lambda only: a process that imports a handler without invoking it (tests,
    tools) keeps its collector. Apply it outermost, so the Powertools decorators' work in the
    first invocation runs paused too."""
    if not in_lambda():
        return handler
    if gc.isenabled():
        gc.disable()
    elif not cold_start.paused:  # paused by someone else: theirs to resume
        return handler
    pending = [True]

    @functools.wraps(handler)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return handler(*args, **kwargs)
        finally:
            if pending:
                pending.clear()
                gc.freeze()
                gc.enable()

    return cast(Handler, wrapper)
