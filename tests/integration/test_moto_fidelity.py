"""The fidelity patches the local stack and the tests apply to moto (devstack/moto_fidelity.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.models.table import Table

from devstack import moto_fidelity
from devstack.moto_fidelity import make_dynamodb_atomic
from tests.aws import AWS_TEST_ENV

TABLE = "fidelity"


@pytest.fixture
def stream(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, str]]:
    for name, value in AWS_TEST_ENV.items():
        monkeypatch.setenv(name, value)
    make_dynamodb_atomic()
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        described = dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
        yield (
            dynamodb,
            boto3.client("dynamodbstreams", region_name="us-east-1"),
            described["TableDescription"]["LatestStreamArn"],
        )


def _iterator(streams: Any, arn: str) -> str:
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    return str(
        streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="LATEST")["ShardIterator"]
    )


def _keys(streams: Any, iterator: str) -> list[str]:
    return [
        record["dynamodb"]["Keys"]["PK"]["S"]
        for record in streams.get_records(ShardIterator=iterator)["Records"]
    ]


def test_a_cancelled_transaction_leaves_the_stream_readable_and_adds_no_record(stream) -> None:
    dynamodb, streams, arn = stream
    dynamodb.put_item(TableName=TABLE, Item={"PK": {"S": "taken"}})
    iterator = _iterator(streams, arn)  # a poller's iterator, taken before the transaction

    with pytest.raises(ClientError, match="TransactionCanceled"):
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": TABLE, "Item": {"PK": {"S": "half"}}}},
                {
                    "Put": {
                        "TableName": TABLE,
                        "Item": {"PK": {"S": "taken"}},
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                },
            ]
        )
    dynamodb.put_item(TableName=TABLE, Item={"PK": {"S": "after"}})

    # moto alone: the iterator reads a discarded copy of the shard and sees nothing, ever.
    assert _keys(streams, iterator) == ["after"]
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key={"PK": {"S": "half"}})


def test_a_cancelled_transaction_puts_back_every_item_it_wrote_before_failing(stream) -> None:
    """The rollback backs up only the items the transaction names: an update and a delete that
    ran before the failing check are undone, a put removed, and an item it did not name kept."""
    dynamodb, streams, arn = stream
    for key, n in (("updated", "1"), ("deleted", "2"), ("bystander", "3"), ("taken", "4")):
        dynamodb.put_item(TableName=TABLE, Item={"PK": {"S": key}, "n": {"N": n}})
    iterator = _iterator(streams, arn)

    with pytest.raises(ClientError, match="TransactionCanceled"):
        dynamodb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": TABLE,
                        "Key": {"PK": {"S": "updated"}},
                        "UpdateExpression": "SET n = :n",
                        "ExpressionAttributeValues": {":n": {"N": "10"}},
                    }
                },
                {"Delete": {"TableName": TABLE, "Key": {"PK": {"S": "deleted"}}}},
                {"Put": {"TableName": TABLE, "Item": {"PK": {"S": "new"}}}},
                {
                    "Put": {
                        "TableName": TABLE,
                        "Item": {"PK": {"S": "taken"}},
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                },
            ]
        )

    items = {i["PK"]["S"]: i["n"]["N"] for i in dynamodb.scan(TableName=TABLE)["Items"]}
    assert items == {"updated": "1", "deleted": "2", "bystander": "3", "taken": "4"}
    assert _keys(streams, iterator) == []
    # The table still takes writes and streams them after the rollback.
    dynamodb.put_item(TableName=TABLE, Item={"PK": {"S": "after"}, "n": {"N": "5"}})
    assert _keys(streams, iterator) == ["after"]


def test_a_request_reads_the_live_item_only_under_the_lock_that_serializes_its_writes(
    stream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """moto's handler keeps reading the live item after the backend call: UpdateItem deep-copies
    it for its old values, and each answer is made from it. Outside the lock, another request's
    update changed it meanwhile ("dictionary changed size during iteration")."""
    dynamodb, _, _ = stream
    dynamodb.put_item(TableName=TABLE, Item={"PK": {"S": "m"}, "n": {"N": "1"}})
    held: list[tuple[str, bool]] = []
    for name in ("__deepcopy__", "to_json", "describe_attrs"):
        original = getattr(Item, name)

        def noting(
            item: Item, *args: Any, _name: str = name, _original: Any = original, **kwargs: Any
        ) -> Any:
            held.append((_name, moto_fidelity._LOCK._is_owned()))  # type: ignore[attr-defined]
            return _original(item, *args, **kwargs)

        monkeypatch.setattr(Item, name, noting)

    dynamodb.update_item(
        TableName=TABLE,
        Key={"PK": {"S": "m"}},
        UpdateExpression="SET n = n + :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="ALL_OLD",
    )
    dynamodb.get_item(TableName=TABLE, Key={"PK": {"S": "m"}})

    # Without the handler's lock, UpdateItem's copy of the old item was made outside it.
    assert {name for name, _ in held} == {"__deepcopy__", "to_json", "describe_attrs"}
    assert [name for name, owned in held if not owned] == []


# --- Index queries read one partition (and give moto's answers) ------------------------------


@pytest.fixture
def indexed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in AWS_TEST_ENV.items():
        monkeypatch.setenv(name, value)
    make_dynamodb_atomic()
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[
                {"AttributeName": "PK", "KeyType": "HASH"},
                {"AttributeName": "SK", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": name, "AttributeType": "S"} for name in ("PK", "SK", "GSI1PK", "GSI1SK")
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "GSI1",
                    "KeySchema": [
                        {"AttributeName": "GSI1PK", "KeyType": "HASH"},
                        {"AttributeName": "GSI1SK", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield dynamodb


def _item(pk: str, partition: str, sort: str) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": "m"}, "GSI1PK": {"S": partition}, "GSI1SK": {"S": sort}}


def _partition(dynamodb: Any, partition: str, **extra: Any) -> list[str]:
    answer = dynamodb.query(
        TableName=TABLE,
        IndexName="GSI1",
        KeyConditionExpression="GSI1PK = :p",
        ExpressionAttributeValues={":p": {"S": partition}},
        **extra,
    )
    return [item["PK"]["S"] for item in answer["Items"]]


def _scanned(dynamodb: Any, partition: str) -> list[str]:
    """The same partition found by going through every item (what moto itself did)."""
    items = dynamodb.scan(TableName=TABLE)["Items"]
    chosen = [item for item in items if item.get("GSI1PK", {}).get("S") == partition]
    return [item["PK"]["S"] for item in sorted(chosen, key=lambda item: item["GSI1SK"]["S"])]


def test_a_transaction_resent_with_its_client_token_is_applied_once(
    stream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB's idempotent TransactWriteItems (botocore keeps the token across its resends):
    the same token and items again succeed and write nothing; other items under it are refused;
    after the 10-minute window, or with no token, it runs again."""
    import devstack.moto_fidelity as fidelity  # noqa: PLC0415

    dynamodb, streams, arn = stream
    first, second = f"first-{uuid.uuid4()}", f"second-{uuid.uuid4()}"  # tokens outlive mock_aws
    dynamodb.put_item(TableName=TABLE, Item={"PK": {"S": "counter"}, "n": {"N": "0"}})
    iterator = _iterator(streams, arn)
    counted = [
        {
            "Update": {
                "TableName": TABLE,
                "Key": {"PK": {"S": "counter"}},
                "UpdateExpression": "ADD n :one",
                "ConditionExpression": "n < :two",
                "ExpressionAttributeValues": {":one": {"N": "1"}, ":two": {"N": "2"}},
            }
        }
    ]

    def count() -> str:
        return str(dynamodb.get_item(TableName=TABLE, Key={"PK": {"S": "counter"}})["Item"]["n"]["N"])

    dynamodb.transact_write_items(TransactItems=counted, ClientRequestToken=first)
    dynamodb.transact_write_items(TransactItems=counted, ClientRequestToken=first)  # a resend
    assert count() == "1"
    assert _keys(streams, iterator) == ["counter"]  # one write, one stream record

    other = [{"Put": {"TableName": TABLE, "Item": {"PK": {"S": "other"}, "blob": {"B": b"\x00\xff"}}}}]
    with pytest.raises(ClientError, match="IdempotentParameterMismatch"):
        dynamodb.transact_write_items(TransactItems=other, ClientRequestToken=first)
    assert "Item" not in dynamodb.get_item(TableName=TABLE, Key={"PK": {"S": "other"}})

    # A new token is a new transaction: it runs (and here, n = 1 < 2, applies).
    dynamodb.transact_write_items(TransactItems=counted, ClientRequestToken=second)
    assert count() == "2"
    # Past the window the token is forgotten: the transaction runs again, its condition fails.
    monkeypatch.setattr(fidelity, "TOKEN_WINDOW_SECONDS", -1.0)
    with pytest.raises(ClientError, match="TransactionCanceled"):
        dynamodb.transact_write_items(TransactItems=counted, ClientRequestToken=first)
    assert count() == "2"


