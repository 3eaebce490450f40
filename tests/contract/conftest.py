"""Contract tier: one test, two implementations. Every test takes `backend`, which is either
the in-memory fakes (tests/fakes) or the DynamoDB adapters on moto, whose table is built from
template.yaml the way tests/integration builds its stack.

moto's set-up costs seconds, so the DynamoDB backend shares one mocked stack per test module
(each test uses fresh ids, so tests never see each other's items); the fake backend gets a new
table per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hub import wiring
from hub.adapters.aws import reset_clients
from tests.aws import mocked_aws, provision
from tests.contract.backends import BACKENDS, Backend, dynamo_backend, fake_backend


@pytest.fixture(scope="module")
def dynamo_table() -> Iterator[str]:
    """The hub table from template.yaml inside moto, for the tests of one module."""
    with pytest.MonkeyPatch.context() as patch, mocked_aws(patch):
        reset_clients()
        wiring.reset()
        yield str(provision(stack_name="hub-contract").refs["HubTable"])
        reset_clients()
        wiring.reset()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "fake":
        return fake_backend()
    return dynamo_backend(request.getfixturevalue("dynamo_table"))


@pytest.fixture
def both(dynamo_table: str) -> tuple[Backend, Backend]:
    """The two implementations side by side, to compare what each stores."""
    return fake_backend(), dynamo_backend(dynamo_table)
