"""The one error the mapping engine raises."""

from __future__ import annotations

from typing import ClassVar

from hub.domain.failure import ErrorClass
from hub.errors import HubError


class MappingError(HubError):
    """The input cannot be mapped: malformed or unsafe XML/JSON, a required field missing, a
    value a transform cannot convert. Always `syntax`: resending the same message fails the
    same way, so it is never retried.

    `field` is the output field path (e.g. ``order.lines[2].qty``), or None when the input
    document as a whole is at fault. Messages name the field and the problem, never the
    payload value: payloads carry personal data (CPF/CNPJ, e-mail).
    """

    code = "mapping_failed"
    http_status = 422
    error_class: ClassVar[ErrorClass] = ErrorClass.SYNTAX

    def __init__(self, problem: str, *, field: str | None = None) -> None:
        message = f"field '{field}': {problem}" if field else problem
        super().__init__(message, details={"field": field} if field else None)
        self.field = field
        self.problem = problem


class MappingTooLarge(MappingError):
    """A mapping over one of the engine's limits: an expression too long or nested
    too deep, a value an expression builds or the mapped body over the size limit, or an
    evaluation over the time limit. Still `syntax` (the same message fails the same way);
    `details` names the `expression` (None when the body as a whole is at fault), the output
    `field`, the `limit` crossed and its `maximum`. The preview routes answer it as 422 rather
    than as a preview of a failing message, since the spec itself is what must change."""

    code = "mapping_too_large"

    def __init__(
        self, problem: str, *, limit: str, maximum: float, field: str | None, expression: str | None
    ) -> None:
        super().__init__(problem, field=field)
        self.details = {"field": field, "expression": expression, "limit": limit, "maximum": maximum}
        self.expression = expression
        self.limit = limit
