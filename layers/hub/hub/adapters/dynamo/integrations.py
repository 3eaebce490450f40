"""Integrations for the admin API (hub.admin.integrations).

One item per integration, the one the pipeline reads: ``INTEGRATION#<tenant>#<id>`` / ``CONFIG`` with the
configuration in `config_json` (hub.adapters.dynamo.tenancy). Beside it: `version` (optimistic
updates: every write is conditional on the version read), `connection_id`, and GSI1 keys
(``TENANT#<tenant>#INTEGRATIONS`` / ``<integration_id>``), so a tenant's listing is one Query;
GSI1 projects only message attributes, so one BatchGetItem reads the page's items.

Whether messages of an integration still wait (error, retry_pending, dead_letter) is read from
the admin queue tabs' index (``TENANT#<tenant>#STATUS#<status>``), keys only, filtered by
integration: no scan, nothing written per message for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import index_page, items_of
from hub.adapters.dynamo.outbox import event_put
from hub.adapters.dynamo.table import ConditionFailed, Table, TransactionCancelled, Update, format_ts
from hub.adapters.dynamo.tenancy import (
    UNVERSIONED,
    integration_from,
    integration_item,
    integration_version,
    tenant_from,
)
from hub.certificates.envelope import DataKeys
from hub.domain.clock import utcnow
from hub.domain.tenancy import Integration, Tenant
from hub.errors import Conflict, StorageUnavailable
from hub.outbox.events import EventType, OutboxEvent
from hub.ports import IntegrationPage, StoredIntegration, VersionConflict
from hub.sealed_config import Sealer, blobs_from

_CONFIG_SK = "CONFIG"


def updated_event(integration: Integration, version: int, at: datetime) -> OutboxEvent:
    """What a saved change of an integration announces (no configuration: subscribers read it
    through the admin API with their own token)."""
    return OutboxEvent(
        # Integration ids are unique within a tenant only: the event id names the tenant.
        id=f"{integration.tenant_id}:{integration.integration_id}:{version}",
        type=EventType.INTEGRATION_UPDATED,
        tenant_id=integration.tenant_id,
        occurred_at=at,
        integration_id=integration.integration_id,
        connection_id=integration.connection_id,
        details={"version": version, "mode": integration.mode.value},
    )


def stored_from(item: dict[str, Any]) -> StoredIntegration:
    received = item.get("last_received_at")
    return StoredIntegration(
        integration_from(item),
        integration_version(item),
        datetime.fromisoformat(received) if received else None,
        blobs_from(item),
    )


def lost_version(current: dict[str, Any] | None) -> VersionConflict:
    """What a lost conditional write on an integration met: another version, or no item."""
    return VersionConflict(integration_version(current) if current is not None else None)


class DynamoIntegrations:
    """hub.ports.IntegrationStore over the hub table. With `keys`, secrets are sealed when saved;
    reads never open them (stand-ins)."""

    def __init__(self, table_name: str, keys: DataKeys | None = None) -> None:
        self._table = Table(table_name, "configuration storage")
        self._sealer = Sealer(keys)

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        item = self._table.get(keys.tenant_key(tenant_id))
        return tenant_from(item) if item else None

    def connection_exists(self, tenant_id: str, connection_id: str) -> bool:
        return self._table.get(keys.connection_key(tenant_id, connection_id)) is not None

    def get(self, tenant_id: str, integration_id: str) -> StoredIntegration | None:
        item = self._table.get(keys.integration_key(tenant_id, integration_id))
        return stored_from(item) if item else None

    def create(self, integration: Integration) -> StoredIntegration:
        try:
            self._table.put(
                integration_item(integration, 1, self._sealer), condition="attribute_not_exists(PK)"
            )
        except ConditionFailed as taken:
            raise Conflict(
                "integration exists", details={"integration_id": integration.integration_id}
            ) from taken
        return StoredIntegration(integration, 1)

    def replace(
        self, integration: Integration, expected_version: int, sealed: Mapping[str, Any] | None = None
    ) -> StoredIntegration:
        item = integration_item(integration, expected_version + 1, self._sealer, sealed)
        fields = {k: v for k, v in item.items() if k not in ("PK", "SK")}
        # An UpdateItem, not a Put: whatever else the hub keeps on the item survives; the gone
        # flag is cleared (saving the integration is how an operator says it is fixed).
        update = Update().set(**fields).remove("connection_gone_at", "connection_gone_status")
        update.where(_at_version(update, expected_version))
        # The change and its `integration.updated` event in one transaction (the outbox).
        announced = updated_event(integration, expected_version + 1, utcnow())
        try:
            self._table.transact(
                [
                    self._table.update_entry(
                        keys.integration_key(integration.tenant_id, integration.integration_id), update
                    ),
                    event_put(self._table, announced, announced.occurred_at),
                ]
            )
        except TransactionCancelled as lost:
            code, old = lost.reasons[0] if lost.reasons else ("None", None)
            if code == "ConditionalCheckFailed":
                raise lost_version(old) from lost
            raise StorageUnavailable(
                "configuration storage is busy, retry", details={"operation": "TransactWriteItems"}
            ) from lost
        return StoredIntegration(integration, expected_version + 1)

    def delete(self, current: StoredIntegration) -> None:
        integration_id = current.integration.integration_id
        key = keys.integration_key(current.integration.tenant_id, integration_id)
        update = Update()
        received = update.name("last_received_at")
        condition = _at_version(update, current.version) + (
            f" AND {received} = {update.value(format_ts(current.last_received_at))}"
            if current.last_received_at
            else f" AND attribute_not_exists({received})"
        )
        try:
            self._table.delete(key, condition, update.values, update.names)
        except ConditionFailed as lost:
            if lost.old is not None and integration_version(lost.old) == current.version:
                raise Conflict(
                    "a message was received meanwhile", details={"integration_id": integration_id}
                ) from lost
            raise lost_version(lost.old) from lost

    def list_integrations(self, tenant_id: str, limit: int, cursor: str | None) -> IntegrationPage:
        partition = keys.integration_partition(tenant_id)

        def belongs(key: dict[str, str]) -> bool:
            """A cursor of this listing names one of this tenant's integration items."""
            return (
                key["SK"] == _CONFIG_SK and key["PK"] == keys.integration_key(tenant_id, key["GSI1SK"])["PK"]
            )

        rows, next_cursor = index_page(self._table, partition, limit, cursor, belongs, newest_first=False)
        page = [stored_from(item) for item in items_of(self._table, rows, _CONFIG_SK)]
        # An item changed to another tenant meanwhile is not this tenant's.
        return IntegrationPage(
            integrations=[s for s in page if s.integration.tenant_id == tenant_id], next_cursor=next_cursor
        )

    def has_waiting_messages(self, tenant_id: str, integration_id: str) -> bool:
        for status in sorted(keys.LISTED_STATUSES):
            request: dict[str, Any] = {
                "IndexName": "GSI1",
                "KeyConditionExpression": "GSI1PK = :pk",
                "FilterExpression": "integration_id = :integration",
                "ExpressionAttributeValues": {
                    ":pk": {"S": keys.status_partition(tenant_id, status.value)},
                    ":integration": {"S": integration_id},
                },
                "ProjectionExpression": "PK",
            }
            while True:
                rows, last = self._table.query(**request)
                if rows:
                    return True
                if last is None:
                    break
                request["ExclusiveStartKey"] = {name: {"S": value} for name, value in last.items()}
        return False


class DynamoReceptions:
    """hub.ingest.receptions.ReceptionStore: one UpdateItem, one attempt, short timeouts."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "configuration storage", best_effort=True)

    def mark_received(self, tenant_id: str, integration_id: str, at: datetime) -> None:
        update = Update().set(last_received_at=format_ts(at))
        field = update.name("last_received_at")
        # Never creates an item (a deleted integration stays deleted), never moves backwards.
        update.where(
            f"attribute_exists({update.name('PK')}) AND "
            f"(attribute_not_exists({field}) OR {field} < {update.value(format_ts(at))})"
        )
        try:
            self._table.update(keys.integration_key(tenant_id, integration_id), update)
        except ConditionFailed:
            return


def _at_version(update: Update, expected: int) -> str:
    """The condition of a write at version `expected`; an item written without a version is at
    version 1."""
    version = update.name("version")
    condition = f"attribute_exists({update.name('PK')}) AND ({version} = {update.value(expected)}"
    if expected == UNVERSIONED:
        condition += f" OR attribute_not_exists({version})"
    return condition + ")"
