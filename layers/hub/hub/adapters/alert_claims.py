"""DynamoDB adapter for alert records: one item per alert group and UTC hour, in the hub table.

- ``ALERT#<integration>#<YYYY-MM-DDTHH>`` / ``ALERT``  dead letters of one integration in one hour
- ``ALARM#<alarm name>#<YYYY-MM-DDTHH>`` / ``ALERT``   one CloudWatch alarm in one hour

(spelled in hub.adapters.dynamo.keys). Created by one conditional put (exactly one creator),
then counted on (``occurrences``) and marked per channel that took the alert (``sent_channels``,
``sent_at``). TTL ``expires_at``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.table import ConditionFailed, Table, Update, epoch, format_ts
from hub.alerts.model import ALERT_RETENTION, Alert, AlertGroup, AlertKind
from hub.errors import StorageUnavailable
from hub.ports import AlertClaim

_WHAT = "alert storage"


def alert_key(group: AlertGroup) -> keys.Key:
    """The claim item of a dead-letter or alarm group (certificate alerts have their own,
    hub.adapters.certificates)."""
    if group.kind is AlertKind.DEAD_LETTER:
        return keys.dead_letter_alert_key(group.tenant_id, group.subject, group.hour)
    if group.kind is AlertKind.ALARM:
        return keys.alarm_alert_key(group.subject, group.hour)
    raise ValueError(f"no alert claim for {group.kind.value} alerts")


def _claim_from(data: dict[str, Any], *, created: bool) -> AlertClaim:
    return AlertClaim(
        owner=str(data["owner"]),
        sent_channels=frozenset(str(name) for name in data.get("sent_channels", ())),
        created=created,
    )


class DynamoAlertClaimStore:
    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, _WHAT)

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
            self._table.put(item, condition="attribute_not_exists(PK)")
        except ConditionFailed as failed:
            existing = failed.old or self._table.get(alert_key(group))
            if existing is None:  # deleted in between: a retry of the event claims it again
                raise StorageUnavailable(
                    f"{_WHAT} is temporarily unavailable", details={"operation": "PutItem"}
                ) from failed
            return _claim_from(existing, created=False)
        return AlertClaim(owner=owner, sent_channels=frozenset(), created=True)

    def count(self, group: AlertGroup, occurrences: int) -> None:
        self._table.update(alert_key(group), Update().add("occurrences", occurrences))

    def mark_sent(self, group: AlertGroup, channels: Iterable[str], now: datetime) -> None:
        names = frozenset(channels)
        if names:
            self._table.update(
                alert_key(group), Update().set(sent_at=format_ts(now)).add("sent_channels", names)
            )
