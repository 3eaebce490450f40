"""The bench prices Lambda's own log lines by the functions' LoggingConfig in template.yaml
(issue 29): with the JSON format and SystemLogLevel WARN, a successful invocation writes none."""

from __future__ import annotations

from bench.e2e import load_prices, platform_log_bytes
from tests.aws import function_names


def test_a_successful_invocation_of_any_function_costs_no_platform_bytes():
    prices = load_prices()
    failed = prices["cloudwatch_logs"]["platform_bytes_per_failed_invocation_json_warn"]
    for logical_id in function_names():
        assert platform_log_bytes(prices, logical_id) == (0, failed), logical_id
    assert failed > 0  # a failed or timed-out invocation still writes its runtimeDone and report
