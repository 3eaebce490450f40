"""Metrics adapter: CloudWatch embedded metric format through Powertools.

Undimensioned counters go to the function's shared Powertools buffer, flushed once per
invocation by the handler's ``@metrics.log_metrics``. A counter with dimensions (step, error
class) needs its own EMF document, because one document carries one dimension set: those are
buffered per dimension set for the whole invocation and printed by ``flush_dimensioned`` (the
handler's ``@emits_dimensioned_metrics``), one document per set with every value of it — a batch
of ten deliveries prints one ``step=deliver`` document, not twenty. CloudWatch Logs bills each
byte of them, so this is most of what the metrics cost. Every metric also carries Powertools'
``service`` dimension (alarms match on it).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar, cast

from aws_lambda_powertools.metrics import Metrics, MetricUnit
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

logger = logging.getLogger(__name__)

Handler = TypeVar("Handler", bound=Callable[..., Any])

#: Dimension set -> its buffer, shared by every EmfMetrics of the process (as Powertools shares
#: its own): what an invocation counted, until `flush_dimensioned`.
_PENDING: dict[tuple[tuple[str, str], ...], AmazonCloudWatchEMFProvider] = {}


class EmfMetrics:
    def __init__(self, metrics: Metrics | None = None) -> None:
        self._metrics = metrics or Metrics()

    def count(self, name: str, value: float = 1, **dimensions: str) -> None:
        self._emit(name, MetricUnit.Count, value, dimensions)

    def duration_ms(self, name: str, milliseconds: float, **dimensions: str) -> None:
        self._emit(name, MetricUnit.Milliseconds, milliseconds, dimensions)

    def gauge(self, name: str, value: float, **dimensions: str) -> None:
        """A level rather than a count (e.g. days left): one data point per call."""
        self._emit(name, MetricUnit.Count, value, dimensions)

    def _emit(self, name: str, unit: MetricUnit, value: float, dimensions: dict[str, str]) -> None:
        """Best effort: a metric that cannot be written is logged, never allowed to fail or
        change the step it describes."""
        try:
            if not dimensions:
                self._metrics.add_metric(name=name, unit=unit, value=value)
                return
            every = {**self._metrics.default_dimensions, **dimensions}
            key = tuple(sorted(every.items()))
            buffer = _PENDING.get(key)
            if buffer is None:
                buffer = _PENDING[key] = AmazonCloudWatchEMFProvider(default_dimensions=every)
            buffer.add_metric(name=name, unit=unit, value=value)  # prints itself at 100 values (EMF's limit)
        except Exception:
            logger.warning("metric not written", extra={"metric": name}, exc_info=True)


def flush_dimensioned() -> None:
    """Prints one EMF document per dimension set counted since the last flush, then forgets
    them. Best effort, like counting."""
    pending = list(_PENDING.values())
    _PENDING.clear()
    for buffer in pending:
        if not buffer.metric_set:
            continue
        try:
            print(json.dumps(buffer.serialize_metric_set(), separators=(",", ":")))  # EMF is read from stdout
        except Exception:
            logger.warning("metrics not written", exc_info=True)


def emits_dimensioned_metrics(handler: Handler) -> Handler:
    """`handler`, flushing the dimensioned metrics it counted when it returns or raises."""

    @functools.wraps(handler)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return handler(*args, **kwargs)
        finally:
            flush_dimensioned()

    return cast(Handler, wrapper)
