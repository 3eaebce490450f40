"""One invocation of the pipeline worker over its SQS batch (issue 30). Each record, in batch
order, is a pipeline step, a connection job (issue 12) or a page of a bulk job (issue 28); the
time guard (hub.pipeline.time_guard) decides whether it runs in this invocation or goes back to
the queue untouched (no lease taken, nothing called).

A record goes back as a copy sent to the queue (same body, message attributes and message
group, no delay), and the original then counts as processed: the copy is visible at once and
starts its receive count afresh. Reporting the original as a batch item failure instead would
hide it for the queue's visibility timeout (21 minutes) and spend one of its receives, so a
record returned often would end in the DLQ. Only when the copy cannot be sent is the original
reported as failed (SQS returns it after the visibility timeout): nothing is lost. A copy that
arrives as well as its original (a crash between the copy and the batch's end) runs once: a
step's sequence has passed, a release page or bulk page is claimed, a probe's step is dropped
by its sequence."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from types import TracebackType
from typing import Any, Protocol

from hub.delivery.gate import ConnectionJob, JobKind, parse_job
from hub.domain.bulk_page import BulkPage, parse_bulk_page
from hub.domain.message import StepMessage
from hub.errors import ServiceUnavailable
from hub.pipeline.time_guard import FINISH_MARGIN_SECONDS, PAGE_SECONDS, TimeGuard
from hub.pipeline.worker import PipelineWorker
from hub.ports import Metrics

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueuedRecord:
    """One pipeline-queue record as the worker receives it."""

    body: str
    #: SQS's ApproximateReceiveCount (1 on the first receive).
    receive_count: int
    sent_at: datetime
    #: As Lambda's SQS event carries them (`dataType`, `stringValue` / `binaryValue`).
    message_attributes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: The record's MessageGroupId (a fair queue's tenant), if it has one.
    group_id: str | None = None


class Redelivery(Protocol):
    def send_again(
        self, body: str, message_attributes: Mapping[str, Mapping[str, Any]], group_id: str | None
    ) -> None:
        """Sends a copy of a received record to its queue, visible at once. Raises
        QueueUnavailable when the queue refuses it."""
        ...


class JobRunner(Protocol):
    def run(self, job: ConnectionJob) -> str: ...


class PageRunner(Protocol):
    def run(self, message: BulkPage, *, last_attempt: bool = False) -> str: ...


Item = BulkPage | ConnectionJob | StepMessage


class WorkerBatch:
    """Runs one invocation's records through the time guard; a context manager whose exit
    writes one INFO line (and the `RecordsReturned` metric) when records went back."""

    def __init__(
        self,
        guard: TimeGuard,
        *,
        worker: Callable[[], PipelineWorker],
        jobs: Callable[[], JobRunner],
        pages: Callable[[], PageRunner],
        redelivery: Redelivery,
        max_receives: int,
        metrics: Metrics,
    ) -> None:
        self._guard = guard
        self._worker = worker
        self._jobs = jobs
        self._pages = pages
        self._redelivery = redelivery
        self._max_receives = max_receives
        self._metrics = metrics
        self.resent = 0
        self.reported = 0

    def run(self, record: QueuedRecord) -> None:
        """Runs `record` now, or sends it back when the guard says it does not fit. Raises what
        the record's run raises, or QueueUnavailable when it was sent back and the copy was
        refused: either way the batch reports it failed and SQS returns it."""
        item = cache(lambda: _parse(record.body))
        if not self._guard.admit(lambda: self._need(item())):
            self._send_back(record)
            return
        last = record.receive_count >= self._max_receives
        match item():
            case BulkPage() as page:
                self._pages().run(page, last_attempt=last)
            case ConnectionJob() as job:
                self._jobs().run(job)
            case StepMessage() as step:
                self._worker().run(
                    step, record.sent_at, last_delivery=last, time_left=self._guard.seconds_left
                )

    def _need(self, item: Item) -> float:
        """The seconds `item` may take. A step: its connection's timeouts and the margin. A
        release job or a bulk page: its page's lease. A probe job sends one step: the margin."""
        if isinstance(item, BulkPage):
            return PAGE_SECONDS
        if isinstance(item, ConnectionJob):
            return PAGE_SECONDS if item.job is JobKind.RELEASE else FINISH_MARGIN_SECONDS
        try:
            return self._worker().need(item)
        except ServiceUnavailable:
            # Its configuration cannot be read now: the step runs and its run meets the outage
            # as every step does (on its last receive too: the message is freed for a
            # reprocess). Should it get as far as an attempt, the attempt is capped in time.
            return 0.0

    def _send_back(self, record: QueuedRecord) -> None:
        try:
            self._redelivery.send_again(record.body, record.message_attributes, record.group_id)
        except Exception:
            self.reported += 1
            raise
        self.resent += 1

    def __enter__(self) -> WorkerBatch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        returned = self._guard.returned
        if not returned:
            return
        self._metrics.count("RecordsReturned", returned)
        logger.info(
            "time guard: records returned to the queue",
            extra={
                "taken": self._guard.taken,
                "returned": returned,
                "resent": self.resent,
                "reported_failed": self.reported,
                "seconds_left": round(self._guard.seconds_left(), 1),
            },
        )


def _parse(body: str) -> Item:
    data = json.loads(body)
    page = parse_bulk_page(data)
    if page is not None:
        return page
    job = parse_job(data)
    if job is not None:
        return job
    return StepMessage.model_validate_json(body)
