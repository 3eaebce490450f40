"""Idempotency-Key on every mutating admin call (issue 28, point 1), through the real admin
handler on moto: a double submit is one action and its repeat answers the first answer; the
key is the calling token's; a 5xx frees it; an answer that shows a secret once is kept sealed,
never in clear; a claim left running by a dead Lambda is taken over after its lease."""

from __future__ import annotations

import json
import zlib
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from hub.adapters.aws import client
from hub.adapters.dynamo.admin_idempotency import DynamoAdminIdempotency
from hub.adapters.dynamo.messages import DynamoMessageRepository
from hub.domain.admin_idempotency import LEASE, RETENTION, key_hash, request_fingerprint
from hub.domain.clock import utcnow
from tests.destinations import Answer
from tests.integration.conftest import HttpAnswer, Stack
from tests.pipeline import configure, send, status

REPROCESS = "/api/edi-hub/reprocess-message"
REPLAYED = "Idempotent-Replayed"
#: The bootstrap token's id (hub.admin.access): the scope of its keys.
BOOTSTRAP = "bootstrap-admin"


def keyed(key: str) -> dict[str, str]:
    return {"idempotency-key": key}


def audit_events(stack: Stack, message_id: str) -> list[dict[str, Any]]:
    """Operator actions in the message's log."""
    return [e for e in DynamoMessageRepository(stack.table).message_log(message_id) if "event" in e]


def claims(stack: Stack) -> list[dict[str, Any]]:
    return [i for i in stack.scan() if i["PK"]["S"].startswith("ADMINIDEM#")]


def reprocess(admin_api: Any, message_id: str, key: str) -> HttpAnswer:
    return admin_api("POST", REPROCESS, body={"message_id": message_id}, headers=keyed(key))


@pytest.fixture
def failed_message(stack, tenancy, ingest_api, worker, destination) -> str:
    """A message whose delivery failed (`error`): the operator may reprocess it."""
    configure(stack, tenancy, destination)
    destination.script(Answer(503))
    message_id = send(ingest_api, tenancy, {"po_number": "PO-IDEM"})
    worker()
    assert status(stack, message_id)["pipeline_status"] == "error"
    return message_id


class TestADoubleSubmitIsOneAction:
    def test_a_repeated_reprocess_is_one_reprocess_and_answers_the_first_answer(
        self, stack, failed_message, admin_api
    ):
        first = reprocess(admin_api, failed_message, "click-1")
        second = reprocess(admin_api, failed_message, "click-1")

        assert first.status == 202
        assert REPLAYED not in first.headers
        assert (second.status, second.body) == (first.status, first.body)
        assert second.headers[REPLAYED] == "true"
        assert second.headers["Content-Type"] == "application/json"
        [event] = audit_events(stack, failed_message)
        assert event["event"] == "message.reprocessed"
        assert len(stack.drain_queue()) == 1  # one new execution, one step

    def test_the_same_key_with_another_request_is_422_and_does_nothing(
        self, stack, tenancy, ingest_api, failed_message, admin_api
    ):
        other = send(ingest_api, tenancy, {"po_number": "PO-OTHER"})
        assert reprocess(admin_api, failed_message, "click-2").status == 202
        stack.drain_queue()

        refused = reprocess(admin_api, other, "click-2")

        assert (refused.status, refused.body["error"]["code"]) == (422, "idempotency_key_reused")
        assert REPLAYED not in refused.headers
        assert audit_events(stack, other) == []
        assert stack.drain_queue() == []

    def test_a_refusal_is_kept_too_and_a_repeat_is_refused_the_same_way(self, stack, admin_api):
        missing = "msg_01aaaaaaaaaaaaaaaaaaaaaaaa"
        first = reprocess(admin_api, missing, "click-3")
        second = reprocess(admin_api, missing, "click-3")

        assert (first.status, first.body["error"]["code"]) == (404, "not_found")
        assert (second.status, second.body) == (404, first.body)
        assert second.headers[REPLAYED] == "true"

    def test_without_a_key_nothing_changes(self, stack, failed_message, admin_api):
        first = admin_api("POST", REPROCESS, body={"message_id": failed_message})
        second = admin_api("POST", REPROCESS, body={"message_id": failed_message})

        assert (first.status, second.status) == (202, 409)  # the in-flight rule, as before
        assert claims(stack) == []


