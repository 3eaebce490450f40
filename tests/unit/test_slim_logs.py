"""A handler's log lines (issue 29): Powertools' JSON without the context the log group already
says, still with the request id, the logger's extras and the redaction filter."""

from __future__ import annotations

import io
import json
import logging
import uuid

import pytest

from hub.logs import REPEATED_CONTEXT, configure, new_logger
from tests.aws import LambdaContext


def test_a_line_keeps_what_varies_and_drops_the_repeated_context(monkeypatch):
    # Powertools keeps one configured logger per service name (an earlier test's, with its own
    # stream, would answer): a service of this test's own.
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", f"slim-logs-{uuid.uuid4().hex}")
    written = io.StringIO()
    logger = new_logger(stream=written)
    configure(logger)

    @logger.inject_lambda_context
    def handler(event: dict, context: object) -> None:
        logger.info("delivered", extra={"message_id": "msg_1", "note": "mail ana@example.com"})

    handler({}, LambdaContext())

    [line] = [json.loads(text) for text in written.getvalue().splitlines() if "delivered" in text]
    assert not REPEATED_CONTEXT & set(line)
    assert (line["level"], line["message"], line["message_id"]) == ("INFO", "delivered", "msg_1")
    assert line["function_request_id"] == LambdaContext().aws_request_id
    assert "ana@example.com" not in json.dumps(line)  # the redaction filter still runs


@pytest.mark.parametrize(
    ("write", "level"),
    [("debug", "DEBUG"), ("info", "INFO"), ("warning", "WARN"), ("error", "ERROR"), ("critical", "FATAL")],
)
def test_a_line_names_its_level_as_lambda_filters_it(monkeypatch, write, level):
    # Lambda's log-level filter reads TRACE/DEBUG/INFO/WARN/ERROR/FATAL; anything else is INFO to it.
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", f"slim-logs-{uuid.uuid4().hex}")
    monkeypatch.setenv("AWS_LAMBDA_LOG_LEVEL", "DEBUG")
    written = io.StringIO()
    logger = new_logger(stream=written)

    getattr(logger, write)("something")

    [line] = [json.loads(text) for text in written.getvalue().splitlines()]
    assert line["level"] == level


def test_the_level_is_lambdas_application_log_level(monkeypatch):
    # Given Lambda's level (LoggingConfig ApplicationLogLevel, as AWS_LAMBDA_LOG_LEVEL) at INFO
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", f"slim-logs-{uuid.uuid4().hex}")
    monkeypatch.setenv("AWS_LAMBDA_LOG_LEVEL", "INFO")
    module_logger = logging.getLogger("hub.slim_logs_test")  # a hub module's, as at import
    written = io.StringIO()
    logger = new_logger(stream=written)
    configure(logger)

    # When a hub module logs at DEBUG and at INFO
    module_logger.debug("step by step")
    module_logger.info("outcome")

    # Then only the INFO line is written (Lambda would drop the other anyway)
    assert [json.loads(text)["message"] for text in written.getvalue().splitlines()] == ["outcome"]
