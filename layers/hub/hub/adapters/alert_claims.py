"""DynamoDB adapter for alert records: one item per alert group and UTC hour, in the hub table.

- ``ALERT#<integration>#<YYYY-MM-DDTHH>`` / ``ALERT``  dead letters of one integration in one hour
- ``ALARM#<alarm name>#<YYYY-MM-DDTHH>`` / ``ALERT``   one CloudWatch alarm in one hour

Created by one conditional put (exactly one creator), then counted on (``occurrences``) and
marked per channel that took the alert (``sent_channels``, ``sent_at``). TTL ``expires_at``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hub.adapters.aws import client, error_code
from hub.adapters.dynamo.table import decode, encode, epoch, format_ts
from hub.alerts.model import ALERT_RETENTION, Alert, AlertGroup, AlertKind
from hub.errors import StorageUnavailable
from hub.ports import AlertClaim

_PREFIX = {AlertKind.DEAD_LETTER: "ALERT", AlertKind.ALARM: "ALARM"}


def alert_key(group: AlertGroup) -> dict[str, str]:
    return {"PK": f"{_PREFIX[group.kind]}#{group.subject}#{group.hour}", "SK": "ALERT"}


def _unavailable(operation: str) -> StorageUnavailable:
    return StorageUnavailable("alert storage is temporarily unavailable", details={"operation": operation})


def _claim_from(item: dict[str, Any], *, created: bool) -> AlertClaim:
    data = decode(item)
    return AlertClaim(
        owner=str(data["owner"]),
        sent_channels=frozenset(str(name) for name in data.get("sent_channels", ())),
        created=created,
    )


class DynamoAlertClaimStore:
    def __init__(self, table_name: str) -> None:
        self._table = table_name

    def claim(self, alert: Alert, owner: str, occurrences: int, now: datetime) -> AlertClaim:
        group = alert.group
        item = {
            **alert_key(group),
            "item_type": "alert",
            "alert_kind": group.kind.value,
            "subject": group.subject,
            "hour_bucket": group.hour,
            "owner": owner,
            "title": alert.title,
            "tenant_id": alert.tenant_id,
            "first_message_id": alert.first_message_id,
            "occurrences": occurrences,
            "created_at": format_ts(now),
            "expires_at": epoch(now + ALERT_RETENTION),
        }
        try:
            client("dynamodb").put_item(
                TableName=self._table,
                Item=encode(item),
                ConditionExpression="attribute_not_exists(PK)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise _unavailable("PutItem") from exc
            existing = exc.response.get("Item") or self._get(group)
            if existing is None:  # deleted in between: a retry of the event claims it again
                raise _unavailable("PutItem") from exc
            return _claim_from(existing, created=False)
        except BotoCoreError as exc:
            raise _unavailable("PutItem") from exc
        return AlertClaim(owner=owner, sent_channels=frozenset(), created=True)

    def _get(self, group: AlertGroup) -> dict[str, Any] | None:
        try:
            answer = client("dynamodb").get_item(
                TableName=self._table, Key=encode(alert_key(group)), ConsistentRead=True
            )
        except (BotoCoreError, ClientError) as exc:
            raise _unavailable("GetItem") from exc
        item: dict[str, Any] | None = answer.get("Item")
        return item

    def count(self, group: AlertGroup, occurrences: int) -> None:
        self._update(group, "ADD occurrences :n", {":n": occurrences})

    def mark_sent(self, group: AlertGroup, channels: Iterable[str], now: datetime) -> None:
        names = set(channels)
        if names:
            self._update(
                group,
                "SET sent_at = :now ADD sent_channels :names",
                {":now": format_ts(now), ":names": names},
            )

    def _update(self, group: AlertGroup, expression: str, values: dict[str, Any]) -> None:
        try:
            client("dynamodb").update_item(
                TableName=self._table,
                Key=encode(alert_key(group)),
                UpdateExpression=expression,
                ExpressionAttributeValues=encode(values),
            )
        except (BotoCoreError, ClientError) as exc:
            raise _unavailable("UpdateItem") from exc
