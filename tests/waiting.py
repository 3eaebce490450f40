"""Waits bounded by progress, for the tiers that run the local stack (e2e, reliability, soak).

A fixed wall-clock bound fails a test on a loaded machine although nothing is wrong: the stack
is slow, not stuck. ``wait_for`` instead polls until the awaited thing happens and gives up only
when nothing advanced for ``stall`` seconds - neither the probe's own answer nor a progress
marker, by default the activity of every local stack running in this process (its event
sources' invocations: devstack.stack.LocalStack.activity) - or after a generous ``ceiling``.

So a wait keeps waiting while the pipeline is still at work and fails soon once the stack is
idle and the thing did not happen. Waits that measure time on purpose ("nothing arrives within
N seconds", a rate) are not this helper's: they sleep, and say so.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from devstack.lambda_runtime import Trigger

T = TypeVar("T")

#: Seconds without any progress after which a wait fails.
STALL_SECONDS = 60.0
#: Seconds after which a wait fails whatever happens (a hung run still ends).
CEILING_SECONDS = 900.0
#: Seconds between two polls.
INTERVAL_SECONDS = 0.2

#: A progress marker: any value; "advanced" is "not equal to the one before".
Progress = Callable[[], object]


class _Busy:
    """A marker equal only to itself, made anew on each call: a stack at work is advancing."""

    def __repr__(self) -> str:
        return "busy"


def local_stacks() -> object:
    """The default progress marker: the activity of every local stack running in this process
    (its event sources' invocations, never a caller's requests: a probe's own calls to the API
    are no progress), and a new marker on every call while one of them is running such an
    invocation (one invocation may take long; a running one is progress). Constant when no
    stack runs (the stack of `make run` in another process is not seen: give such waits their
    own marker)."""
    return _stacks_marker("event")


def every_invocation() -> object:
    """Like ``local_stacks`` but counting every invocation, HTTP requests and direct invokes
    too: for a wait whose probe makes no request itself (a process's end, a console line)."""
    return _stacks_marker(None)


def _stacks_marker(trigger: Trigger | None) -> object:
    from devstack.stack import running_stacks  # noqa: PLC0415 - boto3 and moto only where used

    stacks = running_stacks()
    if any(stack.busy(trigger) for stack in stacks):
        return _Busy()
    return tuple(stack.activity(trigger) for stack in stacks)


def combined(*markers: Progress) -> Progress:
    """One marker out of several: advanced when any of them did."""
    return lambda: tuple(marker() for marker in markers)


def cpu_seconds(pid: int) -> Progress:
    """A marker of a process at work: its CPU time and that of its reaped children so far (Linux,
    /proc; None once the process is gone or where there is no /proc)."""

    def marker() -> float | None:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        # utime, stime, cutime, cstime: fields 14-17 of stat(5), 12-15 after the name and state.
        return sum(int(value) for value in fields[11:15]) / 100

    return marker


def wait_for(
    probe: Callable[[], T],
    what: str,
    *,
    until: Callable[[T], Any] = bool,
    progress: Progress | None = None,
    stall: float = STALL_SECONDS,
    ceiling: float = CEILING_SECONDS,
    interval: float = INTERVAL_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Polls ``probe()`` until ``until(answer)`` holds (by default: the answer is truthy) and
    returns that answer.

    Fails with an AssertionError naming ``what``, the last answer and the time waited when
    nothing advanced for ``stall`` seconds, or once ``ceiling`` seconds have passed. Advanced:
    the probe's answer changed (compared with ``==`` to a copy of the one before when it is a
    list, dict or set: return values that compare, not fresh objects), or the ``progress()``
    marker did; ``progress`` defaults to ``local_stacks``
    (pass ``lambda: None`` to count the probe's answers alone). An exception of the probe is
    not caught. ``clock`` and ``sleep`` are the real ones but for the helper's own tests."""
    marker = progress if progress is not None else local_stacks
    started = clock()
    answer, seen = probe(), marker()
    kept = _snapshot(answer)
    last_change = started
    while not until(answer):
        now = clock()
        if now - last_change >= stall or now - started >= ceiling:
            why = (
                f"nothing advanced for {now - last_change:.0f} s"
                if now - last_change >= stall
                else f"the ceiling of {ceiling:g} s passed"
            )
            raise AssertionError(
                f"waited {now - started:.0f} s for {what}, in vain ({why}); last answer: {_shown(answer)}"
            )
        sleep(interval)
        answer, new_seen = probe(), marker()
        if not (_same(answer, kept) and _same(new_seen, seen)):
            last_change = clock()
        kept, seen = _snapshot(answer), new_seen
    return answer


def _snapshot(answer: object) -> object:
    """What to compare the next answer with: a copy of a list, dict or set (a probe may answer
    the same list each time, grown since), the answer itself otherwise."""
    return copy.copy(answer) if isinstance(answer, list | dict | set) else answer


def _same(one: object, other: object) -> bool:
    try:
        return bool(one == other)
    except Exception:  # a value that cannot be compared: taken as a change
        return False


def _shown(answer: object, limit: int = 500) -> str:
    text = repr(answer)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
