"""Schedules created per minute against a dead destination, circuit breaker on vs off (issue 12).

One run, two variants on the same workload, each on a fresh in-process moto stack built from
template.yaml, through the real ingest and worker handlers, delivering to a real HTTP
destination on 127.0.0.1 that answers 503 to everything:

- one simulated minute in rounds of 10 s: each round `--per-round` messages arrive (60 per
  minute by default) and the worker runs; then every retry schedule created is due (the
  integration retries on a 10 s ladder, up to 5 times) and fires;
- counted: EventBridge Scheduler entries created (retries and breaker probes), destination
  requests, deliveries held on the connection.

Breaker off, every failed attempt schedules its own retry; on, the breaker opens after 10
failures and the rest wait on the connection: one probe schedule for the connection.

    python -m bench.breaker [--per-round 10] [--rounds 6]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench.common import merge_results, now_iso

ROUND_SECONDS = 10


@contextmanager
def _stack(breaker: bool) -> Iterator[dict[str, Any]]:
    import boto3  # noqa: PLC0415
    from moto import mock_aws  # noqa: PLC0415

    from hub import wiring  # noqa: PLC0415
    from hub.adapters.aws import reset_clients  # noqa: PLC0415
    from tests.aws import AWS_TEST_ENV, provision  # noqa: PLC0415

    saved = dict(os.environ)
    os.environ.update(AWS_TEST_ENV)
    os.environ.pop("AWS_ENDPOINT_URL", None)
    try:
        with mock_aws():
            reset_clients()
            wiring.reset()
            provisioned = provision()
            env = {
                **provisioned.environments["IngestApiFunction"],
                **provisioned.environments["PipelineWorkerFunction"],
                "HUB_CIRCUIT_BREAKER": "true" if breaker else "false",
            }
            os.environ.update(env)
            wiring.reset()
            yield {
                "table": provisioned.refs["HubTable"],
                "queue_url": provisioned.refs["PipelineQueue"],
                "env": env,
                "scheduler": boto3.client("scheduler"),
                "sqs": boto3.client("sqs"),
            }
            reset_clients()
            wiring.reset()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _variant(breaker: bool, per_round: int, rounds: int) -> dict[str, Any]:
    from hub.adapters.dynamo.tenancy import DynamoConfigRepository  # noqa: PLC0415
    from hub.domain.retry import RetryPolicy  # noqa: PLC0415
    from hub.domain.tenancy import (  # noqa: PLC0415
        ApiKey,
        Destination,
        Integration,
        IntegrationMode,
        MessageTypeConfig,
        Tenant,
        hash_api_key,
    )
    from tests.aws import LambdaContext, load_handler  # noqa: PLC0415
    from tests.destinations import Answer, HttpDestination  # noqa: PLC0415
    from tests.events import http_event  # noqa: PLC0415
    from tests.pipeline import pump  # noqa: PLC0415

    with HttpDestination() as dead, _stack(breaker) as stack:
        dead.script(Answer(status=503))
        config = DynamoConfigRepository(stack["table"])
        config.put_tenant(Tenant(tenant_id="t1", name="bench"))
        config.put_integration(
            Integration(
                integration_id="int_dead",
                tenant_id="t1",
                name="dead destination",
                mode=IntegrationMode.ORCHESTRATION,
                # A connection's destination: the breaker is per connection.
                destination=Destination(url=dead.url, connection_id="con_dead"),
                message_types={"order": MessageTypeConfig()},
                retry_policy=RetryPolicy(
                    retry_auto_enabled=True, ladder_seconds=(ROUND_SECONDS,), retry_max=5
                ),
            )
        )
        config.put_api_key(ApiKey(key_id="k1", tenant_id="t1", key_hash=hash_api_key("hub_bench_key")))
        ingest = load_handler("IngestApiFunction")
        worker = load_handler("PipelineWorkerFunction")
        group = stack["env"]["HUB_SCHEDULE_GROUP"]
        created: set[str] = set()
        held = 0
        started = time.monotonic()
        for round_number in range(rounds):
            for index in range(per_round):
                payload = {"order": round_number * per_round + index, "breaker": breaker}
                body = {"integration_id": "int_dead", "message_type": "order", "payload": payload}
                headers = {"authorization": "Bearer hub_bench_key", "idempotency-key": None}
                answer = ingest(
                    http_event("receive_message.json", body=body, headers=headers), LambdaContext()
                )
                assert answer["statusCode"] == 202, answer
            pump(stack["queue_url"], stack["env"]["HUB_PIPELINE_QUEUE_ARN"], worker, max_batches=500)
            names = [s["Name"] for s in stack["scheduler"].list_schedules(GroupName=group)["Schedules"]]
            created.update(names)
            if round_number == rounds - 1:
                break
            # The next round is 10 s later: every retry is due (the probe is not: 60 s cool-down).
            for name in names:
                if not name.startswith("retry-"):
                    continue
                schedule = stack["scheduler"].get_schedule(GroupName=group, Name=name)
                stack["sqs"].send_message(
                    QueueUrl=stack["queue_url"], MessageBody=schedule["Target"]["Input"]
                )
                stack["scheduler"].delete_schedule(GroupName=group, Name=name)
        held = _held(stack["table"])
        minutes = rounds * ROUND_SECONDS / 60
        return {
            "breaker": breaker,
            "messages": per_round * rounds,
            "simulated_minutes": minutes,
            "schedules_created": len(created),
            "schedules_per_minute": len(created) / minutes,
            "probe_schedules": len([n for n in created if n.startswith("probe-")]),
            "destination_requests": len(dead.requests),
            "held_on_connection": held,
            "wall_seconds": round(time.monotonic() - started, 1),
        }


def _held(table: str) -> int:
    import boto3  # noqa: PLC0415

    answer = boto3.client("dynamodb").query(
        TableName=table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": "HELD#t1#con_dead"}},
        Select="COUNT",
    )
    return int(answer["Count"])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--per-round", type=int, default=10, help="messages arriving per 10 s round")
    parser.add_argument("--rounds", type=int, default=6, help="rounds (6 = one simulated minute)")
    args = parser.parse_args()
    import logging  # noqa: PLC0415

    logging.disable(logging.WARNING)
    off = _variant(False, args.per_round, args.rounds)
    on = _variant(True, args.per_round, args.rounds)
    ratio = on["schedules_per_minute"] / off["schedules_per_minute"] if off["schedules_per_minute"] else None
    merge_results(
        {
            "breaker_schedules_per_minute": {
                "breaker_on": on["schedules_per_minute"],
                "breaker_off": off["schedules_per_minute"],
            },
            "breaker_schedules_ratio": ratio,
            "breaker": {"measured_at": now_iso(), "breaker_off": off, "breaker_on": on},
        }
    )
    for variant in (off, on):
        state = "on " if variant["breaker"] else "off"
        print(
            f"breaker {state}: {variant['schedules_per_minute']:.0f} schedules/min "
            f"({variant['schedules_created']} created, {variant['probe_schedules']} probe), "
            f"{variant['destination_requests']} destination requests, "
            f"{variant['held_on_connection']} held on the connection, {variant['wall_seconds']} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
