"""Logging set-up shared by every handler: Powertools' JSON logging reaches the `hub` loggers,
and every record leaves through the redaction helper (hub.domain.redaction) - personal data a
message or an extra value may carry (CPF, CNPJ, e-mail, phone) is masked before it is written.
The hub never logs payloads or credentials in the first place; this is the second line."""

from __future__ import annotations

import logging
import traceback
from typing import IO, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers

from hub.domain.redaction import redact_text

#: Attributes every LogRecord has; anything else on a record is an `extra` value.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class RedactingFilter(logging.Filter):
    """Masks personal data in a record's message and its extra values (strings, and strings
    inside dicts and lists). Never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_text(record.getMessage())
            record.args = None
        for name, value in list(vars(record).items()):
            if name not in _STANDARD:
                setattr(record, name, _redacted(value))
        if isinstance(record.exc_info, tuple) and record.exc_info[0] is not None:
            # An exception's text may quote data too: the traceback leaves formatted and
            # redacted, under the keys Powertools uses for it.
            kind = record.exc_info[0].__name__
            record.exception = redact_text("".join(traceback.format_exception(*record.exc_info)))
            record.exception_name = kind
            record.exc_info = None
            record.exc_text = None
        return True


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(item) for item in value]
    return value


#: What Powertools' Lambda context adds to every line that the line's log group already says (one
#: group per function: its name, memory and ARN) or that says nothing per line (the service is
#: the stage's, `cold_start` is the Lambda init's): ~230 bytes a line, billed at every line
#: (issue 29). The request id stays: it ties one invocation's lines together.
REPEATED_CONTEXT = frozenset(
    {"function_name", "function_memory_size", "function_arn", "cold_start", "service"}
)


#: Python's level names that Lambda's log-level filter does not use: it reads a JSON line's `level`
#: as TRACE, DEBUG, INFO, WARN, ERROR or FATAL and takes anything else for INFO, so a "WARNING"
#: line would be dropped under ApplicationLogLevel WARN (template.yaml, LoggingConfig).
LAMBDA_LEVEL_NAMES = {"WARNING": "WARN", "CRITICAL": "FATAL"}


class SlimFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON lines without REPEATED_CONTEXT, levels in Lambda's names."""

    def serialize(self, log: dict[str, Any]) -> str:  # type: ignore[override]
        slim = {key: value for key, value in log.items() if key not in REPEATED_CONTEXT}
        level = slim.get("level")
        if isinstance(level, str) and level in LAMBDA_LEVEL_NAMES:
            slim["level"] = LAMBDA_LEVEL_NAMES[level]
        return super().serialize(slim)


def new_logger(stream: IO[str] | None = None) -> Logger:
    """A handler's Powertools logger, writing slim lines (SlimFormatter) to stdout (or `stream`).
    Its level is Lambda's application log level (AWS_LAMBDA_LOG_LEVEL, set from the template's
    LoggingConfig, here and on the local stack), INFO without one: Powertools' own order."""
    return Logger(logger_formatter=SlimFormatter(), stream=stream)


def configure(logger: Logger) -> None:
    """The handler's Powertools logger formats the `hub` loggers' records too, all redacted."""
    for handler in logger.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
    copy_config_to_registered_loggers(source_logger=logger, include={"hub"})
