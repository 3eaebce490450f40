"""A handler's log lines (issue 29): Powertools' JSON without the context the log group already
says, still with the request id, the logger's extras and the redaction filter."""

from __future__ import annotations

import io
import json
import uuid

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
