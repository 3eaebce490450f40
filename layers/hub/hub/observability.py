"""Tracing that costs nothing when it is off.

Powertools' `Tracer` imports the X-Ray SDK when it is constructed, even disabled
(POWERTOOLS_TRACE_DISABLED=true, the local stack and the tests), which is a large share of a cold
start. Handlers decorate with `traced` instead of holding a `Tracer`: on AWS (`Tracing: Active`)
it is Powertools' `capture_lambda_handler`; elsewhere the handler is left as it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

from aws_lambda_powertools import Tracer
from aws_lambda_powertools.shared import constants
from aws_lambda_powertools.shared.functions import resolve_truthy_env_var_choice

Handler = TypeVar("Handler", bound=Callable[..., Any])


def tracing_enabled() -> bool:
    """Powertools' own rule: off when POWERTOOLS_TRACE_DISABLED is true, outside Lambda (no
    LAMBDA_TASK_ROOT) and under SAM local or Chalice; on otherwise."""
    if resolve_truthy_env_var_choice(env=os.getenv(constants.TRACER_DISABLED_ENV, "false")):
        return False
    in_lambda = bool(os.getenv(constants.LAMBDA_TASK_ROOT_ENV))
    emulated = bool(os.getenv(constants.SAM_LOCAL_ENV) or os.getenv(constants.CHALICE_LOCAL_ENV))
    return in_lambda and not emulated


def traced(handler: Handler) -> Handler:
    """`handler` under `Tracer().capture_lambda_handler` when tracing is on; `handler` itself
    (and no X-Ray SDK loaded) when it is off. Decided once, when the handler module loads."""
    if not tracing_enabled():
        return handler
    return cast(Handler, Tracer().capture_lambda_handler(handler))
