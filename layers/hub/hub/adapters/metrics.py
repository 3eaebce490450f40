"""Metrics adapter: CloudWatch embedded metric format through Powertools.

Undimensioned counters go to the function's shared Powertools buffer, flushed once per
invocation by the handler's ``@metrics.log_metrics``; a counter with dimensions (step, error
class) is written as its own EMF line, because one EMF document carries one dimension set.
Every metric also carries Powertools' ``service`` dimension (alarms match on it)."""

from __future__ import annotations

import logging

from aws_lambda_powertools.metrics import Metrics, MetricUnit, single_metric

logger = logging.getLogger(__name__)


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
            with single_metric(
                name=name, unit=unit, value=value, default_dimensions=self._metrics.default_dimensions
            ) as metric:
                for key, dimension in dimensions.items():
                    metric.add_dimension(name=key, value=dimension)
        except Exception:
            logger.warning("metric not written", extra={"metric": name}, exc_info=True)
