"""The request counter names each AWS request as AWS bills it and leaves the body to moto."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

import pytest

from devstack.request_counter import (
    EVENTUAL_READ,
    INDEX_WRITE,
    STRONG_READ,
    TRANSACTIONAL_WRITE,
    WRITE,
    IndexSpec,
    RequestCounter,
    RequestKey,
    index_specs,
    install,
    item_size,
    request_units,
    updated_attributes,
)

AUTH = "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/{service}/aws4_request, SignedHeaders=host"
UA = "Boto3/1.44.8 md/Botocore#1.44.8 ua/2.1 os/linux lang/python#3.11.7 cfg/retry-mode#standard"


class FakeMoto:
    """A WSGI app that reads the whole body, as moto does, and answers with a canned body."""

    def __init__(self, answer: dict[str, Any] | None = None, status: str = "200 OK") -> None:
        self.answer = answer or {}
        self.status = status
        self.bodies: list[bytes] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        self.bodies.append(environ["wsgi.input"].read(length))
        start_response(self.status, [("Content-Type", "application/x-amz-json-1.0")])
        return [json.dumps(self.answer).encode()]


def environ(
    *,
    service: str,
    body: bytes = b"",
    target: str | None = None,
    method: str = "POST",
    path: str = "/",
    content_type: str = "application/x-amz-json-1.0",
    app_id: str | None = None,
    attempt: int = 1,
) -> dict[str, Any]:
    env: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "CONTENT_TYPE": content_type,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "HTTP_AUTHORIZATION": AUTH.format(service=service),
        "HTTP_USER_AGENT": UA + (f" app/{app_id}" if app_id else "") + " Botocore/1.44.8",
        "HTTP_AMZ_SDK_REQUEST": f"attempt={attempt}; max=4",
    }
    if target:
        env["HTTP_X_AMZ_TARGET"] = target
    return env


def call(counter: RequestCounter, env: dict[str, Any]) -> bytes:
    return b"".join(counter(env, lambda status, headers, exc_info=None: None))


def dynamodb(operation: str, request: dict[str, Any], **options: Any) -> dict[str, Any]:
    return environ(
        service="dynamodb",
        target=f"DynamoDB_20120810.{operation}",
        body=json.dumps(request).encode(),
        **options,
    )


def only_stats(counter: RequestCounter) -> Any:
    snapshot = counter.snapshot()
    assert len(snapshot) == 1, snapshot
    return next(iter(snapshot.values()))


ITEM = {"PK": {"S": "MSG#1"}, "SK": {"S": "STATUS"}, "pipeline_status": {"S": "received"}}


def test_a_dynamodb_write_is_counted_by_target_and_caller_and_the_body_stays_readable() -> None:
    # Given a counter in front of an app that reads the body
    moto = FakeMoto()
    counter = RequestCounter(moto)
    request = {"TableName": "hub", "Item": ITEM}
    # When a function's PutItem passes through
    answer = call(counter, dynamodb("PutItem", request, app_id="IngestApiFunction"))
    # Then moto read the whole, unchanged body and its answer came back
    assert json.loads(moto.bodies[0]) == request
    assert answer == b"{}"
    key = RequestKey("dynamodb", "PutItem", "IngestApiFunction")
    stats = counter.snapshot()[key]
    assert (stats.requests, stats.items, stats.errors, stats.retries) == (1, 1, 0, 0)
    assert stats.capacity == {(WRITE, 1): 1}
    assert counter.requests("dynamodb", "PutItem") == 1
    assert counter.requests("dynamodb", "PutItem", caller="") == 0


def test_a_transaction_counts_each_entry_as_a_transactional_write_with_its_index_writes() -> None:
    counter = RequestCounter(FakeMoto())
    counter.watch_indexes("hub", [IndexSpec("GSI1", ("GSI1PK", "GSI1SK"), "KEYS_ONLY", (), ("PK", "SK"))])
    indexed = ITEM | {"GSI1PK": {"S": "TENANT#t#STATUS#received"}, "GSI1SK": {"S": "2026#1"}}
    request = {
        "TransactItems": [
            {"Put": {"TableName": "hub", "Item": indexed}},
            {"Put": {"TableName": "hub", "Item": {"PK": {"S": "IDEM#k"}, "SK": {"S": "CLAIM"}}}},
            {"ConditionCheck": {"TableName": "hub", "Key": {"PK": {"S": "INT#i"}, "SK": {"S": "CONFIG"}}}},
        ]
    }
    call(counter, dynamodb("TransactWriteItems", request))
    stats = only_stats(counter)
    assert stats.items == 3
    assert stats.capacity == {(TRANSACTIONAL_WRITE, 1): 3, (INDEX_WRITE, 1): 1}
    assert request_units(stats.capacity) == (0.0, 7.0)  # 3 x 2 WRU + 1 index write
    assert stats.index_writes == {"GSI1": 1}  # and which index it was


def test_an_update_moving_the_index_key_writes_the_index_twice() -> None:
    counter = RequestCounter(FakeMoto())
    counter.watch_indexes("hub", [IndexSpec("GSI1", ("GSI1PK", "GSI1SK"), "INCLUDE", ("pipeline_status",))])
    request = {
        "TableName": "hub",
        "Key": {"PK": {"S": "MSG#1"}, "SK": {"S": "STATUS"}},
        "UpdateExpression": "SET #s = :s, GSI1PK = :pk, GSI1SK = :sk REMOVE next_retry_at",
        "ExpressionAttributeNames": {"#s": "pipeline_status"},
        "ExpressionAttributeValues": {":s": {"S": "sent"}, ":pk": {"S": "T#sent"}, ":sk": {"S": "2026"}},
    }
    call(counter, dynamodb("UpdateItem", request))
    assert only_stats(counter).capacity == {(WRITE, 1): 1, (INDEX_WRITE, 1): 2}
    assert only_stats(counter).index_writes == {"GSI1": 2}


def test_index_writes_are_counted_per_index_and_only_where_the_item_has_its_keys() -> None:
    counter = RequestCounter(FakeMoto())
    counter.watch_indexes(
        "hub",
        [
            IndexSpec("GSI2", ("GSI2PK", "received_at"), "INCLUDE", ("message_id",), ("PK", "SK")),
            IndexSpec("GSI3", ("GSI3PK", "received_at"), "KEYS_ONLY", (), ("PK", "SK")),
        ],
    )
    message = ITEM | {"GSI2PK": {"S": "t"}, "GSI3PK": {"S": "t#d"}, "received_at": {"S": "2026"}}
    pointer = {
        "PK": {"S": "MSG#1"},
        "SK": {"S": "CORRELATION"},
        "GSI3PK": {"S": "t#e"},
        "received_at": {"S": "2026"},
    }
    request = {
        "TransactItems": [
            {"Put": {"TableName": "hub", "Item": message}},
            {"Put": {"TableName": "hub", "Item": pointer}},
        ]
    }
    call(counter, dynamodb("TransactWriteItems", request))
    assert only_stats(counter).index_writes == {"GSI2": 1, "GSI3": 2}
    # A status change names neither index's keys nor a projected attribute: no index write.
    update = {
        "TableName": "hub",
        "Key": {"PK": {"S": "MSG#1"}, "SK": {"S": "STATUS"}},
        "UpdateExpression": "SET #s = :s",
        "ExpressionAttributeNames": {"#s": "pipeline_status"},
        "ExpressionAttributeValues": {":s": {"S": "sent"}},
        "ReturnValues": "ALL_NEW",
    }
    counter.reset()
    call(counter, dynamodb("UpdateItem", update))
    assert only_stats(counter).index_writes == {}


def test_reads_are_sized_from_the_answer_and_keep_their_consistency() -> None:
    # Given a 5 KB item answered to an eventually consistent GetItem
    big = ITEM | {"body": {"S": "x" * 5000}}
    counter = RequestCounter(FakeMoto({"Item": big}))
    call(counter, dynamodb("GetItem", {"TableName": "hub", "Key": ITEM}))
    stats = only_stats(counter)
    assert stats.capacity == {(EVENTUAL_READ, 5): 1}
    assert request_units(stats.capacity) == (1.0, 0.0)  # two 4 KB blocks, half a unit each
    assert stats.strongly_consistent_items == 0


def test_a_batch_get_counts_every_key_asked_even_without_an_item() -> None:
    answer = {"Responses": {"hub": [ITEM]}, "UnprocessedKeys": {}}
    counter = RequestCounter(FakeMoto(answer))
    request = {
        "RequestItems": {
            "hub": {"Keys": [ITEM, {"PK": {"S": "X"}, "SK": {"S": "Y"}}], "ConsistentRead": True}
        }
    }
    call(counter, dynamodb("BatchGetItem", request))
    stats = only_stats(counter)
    assert (stats.items, stats.strongly_consistent_items) == (2, 2)
    assert stats.capacity == {(STRONG_READ, 1): 2}
    assert request_units(stats.capacity) == (2.0, 0.0)


def test_a_query_on_an_index_is_an_eventually_consistent_read_of_the_summed_items() -> None:
    counter = RequestCounter(FakeMoto({"Items": [ITEM | {"pad": {"S": "x" * 3000}}] * 2}))
    call(counter, dynamodb("Query", {"TableName": "hub", "IndexName": "GSI1", "ConsistentRead": True}))
    stats = only_stats(counter)
    assert stats.items == 2
    assert stats.capacity == {(EVENTUAL_READ, 6): 1}


def test_sqs_json_protocol_counts_messages_and_tells_empty_receives_apart() -> None:
    counter = RequestCounter(FakeMoto({"Messages": [{"MessageId": "1"}, {"MessageId": "2"}]}))
    send = json.dumps({"QueueUrl": "q", "MessageBody": "x" * 70_000}).encode()
    call(counter, environ(service="sqs", target="AmazonSQS.SendMessage", body=send))
    call(counter, environ(service="sqs", target="AmazonSQS.ReceiveMessage", body=b'{"QueueUrl":"q"}'))
    empty = RequestCounter(FakeMoto({}))
    call(empty, environ(service="sqs", target="AmazonSQS.ReceiveMessage", body=b'{"QueueUrl":"q"}'))
    snapshot = counter.snapshot()
    sent = snapshot[RequestKey("sqs", "SendMessage")]
    received = snapshot[RequestKey("sqs", "ReceiveMessage")]
    assert (sent.messages, sent.sqs_billed_requests) == (1, 2)  # over 64 KB: two billed requests
    assert (received.messages, received.empty_receives) == (2, 0)
    assert only_stats(empty).empty_receives == 1


def test_query_protocol_is_named_by_its_action_field_and_moto_still_reads_the_form() -> None:
    moto = FakeMoto()
    counter = RequestCounter(moto)
    form = b"Action=SendMessage&Version=2012-11-05&QueueUrl=q&MessageBody=hi"
    call(counter, environ(service="sqs", body=form, content_type="application/x-www-form-urlencoded"))
    assert moto.bodies == [form]
    assert counter.requests("sqs", "SendMessage") == 1


@pytest.mark.parametrize(
    ("method", "path", "operation"),
    [
        ("POST", "/schedules/retry-msg_1", "CreateSchedule"),
        ("DELETE", "/schedules/retry-msg_1", "DeleteSchedule"),
        ("GET", "/schedules/retry-msg_1", "GetSchedule"),
        ("PUT", "/schedules/retry-msg_1", "UpdateSchedule"),
        ("GET", "/schedules", "ListSchedules"),
        ("GET", "/schedule-groups", "ListScheduleGroups"),
        ("POST", "/schedule-groups/hub", "CreateScheduleGroup"),
    ],
)
def test_scheduler_rest_calls_are_named_by_method_and_path(method: str, path: str, operation: str) -> None:
    counter = RequestCounter(FakeMoto())
    call(counter, environ(service="scheduler", method=method, path=path, body=b"{}"))
    assert counter.requests("scheduler", operation) == 1


def test_retries_errors_reset_and_moto_api_calls() -> None:
    counter = RequestCounter(FakeMoto({"__type": "ConditionalCheckFailedException"}, "400 Bad Request"))
    call(counter, dynamodb("PutItem", {"TableName": "hub", "Item": ITEM}, attempt=2))
    call(counter, environ(service="s3", method="POST", path="/moto-api/reset"))  # moto's own, not AWS
    stats = only_stats(counter)
    assert (stats.requests, stats.retries, stats.errors) == (1, 1, 1)
    before = counter.snapshot()
    counter.reset()
    assert counter.snapshot() == {}
    assert before[RequestKey("dynamodb", "PutItem")].requests == 1  # a snapshot is a copy


def test_an_unparsable_body_is_still_counted_and_passed_on() -> None:
    moto = FakeMoto()
    counter = RequestCounter(moto)
    call(counter, environ(service="dynamodb", target="DynamoDB_20120810.PutItem", body=b"not json"))
    assert moto.bodies == [b"not json"]
    assert counter.requests("dynamodb", "PutItem") == 1


def test_item_size_follows_dynamodb_rules() -> None:
    assert item_size({"a": {"S": "héllo"}}) == 1 + 6
    assert item_size({"n": {"N": "-0012.500"}}) == 1 + 3  # 3 significant digits: 2 bytes + 1
    assert item_size({"b": {"B": "AAECAw=="}}) == 1 + 4  # raw bytes, not base64
    assert item_size({"f": {"BOOL": True}, "z": {"NULL": True}}) == 2 + 2
    assert item_size({"l": {"L": [{"S": "ab"}, {"N": "1"}]}}) == 1 + 3 + (1 + 2) + (1 + 2)
    assert item_size({"m": {"M": {"k": {"S": "v"}}}}) == 1 + 3 + (1 + 1 + 1)
    assert item_size(None) == 0


def test_request_units_round_per_item_and_kind() -> None:
    capacity = {(WRITE, 3): 2, (TRANSACTIONAL_WRITE, 1): 1, (STRONG_READ, 5): 1, (EVENTUAL_READ, 1): 1}
    assert request_units(capacity) == (2.0 + 0.5, 6.0 + 2.0)


def test_updated_attributes_resolves_names_and_clauses() -> None:
    changed = updated_attributes(
        "SET #s = :s, log = list_append(log, :e), a.b = :x REMOVE GSI1PK ADD n :one",
        {"#s": "pipeline_status"},
    )
    assert changed == {"pipeline_status": "SET", "log": "SET", "a": "SET", "GSI1PK": "REMOVE", "n": "ADD"}


def test_index_specs_from_a_table_description() -> None:
    table = {
        "KeySchema": [{"AttributeName": "PK"}, {"AttributeName": "SK"}],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "GSI1",
                "KeySchema": [{"AttributeName": "GSI1PK"}, {"AttributeName": "GSI1SK"}],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["pipeline_status"]},
            }
        ],
    }
    (spec,) = index_specs(table)
    assert spec == IndexSpec("GSI1", ("GSI1PK", "GSI1SK"), "INCLUDE", ("pipeline_status",), ("PK", "SK"))
    assert spec.projects("pipeline_status")
    assert not spec.projects("payload")


def test_install_wraps_the_werkzeug_app_of_a_started_moto_server() -> None:
    app = FakeMoto()
    server = SimpleNamespace(_server=SimpleNamespace(app=app))
    counter = install(server)
    assert server._server.app is counter
    assert counter.app is app
    with pytest.raises(RuntimeError):
        install(SimpleNamespace(_server=None))
