"""Connections for the admin API (hub.admin.connections) and their resolution for the pipeline.

One item per connection, ``CONNECTION#<tenant>#<id>`` / ``CONFIG`` (ids are unique within a tenant
only): `tenant_id`, `version`, `name`, the
destination as `config_json` (the pipeline's own model), and GSI1 keys
(``TENANT#<tenant>#CONNECTIONS`` / ``<connection_id>``), so a tenant's listing is one Query;
GSI1 projects only message attributes, so one BatchGetItem reads the page's items. Writes are
conditional on `version` (optimistic updates). Key shapes in hub.adapters.dynamo.keys.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import index_page, items_of
from hub.adapters.dynamo.table import ConditionFailed, Table, TransactionCancelled, Update, format_ts
from hub.certificates.envelope import DataKeys
from hub.domain.delivery_limits import DeliveryLimits
from hub.domain.tenancy import Connection, Destination
from hub.errors import Conflict, StorageUnavailable
from hub.ports import ConnectionPage, VersionConflict
from hub.sealed_config import (
    DESTINATION_CONFIG,
    DESTINATION_CREDENTIAL,
    Sealer,
    blobs_from,
    blobs_item,
    opened_destination,
    parse_config,
    seal_connection,
)

CONFIG_SK = "CONFIG"
#: Integrations read per round when looking for a connection's users (BatchGetItem's limit).
_INTEGRATIONS_PER_ROUND = 100


#: Reads without opening (stand-ins for sealed credentials) and writes without sealing.
_NO_KEYS = Sealer(None)


def connection_item(connection: Connection, sealer: Sealer = _NO_KEYS) -> dict[str, Any]:
    """The stored item of `connection`, with its GSI1 keys; its credentials sealed by `sealer`
    (`sealed`, by field; `connection.sealed` holds what a stand-in keeps), not in `config_json`."""
    config, blobs = seal_connection(sealer, connection)
    return {
        **keys.connection_key(connection.tenant_id, connection.connection_id),
        **keys.connection_index_keys(connection.tenant_id, connection.connection_id),
        "item_type": "connection",
        "connection_id": connection.connection_id,
        "tenant_id": connection.tenant_id,
        "name": connection.name,
        "version": connection.version,
        "config_json": json.dumps(config, separators=(",", ":")),
        "sealed": blobs_item(blobs) or None,
        "created_at": format_ts(connection.created_at) if connection.created_at else None,
        "updated_at": format_ts(connection.updated_at) if connection.updated_at else None,
    }


def connection_from(item: Mapping[str, Any], sealer: Sealer = _NO_KEYS) -> Connection:
    return Connection(
        connection_id=item["connection_id"],
        tenant_id=item["tenant_id"],
        name=item.get("name"),
        version=int(item.get("version", 1)),
        destination=destination_of(item, sealer),
        created_at=_ts(item.get("created_at")),
        updated_at=_ts(item.get("updated_at")),
        sealed=blobs_from(item),
    )


def destination_of(item: Mapping[str, Any], sealer: Sealer = _NO_KEYS) -> Destination:
    """The destination a connection item holds, naming its connection, with its credentials
    opened when `sealer` opens destination credentials (stand-ins otherwise). An item written
    before sealing holds them in clear in `config_json`: read as they are."""
    config = parse_config(item["config_json"])
    connection_id = str(item["connection_id"])
    destination = DESTINATION_CONFIG.open(
        sealer, config, str(item["tenant_id"]), connection_id, blobs_from(item)
    )
    if destination.connection_id != connection_id:
        destination = destination.model_copy(update={"connection_id": connection_id})
    return destination


def _ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _version_of(old: Mapping[str, Any] | None) -> int | None:
    return int(old.get("version", 1)) if old else None


class DynamoConnections:
    """hub.ports.ConnectionStore over the hub table. With `keys`, credentials are sealed when
    saved; `with_credentials` (the connection test) opens them; every other read shows
    stand-ins."""

    def __init__(self, table_name: str, keys: DataKeys | None = None) -> None:
        self._table = Table(table_name, "configuration storage")
        self._sealer = Sealer(keys)
        self._opener = Sealer(keys, opens=(DESTINATION_CREDENTIAL,))

    def with_credentials(self, connection: Connection) -> Destination:
        return opened_destination(connection, self._opener)

    def tenant_exists(self, tenant_id: str) -> bool:
        return self._table.get(keys.tenant_key(tenant_id)) is not None

    def has_certificate(self, tenant_id: str, connection_id: str) -> bool:
        return self._table.get(keys.certificate_key(tenant_id, connection_id)) is not None

    def create(self, connection: Connection) -> None:
        try:
            self._table.put(connection_item(connection, self._sealer), condition="attribute_not_exists(PK)")
        except ConditionFailed as taken:
            raise Conflict(
                "connection exists", details={"connection_id": connection.connection_id}
            ) from taken

    def get(self, tenant_id: str, connection_id: str) -> Connection | None:
        item = self._table.get(keys.connection_key(tenant_id, connection_id))
        return connection_from(item) if item else None

    def limits_of(self, tenant_id: str, connection_id: str) -> DeliveryLimits | None:
        """hub.delivery.drain.LimitsSource: the connection's declared limits as stored now."""
        connection = self.get(tenant_id, connection_id)
        return connection.destination.limits if connection is not None else None

    def list_connections(self, tenant_id: str, limit: int, cursor: str | None) -> ConnectionPage:
        partition = keys.connection_partition(tenant_id)

        def belongs(key: dict[str, str]) -> bool:
            return key["SK"] == CONFIG_SK and key["PK"] == keys.connection_key(tenant_id, key["GSI1SK"])["PK"]

        rows, next_cursor = index_page(self._table, partition, limit, cursor, belongs, newest_first=False)
        items = items_of(self._table, rows, CONFIG_SK)
        # An item whose tenant changed meanwhile (never, through the API) is not this tenant's.
        page = [connection_from(item) for item in items if item.get("tenant_id") == tenant_id]
        return ConnectionPage(connections=page, next_cursor=next_cursor)

    def replace(self, connection: Connection, expected_version: int) -> None:
        try:
            self._table.put(
                connection_item(connection, self._sealer),
                condition="#version = :expected AND tenant_id = :tenant",
                values={":expected": expected_version, ":tenant": connection.tenant_id},
                names={"#version": "version"},
            )
        except ConditionFailed as lost:
            raise VersionConflict(_version_of(lost.old)) from lost

    def delete(self, tenant_id: str, connection_id: str, expected_version: int) -> None:
        """Deletes the connection and, in the same transaction, its status-callback credential
        (issue 12) and its client certificate (issue 27: credentials are bound to where they go):
        a connection created later under the same id starts without either, wherever it points."""
        entries = [
            self._table.delete_entry(
                keys.connection_key(tenant_id, connection_id),
                condition="version = :expected",
                values={":expected": expected_version},
            ),
            self._table.delete_entry(keys.callback_credential_key(tenant_id, connection_id)),
            self._table.delete_entry(keys.certificate_key(tenant_id, connection_id)),
        ]
        try:
            self._table.transact(entries)
        except TransactionCancelled as cancelled:
            if cancelled.reasons and cancelled.reasons[0][0] == "ConditionalCheckFailed":
                current = cancelled.reasons[0][1] or self._table.get(
                    keys.connection_key(tenant_id, connection_id)
                )
                raise VersionConflict(_version_of(current)) from cancelled
            raise StorageUnavailable(
                "configuration storage is busy", details={"operation": "TransactWriteItems"}
            ) from cancelled

    def integrations_using(self, tenant_id: str, connection_id: str) -> list[str]:
        partition = keys.tenant_integrations_partition(tenant_id)
        found: list[str] = []
        request: dict[str, Any] = {
            "IndexName": "GSI1",
            "KeyConditionExpression": "GSI1PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": partition}},
            "Limit": _INTEGRATIONS_PER_ROUND,
        }
        while True:
            rows, last = self._table.query(**request)
            for item in items_of(self._table, rows, CONFIG_SK):
                if item.get("tenant_id") == tenant_id and item.get("connection_id") == connection_id:
                    found.append(str(item["GSI1SK"]))
            if last is None:
                return found
            request["ExclusiveStartKey"] = {name: {"S": str(value)} for name, value in last.items()}

    def clear_connection_gone(
        self, tenant_id: str, integration_ids: Collection[str], connection_id: str
    ) -> None:
        for integration_id in integration_ids:
            update = Update().remove("connection_gone_at", "connection_gone_status")
            update.where(f"{update.name('connection_id')} = {update.value(connection_id)}")
            try:
                self._table.update(keys.integration_key(tenant_id, integration_id), update)
            except ConditionFailed:
                continue  # switched to another connection (or deleted) meanwhile
