"""Outbound webhook subscriptions and their failed deliveries in the hub table (issue 12).

One item per subscription, ``SUBSCRIPTION#<tenant>#<id>`` / ``CONFIG`` (ids are unique within a
tenant only), with GSI1 keys per tenant
(``TENANT#<tenant>#SUBSCRIPTIONS`` / ``<id>``): the admin listing and the sink's lookup are one
Query (GSI1 projects only message attributes, so one BatchGetItem reads the page's items).
Each secret is sealed on its own (hub.sealing: a data key bound to {tenant_id,
owner "subscription:<id>", purpose "subscription-secret"}), so the admin API adds one by a
rotation without opening the others; only the webhook sender opens them. Writes are conditional
on `version`.

A failed delivery is ``WHFAIL#<tenant>#<subscription>#<event id>`` / ``FAILED`` (30-day TTL) with
GSI1 keys ``SUBSCRIPTION#<tenant>#<subscription>#FAILED`` / ``<failed_at>#<event id>``: newest first in one
Query, "since T" a key range. Key shapes in hub.adapters.dynamo.keys.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.cursors import index_page, items_of
from hub.adapters.dynamo.outbox import event_put
from hub.adapters.dynamo.table import (
    ConditionFailed,
    Table,
    TransactionCancelled,
    Update,
    epoch,
    format_ts,
)
from hub.certificates.envelope import CertificateUndecryptable, DataKeys
from hub.domain.clock import utcnow
from hub.errors import Conflict, SecretUndecryptable
from hub.outbox.events import OutboxEvent
from hub.outbox.subscriptions import SigningSecret, Subscription
from hub.outbox.webhooks import FailedWebhook, FailurePage
from hub.ports import VersionConflict
from hub.sealed_config import SUBSCRIPTION_SECRET, context, subscription_owner
from hub.sealing import SealedFields, open_fields, seal_fields

CONFIG_SK = "CONFIG"
#: A failed delivery stays listed (and replayable) this long.
FAILURE_TTL = timedelta(days=30)
_PAGE = 100


def _ts(value: Any) -> datetime | None:
    return datetime.fromisoformat(str(value)) if value else None


class DynamoSubscriptions:
    """Subscriptions over the hub table. With `keys`, new secrets are sealed; `opens` (the
    webhook sender only) opens them when read for delivery."""

    def __init__(self, table_name: str, keys: DataKeys | None = None, *, opens: bool = False) -> None:
        self._table = Table(table_name, "configuration storage")
        self._keys = keys
        self._opens = opens

    # --- codecs -------------------------------------------------------------------------------

    def _secret_item(self, subscription: Subscription, secret: SigningSecret) -> dict[str, Any]:
        stored: dict[str, Any] = {
            "secret_id": secret.secret_id,
            "created_at": format_ts(secret.created_at),
            "expires_at": format_ts(secret.expires_at) if secret.expires_at else None,
        }
        if secret.seal is not None:
            stored["seal"] = secret.seal
        elif secret.value is not None and self._keys is not None:
            sealed = seal_fields(self._keys, self._context(subscription), {"secret": secret.value})
            stored["seal"] = sealed.to_item()
        elif secret.value is not None:
            stored["value"] = secret.value  # a stack without a key: kept in clear
        return {k: v for k, v in stored.items() if v is not None}

    def _context(self, subscription: Subscription) -> dict[str, str]:
        return context(
            subscription.tenant_id, subscription_owner(subscription.subscription_id), SUBSCRIPTION_SECRET
        )

    def item(self, subscription: Subscription) -> dict[str, Any]:
        return {
            **keys.subscription_key(subscription.tenant_id, subscription.subscription_id),
            **keys.subscription_index_keys(subscription.tenant_id, subscription.subscription_id),
            "item_type": "subscription",
            **subscription.settings(),
            "version": subscription.version,
            "secrets": [self._secret_item(subscription, s) for s in subscription.secrets],
            "created_at": format_ts(subscription.created_at) if subscription.created_at else None,
            "updated_at": format_ts(subscription.updated_at) if subscription.updated_at else None,
        }

    def subscription(self, item: Mapping[str, Any], *, opened: bool = False) -> Subscription:
        base = Subscription(
            subscription_id=str(item["subscription_id"]),
            tenant_id=str(item["tenant_id"]),
            url=str(item["url"]),
            event_types=tuple(item.get("event_types") or ()),
            integration_ids=tuple(item["integration_ids"]) if item.get("integration_ids") else None,
            description=item.get("description"),
            enabled=bool(item.get("enabled", True)),
            disabled_reason=item.get("disabled_reason"),
            version=int(item.get("version", 1)),
            created_at=_ts(item.get("created_at")),
            updated_at=_ts(item.get("updated_at")),
        )
        secrets = tuple(self._secret(base, stored, opened) for stored in item.get("secrets") or ())
        return base.model_copy(update={"secrets": secrets})

    def _secret(self, subscription: Subscription, stored: Mapping[str, Any], opened: bool) -> SigningSecret:
        value = stored.get("value")
        seal = stored.get("seal")
        if opened and seal is not None and self._keys is not None:
            try:
                values = open_fields(self._keys, SealedFields.from_item(seal), self._context(subscription))
            except CertificateUndecryptable:
                raise SecretUndecryptable(
                    "a subscription's secret does not decrypt: rotate it",
                    details={"subscription_id": subscription.subscription_id},
                ) from None
            value = values.get("secret")
        return SigningSecret(
            secret_id=str(stored["secret_id"]),
            created_at=_ts(stored["created_at"]) or datetime.min,
            expires_at=_ts(stored.get("expires_at")),
            value=str(value) if value is not None and (opened or seal is None) else None,
            seal=dict(seal) if seal is not None else None,
        )

    # --- reads --------------------------------------------------------------------------------

    def tenant_exists(self, tenant_id: str) -> bool:
        return self._table.get(keys.tenant_key(tenant_id)) is not None

    def get(self, tenant_id: str, subscription_id: str) -> Subscription | None:
        item = self._table.get(keys.subscription_key(tenant_id, subscription_id))
        return self.subscription(item) if item else None

    def for_delivery(self, tenant_id: str, subscription_id: str) -> Subscription | None:
        item = self._table.get(keys.subscription_key(tenant_id, subscription_id), consistent=False)
        return self.subscription(item, opened=self._opens) if item else None

    def current(self, tenant_id: str, subscription_id: str) -> Subscription | None:
        """As `for_delivery`, strongly consistent: an enable of a moment ago is seen."""
        item = self._table.get(keys.subscription_key(tenant_id, subscription_id))
        return self.subscription(item, opened=self._opens) if item else None

    def list_subscriptions(
        self, tenant_id: str, limit: int, cursor: str | None
    ) -> tuple[list[Subscription], str | None]:
        partition = keys.subscription_partition(tenant_id)

        def belongs(key: dict[str, str]) -> bool:
            return (
                key["SK"] == CONFIG_SK and key["PK"] == keys.subscription_key(tenant_id, key["GSI1SK"])["PK"]
            )

        rows, next_cursor = index_page(self._table, partition, limit, cursor, belongs, newest_first=False)
        found = [self.subscription(i) for i in items_of(self._table, rows, CONFIG_SK)]
        return [s for s in found if s.tenant_id == tenant_id], next_cursor

    def enabled_for_tenant(self, tenant_id: str) -> list[Subscription]:
        """The sink's lookup: one Query (a tenant without subscriptions: nothing more), then one
        BatchGetItem per 100."""
        request: dict[str, Any] = {
            "IndexName": "GSI1",
            "KeyConditionExpression": "GSI1PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": keys.subscription_partition(tenant_id)}},
            "Limit": _PAGE,
        }
        found: list[Subscription] = []
        while True:
            rows, last = self._table.query(**request)
            for item in items_of(self._table, rows, CONFIG_SK):
                subscription = self.subscription(item)
                if subscription.tenant_id == tenant_id and subscription.enabled:
                    found.append(subscription)
            if last is None:
                return found
            request["ExclusiveStartKey"] = {name: {"S": str(value)} for name, value in last.items()}

    # --- writes -------------------------------------------------------------------------------

    def create(self, subscription: Subscription) -> None:
        try:
            self._table.put(self.item(subscription), condition="attribute_not_exists(PK)")
        except ConditionFailed as taken:
            raise Conflict(
                "subscription exists", details={"subscription_id": subscription.subscription_id}
            ) from taken

    def replace(
        self, subscription: Subscription, expected_version: int, event: OutboxEvent | None = None
    ) -> None:
        """Conditional on `expected_version` (VersionConflict otherwise); `event` (a disable's
        `subscription.disabled`) is written in the same transaction."""
        condition = "#version = :expected AND tenant_id = :tenant"
        values = {":expected": expected_version, ":tenant": subscription.tenant_id}
        if event is None:
            try:
                self._table.put(
                    self.item(subscription), condition=condition, values=values, names={"#version": "version"}
                )
            except ConditionFailed as lost:
                raise VersionConflict(int(lost.old["version"]) if lost.old else None) from lost
            return
        put = self._table.put_entry(self.item(subscription), condition=condition, values=values)
        put["Put"]["ExpressionAttributeNames"] = {"#version": "version"}
        try:
            self._table.transact([put, event_put(self._table, event, subscription.updated_at or utcnow())])
        except TransactionCancelled as cancelled:
            code, old = cancelled.reasons[0] if cancelled.reasons else ("None", None)
            if code == "ConditionalCheckFailed":
                raise VersionConflict(int(old["version"]) if old else None) from cancelled
            raise VersionConflict(subscription.version - 1) from cancelled

    def disable(self, subscription: Subscription, reason: str, event: OutboxEvent, now: datetime) -> bool:
        """The sender's disable (410 Gone): conditional on the subscription still being enabled
        (not on its version: an operator's edit meanwhile does not keep a gone URL enabled)."""
        update = Update().set(enabled=False, disabled_reason=reason, updated_at=format_ts(now))
        update.add("version", 1)
        update.where(f"{update.name('enabled')} = {update.value(True)}")
        try:
            self._table.transact(
                [
                    self._table.update_entry(
                        keys.subscription_key(subscription.tenant_id, subscription.subscription_id), update
                    ),
                    event_put(self._table, event, now),
                ]
            )
        except TransactionCancelled:
            return False  # disabled or deleted already, or this event was written already
        return True

    def delete(self, tenant_id: str, subscription_id: str, expected_version: int) -> None:
        try:
            self._table.delete(
                keys.subscription_key(tenant_id, subscription_id),
                condition="version = :expected",
                values={":expected": expected_version},
            )
        except ConditionFailed as lost:
            current = self._table.get(keys.subscription_key(tenant_id, subscription_id))
            raise VersionConflict(int(current["version"]) if current else None) from lost


class DynamoWebhookFailures:
    """hub.outbox.webhooks.FailedDeliveries over the hub table."""

    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "webhook failure storage")

    @staticmethod
    def _item(failure: FailedWebhook) -> dict[str, Any]:
        failed_at = format_ts(failure.failed_at)
        return {
            **keys.webhook_failure_key(failure.tenant_id, failure.subscription_id, failure.event.id),
            **keys.webhook_failure_index_keys(
                failure.tenant_id, failure.subscription_id, failed_at, failure.event.id
            ),
            "item_type": "webhook_failure",
            "subscription_id": failure.subscription_id,
            "tenant_id": failure.tenant_id,
            "event_id": failure.event.id,
            "event_json": failure.event.model_dump_json(exclude_none=True),
            "failed_at": failed_at,
            "error_class": failure.error_class,
            "dest_status": failure.dest_status,
            "detail": failure.detail or None,
            "attempts": failure.attempts,
            "replayed_at": format_ts(failure.replayed_at) if failure.replayed_at else None,
            "expires_at": epoch(failure.failed_at + FAILURE_TTL),
        }

    @staticmethod
    def _failure(item: Mapping[str, Any]) -> FailedWebhook:
        return FailedWebhook(
            subscription_id=str(item["subscription_id"]),
            tenant_id=str(item["tenant_id"]),
            event=OutboxEvent.model_validate_json(str(item["event_json"])),
            failed_at=_ts(item["failed_at"]) or datetime.min,
            error_class=str(item["error_class"]),
            dest_status=item.get("dest_status"),
            detail=str(item.get("detail") or ""),
            attempts=int(item.get("attempts", 1)),
            replayed_at=_ts(item.get("replayed_at")),
        )

    def record(self, failure: FailedWebhook) -> None:
        self._table.put(self._item(failure))

    def get(self, tenant_id: str, subscription_id: str, event_id: str) -> FailedWebhook | None:
        item = self._table.get(keys.webhook_failure_key(tenant_id, subscription_id, event_id))
        return self._failure(item) if item else None

    def clear(self, tenant_id: str, subscription_id: str, event_id: str) -> None:
        self._table.delete(keys.webhook_failure_key(tenant_id, subscription_id, event_id))

    def mark_replayed(self, tenant_id: str, subscription_id: str, event_id: str, at: datetime) -> None:
        update = Update().set(replayed_at=format_ts(at))
        update.where("attribute_exists(PK)")
        try:
            self._table.update(keys.webhook_failure_key(tenant_id, subscription_id, event_id), update)
        except ConditionFailed:
            return  # delivered (and cleared) meanwhile

    def list_failures(
        self, tenant_id: str, subscription_id: str, limit: int, cursor: str | None
    ) -> FailurePage:
        partition = keys.webhook_failure_partition(tenant_id, subscription_id)

        def belongs(key: dict[str, str]) -> bool:
            _, _, event_id = key["GSI1SK"].partition("#")
            own = keys.webhook_failure_key(tenant_id, subscription_id, event_id)
            return key["SK"] == own["SK"] and key["PK"] == own["PK"]

        rows, next_cursor = index_page(self._table, partition, limit, cursor, belongs, newest_first=True)
        items = items_of(self._table, rows, keys.WEBHOOK_FAILURE_SK)
        return FailurePage([self._failure(i) for i in items], next_cursor)

    def since(self, tenant_id: str, subscription_id: str, since: datetime) -> Iterator[FailedWebhook]:
        request: dict[str, Any] = {
            "IndexName": "GSI1",
            "KeyConditionExpression": "GSI1PK = :pk AND GSI1SK >= :since",
            "ExpressionAttributeValues": {
                ":pk": {"S": keys.webhook_failure_partition(tenant_id, subscription_id)},
                ":since": {"S": format_ts(since)},
            },
            "Limit": _PAGE,
        }
        while True:
            rows, last = self._table.query(**request)
            for item in items_of(self._table, rows, keys.WEBHOOK_FAILURE_SK):
                yield self._failure(item)
            if last is None:
                return
            request["ExclusiveStartKey"] = {name: {"S": str(value)} for name, value in last.items()}
