"""What the wiring builds once per process, and forgetting all of it.

A builder decorated `@once` keeps its one instance (`functools.lru_cache`) and is recorded here
when its module loads, so `reset` clears every one of them - a new builder cannot be left out
of it (`tests/unit/test_wiring.py` also checks that no cache in `hub.wiring` bypasses `once`).
A function's settings are built the same way (`settings_of`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from hub.config import Settings, load_settings, settings

if TYPE_CHECKING:
    from collections.abc import Callable
    from functools import _lru_cache_wrapper

T = TypeVar("T")
S = TypeVar("S", bound=Settings)

#: Every cache `reset` clears: the process-wide settings, then each `once` builder as its module
#: loads (a module never loaded has built nothing).
_BUILT: list[_lru_cache_wrapper[Any]] = [settings]


def once(builder: Callable[[], T]) -> _lru_cache_wrapper[T]:
    """`builder`'s result, built at its first call and kept until `reset`."""
    built = lru_cache(maxsize=1)(builder)
    _BUILT.append(built)
    return built


def settings_of(model: type[S], function: str) -> _lru_cache_wrapper[S]:
    """The settings `function` needs, as `model` validated from the environment once (until
    `reset`); the error names the missing or invalid variables and the function."""

    def build() -> S:
        return load_settings(model, function)

    return once(build)


def built() -> list[_lru_cache_wrapper[Any]]:
    """What `reset` clears (tests check that every cache of the wiring is among them)."""
    return list(_BUILT)


def reset() -> None:
    """Forget everything built (tests switch environments between cases; a SnapStart restore
    starts afresh)."""
    for cached in _BUILT:
        cached.cache_clear()
