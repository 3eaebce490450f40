"""DynamoDB adapters over the single hub table.

Item layout (PK / SK):

- ``MSG#<id>`` / ``STATUS``        the hot status record (small; GSI1 lists it by tenant+status)
- ``MSG#<id>`` / ``PAYLOAD``       the payload, stored once, apart from the status record
- ``IDEM#<integration>#<sha256(key)>`` / ``CLAIM``   Idempotency-Key claim (TTL)
- ``FP#<integration>#<fingerprint>`` / ``CLAIM``     payload fingerprint claim (TTL)
- ``APIKEY#<sha256(key)>`` / ``APIKEY``, ``INTEGRATION#<id>`` / ``CONFIG``, ``TENANT#<id>`` / ``PROFILE``

Integration ids are global and each belongs to one tenant, so a claim keyed by integration
is unique per (tenant, integration, key) as the seed asks, and can be read in the same
BatchGetItem as the API key and the integration before the tenant is known.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from hub.adapters.aws import client, error_code
from hub.domain.idempotency import DedupKind
from hub.domain.message import PIPELINE_OPERATION, MessageRecord
from hub.domain.status import PipelineStatus, can_transition
from hub.domain.tenancy import ApiKey, Integration, Tenant
from hub.errors import (
    ClaimTaken,
    InvalidTransition,
    NotFound,
    StorageUnavailable,
    TransitionNotAllowed,
    ValidationFailed,
)
from hub.ports import Claim, IngestLookup, NewMessage, QueuePage

_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_ser = TypeSerializer()
_deser = TypeDeserializer()
_MAX_BATCH_ROUNDS = 5
#: What a transition may change besides the status; identity and keys never change.
_CHANGEABLE_FIELDS = frozenset(
    {
        "dest_status",
        "dest_status_text",
        "retry_count",
        "next_retry_at",
        "last_retry_error_class",
        "uncertain",
        "execution_id",
        "execution_started_at",
    }
)


def format_ts(value: datetime) -> str:
    """Fixed-width UTC timestamp: sorts lexically in GSI sort keys."""
    return value.astimezone(UTC).strftime(_TS_FORMAT)


def encode(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _ser.serialize(v) for k, v in item.items() if v is not None}


def decode(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _deser.deserialize(v) for k, v in item.items()}


def epoch(value: datetime) -> int:
    return int(value.timestamp())


@contextmanager
def _storage(operation: str) -> Iterator[None]:
    """Any AWS failure not handled by the caller becomes StorageUnavailable (retryable)."""
    try:
        yield
    except (BotoCoreError, ClientError) as exc:
        raise StorageUnavailable(
            "message storage is temporarily unavailable", details={"operation": operation}
        ) from exc


# --- keys -------------------------------------------------------------------------------


def status_key(message_id: str) -> dict[str, str]:
    return {"PK": f"MSG#{message_id}", "SK": "STATUS"}


def payload_key(message_id: str) -> dict[str, str]:
    return {"PK": f"MSG#{message_id}", "SK": "PAYLOAD"}


def idempotency_claim_key(integration_id: str, key_hash: str) -> dict[str, str]:
    return {"PK": f"IDEM#{integration_id}#{key_hash}", "SK": "CLAIM"}


def fingerprint_claim_key(integration_id: str, fingerprint: str) -> dict[str, str]:
    return {"PK": f"FP#{integration_id}#{fingerprint}", "SK": "CLAIM"}


def api_key_key(key_hash: str) -> dict[str, str]:
    return {"PK": f"APIKEY#{key_hash}", "SK": "APIKEY"}


def integration_key(integration_id: str) -> dict[str, str]:
    return {"PK": f"INTEGRATION#{integration_id}", "SK": "CONFIG"}


def tenant_key(tenant_id: str) -> dict[str, str]:
    return {"PK": f"TENANT#{tenant_id}", "SK": "PROFILE"}


def admission_key(message_id: str, operation: str) -> dict[str, str]:
    return {"PK": f"ADM#{message_id}#{operation}", "SK": "ADMISSION"}


def admission_item(message_id: str, operation: str, execution_id: str, now: datetime) -> dict[str, Any]:
    """The record of the live execution of (message, operation): admission control."""
    return {
        **admission_key(message_id, operation),
        "item_type": "admission",
        "execution_id": execution_id,
        "heartbeat_at": epoch(now),
    }


def status_index_keys(tenant_id: str, status: str, updated_at: str, message_id: str) -> dict[str, str]:
    """GSI1: messages of a tenant in one status, ordered by last change."""
    return {"GSI1PK": f"TENANT#{tenant_id}#STATUS#{status}", "GSI1SK": f"{updated_at}#{message_id}"}


# --- codecs -----------------------------------------------------------------------------


def _record_item(record: MessageRecord) -> dict[str, Any]:
    data = record.model_dump(mode="python")
    for field, value in data.items():
        if isinstance(value, datetime):
            data[field] = format_ts(value)
    data["pipeline_status"] = record.pipeline_status.value
    data["payload_format"] = record.payload_format.value
    return {
        **status_key(record.message_id),
        **status_index_keys(record.tenant_id, data["pipeline_status"], data["updated_at"], record.message_id),
        "item_type": "message",
        **data,
    }


def _record_from(item: Mapping[str, Any]) -> MessageRecord:
    return MessageRecord.model_validate(decode(item))


def _api_key_from(item: Mapping[str, Any]) -> ApiKey:
    data = decode(item)
    ids = data.get("integration_ids")
    return ApiKey(
        key_id=data["key_id"],
        tenant_id=data["tenant_id"],
        key_hash=data["key_hash"],
        integration_ids=frozenset(ids) if ids is not None else None,
        active=bool(data.get("active", True)),
    )


def _integration_from(item: Mapping[str, Any]) -> Integration:
    data = decode(item)
    integration = Integration.model_validate_json(data["config_json"])
    gone_at = data.get("connection_gone_at")
    if gone_at:
        integration = integration.model_copy(update={"connection_gone_at": datetime.fromisoformat(gone_at)})
    return integration


def _claim_from(item: Mapping[str, Any], kind: DedupKind, now: datetime) -> Claim | None:
    data = decode(item)
    # TTL deletes lazily (up to days late): an expired claim no longer counts.
    if int(data["expires_at"]) <= epoch(now):
        return None
    return Claim(
        kind=kind,
        message_id=data["message_id"],
        fingerprint=data["fingerprint"],
        request_sha256=data["request_sha256"],
    )


class DynamoConfigRepository:
    """Tenants, integrations and API keys."""

    def __init__(self, table_name: str) -> None:
        self._table = table_name

    def _get(self, key: dict[str, str]) -> dict[str, Any] | None:
        with _storage("GetItem"):
            answer = client("dynamodb").get_item(TableName=self._table, Key=encode(key))
        return answer.get("Item")

    def _put(self, item: dict[str, Any]) -> None:
        with _storage("PutItem"):
            client("dynamodb").put_item(TableName=self._table, Item=encode(item))

    def get_api_key(self, key_hash: str) -> ApiKey | None:
        item = self._get(api_key_key(key_hash))
        return _api_key_from(item) if item else None

    def get_integration(self, integration_id: str) -> Integration | None:
        item = self._get(integration_key(integration_id))
        return _integration_from(item) if item else None

    def put_tenant(self, tenant: Tenant) -> None:
        self._put({**tenant_key(tenant.tenant_id), "item_type": "tenant", **tenant.model_dump()})

    def put_integration(self, integration: Integration) -> None:
        self._put(
            {
                **integration_key(integration.integration_id),
                "item_type": "integration",
                "tenant_id": integration.tenant_id,
                # The gone flag is the hub's observation, kept beside the configuration.
                "config_json": integration.model_dump_json(exclude={"connection_gone_at"}),
            }
        )

    def flag_connection_gone(self, integration_id: str, now: datetime, dest_status: str | None) -> None:
        """Sets `connection_gone_at` beside the stored configuration (only if the integration
        still exists); put_integration replaces the item, so saving the connection clears it."""
        try:
            client("dynamodb").update_item(
                TableName=self._table,
                Key=encode(integration_key(integration_id)),
                UpdateExpression="SET connection_gone_at = :at, connection_gone_status = :status",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeValues=encode({":at": format_ts(now), ":status": dest_status or "410"}),
            )
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                return
            raise StorageUnavailable(
                "configuration storage is temporarily unavailable", details={"operation": "UpdateItem"}
            ) from exc
        except BotoCoreError as exc:
            raise StorageUnavailable(
                "configuration storage is temporarily unavailable", details={"operation": "UpdateItem"}
            ) from exc

    def put_api_key(self, api_key: ApiKey) -> None:
        ids = sorted(api_key.integration_ids) if api_key.integration_ids is not None else None
        self._put(
            {
                **api_key_key(api_key.key_hash),
                "item_type": "api_key",
                "key_id": api_key.key_id,
                "tenant_id": api_key.tenant_id,
                "key_hash": api_key.key_hash,
                "integration_ids": ids,
                "active": api_key.active,
            }
        )


class DynamoMessageRepository:
    """Message status records, payloads and ingest claims."""

    def __init__(self, table_name: str) -> None:
        self._table = table_name

    def _batch_get(self, keys: list[dict[str, str]]) -> dict[str, dict[str, Any]]:
        """Consistent BatchGetItem of `keys`, following UnprocessedKeys; items by PK."""
        found: dict[str, dict[str, Any]] = {}
        request: dict[str, Any] = {self._table: {"Keys": [encode(k) for k in keys], "ConsistentRead": True}}
        with _storage("BatchGetItem"):
            for _ in range(_MAX_BATCH_ROUNDS):
                answer = client("dynamodb").batch_get_item(RequestItems=request)
                for item in answer.get("Responses", {}).get(self._table, []):
                    found[item["PK"]["S"]] = item
                request = answer.get("UnprocessedKeys") or {}
                if not request:
                    return found
        raise StorageUnavailable("message storage is throttling reads", details={"operation": "BatchGetItem"})

    def lookup_for_ingest(
        self,
        key_hash: str | None,
        integration_id: str,
        idempotency_key_hash: str | None,
        fingerprint: str,
        now: datetime,
    ) -> IngestLookup:
        keys = [fingerprint_claim_key(integration_id, fingerprint)]
        if key_hash is not None:
            keys += [api_key_key(key_hash), integration_key(integration_id)]
        if idempotency_key_hash is not None:
            keys.append(idempotency_claim_key(integration_id, idempotency_key_hash))
        items = self._batch_get(keys)
        claims: list[Claim] = []
        if idempotency_key_hash is not None:
            idem = items.get(idempotency_claim_key(integration_id, idempotency_key_hash)["PK"])
            claim = _claim_from(idem, DedupKind.IDEMPOTENCY_KEY, now) if idem else None
            if claim:
                claims.append(claim)
        fp = items.get(fingerprint_claim_key(integration_id, fingerprint)["PK"])
        fp_claim = _claim_from(fp, DedupKind.FINGERPRINT, now) if fp else None
        if fp_claim:
            claims.append(fp_claim)
        api_item = items.get(api_key_key(key_hash)["PK"]) if key_hash is not None else None
        integration_item = items.get(integration_key(integration_id)["PK"]) if key_hash is not None else None
        return IngestLookup(
            api_key=_api_key_from(api_item) if api_item else None,
            integration=_integration_from(integration_item) if integration_item else None,
            claims=tuple(claims),
        )

    def _claim_items(self, new: NewMessage) -> list[tuple[DedupKind, dict[str, Any]]]:
        record = new.record
        base = {
            "item_type": "claim",
            "tenant_id": record.tenant_id,
            "message_id": record.message_id,
            "fingerprint": record.fingerprint,
            "request_sha256": new.request_sha256,
        }
        claims = [
            (
                DedupKind.FINGERPRINT,
                {
                    **fingerprint_claim_key(record.integration_id, record.fingerprint),
                    **base,
                    "expires_at": epoch(new.fingerprint_expires_at),
                },
            )
        ]
        if new.idempotency_key_hash is not None:
            claims.append(
                (
                    DedupKind.IDEMPOTENCY_KEY,
                    {
                        **idempotency_claim_key(record.integration_id, new.idempotency_key_hash),
                        **base,
                        "expires_at": epoch(new.idempotency_expires_at),
                    },
                )
            )
        return claims

    def create(self, new: NewMessage, now: datetime) -> None:
        record = new.record
        claims = self._claim_items(new)
        fresh = "attribute_not_exists(PK)"
        transact: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": encode(item),
                    # A claim whose TTL passed but is not yet deleted may be taken over.
                    "ConditionExpression": f"{fresh} OR expires_at <= :now",
                    "ExpressionAttributeValues": {":now": {"N": str(epoch(now))}},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
            for _, item in claims
        ]
        transact.append(
            {
                "Put": {
                    "TableName": self._table,
                    "Item": encode(_record_item(record)),
                    "ConditionExpression": fresh,
                }
            }
        )
        transact.append(
            {
                "Put": {
                    "TableName": self._table,
                    "Item": encode(
                        {
                            **payload_key(record.message_id),
                            "item_type": "payload",
                            "payload": new.payload_text,
                            "payload_format": record.payload_format.value,
                        }
                    ),
                    "ConditionExpression": fresh,
                }
            }
        )
        # The first execution is admitted with the message: from its first 2xx on, the message
        # has a live execution, and an operator's reprocess waits for it (409).
        transact.append(
            {
                "Put": {
                    "TableName": self._table,
                    "Item": encode(
                        admission_item(record.message_id, PIPELINE_OPERATION, record.execution_id, now)
                    ),
                    "ConditionExpression": fresh,
                }
            }
        )
        try:
            client("dynamodb").transact_write_items(TransactItems=transact)
        except ClientError as exc:
            if error_code(exc) != "TransactionCanceledException":
                raise StorageUnavailable(
                    "message storage is temporarily unavailable", details={"operation": "TransactWriteItems"}
                ) from exc
            reasons = exc.response.get("CancellationReasons", [])
            taken = [
                claim
                for (kind, _), r in zip(claims, reasons, strict=False)
                if r.get("Code") == "ConditionalCheckFailed" and r.get("Item")
                for claim in [_claim_from(r["Item"], kind, now)]
                if claim is not None
            ]
            if not taken:
                # Cancelled for another reason (conflict with a concurrent transaction,
                # throttling): nothing was written, so the caller may simply resend.
                raise StorageUnavailable(
                    "message storage is busy", details={"operation": "TransactWriteItems"}
                ) from exc
            raise ClaimTaken("another message holds this claim", claims=tuple(taken)) from exc
        except BotoCoreError as exc:
            raise StorageUnavailable(
                "message storage is temporarily unavailable", details={"operation": "TransactWriteItems"}
            ) from exc

    def get(self, message_id: str) -> MessageRecord | None:
        with _storage("GetItem"):
            item = (
                client("dynamodb")
                .get_item(TableName=self._table, Key=encode(status_key(message_id)), ConsistentRead=True)
                .get("Item")
            )
        return _record_from(item) if item else None

    def get_for_key(self, key_hash: str, message_id: str) -> tuple[ApiKey | None, MessageRecord | None]:
        items = self._batch_get([api_key_key(key_hash), status_key(message_id)])
        api_item = items.get(api_key_key(key_hash)["PK"])
        msg_item = items.get(status_key(message_id)["PK"])
        return (
            _api_key_from(api_item) if api_item else None,
            _record_from(msg_item) if msg_item else None,
        )

    def get_payload(self, message_id: str) -> str | None:
        with _storage("GetItem"):
            item = (
                client("dynamodb")
                .get_item(TableName=self._table, Key=encode(payload_key(message_id)), ConsistentRead=True)
                .get("Item")
            )
        return str(decode(item)["payload"]) if item else None

    def transition(
        self, record: MessageRecord, target: PipelineStatus, now: datetime, **changes: Any
    ) -> MessageRecord:
        expected = record.pipeline_status
        if not can_transition(expected, target):
            raise TransitionNotAllowed(
                f"pipeline_status cannot move from {expected.value} to {target.value}",
                details={"message_id": record.message_id, "from": expected.value, "to": target.value},
            )
        unknown = set(changes) - _CHANGEABLE_FIELDS
        if unknown:
            raise ValueError(f"not changeable through a transition: {sorted(unknown)}")
        updated_at = format_ts(now)
        sets = {
            "pipeline_status": target.value,
            "updated_at": updated_at,
            **status_index_keys(record.tenant_id, target.value, updated_at, record.message_id),
        }
        removes = [field for field, value in changes.items() if value is None]
        sets.update(
            {
                field: format_ts(value) if isinstance(value, datetime) else value
                for field, value in changes.items()
                if value is not None
            }
        )
        names = {f"#a{i}": name for i, name in enumerate(sets)}
        values: dict[str, Any] = {f":v{i}": _ser.serialize(v) for i, v in enumerate(sets.values())}
        expression = "SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(sets)))
        if removes:
            names.update({f"#r{i}": name for i, name in enumerate(removes)})
            expression += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(removes)))
        names["#st"] = "pipeline_status"
        values[":expected"] = {"S": expected.value}
        values[":tenant"] = {"S": record.tenant_id}
        condition = "attribute_exists(PK) AND tenant_id = :tenant AND #st = :expected"
        if target is expected or expected is PipelineStatus.RETRY_PENDING:
            # Where several actors meet - another retry decided twice, a rerun, a cancel racing a
            # retry - the record must also be unchanged since the caller read it.
            names["#up"] = "updated_at"
            values[":read_at"] = {"S": format_ts(record.updated_at)}
            condition += " AND #up = :read_at"
        try:
            answer = client("dynamodb").update_item(
                TableName=self._table,
                Key=encode(status_key(record.message_id)),
                UpdateExpression=expression,
                # Optimistic: the stored status must still be the one the caller decided on, so a
                # stale step can neither regress nor revive a message (e.g. after a cancel).
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise StorageUnavailable(
                    "message storage is temporarily unavailable", details={"operation": "UpdateItem"}
                ) from exc
            old = decode(exc.response.get("Item") or {})
            if old.get("tenant_id") != record.tenant_id:
                raise NotFound("message not found") from exc
            current = old["pipeline_status"]
            raise InvalidTransition(
                f"pipeline_status is {current}, no longer {expected.value}",
                details={"message_id": record.message_id, "from": current, "to": target.value},
            ) from exc
        except BotoCoreError as exc:
            raise StorageUnavailable(
                "message storage is temporarily unavailable", details={"operation": "UpdateItem"}
            ) from exc
        return _record_from(answer["Attributes"])


#: What an admin queue row shows; template.yaml projects exactly these into GSI1 (a test checks),
#: so a listing reads no item per row. Never the payload, nor dest_status_text (it may quote the
#: destination's answer).
QUEUE_ROW_FIELDS = (
    "message_id",
    "integration_id",
    "message_type",
    "external_id",
    "pipeline_status",
    "received_at",
    "updated_at",
    "retry_count",
    "next_retry_at",
    "last_retry_error_class",
    "dest_status",
    "uncertain",
)


class DynamoStatusIndex:
    """The admin queue tabs: GSI1 (tenant + status, sorted by last change), newest first."""

    def __init__(self, table_name: str) -> None:
        self._table = table_name

    def list_by_status(
        self, tenant_id: str, status: PipelineStatus, limit: int, cursor: str | None
    ) -> QueuePage:
        partition = status_index_keys(tenant_id, status.value, "", "")["GSI1PK"]
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": "GSI1",
            "KeyConditionExpression": "GSI1PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": partition}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if cursor:
            request["ExclusiveStartKey"] = encode(_decode_cursor(cursor, partition))
        with _storage("Query"):
            answer = client("dynamodb").query(**request)
        rows = [
            {field: value for field, value in decode(item).items() if field in QUEUE_ROW_FIELDS}
            for item in answer.get("Items", [])
        ]
        for row in rows:
            if "retry_count" in row:
                row["retry_count"] = int(row["retry_count"])
        last = answer.get("LastEvaluatedKey")
        return QueuePage(rows=rows, next_cursor=_encode_cursor(decode(last)) if last else None)


_CURSOR_KEYS = frozenset({"PK", "SK", "GSI1PK", "GSI1SK"})


def _encode_cursor(key: Mapping[str, Any]) -> str:
    raw = json.dumps(dict(key), separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str, partition: str) -> dict[str, str]:
    """The start key a cursor stands for; it must be one this listing gives out (same tenant
    and status, keys consistent with each other), so a cursor can never open another tenant's
    partition nor make DynamoDB refuse the query."""
    invalid = ValidationFailed(
        "cursor is not valid", details=[{"field": "cursor", "problem": "invalid_cursor"}]
    )
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError as exc:
        raise invalid from exc
    if (
        not isinstance(key, dict)
        or set(key) != _CURSOR_KEYS
        or not all(isinstance(v, str) for v in key.values())
        or key["GSI1PK"] != partition
        or key["SK"] != "STATUS"
        or not key["PK"].startswith("MSG#")
        or not key["GSI1SK"].endswith("#" + key["PK"].removeprefix("MSG#"))
    ):
        raise invalid
    return key
