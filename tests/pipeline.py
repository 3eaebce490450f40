"""Drives the real pipeline worker handler from the pipeline queue, as the Lambda SQS event
source does (partial batch failures honoured), for integration tests on mock_aws."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import boto3

from devstack.sqs_source import failed_message_ids, lambda_record
from hub.domain.retry import RetryPolicy
from tests.aws import REGION, LambdaContext
from tests.waiting import STALL_SECONDS, Progress, wait_for


def pump(
    queue_url: str,
    queue_arn: str,
    handler: Callable[[dict[str, Any], Any], Any],
    *,
    max_batches: int = 50,
    include_delayed: bool = True,
    settle: bool = True,
    batch_size: int = 10,
) -> int:
    """Feeds queued step messages to `handler` until the queue is empty; returns how many
    records were handled (`settle=False`: stop after `max_batches` quietly). Delayed messages
    (retries, busy-lock reschedules) are made visible at once when `include_delayed`, so tests
    need not wait for real delays."""
    sqs = boto3.client("sqs", region_name=REGION)
    handled = 0
    for _ in range(max_batches):
        answer = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=batch_size,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages = answer.get("Messages", [])
        if not messages:
            if include_delayed and _release_delayed(sqs, queue_url):
                continue
            return handled
        records = [lambda_record(m, queue_arn, REGION) for m in messages]
        batch_ids = {r["messageId"] for r in records}
        try:
            result = handler({"Records": records}, LambdaContext())
        except Exception:
            result = {"batchItemFailures": [{"itemIdentifier": i} for i in batch_ids]}
        failed = failed_message_ids(result, batch_ids) or set()
        for message in messages:
            if message["MessageId"] not in failed:
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        handled += len(records)
    if settle:
        raise AssertionError("the pipeline did not settle")
    return handled


def _release_delayed(sqs: Any, queue_url: str) -> bool:
    """moto keeps DelaySeconds messages invisible; tests fast-forward them."""
    from moto.core import DEFAULT_ACCOUNT_ID  # noqa: PLC0415
    from moto.sqs.models import sqs_backends  # noqa: PLC0415

    queue = sqs_backends[DEFAULT_ACCOUNT_ID][REGION].get_queue(queue_url.rsplit("/", 1)[-1])
    released = False
    for message in queue._messages:
        if message.delayed:
            message.delayed_until = 0
            released = True
    return released


def expire_visibility(queue_url: str) -> int:
    """Makes every in-flight message visible again, as when a worker died holding it and its
    visibility timeout ran out. Returns how many."""
    from moto.core import DEFAULT_ACCOUNT_ID  # noqa: PLC0415
    from moto.sqs.models import sqs_backends  # noqa: PLC0415

    queue = sqs_backends[DEFAULT_ACCOUNT_ID][REGION].get_queue(queue_url.rsplit("/", 1)[-1])
    in_flight = [m for m in queue._messages if not m.visible]
    for message in in_flight:
        message.visible_at = 0
    return len(in_flight)


def direct_handler(worker: Any) -> Callable[[dict[str, Any], Any], Any]:
    """A handler that runs records on `worker` directly: one per simulated Lambda instance
    (Powertools' module-level BatchProcessor of the real handler is per process, like Lambda)."""
    from datetime import UTC, datetime  # noqa: PLC0415

    from hub.domain.message import StepMessage  # noqa: PLC0415

    def handle(event: dict[str, Any], _: Any) -> dict[str, Any]:
        failures = []
        for record in event["Records"]:
            sent = datetime.fromtimestamp(int(record["attributes"]["SentTimestamp"]) / 1000, UTC)
            try:
                worker.run(StepMessage.model_validate_json(record["body"]), sent)
            except Exception:
                failures.append({"itemIdentifier": record["messageId"]})
        return {"batchItemFailures": failures}

    return handle


def status(stack: Any, message_id: str) -> dict[str, Any]:
    """The stored status record of `message_id` in `stack.table`, attribute values unwrapped
    (numbers stay strings, as DynamoDB sends them)."""
    item = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=stack.table, Key={"PK": {"S": f"MSG#{message_id}"}, "SK": {"S": "STATUS"}}
    )["Item"]
    return {k: next(iter(v.values())) for k, v in item.items()}


