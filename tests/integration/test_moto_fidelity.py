"""The fidelity patches the local stack and the tests apply to moto (devstack/moto_fidelity.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

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
