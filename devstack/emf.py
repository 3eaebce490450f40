"""What CloudWatch does with a Lambda function's log stream, locally: the embedded metric
format (EMF) documents a function prints become metrics.

On AWS, CloudWatch Logs extracts every EMF document (a JSON log line with
``_aws.CloudWatchMetrics``) into custom metrics, asynchronously. Here each instance keeps the EMF
lines it printed (``lambda_runtime``) and hands them back with its answer; an ``EmfPublisher``
turns them into PutMetricData calls to the embedded moto, on its own thread so an invocation
never waits for them. A line that is not valid EMF is ignored, as CloudWatch ignores it.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

logger = logging.getLogger(__name__)

#: PutMetricData takes at most this many datums per call.
_DATUMS_PER_CALL = 1000


def metric_data(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(namespace, PutMetricData datum) for each metric and dimension set of an EMF document. A
    metric with a list of values gives one datum per value (EMF's multi-value form)."""
    aws = document.get("_aws")
    if not isinstance(aws, dict):
        return
    timestamp = aws.get("Timestamp")
    at = datetime.fromtimestamp(timestamp / 1000, UTC) if isinstance(timestamp, int | float) else None
    for directive in aws.get("CloudWatchMetrics") or []:
        namespace = directive.get("Namespace")
        if not isinstance(namespace, str):
            continue
        dimension_sets = directive.get("Dimensions") or [[]]
        for metric in directive.get("Metrics") or []:
            name = metric.get("Name")
            values = document.get(name)
            if not isinstance(values, list):
                values = [values]
            for dimension_names in dimension_sets:
                dimensions = [
                    {"Name": dim, "Value": str(document[dim])} for dim in dimension_names if dim in document
                ]
                if len(dimensions) != len(dimension_names):
                    continue  # a dimension without a value: CloudWatch drops the document
                for value in values:
                    if isinstance(value, bool) or not isinstance(value, int | float):
                        continue
                    datum: dict[str, Any] = {"MetricName": name, "Dimensions": dimensions, "Value": value}
                    if metric.get("Unit"):
                        datum["Unit"] = metric["Unit"]
                    if at is not None:
                        datum["Timestamp"] = at
                    yield namespace, datum


def parse(lines: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """Namespace -> datums of every valid EMF line."""
    by_namespace: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if isinstance(document, dict):
            for namespace, datum in metric_data(document):
                by_namespace.setdefault(namespace, []).append(datum)
    return by_namespace


class EmfPublisher:
    """Publishes EMF lines to CloudWatch (moto) from one background thread."""

    def __init__(self, cloudwatch: Any) -> None:
        self._cloudwatch = cloudwatch
        self._queue: queue.Queue[list[str] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="emf-publisher", daemon=True)
        self._idle = threading.Condition()
        self._pending = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=5)

    def submit(self, lines: list[str]) -> None:
        """Called with each invocation's EMF lines; returns at once."""
        if lines:
            with self._idle:
                self._pending += 1
            self._queue.put(lines)

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Until every submitted batch is published (tests)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def publish(self, lines: Iterable[str]) -> None:
        for namespace, datums in parse(lines).items():
            for start in range(0, len(datums), _DATUMS_PER_CALL):
                self._cloudwatch.put_metric_data(
                    Namespace=namespace, MetricData=datums[start : start + _DATUMS_PER_CALL]
                )

    def _run(self) -> None:
        while True:
            lines = self._queue.get()
            if lines is None:
                return
            try:
                self.publish(lines)
            except Exception:
                logger.warning("EMF metrics not published", exc_info=True)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()
