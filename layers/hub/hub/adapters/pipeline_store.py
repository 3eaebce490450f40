"""DynamoDB adapter for the pipeline worker's guards, message log and mapped bodies.

Items (PK / SK), all in the hub table:

- ``ADM#<message>#<operation>`` / ``ADMISSION``  the live execution (admission control)
- ``RECENT#<message>#<operation>`` / ``DONE``  recent completion of an execution (TTL 5 min)
- ``STEP#<step id>`` / ``DONE``             completed step message ids (TTL 5 min)
- ``LOCK#<entity>`` / ``LOCK``              per-entity lease (one step at a time)
- ``BK#<integration>#<type>#<key hash>`` / ``CURRENT``  current message of a business key
- ``MSG#<id>`` / ``MAPPED``                 the mapped body the deliver step sends
- ``MSG#<id>`` / ``LOG#<time>#<rand>``      the message log, one entry per attempt

Every guard is one conditional write; a lost condition is an answer (False / the holder),
never an exception, and anything else becomes StorageUnavailable.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hub.adapters.aws import client, error_code
from hub.adapters.dynamodb import admission_item, admission_key, decode, encode, epoch, format_ts, status_key
from hub.errors import StorageUnavailable


def _failed(operation: str, exc: Exception) -> StorageUnavailable:
    error = StorageUnavailable(
        "pipeline storage is temporarily unavailable", details={"operation": operation}
    )
    error.__cause__ = exc
    return error


class DynamoPipelineStore:
    def __init__(self, table_name: str) -> None:
        self._table = table_name

    # --- conditional primitives -----------------------------------------------------------

    def _conditional_put(self, item: dict[str, Any], condition: str, values: dict[str, Any]) -> bool:
        try:
            client("dynamodb").put_item(
                TableName=self._table,
                Item=encode(item),
                ConditionExpression=condition,
                ExpressionAttributeValues=encode(values),
            )
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise _failed("PutItem", exc) from exc
        except BotoCoreError as exc:
            raise _failed("PutItem", exc) from exc
        return True

    def _delete_if(self, key: dict[str, str], condition: str, values: dict[str, Any]) -> None:
        try:
            client("dynamodb").delete_item(
                TableName=self._table,
                Key=encode(key),
                ConditionExpression=condition,
                ExpressionAttributeValues=encode(values),
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise _failed("DeleteItem", exc) from exc
        except BotoCoreError as exc:
            raise _failed("DeleteItem", exc) from exc

    def _get(self, key: dict[str, str]) -> dict[str, Any] | None:
        try:
            item = client("dynamodb").get_item(TableName=self._table, Key=encode(key), ConsistentRead=True)
        except (BotoCoreError, ClientError) as exc:
            raise _failed("GetItem", exc) from exc
        found = item.get("Item")
        return decode(found) if found else None

    def _put(self, item: dict[str, Any]) -> None:
        try:
            client("dynamodb").put_item(TableName=self._table, Item=encode(item))
        except (BotoCoreError, ClientError) as exc:
            raise _failed("PutItem", exc) from exc

    # --- (1) admission control ---------------------------------------------------------------

    def admit(
        self, message_id: str, operation: str, execution_id: str, now: datetime, abandoned_after: timedelta
    ) -> bool:
        """Claims (message, operation) for `execution_id`. True when free, already ours, or held
        by an execution idle for longer than `abandoned_after` (taken over)."""
        return self._conditional_put(
            admission_item(message_id, operation, execution_id, now),
            "attribute_not_exists(PK) OR execution_id = :mine OR heartbeat_at < :stale",
            {":mine": execution_id, ":stale": epoch(now - abandoned_after)},
        )

    def release_admission(self, message_id: str, operation: str, execution_id: str) -> None:
        """Frees (message, operation) if `execution_id` still holds it (idempotent)."""
        self._delete_if(
            admission_key(message_id, operation),
            "execution_id = :mine",
            {":mine": execution_id},
        )

    def live_execution(self, message_id: str, operation: str) -> str | None:
        item = self._get(admission_key(message_id, operation))
        return str(item["execution_id"]) if item else None

    # --- (2) recent completion ---------------------------------------------------------------

    def mark_completed(
        self, message_id: str, operation: str, execution_id: str, now: datetime, window: timedelta
    ) -> None:
        self._put(
            {
                "PK": f"RECENT#{message_id}#{operation}",
                "SK": "DONE",
                "item_type": "recent_completion",
                "execution_id": execution_id,
                "expires_at": epoch(now + window),
            }
        )

    def recently_completed(self, message_id: str, operation: str, execution_id: str, now: datetime) -> bool:
        """True when `execution_id` finished within the window. An operator's reprocess is a new
        execution: the completion of the one before does not hold it back."""
        item = self._get({"PK": f"RECENT#{message_id}#{operation}", "SK": "DONE"})
        return (
            item is not None
            and item.get("execution_id") == execution_id
            and int(item["expires_at"]) > epoch(now)
        )

    # --- (3) message dedup ---------------------------------------------------------------------

    def step_done(self, step_id: str, now: datetime) -> bool:
        item = self._get({"PK": f"STEP#{step_id}", "SK": "DONE"})
        return item is not None and int(item["expires_at"]) > epoch(now)

    def record_step_done(self, step_id: str, now: datetime, window: timedelta) -> None:
        self._put(
            {
                "PK": f"STEP#{step_id}",
                "SK": "DONE",
                "item_type": "step_done",
                "expires_at": epoch(now + window),
            }
        )

    # --- (4) per-entity lock ---------------------------------------------------------------------

    def acquire_lock(self, entity: str, owner: str, now: datetime, lease: timedelta) -> bool:
        """A lease on `entity` for `owner`: True when free, expired, or already `owner`'s."""
        return self._conditional_put(
            {
                "PK": f"LOCK#{entity}",
                "SK": "LOCK",
                "item_type": "lock",
                "lock_owner": owner,
                "lease_until": epoch(now + lease),
                "expires_at": epoch(now + lease + timedelta(days=1)),
            },
            "attribute_not_exists(PK) OR lock_owner = :me OR lease_until < :now",
            {":me": owner, ":now": epoch(now)},
        )

    def release_lock(self, entity: str, owner: str) -> None:
        self._delete_if({"PK": f"LOCK#{entity}", "SK": "LOCK"}, "lock_owner = :me", {":me": owner})

    # --- business keys -----------------------------------------------------------------------

    def current_for_business_key(self, key: str) -> str | None:
        item = self._get({"PK": f"BK#{key}", "SK": "CURRENT"})
        return str(item["message_id"]) if item else None

    def claim_business_key(self, key: str, message_id: str) -> str | None:
        """Makes `message_id` the first holder of `key`; returns the earlier holder if any."""
        if self._conditional_put(
            {"PK": f"BK#{key}", "SK": "CURRENT", "item_type": "business_key", "message_id": message_id},
            "attribute_not_exists(PK) OR message_id = :me",
            {":me": message_id},
        ):
            return None
        return self.current_for_business_key(key)

    def replace_business_key(self, key: str, message_id: str) -> None:
        self._put({"PK": f"BK#{key}", "SK": "CURRENT", "item_type": "business_key", "message_id": message_id})

    def mark_superseded(self, message_id: str, by_message_id: str) -> None:
        try:
            client("dynamodb").update_item(
                TableName=self._table,
                Key=encode(status_key(message_id)),
                UpdateExpression="SET superseded_by = :by",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeValues=encode({":by": by_message_id}),
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise _failed("UpdateItem", exc) from exc
        except BotoCoreError as exc:
            raise _failed("UpdateItem", exc) from exc

    # --- mapped body and message log -----------------------------------------------------------

    def put_mapped(self, message_id: str, body: bytes, content_type: str) -> None:
        self._put(
            {
                "PK": f"MSG#{message_id}",
                "SK": "MAPPED",
                "item_type": "mapped",
                "body": body,
                "content_type": content_type,
            }
        )

    def get_mapped(self, message_id: str) -> tuple[bytes, str] | None:
        item = self._get({"PK": f"MSG#{message_id}", "SK": "MAPPED"})
        if item is None:
            return None
        return bytes(item["body"]), str(item["content_type"])

    def append_log(self, message_id: str, now: datetime, entry: dict[str, Any]) -> None:
        """One log entry of the message (never payload data: callers pass ids, statuses,
        classes and short destination excerpts only)."""
        self._put(
            {
                "PK": f"MSG#{message_id}",
                "SK": f"LOG#{format_ts(now)}#{os.urandom(3).hex()}",
                "item_type": "log",
                "at": format_ts(now),
                **entry,
            }
        )

    def message_log(self, message_id: str) -> list[dict[str, Any]]:
        """The message's log entries, oldest first."""
        try:
            answer = client("dynamodb").query(
                TableName=self._table,
                KeyConditionExpression="PK = :pk AND begins_with(SK, :log)",
                ExpressionAttributeValues=encode({":pk": f"MSG#{message_id}", ":log": "LOG#"}),
                ConsistentRead=True,
            )
        except (BotoCoreError, ClientError) as exc:
            raise _failed("Query", exc) from exc
        return [decode(item) for item in answer.get("Items", [])]
