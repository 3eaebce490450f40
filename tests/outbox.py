"""The outbox as Lambda runs it, for integration tests on mock_aws: the table's real stream,
filtered by the publisher's FilterCriteria from template.yaml, fed to the real publisher
handler; a rule on the hub's EventBridge bus collects what was put there into an SQS queue."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import boto3
from boto3.dynamodb.types import TypeDeserializer

from devstack.cfn import load_template
from devstack.event_filter import matches_any, parse_patterns
from devstack.stream_source import lambda_record
from tests.aws import REGION, TEMPLATE, LambdaContext, load_handler


def publisher_filter() -> list[dict[str, Any]]:
    events = load_template(TEMPLATE)["Resources"]["OutboxPublisherFunction"]["Properties"]["Events"]
    return parse_patterns(events["Outbox"]["Properties"]["FilterCriteria"])


def image(record: dict[str, Any], which: str = "NewImage") -> dict[str, Any]:
    raw = record["dynamodb"].get(which) or {}
    return {k: TypeDeserializer().deserialize(_binary(v)) for k, v in raw.items()}


def _binary(value: dict[str, Any]) -> dict[str, Any]:
    """A stream record's binary value arrives base64-encoded, as Lambda delivers it (the
    fingerprint claim's compressed payload)."""
    if isinstance(value.get("B"), str):
        return {"B": base64.b64decode(value["B"])}
    return value


@dataclass
class StreamReader:
    """New records of a table's stream since the last call, shaped as Lambda delivers them."""

    table: str
    seen: set[str] = field(default_factory=set)

    def new_records(self) -> list[dict[str, Any]]:
        streams = boto3.client("dynamodbstreams", region_name=REGION)
        arn = boto3.client("dynamodb", region_name=REGION).describe_table(TableName=self.table)["Table"][
            "LatestStreamArn"
        ]
        records = []
        for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
            iterator = streams.get_shard_iterator(
                StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
            while iterator:
                answer = streams.get_records(ShardIterator=iterator, Limit=1000)
                for raw in answer["Records"]:
                    sequence = raw["dynamodb"]["SequenceNumber"]
                    if sequence not in self.seen:
                        self.seen.add(sequence)
                        records.append(lambda_record(raw, arn, REGION))
                iterator = answer.get("NextShardIterator") if answer["Records"] else None
        return records


@dataclass
class BusTap:
    """A consumer of the hub's bus that subscribed by rule (every `integration-hub` event)."""

    queue_url: str

    @classmethod
    def on(cls, bus: str) -> BusTap:
        sqs = boto3.client("sqs", region_name=REGION)
        events = boto3.client("events", region_name=REGION)
        url = sqs.create_queue(QueueName=f"tap-{bus}")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(
            Name="tap", EventBusName=bus, EventPattern=json.dumps({"source": ["integration-hub"]})
        )
        events.put_targets(Rule="tap", EventBusName=bus, Targets=[{"Id": "tap", "Arn": arn}])
        return cls(url)

    def drain(self) -> list[dict[str, Any]]:
        """The EventBridge envelopes received since the last call (`detail` = the event body)."""
        sqs = boto3.client("sqs", region_name=REGION)
        got: list[dict[str, Any]] = []
        while True:
            messages = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get(
                "Messages", []
            )
            if not messages:
                return got
            for message in messages:
                got.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])


@dataclass
class Outbox:
    """The publisher fed from the stream, as its event source mapping does."""

    reader: StreamReader
    handler: Any = field(default_factory=lambda: load_handler("OutboxPublisherFunction"))
    patterns: list[dict[str, Any]] = field(default_factory=publisher_filter)
    #: Every record read so far, before filtering (what the table changed).
    changes: list[dict[str, Any]] = field(default_factory=list)

    def pending(self) -> list[dict[str, Any]]:
        records = self.reader.new_records()
        self.changes += records
        return [r for r in records if matches_any(self.patterns, r)]

    def publish(self, records: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        batch = self.pending() if records is None else records
        answer: dict[str, Any] = self.handler({"Records": batch}, LambdaContext())
        return answer
