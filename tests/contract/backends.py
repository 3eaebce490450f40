"""The two implementations a contract test runs against: the in-memory fakes, and the DynamoDB
adapters over a table name (on moto in these tests). Each side's repositories share their
storage as the functions do: the fakes' configuration one `ConfigState`, their messages one
`FakeTable`; the adapters the hub table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.connections import DynamoConnections
from hub.adapters.dynamo.executions import DynamoExecutions
from hub.adapters.dynamo.integrations import DynamoIntegrations
from hub.adapters.dynamo.messages import DynamoMessageRepository
from hub.adapters.dynamo.status_index import DynamoStatusIndex
from hub.adapters.dynamo.table import Table
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from tests.fakes import ConfigState, FakeConfig, FakeExecutions, FakeMessages, FakeStatusIndex, FakeTable
from tests.fakes.connections import FakeConnections
from tests.fakes.integrations import FakeIntegrations

BACKENDS = ("fake", "dynamo")
F = TypeVar("F")
D = TypeVar("D")


def either(request: pytest.FixtureRequest, fake: Callable[[], F], dynamo: Callable[[str], D]) -> F | D:
    """The implementation a fixture parametrized by BACKENDS stands for: the fake, or the
    adapter over the module's table."""
    if request.param == "fake":
        return fake()
    return dynamo(request.getfixturevalue("dynamo_table"))


@dataclass
class Backend:
    """The repositories of one implementation, and a raw view of its stored message items."""

    name: str
    messages: FakeMessages | DynamoMessageRepository
    executions: FakeExecutions | DynamoExecutions
    config: FakeConfig | DynamoConfigRepository
    raw: Callable[[dict[str, str]], dict[str, Any] | None]
    status_index: FakeStatusIndex | DynamoStatusIndex
    put_item: Callable[[dict[str, Any]], None]
    integrations: FakeIntegrations | DynamoIntegrations
    connections: FakeConnections | DynamoConnections

    def item(self, message_id: str) -> dict[str, Any] | None:
        """The stored message item, as plain values."""
        return self.raw(keys.message_key(message_id))

    def entity_item(self, entity: str) -> dict[str, Any] | None:
        return self.raw(keys.business_key(entity))


def fake_backend() -> Backend:
    table, state = FakeTable(), ConfigState()
    messages = FakeMessages(table, state)
    return Backend(
        name="fake",
        messages=messages,
        executions=FakeExecutions(table),
        config=FakeConfig(state),
        raw=lambda key: table.get((key["PK"], key["SK"])),
        status_index=FakeStatusIndex(messages.records),
        put_item=table.put,
        integrations=FakeIntegrations(state, messages=messages.records),
        connections=FakeConnections(state),
    )


def dynamo_backend(table_name: str) -> Backend:
    table = Table(table_name)
    return Backend(
        name="dynamo",
        messages=DynamoMessageRepository(table_name),
        executions=DynamoExecutions(table_name),
        config=DynamoConfigRepository(table_name),
        raw=table.get,
        status_index=DynamoStatusIndex(table_name),
        put_item=table.put,
        integrations=DynamoIntegrations(table_name),
        connections=DynamoConnections(table_name),
    )
