"""The fidelity patches the local stack and the tests apply to moto (devstack/moto_fidelity.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models.table import Table

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