def test_an_index_query_follows_puts_updates_moves_deletes_and_rollbacks(
    indexed, monkeypatch: pytest.MonkeyPatch
) -> None:
    dynamodb = indexed
    dynamodb.put_item(TableName=TABLE, Item=_item("before", "a", "1"))  # before the first query
    assert _partition(dynamodb, "a") == ["before"]

    for n in range(5):
        dynamodb.put_item(TableName=TABLE, Item=_item(f"m{n}", "a" if n % 2 else "b", f"{9 - n}"))
    # An update that moves an item to another partition, one that creates an item, a delete.
    dynamodb.update_item(
        TableName=TABLE,
        Key={"PK": {"S": "m1"}, "SK": {"S": "m"}},
        UpdateExpression="SET GSI1PK = :b",
        ExpressionAttributeValues={":b": {"S": "b"}},
    )
    dynamodb.update_item(
        TableName=TABLE,
        Key={"PK": {"S": "new"}, "SK": {"S": "m"}},
        UpdateExpression="SET GSI1PK = :a, GSI1SK = :s",
        ExpressionAttributeValues={":a": {"S": "a"}, ":s": {"S": "0"}},
    )
    dynamodb.delete_item(TableName=TABLE, Key={"PK": {"S": "m3"}, "SK": {"S": "m"}})
    dynamodb.put_item(TableName=TABLE, Item=_item("leaves", "a", "5"))
    _partition(dynamodb, "a")  # "leaves" is indexed under "a"; then it leaves the index
    dynamodb.update_item(
        TableName=TABLE, Key={"PK": {"S": "leaves"}, "SK": {"S": "m"}}, UpdateExpression="REMOVE GSI1PK"
    )
    # A cancelled transaction that had moved m0 to "a": it stays in "b".
    with pytest.raises(ClientError, match="TransactionCanceled"):
        dynamodb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": TABLE,
                        "Key": {"PK": {"S": "m0"}, "SK": {"S": "m"}},
                        "UpdateExpression": "SET GSI1PK = :a",
                        "ExpressionAttributeValues": {":a": {"S": "a"}},
                    }
                },
                {
                    "Put": {
                        "TableName": TABLE,
                        "Item": _item("before", "a", "1"),
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                },
            ]
        )

    expected_a, expected_b = _scanned(dynamodb, "a"), _scanned(dynamodb, "b")

    def whole_table(_: Table) -> list[Any]:
        raise AssertionError("an index query went through the whole table")

    monkeypatch.setattr(Table, "all_items", whole_table)
    assert _partition(dynamodb, "a") == expected_a == ["new", "before"]
    assert _partition(dynamodb, "b") == expected_b == ["m4", "m2", "m1", "m0"]
    assert _partition(dynamodb, "b", ScanIndexForward=False, Limit=2) == ["m0", "m1"]
    assert _partition(dynamodb, "nobody") == []