def send(ingest_api: Any, tenancy: Any, payload: Any, message_type: str = "purchase_order") -> str:
    """Posts one message through the real ingest handler (no Idempotency-Key); its id."""
    from tests.events import http_event  # noqa: PLC0415

    body = {"integration_id": tenancy.integration_id, "message_type": message_type, "payload": payload}
    headers: dict[str, str | None] = {"authorization": f"Bearer {tenancy.key}", "idempotency-key": None}
    answer = ingest_api(http_event("receive_message.json", body=body, headers=headers))
    assert answer.status == 202, answer.body
    return str(answer.body["message_id"])


def late_step(stack: Any, message_id: str, step: Any) -> Any:
    """A new step message (fresh publish id) of the message's current execution."""
    from hub.domain.ids import new_id  # noqa: PLC0415
    from hub.domain.message import StepMessage  # noqa: PLC0415

    record = status(stack, message_id)
    return StepMessage(
        message_id=message_id,
        tenant_id=record["tenant_id"],
        integration_id=record["integration_id"],
        step=step,
        execution_id=record["execution_id"],
        correlation_id="late",
        publish_id=new_id("pub"),
        seq=int(record["step_seq"]),
    )


def configure(
    stack: Any,
    tenancy: Any,
    destination: Any,
    *,
    mode: Any = None,
    handling: Any = None,
    retry_policy: Any = None,
    sensitive_fields: tuple[str, ...] = (),
    **destination_options: Any,
) -> None:
    """(Re)writes the tenancy's main integration: orchestration mode, `destination` (an
    HttpDestination, or None for no destination), purchase orders keyed by po_number, orders
    without keys."""
    from hub import wiring  # noqa: PLC0415
    from hub.domain.tenancy import (  # noqa: PLC0415
        Destination,
        DuplicateHandling,
        Integration,
        IntegrationMode,
        MessageTypeConfig,
    )

    # Through this process's configuration cache, which forgets what it held.
    wiring.config_repository().put_integration(
        Integration(
            integration_id=tenancy.integration_id,
            tenant_id="t1",
            name="erp",
            mode=mode or IntegrationMode.ORCHESTRATION,
            destination=Destination(url=destination.url, **destination_options) if destination else None,
            message_types={
                "purchase_order": MessageTypeConfig(
                    duplicate_key_fields=("po_number",),
                    duplicate_handling=handling or DuplicateHandling.ACCEPT,
                    sensitive_fields=sensitive_fields,
                ),
                # No business keys: each message its own entity.
                "order": MessageTypeConfig(),
            },
            retry_policy=retry_policy or RetryPolicy(),
        )
    )
    # The worker and the webhook receiver keep their own caches (they open sealed secrets).
    wiring.delivery_config().forget_integration(tenancy.tenant_id, tenancy.integration_id)
    wiring.webhook_config().forget_integration(tenancy.tenant_id, tenancy.integration_id)


def schedules(stack: Any) -> list[dict[str, Any]]:
    """The retry schedules waiting in the stack's schedule group."""
    scheduler = boto3.client("scheduler")
    group = stack.env["HUB_SCHEDULE_GROUP"]
    names = [s["Name"] for s in scheduler.list_schedules(GroupName=group)["Schedules"]]
    return [scheduler.get_schedule(GroupName=group, Name=name) for name in names]


def fire_all(stack: Any) -> int:
    """What EventBridge Scheduler does when a schedule is due (moto stores but never fires)."""
    fired = schedules(stack)
    for schedule in fired:
        boto3.client("sqs").send_message(QueueUrl=stack.queue_url, MessageBody=schedule["Target"]["Input"])
        boto3.client("scheduler").delete_schedule(GroupName=schedule["GroupName"], Name=schedule["Name"])
    return len(fired)


def run_with_retries(stack: Any, worker: Callable[[], Any]) -> None:
    """Runs the worker, then fires every retry schedule it leaves, until none is left."""
    worker()
    while fire_all(stack):
        worker()


# --- on a local stack (tests/e2e, tests/reliability) ----------------------------------------

#: Automatic retries: three, a second apart.
AUTO = RetryPolicy(retry_auto_enabled=True, retry_max=3, ladder_seconds=(1,))