class TestFailuresFreeTheKey:
    @pytest.mark.parametrize(
        ("failure", "answered"),
        [
            (
                ClientError({"Error": {"Code": "InternalError", "Message": "x"}}, "ReceiveMessage"),
                (503, "queue_unavailable"),
            ),
            (RuntimeError("unexpected"), (500, "internal_error")),
        ],
        ids=["queue-outage", "unexpected"],
    )
    def test_a_5xx_first_answer_frees_the_key_and_a_resend_runs(
        self, stack, admin_api, monkeypatch, failure, answered
    ):
        boto3.client("sqs").send_message(QueueUrl=stack.dlq_url, MessageBody="{}")
        sqs = client("sqs")
        original = sqs.receive_message

        def outage(**_: Any) -> Any:
            raise failure

        monkeypatch.setattr(sqs, "receive_message", outage)
        failed = admin_api("POST", "/api/admin/dlq/pipeline/redrive", headers=keyed("redrive-1"))
        assert (failed.status, failed.body["error"]["code"]) == answered
        assert claims(stack) == []  # freed
        monkeypatch.setattr(sqs, "receive_message", original)  # the outage is over

        resent = admin_api("POST", "/api/admin/dlq/pipeline/redrive", headers=keyed("redrive-1"))
        repeated = admin_api("POST", "/api/admin/dlq/pipeline/redrive", headers=keyed("redrive-1"))

        assert (resent.status, resent.body) == (200, {"lane": "pipeline", "moved": 1})
        assert REPLAYED not in resent.headers  # it ran
        assert (repeated.status, repeated.body, repeated.headers[REPLAYED]) == (200, resent.body, "true")
        assert len(stack.drain_queue()) == 1  # moved once

    def test_a_key_service_outage_refuses_before_anything_runs(
        self, stack, failed_message, admin_api, monkeypatch
    ):
        kms = client("kms")
        original = kms.generate_data_key

        def outage(**_: Any) -> Any:
            raise ClientError({"Error": {"Code": "KMSInternalException", "Message": "x"}}, "GenerateDataKey")

        monkeypatch.setattr(kms, "generate_data_key", outage)
        refused = reprocess(admin_api, failed_message, "click-kms")
        assert (refused.status, refused.body["error"]["code"]) == (503, "key_service_unavailable")
        assert audit_events(stack, failed_message) == []
        assert claims(stack) == []
        monkeypatch.setattr(kms, "generate_data_key", original)

        assert reprocess(admin_api, failed_message, "click-kms").status == 202


class TestAKeyIsTheCallingTokens:
    def test_another_token_s_same_key_is_independent(self, stack, admin_api):
        created = admin_api(
            "POST", "/api/admin/tokens", body={"label": "second", "role": "admin", "tenant_id": None}
        )
        assert created.status == 201, created.body
        other = created.body["token"]
        tenant = {"tenant_id": "ta", "name": "A"}
        first = admin_api("POST", "/api/admin/tenants", body=tenant, headers=keyed("same-key"))

        theirs = admin_api("POST", "/api/admin/tenants", token=other, body=tenant, headers=keyed("same-key"))
        again = admin_api("POST", "/api/admin/tenants", token=other, body=tenant, headers=keyed("same-key"))

        assert first.status == 201
        # Not the first token's answer: the request ran for this token (the tenant exists now).
        assert (theirs.status, theirs.body["error"]["code"]) == (409, "tenant_exists")
        assert REPLAYED not in theirs.headers
        assert (again.status, again.body, again.headers[REPLAYED]) == (409, theirs.body, "true")
        owners = sorted(item["PK"]["S"].split("#")[1] for item in claims(stack))
        assert owners == sorted([BOOTSTRAP, created.body["token_id"]])


def _binaries(value: Any) -> list[bytes]:
    """Every binary value in a raw DynamoDB item, at any depth."""
    if isinstance(value, dict):
        if set(value) == {"B"}:
            return [bytes(value["B"])]
        return [b for v in value.values() for b in _binaries(v)]
    if isinstance(value, list):
        return [b for v in value for b in _binaries(v)]
    return []


def _opens_as(blob: bytes) -> bytes:
    """What `blob` decompresses to, when it is merely compressed."""
    try:
        return zlib.decompress(blob)
    except zlib.error:
        return b""


