"""The audit log's DynamoDB adapter on moto: an entry is stored with its redacted views."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import boto3

from hub.adapters.dynamo.audit import DynamoAuditTrail
from hub.admin.access import BOOTSTRAP
from hub.admin.audit import MASK, entry
from tests.integration.conftest import Stack


def test_an_entry_is_stored_under_its_scope_with_secrets_masked(stack: Stack) -> None:
    at = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    DynamoAuditTrail(stack.table).record(
        entry(
            BOOTSTRAP,
            "t1",
            "integration.updated",
            {"integration_id": "int_1"},
            at,
            before={"name": "old", "auth": {"kind": "bearer", "token": "s3cr3t-value"}},
            after={"name": "new", "secret_prefix": "whsec_ab", "client_secret": "xyz"},
        )
    )
    items = (
        boto3.resource("dynamodb")
        .Table(stack.table)
        .query(KeyConditionExpression="PK = :p", ExpressionAttributeValues={":p": "AUDIT#t1"})["Items"]
    )
    assert len(items) == 1
    stored = items[0]
    assert stored["SK"].startswith("2026-11-30T12:00:00")
    assert stored["actor_token_id"] == "bootstrap-admin"
    assert stored["action"] == "integration.updated"
    assert stored["target"] == {"integration_id": "int_1"}
    assert json.loads(stored["before_json"])["auth"] == {"kind": "bearer", "token": MASK}
    after = json.loads(stored["after_json"])
    assert after == {"name": "new", "secret_prefix": "whsec_ab", "client_secret": MASK}
    assert "s3cr3t-value" not in json.dumps(stored, default=str)
