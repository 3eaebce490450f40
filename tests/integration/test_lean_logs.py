"""Lean logs by default (issue 29), through the real ingest and worker handlers with the level
the template gives them (LoggingConfig's ApplicationLogLevel, as AWS_LAMBDA_LOG_LEVEL): what a
delivered message writes to stdout, which Lambda sends to CloudWatch Logs."""

from __future__ import annotations

import io
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.aws import LambdaContext, load_handler
from tests.integration.conftest import HttpAnswer
from tests.pipeline import configure, pump, send, status


@dataclass
class Handlers:
    ingest_api: Callable[[dict[str, Any]], HttpAnswer]
    run_worker: Callable[[], int]
    #: What the handlers' loggers wrote (the hub loggers share their handler).
    logs: io.StringIO


@pytest.fixture
def handlers(stack, monkeypatch) -> Iterator[Handlers]:
    """The ingest and worker handlers, loaded under a service name of this test's own (Powertools
    keeps one configured logger per service name, writing to the stream it was created with),
    their log lines into `logs`; what else they print (EMF) goes to stdout (capsys)."""
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", f"lean-logs-{uuid.uuid4().hex}")
    ingest = load_handler("IngestApiFunction")
    worker = load_handler("PipelineWorkerFunction")
    [handler] = [
        h
        for h in logging.getLogger(os.environ["POWERTOOLS_SERVICE_NAME"]).handlers
        if type(h) is logging.StreamHandler
    ]
    assert handler in logging.getLogger("hub").handlers
    sink = io.StringIO()
    previous = handler.setStream(sink)

    def ingest_api(event: dict[str, Any]) -> HttpAnswer:
        answer = ingest(event, LambdaContext())
        return HttpAnswer(answer["statusCode"], json.loads(answer["body"]), answer.get("headers", {}))

    def run_worker() -> int:
        return pump(stack.queue_url, stack.env["HUB_PIPELINE_QUEUE_ARN"], worker)

    yield Handlers(ingest_api, run_worker, sink)
    handler.setStream(previous)


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_template_level_reaches_the_handlers(stack):
    # Given the template's LoggingConfig, when the local stack resolves the functions' environment
    assert stack.env["AWS_LAMBDA_LOG_LEVEL"] == "INFO"
    assert stack.env["AWS_LAMBDA_LOG_FORMAT"] == "JSON"
    assert "POWERTOOLS_LOG_LEVEL" not in stack.env  # the level is described once


def test_a_delivered_message_writes_one_info_line_across_ingest_and_worker(
    stack, tenancy, destination, handlers, capsys
):
    # Given the happy path: a new message, an integration delivering to a destination that takes it
    configure(stack, tenancy, destination)
    capsys.readouterr()

    # When it is received and delivered
    message_id = send(handlers.ingest_api, tenancy, {"po_number": "PO-LEAN", "qty": 1})
    handlers.run_worker()

    # Then one log line, at INFO, says its outcome with its ids and the delivery's duration
    assert status(stack, message_id)["pipeline_status"] == "sent"
    [line] = _lines(handlers.logs.getvalue())
    assert (line["level"], line["message"]) == ("INFO", "delivered")
    assert (line["message_id"], line["tenant_id"], line["integration_id"]) == (
        message_id,
        "t1",
        tenancy.integration_id,
    )
    assert line["dest_status"] == "200"
    assert isinstance(line["duration_ms"], int)
    assert line["correlation_id"]
    # ...and the metrics leave as one EMF document per invocation and dimension set: the
    # ingest's counter, the worker's per-step counters (a batch of messages would share them).
    printed = _lines(capsys.readouterr().out)
    assert all("_aws" in document for document in printed)
    assert len(printed) == 3


def test_a_warning_says_warn_as_lambda_filters_it(handlers):
    # Given the handlers' logging configuration reaching the hub loggers
    # When a hub module warns
    logging.getLogger("hub.lean_logs_test").warning("lease not released", extra={"message_id": "msg_1"})
    # Then the line's level is Lambda's WARN (a WARNING would count as INFO under level WARN)
    [line] = _lines(handlers.logs.getvalue())
    assert (line["level"], line["message"], line["message_id"]) == ("WARN", "lease not released", "msg_1")