def integration(stack: Any, url: str, policy: Any = None, **options: Any) -> str:
    """A fresh integration of the demo tenant (the demo key may post to it) on the local stack
    `stack`: orchestration, towards `url` with the Destination's `options`, demo purchase orders
    without business keys, `policy` its RetryPolicy (None: the default). Its id."""
    from devstack.demo import DEMO_MESSAGE_TYPE, DEMO_TENANT_ID, pointed_at  # noqa: PLC0415
    from hub.adapters.dynamo.tenancy import DynamoConfigRepository  # noqa: PLC0415
    from hub.domain.tenancy import (  # noqa: PLC0415
        Destination,
        Integration,
        IntegrationMode,
        MessageTypeConfig,
    )

    integration_id = f"int_t{uuid.uuid4().hex[:10]}"
    with pointed_at(stack):
        DynamoConfigRepository(stack.resources["HubTable"]).put_integration(
            Integration(
                integration_id=integration_id,
                tenant_id=DEMO_TENANT_ID,
                name=integration_id,
                mode=IntegrationMode.ORCHESTRATION,
                destination=Destination(url=url, **options),
                message_types={DEMO_MESSAGE_TYPE: MessageTypeConfig()},
                retry_policy=policy or RetryPolicy(),
            )
        )
    return integration_id


def poison_integration(stack: Any, url: str) -> str:
    """An integration of the demo tenant on which every step raises: its destination names the
    client certificate of a connection whose stored certificate item lost its sealed fields (a
    hand edit, a partial restore). Only the worker reads certificate items, so the door accepts
    the message and the step raises `KeyError` on every receive, through production code only.
    Auto retry is on: an internal failure is still never scheduled."""
    from devstack.demo import DEMO_TENANT_ID  # noqa: PLC0415
    from hub.adapters.dynamo import keys  # noqa: PLC0415

    connection_id = f"conn_{uuid.uuid4().hex[:8]}"
    stack.client("dynamodb").put_item(
        TableName=stack.resources["HubTable"],
        Item={
            **{
                name: {"S": value}
                for name, value in keys.certificate_key(DEMO_TENANT_ID, connection_id).items()
            },
            "item_type": {"S": "client_certificate"},
            "tenant_id": {"S": DEMO_TENANT_ID},
            "connection_id": {"S": connection_id},
        },
    )
    return integration(stack, url, AUTO, client_certificate_id=connection_id)


#: How often `post` resends a message the hub answered 503 (safe to resend).
RESENDS_AFTER_503 = 5


def post(api: Any, integration_id: str, *, external_id: str | None = None) -> str:
    """Posts one demo purchase order of its own to `integration_id` through the partner API (an
    httpx client with the demo key): a fresh PO number, or `external_id` as both. Its id."""
    from devstack.demo import demo_body  # noqa: PLC0415

    body = {**demo_body(), "integration_id": integration_id}
    po_number = external_id or f"PO-{uuid.uuid4().hex[:8]}"
    body["payload"] = {**body["payload"], "po_number": po_number}
    if external_id is not None:
        body["external_id"] = external_id
    answer = api.post("/api/edi-hub/receive-message", json=body)
    for _ in range(RESENDS_AFTER_503):
        if answer.status_code != 503:
            break
        # A 5xx is safe to resend, as a partner would: the hub stored it once or not at all (a
        # loaded machine can push a store past the ingest's deadline).
        answer = api.post("/api/edi-hub/receive-message", json=body)
    stored = answer.status_code == 202 or (answer.status_code == 200 and answer.json().get("deduplicated"))
    assert stored, answer.text  # 200: a resend found what the 503'd attempt had stored after all
    return str(answer.json()["message_id"])


def wait_for_status(
    api: Any,
    message_id: str,
    wanted: str,
    *,
    stall: float = STALL_SECONDS,
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Polls the partner API (an httpx client of a local stack) until `message_id` is in status
    `wanted`; its public view then. Waits while the message's view changes or the stack works
    (`progress`, by default the local stacks of this process: tests/waiting.py); fails once
    neither moved for `stall` seconds. `sleep`: browser.pumping(page) while a page is open."""

    def view() -> dict[str, Any]:
        seen: dict[str, Any] = api.get(f"/api/edi-hub/messages/{message_id}").json()
        return seen

    return wait_for(
        view,
        f"{message_id} to become {wanted!r}",
        until=lambda seen: seen.get("pipeline_status") == wanted,
        stall=stall,
        progress=progress,
        sleep=sleep,
    )
