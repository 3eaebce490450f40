"""A function's cold start validates its settings (hub.wiring.<function>.init, called by the
handler at import): with the environment the template gives it the handler loads; with any
variable its settings require removed, or left empty, loading the handler - Lambda's init -
fails with an error naming that variable, not a 500 at the first request."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws

from hub import wiring
from hub.adapters.aws import reset_clients
from hub.errors import ConfigurationError
from tests.aws import AWS_TEST_ENV, load_handler, provision
from tests.function_wiring import functions, wiring_module


@pytest.fixture(scope="module")
def environments() -> Iterator[dict[str, dict[str, str]]]:
    """Each function's Environment as template.yaml resolves it (Globals merged)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in AWS_TEST_ENV.items():
            patch.setenv(name, value)
        patch.delenv("AWS_ENDPOINT_URL", raising=False)
        with mock_aws():
            reset_clients()
            yield provision().environments
        reset_clients()


@pytest.fixture
def function_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """No variable any function requires is set (each case sets its function's); nothing built
    before or after."""
    for name in {n for function in wiring.FUNCTIONS for n in wiring.required_variables(function)}:
        monkeypatch.delenv(name, raising=False)
    wiring.reset()
    yield monkeypatch
    wiring.reset()


@pytest.mark.parametrize("logical_id", functions())
def test_a_cold_start_without_a_required_variable_fails_naming_it(
    environments: dict[str, dict[str, str]], function_env: pytest.MonkeyPatch, logical_id: str
) -> None:
    environment = environments[logical_id]
    for name, value in environment.items():
        function_env.setenv(name, value)
    load_handler(logical_id)  # the template's environment: the init passes

    required = sorted(wiring.required_variables(wiring_module(logical_id)))
    assert {"HUB_TABLE_NAME", "HUB_PIPELINE_QUEUE_URL"} <= set(required)
    for name in required:
        for absent in (None, ""):
            if absent is None:
                function_env.delenv(name)
            else:
                function_env.setenv(name, absent)
            wiring.reset()
            with pytest.raises(ConfigurationError) as caught:
                load_handler(logical_id)
            assert caught.value.message.endswith(f": {name}"), caught.value.message
            function_env.setenv(name, environment[name])
