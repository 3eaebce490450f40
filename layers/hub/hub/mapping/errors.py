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