def test_a_receive_skips_a_message_past_the_queue_retention(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in AWS_TEST_ENV.items():
        monkeypatch.setenv(name, value)
    make_dynamodb_atomic()
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="retention", Attributes={"MessageRetentionPeriod": "60"})["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="kept")
        assert [m["Body"] for m in sqs.receive_message(QueueUrl=url).get("Messages", [])] == ["kept"]

        sqs.send_message(QueueUrl=url, MessageBody="expired")
        import moto.sqs.models as moto_sqs  # noqa: PLC0415

        monkeypatch.setattr(moto_sqs, "unix_time", lambda: 10**12)  # any time far past the retention
        import devstack.moto_fidelity as fidelity  # noqa: PLC0415

        monkeypatch.setattr(fidelity, "unix_time", lambda: 10**12)
        assert sqs.receive_message(QueueUrl=url, VisibilityTimeout=0).get("Messages", []) == []


def test_queue_attributes_are_moto_s_own_and_a_send_computes_no_message_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in AWS_TEST_ENV.items():
        monkeypatch.setenv(name, value)
    make_dynamodb_atomic()
    import moto.sqs.models as moto_sqs  # noqa: PLC0415

    from devstack.moto_fidelity import moto_queue_attributes  # noqa: PLC0415

    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        dlq = sqs.create_queue(QueueName="attributes-dlq")["QueueUrl"]
        dlq_arn = "arn:aws:sqs:us-east-1:123456789012:attributes-dlq"
        urls = [
            dlq,
            sqs.create_queue(
                QueueName="attributes-std",
                Attributes={
                    "DelaySeconds": "2",
                    "RedrivePolicy": f'{{"deadLetterTargetArn": "{dlq_arn}", "maxReceiveCount": 3}}',
                    "Policy": '{"Version": "2012-10-17", "Statement": []}',
                },
            )["QueueUrl"],
            sqs.create_queue(
                QueueName="attributes.fifo",
                Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"},
            )["QueueUrl"],
            sqs.create_queue(QueueName="attributes-kms", Attributes={"KmsMasterKeyId": "alias/aws/sqs"})[
                "QueueUrl"
            ],
        ]
        sqs.send_message(QueueUrl=urls[1], MessageBody="delayed")
        sqs.send_message(QueueUrl=urls[1], MessageBody="visible", DelaySeconds=0)
        sqs.send_message(QueueUrl=urls[2], MessageBody="one", MessageGroupId="g")
        sqs.send_message(QueueUrl=urls[2], MessageBody="one", MessageGroupId="g")  # deduplicated
        sqs.receive_message(QueueUrl=urls[2])  # in flight
        backend = moto_sqs.sqs_backends["123456789012"]["us-east-1"]
        for url in urls:
            queue = backend.get_queue(url.rsplit("/", 1)[1])
            own = moto_queue_attributes.fget(queue)
            assert list(queue.attributes.items()) == list(own.items())
            assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"] == {
                key: str(value) for key, value in own.items() if value is not None
            }
        assert backend.get_queue("attributes.fifo").attributes["ApproximateNumberOfMessagesNotVisible"] == 1
        assert "ContentBasedDeduplication" not in backend.get_queue("attributes-std").attributes

        def counted(queue: Any) -> int:
            raise AssertionError("a message count was computed")

        monkeypatch.setattr(moto_sqs.Queue, "approximate_number_of_messages", property(counted))
        sqs.send_message(QueueUrl=urls[1], MessageBody="sent without counting")
        sqs.send_message(QueueUrl=urls[2], MessageBody="two", MessageGroupId="g")
        arn = sqs.get_queue_attributes(QueueUrl=urls[1], AttributeNames=["QueueArn"])["Attributes"]
        assert arn == {"QueueArn": "arn:aws:sqs:us-east-1:123456789012:attributes-std"}


