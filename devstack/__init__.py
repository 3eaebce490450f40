"""Local runtime of the SAM stack on moto: ``from devstack import LocalStack``.

Kept import-light on purpose: every function instance process imports this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from devstack.stack import LocalStack

__all__ = ["LocalStack"]


def __getattr__(name: str) -> Any:
    if name == "LocalStack":
        from devstack.stack import LocalStack  # noqa: PLC0415 - keep instances light

        return LocalStack
    raise AttributeError(name)
