"""Bounds on running a mapping (issue 27), checked while it runs.

Every value an expression builds, and the mapped body, stay under a size limit, and a run stops
at a deadline. Sizes are checked as each value is built, so an expression that doubles the
document twenty times (``[@,@] | [@,@] | ... | to_string(@)``) is refused after a few kilobytes
instead of allocating 120 MB.

Sizes are those of the compact JSON text, estimated without writing it (strings count their
characters). A value an expression only selects (a part of the payload) costs nothing; what it
builds (a multi-select list or object, a projection, a flattened list, a function's result)
counts, by its whole logical size: each such value at most `max_body_bytes`, and everything one
expression builds together at most BUILT_PER_EXPRESSION times that, so no builder can hold
much more than the limit at once. `join` and `to_string` are checked before they allocate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from jmespath.functions import Functions, signature
from jmespath.parser import ParsedResult
from jmespath.visitor import Options, TreeInterpreter

from hub.domain.mapping_errors import MappingTooLarge
from hub.domain.mapping_spec import MAX_BODY_BYTES, compiled

#: How long one message's mapping may run. Real ones take milliseconds; a 5,000-line order
#: takes well under a second. The worker's Lambda timeout stays far away.
MAX_SECONDS = 2.0
#: What one expression may build in all, in multiples of the size limit: room for a projection
#: of built objects (counted once as objects, once as the list), never a pile of huge values.
BUILT_PER_EXPRESSION = 4

#: Parse-tree nodes whose result is a new value (the others select a part of their input).
_BUILDERS = frozenset(
    {
        "multi_select_list",
        "multi_select_dict",
        "projection",
        "value_projection",
        "filter_projection",
        "flatten",
        "function_expression",
    }
)


@dataclass(frozen=True)
class MappingLimits:
    """The size and time bounds of one mapping run."""

    max_body_bytes: int = MAX_BODY_BYTES
    max_seconds: float = MAX_SECONDS

    def lowered_to(self, max_body_bytes: int | None) -> MappingLimits:
        """These limits with the size bound lowered to `max_body_bytes` (a spec's own), if given."""
        if max_body_bytes is None or max_body_bytes >= self.max_body_bytes:
            return self
        return replace(self, max_body_bytes=max_body_bytes)


DEFAULT_LIMITS = MappingLimits()


def _shown(expression: str) -> str:
    return repr(expression if len(expression) <= 60 else f"{expression[:60]}...")


class Budget:
    """One mapping run's allowance: raises MappingTooLarge, naming the expression and output
    field at work, as soon as a value, the body or the time goes over its limit. One per run;
    not shared between threads."""

    def __init__(self, limits: MappingLimits, timer: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._timer = timer
        self._deadline = timer() + limits.max_seconds
        self._interpreter = _GuardedInterpreter(self)
        self._body = 0
        self._built = 0
        self._field: str | None = None
        self._expression: str | None = None
        #: Sizes of the lists and objects measured, by id, with the value kept alive so that no
        #: id is reused while the entry exists. Shared references are measured once.
        self._sizes: dict[int, tuple[Any, int]] = {}

    def search(self, parsed: ParsedResult, expression: str, document: Any, field: str) -> Any:
        """`parsed` (compiled from `expression`) evaluated on `document` within the limits."""
        self._field, self._expression, self._built = field, expression, 0
        try:
            return self._interpreter.visit(parsed.parsed, document)
        finally:
            self._sizes.clear()  # keeps no built value alive past its search
            self._expression = None

    def tick(self, field: str | None = None) -> None:
        """Raises once the run is past its deadline."""
        if self._timer() > self._deadline:
            where = f" (at path {_shown(self._expression)})" if self._expression else ""
            self._over(
                "seconds",
                self.limits.max_seconds,
                f"mapping ran longer than {self.limits.max_seconds:g} s{where}",
                field if field is not None else self._field,
            )

    def built(self, value: Any) -> None:
        """Counts a value the current expression built."""
        size = self.size_of(value)
        self._built += size
        if (
            size > self.limits.max_body_bytes
            or self._built > BUILT_PER_EXPRESSION * self.limits.max_body_bytes
        ):
            self._too_big()

    def expect(self, size: int) -> None:
        """Refuses, before it is built, a value of `size` bytes the expression is about to build."""
        if size > self.limits.max_body_bytes:
            self._too_big()

    def add_to_body(self, value: Any, field: str) -> None:
        """Counts `value` into the mapped body."""
        self.add_bytes(self.size_of(value), field)
        if self._sizes:
            self._sizes.clear()

    def add_bytes(self, size: int, field: str) -> None:
        """Counts `size` bytes (keys, punctuation) into the mapped body."""
        self._body += size
        if self._body > self.limits.max_body_bytes:
            self._body_over(field)

    def check_body(self, body: bytes) -> None:
        """Refuses a serialized body over the limit (XML tags, escapes: more than estimated)."""
        if len(body) > self.limits.max_body_bytes:
            self._body_over(None)

    def size_of(self, value: Any) -> int:
        """The length of `value` as compact JSON, estimated; once over the limit, some number
        over it (measuring stops there)."""
        if isinstance(value, str):
            return len(value) + 2
        if isinstance(value, list | dict):
            return self._container_size(value)
        if value is None or isinstance(value, bool):
            return 5
        if isinstance(value, int):
            return value.bit_length() * 31 // 100 + 2  # about its decimal digits, without writing them
        return len(str(value))  # a float, a Decimal, an expression reference: short texts

    def _container_size(self, value: list[Any] | dict[Any, Any]) -> int:
        known = self._sizes.get(id(value))
        if known is not None:
            return known[1]
        cap, total = self.limits.max_body_bytes, 2
        if isinstance(value, dict):
            for key, item in value.items():
                total += len(str(key)) + 4 + self.size_of(item)
                if total > cap:
                    break
        else:
            for item in value:
                total += self.size_of(item) + 1
                if total > cap:
                    break
        self._sizes[id(value)] = (value, total)
        return total

    def _too_big(self) -> None:
        maximum = self.limits.max_body_bytes
        what = f"path {_shown(self._expression)}" if self._expression else "an expression"
        self._over("intermediate_bytes", maximum, f"{what} builds a value over {maximum} bytes", self._field)

    def _body_over(self, field: str | None) -> None:
        maximum = self.limits.max_body_bytes
        self._over("body_bytes", maximum, f"the mapped body is over {maximum} bytes", field)

    def _over(self, limit: str, maximum: float, problem: str, field: str | None) -> None:
        raise MappingTooLarge(
            problem,
            limit=limit,
            maximum=maximum,
            field=field,
            expression=self._expression,
        )


class _BoundedFunctions(Functions):
    """JMESPath's functions; the two whose result can outgrow their arguments are checked
    before they allocate it."""

    def __init__(self, budget: Budget) -> None:
        self._budget = budget

    @signature({"types": ["string"]}, {"types": ["array-string"]})
    def _func_join(self, separator: str, array: list[str]) -> str:
        # The separator repeats once per item: a long one times many items is the product.
        self._budget.expect(len(separator) * max(len(array) - 1, 0) + sum(map(len, array)) + 2)
        return separator.join(array)

    @signature({"types": []})
    def _func_to_string(self, arg: Any) -> Any:
        if not isinstance(arg, str):
            self._budget.expect(self._budget.size_of(arg))
        return super()._func_to_string(arg)


class _GuardedInterpreter(TreeInterpreter):
    """jmespath's interpreter with the budget's checks: the deadline at every node, the size of
    every value a node builds as it returns."""

    def __init__(self, budget: Budget) -> None:
        super().__init__(Options(custom_functions=_BoundedFunctions(budget)))
        self._budget = budget

    def visit(self, node: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        self._budget.tick()
        result = super().visit(node, *args, **kwargs)
        if node["type"] in _BUILDERS:
            self._budget.built(result)
        return result


#: Bounds on the short expressions outside a mapping that run on a partner's payload (business
#: keys, inbound webhook paths): what they build is a key or a header-sized value.
KEY_LIMITS = MappingLimits(max_body_bytes=16 * 1024, max_seconds=0.5)


def bounded_search(expression: str, document: Any, field: str, limits: MappingLimits = KEY_LIMITS) -> Any:
    """`expression` evaluated on `document` by the same guarded interpreter as a mapping: raises
    MappingTooLarge (naming `field` and the expression) past a size or time bound; jmespath's
    own errors as jmespath raises them."""
    return Budget(limits).search(compiled(expression), expression, document, field)