def test_the_server_resolves_each_host_s_service_once_with_moto_s_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_dynamodb_atomic()
    import moto.backends as moto_backends  # noqa: PLC0415
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication  # noqa: PLC0415

    dispatcher = DomainDispatcherApplication(create_app=lambda service: None)  # type: ignore[arg-type,return-value]
    lookup = DomainDispatcherApplication.get_backend_for_host
    hosts = [
        "sqs.us-east-1.amazonaws.com",
        "dynamodb",
        "dynamodbstreams",
        "scheduler.us-east-1.amazonaws.com",
        "monitoring.us-east-1.amazonaws.com",
        "moto_api",
        None,
    ]
    moto_s = getattr(lookup, "__wrapped__")  # noqa: B009 - moto's own lookup, under the memo
    assert [lookup(dispatcher, host) for host in hosts] == [moto_s(dispatcher, host) for host in hosts]
    assert lookup(dispatcher, "sqs.us-east-1.amazonaws.com") == "sqs"

    listed = []
    modules = moto_backends.list_of_moto_modules

    def counting() -> Any:
        listed.append(1)
        return modules()

    monkeypatch.setattr(moto_backends, "list_of_moto_modules", counting)
    for _ in range(3):
        assert lookup(dispatcher, "logs.eu-west-1.amazonaws.com") == "logs"
    assert len(listed) == 1


def test_a_response_class_s_actions_are_listed_once_as_moto_lists_them() -> None:
    make_dynamodb_atomic()
    import moto.core.responses as moto_responses  # noqa: PLC0415
    from moto.core.utils import method_names_from_class  # noqa: PLC0415
    from moto.sqs.responses import SQSResponse  # noqa: PLC0415

    listed = moto_responses.method_names_from_class(SQSResponse)
    assert listed == method_names_from_class(SQSResponse)
    assert "receive_message" in listed
    assert moto_responses.method_names_from_class(SQSResponse) is listed


