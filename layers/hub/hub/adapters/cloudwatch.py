"""CloudWatch adapter: reads metrics (GetMetricData) for the admin Health view."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hub.adapters.aws import client, error_code
from hub.admin.health import MetricQuery, Series
from hub.errors import MetricsUnavailable

#: GetMetricData pages its answer when it holds more datapoints than this per call; a Health
#: read holds a few thousand, so a second page is an anomaly we stop at.
MAX_PAGES = 3


class CloudWatchMetricReader:
    def read(self, queries: Sequence[MetricQuery], start: datetime, end: datetime) -> dict[str, Series]:
        """One GetMetricData for every query (CloudWatch bills per metric read, not per call)."""
        series: dict[str, Series] = {query.id: [] for query in queries}
        if not queries:
            return series
        request: dict[str, Any] = {
            "MetricDataQueries": [_query(query) for query in queries],
            "StartTime": start,
            "EndTime": end,
            "ScanBy": "TimestampAscending",
        }
        try:
            for _ in range(MAX_PAGES):
                answer = client("cloudwatch").get_metric_data(**request)
                for result in answer.get("MetricDataResults", []):
                    points = zip(result.get("Timestamps", []), result.get("Values", []), strict=False)
                    series.setdefault(result["Id"], []).extend((at, float(value)) for at, value in points)
                token = answer.get("NextToken")
                if not token:
                    break
                request["NextToken"] = token
        except (BotoCoreError, ClientError) as exc:
            details = {"operation": "GetMetricData"}
            if isinstance(exc, ClientError):
                details["code"] = error_code(exc)
            raise MetricsUnavailable(
                "CloudWatch metrics are temporarily unavailable", details=details
            ) from exc
        return series


def _query(query: MetricQuery) -> dict[str, Any]:
    return {
        "Id": query.id,
        "MetricStat": {
            "Metric": {
                "Namespace": query.namespace,
                "MetricName": query.name,
                "Dimensions": [{"Name": name, "Value": value} for name, value in query.dimensions],
            },
            "Period": query.period_seconds,
            "Stat": query.stat,
        },
        "ReturnData": True,
    }
