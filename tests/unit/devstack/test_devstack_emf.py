"""EMF documents as CloudWatch reads them (devstack/emf.py) and the instance's log stream that
keeps them (devstack/lambda_runtime.py)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

from devstack.emf import parse
from devstack.lambda_runtime import _LogStream


def test_a_powertools_document_gives_one_datum_per_metric_value_with_its_dimensions() -> None:
    provider = AmazonCloudWatchEMFProvider(namespace="IntegrationHub", service="hub-local")
    provider.add_dimension(name="step", value="deliver")
    provider.add_metric(name="StepFailed", unit=MetricUnit.Count, value=1)
    provider.add_metric(name="StepFailed", unit=MetricUnit.Count, value=1)
    provider.add_metric(name="StepDuration", unit=MetricUnit.Milliseconds, value=12.5)
    line = json.dumps(provider.serialize_metric_set())

    [(namespace, datums)] = parse([line]).items()

    assert namespace == "IntegrationHub"
    failed = [d for d in datums if d["MetricName"] == "StepFailed"]
    assert [d["Value"] for d in failed] == [1, 1]
    assert sorted((x["Name"], x["Value"]) for x in failed[0]["Dimensions"]) == [
        ("service", "hub-local"),
        ("step", "deliver"),
    ]
    [duration] = [d for d in datums if d["MetricName"] == "StepDuration"]
    assert (duration["Value"], duration["Unit"]) == (12.5, "Milliseconds")
    assert abs((duration["Timestamp"] - datetime.now(UTC)).total_seconds()) < 60


def test_lines_that_are_not_emf_are_ignored_as_cloudwatch_ignores_them() -> None:
    missing_dimension = {
        "_aws": {
            "CloudWatchMetrics": [{"Namespace": "N", "Dimensions": [["service"]], "Metrics": [{"Name": "M"}]}]
        },
        "M": 1,
    }
    assert parse(["not json", '{"_aws": 3}', json.dumps(missing_dimension), "[1]"]) == {}


def test_the_log_stream_passes_every_line_through_and_keeps_the_emf_ones() -> None:
    out = io.StringIO()
    stream = _LogStream(out)
    emf = '{"_aws":{"CloudWatchMetrics":[]},"M":1}'

    stream.write('{"level":"INFO","message":"hello"}\n')
    stream.write(emf[:10])  # print() may write a line in parts
    stream.write(emf[10:] + "\n")

    assert out.getvalue() == '{"level":"INFO","message":"hello"}\n' + emf + "\n"
    assert stream.drain_emf() == [emf]
    assert stream.drain_emf() == []