def test_a_request_looks_up_its_backends_without_comparing_every_service_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each request marks its access key used in IAM; looking up an account's backends compared
    them with every registered service's, through a Python ``__eq__``. A known account on
    registered backends is found without one; a new account still gets its backends."""
    from moto.core.base_backend import BackendDict  # noqa: PLC0415
    from moto.iam.models import iam_backends  # noqa: PLC0415

    for name, value in AWS_TEST_ENV.items():
        monkeypatch.setenv(name, value)
    make_dynamodb_atomic()
    compared: list[str] = []
    equal = BackendDict.__eq__

    def counted(backends: Any, other: Any) -> bool:
        compared.append(backends.service_name)
        return equal(backends, other)

    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        sqs.list_queues()  # the services' backends exist and are registered
        monkeypatch.setattr(BackendDict, "__eq__", counted)
        sqs.create_queue(QueueName="fidelity")
        assert sqs.list_queues()["QueueUrls"][0].endswith("/fidelity")
        assert compared == []

        fresh = "000000000042"
        assert fresh not in iam_backends
        assert iam_backends[fresh]["aws"].account_id == fresh  # moto's own path: created
        assert fresh in iam_backends
        registered = BackendDict._instances  # type: ignore[misc]
        assert any(backends is iam_backends for backends in registered)


RICH_ITEM = {
    "PK": {"S": "rich"},
    "text": {"S": "naïve"},
    "number": {"N": "12.50"},
    "blob": {"B": b"\x00\x01"},
    "texts": {"SS": ["a", "b"]},
    "numbers": {"NS": ["1", "2"]},
    "blobs": {"BS": [b"x", b"y"]},
    "nested": {"M": {"list": {"L": [{"S": "x"}, {"NULL": True}, {"BOOL": False}, {"M": {}}]}}},
    "flag": {"BOOL": True},
    "nothing": {"NULL": True},
}


def _answers(dynamodb: Any, streams: Any, arn: str, sqs: Any, queue: str) -> list[Any]:
    """What the serializer turns into responses: an item of every type, the stream's records
    with both images, a message with attributes."""
    item = dynamodb.get_item(TableName=TABLE, Key={"PK": {"S": "rich"}})["Item"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    records = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    sqs.send_message(
        QueueUrl=queue,
        MessageBody="body",
        MessageAttributes={
            "kind": {"DataType": "String", "StringValue": "order"},
            "raw": {"DataType": "Binary", "BinaryValue": b"\x01"},
        },
    )
    received = sqs.receive_message(
        QueueUrl=queue, AttributeNames=["All"], MessageAttributeNames=["All"], VisibilityTimeout=0
    )["Messages"][0]
    sqs.delete_message(QueueUrl=queue, ReceiptHandle=received["ReceiptHandle"])
    for volatile in ("MessageId", "ReceiptHandle", "Attributes"):
        received.pop(volatile)
    return [item, [(r["eventName"], r["dynamodb"]) for r in records], received]


def test_the_serializer_names_members_as_moto_does_and_asks_the_alias_providers_once(
    stream: tuple[Any, Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.core import serialize  # noqa: PLC0415

    dynamodb, streams, arn = stream
    dynamodb.put_item(TableName=TABLE, Item=RICH_ITEM)
    dynamodb.update_item(
        TableName=TABLE,
        Key={"PK": {"S": "rich"}},
        UpdateExpression="SET #n = :n",
        ExpressionAttributeNames={"#n": "number"},
        ExpressionAttributeValues={":n": {"N": "13"}},
    )
    sqs = boto3.client("sqs", region_name="us-east-1")
    queue = sqs.create_queue(QueueName="serialized")["QueueUrl"]
    remembered = _answers(dynamodb, streams, arn, sqs, queue)

    built = []
    providers_init = serialize.AttributeAliasProvider.__init__

    def counting(provider: Any, context: Any) -> None:
        built.append(type(provider).__name__)
        providers_init(provider, context)

    monkeypatch.setattr(serialize.AttributeAliasProvider, "__init__", counting)
    assert _answers(dynamodb, streams, arn, sqs, queue) == remembered
    assert built == []  # every member's names came from the memo

    for picker in (serialize.AttributePicker, serialize.XFormedAttributePicker):
        monkeypatch.setattr(picker, "get_possible_keys", picker.__dict__["get_possible_keys"].__wrapped__)
    assert _answers(dynamodb, streams, arn, sqs, queue) == remembered  # moto's own naming
    assert built != []
    assert remembered[0]["nested"] == RICH_ITEM["nested"]
    assert remembered[0]["blob"] == {"B": b"\x00\x01"}
    assert [name for name, _ in remembered[1]] == ["INSERT", "MODIFY"]