class TestSecretsShownOnce:
    def test_a_new_api_key_and_admin_token_are_replayed_but_never_kept_in_clear(
        self, stack, tenancy, admin_api
    ):
        path = "/api/admin/tenants/t1/api-keys"
        key = admin_api("POST", path, body={"label": "ERP"}, headers=keyed("new-key-1"))
        key_again = admin_api("POST", path, body={"label": "ERP"}, headers=keyed("new-key-1"))
        body = {"label": "night shift", "role": "operator", "tenant_id": "t1"}
        token = admin_api("POST", "/api/admin/tokens", body=body, headers=keyed("new-token-1"))
        token_again = admin_api("POST", "/api/admin/tokens", body=body, headers=keyed("new-token-1"))

        assert (key.status, token.status) == (201, 201)
        assert key_again.body == key.body
        assert token_again.body == token.body
        assert key_again.headers[REPLAYED] == token_again.headers[REPLAYED] == "true"
        listed = admin_api("GET", path)
        assert [k["key_id"] for k in listed.body["items"] if k["label"] == "ERP"] == [key.body["key_id"]]
        secrets = [key.body["key"].encode(), token.body["token"].encode()]
        items = stack.scan()
        assert len(claims(stack)) == 2
        for item in items:
            text = json.dumps(item, default=repr).encode()
            for binary in _binaries(item):
                text += binary + _opens_as(binary)
            assert not any(secret in text for secret in secrets), item["PK"]["S"]


class TestAbandonedClaims:
    def _claim(self, stack: Stack, key: str, message_id: str, *, started_ago: timedelta) -> None:
        """A claim as a run that began `started_ago` wrote it (then died without an answer)."""
        body = json.dumps({"message_id": message_id}).encode()  # as the admin event sends it
        began = utcnow() - started_ago
        found = DynamoAdminIdempotency(stack.table).claim(
            BOOTSTRAP,
            key_hash(key),
            request_fingerprint("POST", REPROCESS, [], body),
            "a-run-that-died",
            now=began,
            lease_until=began + LEASE,
            expires_at=began + RETENTION,
        )
        assert found is None

    def test_a_repeat_while_the_first_runs_is_409_and_does_nothing(self, stack, failed_message, admin_api):
        self._claim(stack, "running-1", failed_message, started_ago=timedelta(seconds=1))

        refused = reprocess(admin_api, failed_message, "running-1")

        assert (refused.status, refused.body["error"]["code"]) == (409, "idempotency_key_in_use")
        assert refused.headers["Retry-After"] == "1"
        assert audit_events(stack, failed_message) == []

    def test_a_claim_left_running_past_its_lease_is_taken_over(self, stack, failed_message, admin_api):
        self._claim(stack, "died-1", failed_message, started_ago=LEASE + timedelta(seconds=5))

        taken = reprocess(admin_api, failed_message, "died-1")
        repeated = reprocess(admin_api, failed_message, "died-1")

        assert taken.status == 202
        assert REPLAYED not in taken.headers
        assert (repeated.body, repeated.headers[REPLAYED]) == (taken.body, "true")
        assert len(audit_events(stack, failed_message)) == 1


class TestTheHeader:
    @pytest.mark.parametrize("key", ["", "x" * 256, "clé"], ids=["empty", "too-long", "not-ascii"])
    def test_a_malformed_key_is_400_naming_the_header_and_nothing_is_done(
        self, stack, failed_message, admin_api, key
    ):
        refused = reprocess(admin_api, failed_message, key)

        assert (refused.status, refused.body["error"]["code"]) == (400, "validation_error")
        assert refused.body["error"]["details"][0]["field"] == "Idempotency-Key"
        assert audit_events(stack, failed_message) == []
        assert claims(stack) == []

    def test_a_read_ignores_it(self, stack, admin_api):
        answer = admin_api("GET", "/api/admin/tenants", headers=keyed("x" * 300))

        assert answer.status == 200
        assert claims(stack) == []

    def test_every_mutating_operation_documents_it_and_its_answers(self, stack, admin_api):
        document = admin_api("GET", "/api/admin/openapi.json").body
        mutating = 0
        for path, item in document["paths"].items():
            for method, operation in item.items():
                headers = {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}
                if method not in ("post", "put", "patch", "delete"):
                    assert "idempotency-key" not in headers, (method, path)
                    continue
                mutating += 1
                assert "idempotency-key" in headers, (method, path)
                codes = {
                    status: response["content"]["application/json"]["schema"]["allOf"][1]["properties"][
                        "error"
                    ]["properties"]["code"]["enum"]
                    for status, response in operation["responses"].items()
                    if int(status) >= 400
                }
                assert "idempotency_key_in_use" in codes["409"], (method, path)
                assert "idempotency_key_reused" in codes["422"], (method, path)
                assert "validation_error" in codes["400"], (method, path)
                assert any(
                    REPLAYED in r.get("headers", {}) for s, r in operation["responses"].items() if s < "300"
                )
        assert mutating >= 30
