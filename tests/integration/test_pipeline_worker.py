"""The pipeline worker through its real handler: moto for AWS (resources from template.yaml),
a real HTTP destination on 127.0.0.1, the real ingest in front."""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from devstack.sqs_source import lambda_record
from hub import wiring
from hub.adapters.aws import client
from hub.adapters.dynamo.executions import DynamoExecutions
from hub.adapters.dynamo.messages import DynamoMessageRepository
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.ids import new_id
from hub.domain.message import PipelineStep, StepMessage
from hub.domain.retry import RetryPolicy
from hub.domain.tenancy import (
    Destination,
    DuplicateHandling,
    Integration,
    IntegrationMode,
    MessageTypeConfig,
)
from hub.pipeline import rules
from tests.aws import REGION, LambdaContext, load_handler
from tests.destinations import Answer
from tests.pipeline import (
    configure,
    direct_handler,
    expire_visibility,
    fire_all,
    late_step,
    pump,
    send,
    status,
)
from tests.reliability.worker_support import wait_until


def log_of(stack, message_id: str) -> list[dict[str, Any]]:
    return DynamoMessageRepository(stack.table).message_log(message_id)


class TestScenarioA:
    def test_received_mapped_sent_with_a_stable_idempotency_key(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-1", "qty": 2})

        worker()

        final = status(stack, message_id)
        assert final["pipeline_status"] == "sent"
        assert final["dest_status"] == "200"
        [seen] = destination.requests
        assert json.loads(seen.body) == {"po_number": "PO-1", "qty": 2}
        assert seen.headers["idempotency-key"] == message_id
        assert seen.headers["content-type"] == "application/json"
        steps = [(e["step"], e["status"]) for e in log_of(stack, message_id)]
        assert steps == [("process", "success"), ("sent", "success")]
        # The execution is closed: nothing live, completion recorded.
        assert DynamoExecutions(stack.table).live_execution(message_id) is None


class TestPayloadRetention:
    def test_a_message_whose_payload_was_purged_ends_in_error_without_a_call(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        """Issue 29: the payload's retention ran out (TTL deleted the fingerprint claim that
        carries it) before the step ran: nothing to deliver, never retried, and the views say so."""
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-PURGED"})
        table = boto3.resource("dynamodb").Table(stack.table)
        [claim] = [i for i in table.scan()["Items"] if str(i["PK"]).startswith("FP#")]
        table.delete_item(Key={"PK": claim["PK"], "SK": claim["SK"]})

        worker()

        final = status(stack, message_id)
        assert final["pipeline_status"] == "error"
        assert final["last_retry_error_class"] == "payload_purged"
        assert destination.requests == []
        failure = log_of(stack, message_id)[-1]
        assert (failure["status"], failure["error_class"]) == ("failure", "payload_purged")
        assert DynamoMessageRepository(stack.table).get_payload(message_id) is None


class TestObservability:
    def test_maps_but_never_calls_the_destination(self, stack, tenancy, ingest_api, worker, destination):
        configure(stack, tenancy, destination, mode=IntegrationMode.OBSERVABILITY)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-OBS"})

        worker()

        final = status(stack, message_id)
        assert final["pipeline_status"] == "received_observed"
        assert final["dest_status"] == "skipped_observability"
        assert final["dest_status_text"] == "Observability mode: delivery to destination blocked"
        assert destination.requests == []
        # The observed entry does not repeat dest_status_text: with its TTL (issue 29) the item
        # keeps both entries within 1 KB.
        assert [e["step"] for e in log_of(stack, message_id)] == ["process", "observability"]
        assert "log_trimmed" not in final


class TestDuplicateHandling:
    def test_reject_marks_the_second_version_and_names_the_first(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        configure(stack, tenancy, destination, handling=DuplicateHandling.REJECT)
        first = send(ingest_api, tenancy, {"po_number": "PO-7", "qty": 1})
        worker()
        second = send(ingest_api, tenancy, {"po_number": "PO-7", "qty": 5})
        worker()

        assert status(stack, first)["pipeline_status"] == "sent"
        rejected = status(stack, second)
        assert rejected["pipeline_status"] == "duplicate_rejected"
        assert first in rejected["dest_status_text"]
        assert len(destination.requests) == 1

    def test_overwrite_supersedes_the_earlier_version(self, stack, tenancy, ingest_api, worker, destination):
        configure(stack, tenancy, destination, handling=DuplicateHandling.OVERWRITE)
        first = send(ingest_api, tenancy, {"po_number": "PO-8", "qty": 1})
        worker()
        second = send(ingest_api, tenancy, {"po_number": "PO-8", "qty": 9})
        worker()

        assert status(stack, first)["superseded_by"] == second
        assert status(stack, second)["pipeline_status"] == "sent"
        assert [json.loads(r.body)["qty"] for r in destination.requests] == [1, 9]

    def test_overwrite_never_sends_a_superseded_version_after_the_newer_one(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        """PO-10 v1 waits for a retry when v2 arrives and is sent: v1's retry finds itself
        superseded and is cancelled, never sent after v2."""
        configure(
            stack,
            tenancy,
            destination,
            handling=DuplicateHandling.OVERWRITE,
            retry_policy=RetryPolicy(retry_auto_enabled=True, retry_max=2),
        )
        destination.script(Answer(503, "{}"), Answer(200, "{}"))
        first = send(ingest_api, tenancy, {"po_number": "PO-10", "qty": 1})
        worker()
        assert status(stack, first)["pipeline_status"] == "retry_pending"
        second = send(ingest_api, tenancy, {"po_number": "PO-10", "qty": 2})
        worker()
        fire_all(stack)  # v1's retry is due
        worker()

        assert status(stack, first)["pipeline_status"] == "cancelled"
        assert status(stack, first)["dest_status_text"] == f"superseded by {second}"
        assert status(stack, second)["pipeline_status"] == "sent"
        # v1's first (failed) attempt came before v2; nothing of v1 after it.
        assert [json.loads(r.body)["qty"] for r in destination.requests] == [1, 2]

    def test_accept_lets_both_through(self, stack, tenancy, ingest_api, worker, destination):
        configure(stack, tenancy, destination, handling=DuplicateHandling.ACCEPT)
        ids = [send(ingest_api, tenancy, {"po_number": "PO-9", "qty": q}) for q in (1, 2)]
        worker()

        assert [status(stack, i)["pipeline_status"] for i in ids] == ["sent", "sent"]
        assert "superseded_by" not in status(stack, ids[0])


class TestFailures:
    @pytest.mark.parametrize(
        ("answer", "error_class", "dest_status"),
        [
            (Answer(503, '{"error": "maintenance"}'), "http_5xx", "503"),
            (Answer(422, '{"error": "bad cnpj"}'), "http_4xx", "422"),
            (Answer(401, "{}"), "http_401", "401"),
            (Answer(429, "{}", {"Retry-After": "30"}), "http_429", "429"),
            (Answer(302, "", {"Location": "/elsewhere"}), "http_4xx", "302"),
        ],
    )
    def test_error_status_and_class_are_recorded(
        self, stack, tenancy, ingest_api, worker, destination, answer, error_class, dest_status
    ):
        configure(stack, tenancy, destination)
        destination.script(answer)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-F"})

        worker()

        final = status(stack, message_id)
        assert final["pipeline_status"] == "error"
        assert final["dest_status"] == dest_status
        assert final["last_retry_error_class"] == error_class
        failure = log_of(stack, message_id)[-1]
        assert (failure["step"], failure["status"], failure["error_class"]) == (
            "deliver",
            "failure",
            error_class,
        )

    def test_a_slow_destination_is_an_uncertain_timeout(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        configure(stack, tenancy, destination, read_timeout_seconds=0.3)
        destination.script(Answer(200, "{}", delay_seconds=1.0))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-SLOW"})

        worker()

        final = status(stack, message_id)
        assert final["last_retry_error_class"] == "timeout"
        assert log_of(stack, message_id)[-1]["uncertain"] is True

    def test_an_unreachable_destination_is_network(self, stack, tenancy, ingest_api, worker):
        DynamoConfigRepository(stack.table).put_integration(
            Integration(
                integration_id=tenancy.integration_id,
                tenant_id="t1",
                name="erp",
                mode=IntegrationMode.ORCHESTRATION,
                destination=Destination(url="http://127.0.0.1:9/x"),
                message_types={"purchase_order": MessageTypeConfig()},
            )
        )
        message_id = send(ingest_api, tenancy, {"po_number": "PO-NET"})
        worker()
        assert status(stack, message_id)["last_retry_error_class"] == "network"


class TestGuarantees:
    def test_a_completed_step_delivered_again_is_dropped(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        configure(stack, tenancy, destination)
        send(ingest_api, tenancy, {"po_number": "PO-AGAIN"})
        [first] = boto3.client("sqs").receive_message(QueueUrl=stack.queue_url, VisibilityTimeout=0)[
            "Messages"
        ]
        process = StepMessage.model_validate_json(first["Body"])
        worker()

        report = wiring.pipeline_worker().run(process, datetime.now(UTC))

        assert report.reason == "duplicate_step"
        assert len(destination.requests) == 1

    def test_a_step_redelivered_after_its_finish_is_dropped(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        """The worker died after the finishing update but before SQS got the ack: the copy SQS
        redelivers finds the step sequence moved on and sends nothing."""
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-RERUN"})
        [first] = boto3.client("sqs").receive_message(QueueUrl=stack.queue_url, VisibilityTimeout=0)[
            "Messages"
        ]
        process = StepMessage.model_validate_json(first["Body"])
        wiring.pipeline_worker().run(process, datetime.now(UTC))  # the run that died before its ack
        assert status(stack, message_id)["pipeline_status"] == "sent"

        handled = worker()  # SQS redelivers the same step

        assert handled == 1
        assert len(destination.requests) == 1
        assert status(stack, message_id)["pipeline_status"] == "sent"

    def test_two_workers_taking_the_same_step_have_one_effect(self, stack, tenancy, ingest_api, destination):
        """Two copies of one step (SQS delivered it twice) run at the same time: the first takes
        the message's lease; the other finds it busy, and once rescheduled finds the step done."""
        import threading  # noqa: PLC0415

        configure(stack, tenancy, destination)
        # The run that called is answered once the other has given its report: the two overlap
        # however late a thread starts.
        other_reported = threading.Event()
        destination.script(Answer(200, "{}", hold=other_reported))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-TWIN"})
        [queued] = boto3.client("sqs").receive_message(QueueUrl=stack.queue_url)["Messages"]
        step = StepMessage.model_validate_json(queued["Body"])
        reports = []

        def run(worker: Any) -> None:
            reports.append(worker.run(step, datetime.now(UTC)))
            other_reported.set()

        threads = [threading.Thread(target=run, args=(wiring.build_pipeline_worker(),)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)

        assert sorted(r.reason for r in reports) == ["entity_busy", "sent"]
        again = StepMessage.model_validate(_peek_delayed(stack))
        assert wiring.pipeline_worker().run(again, datetime.now(UTC)).reason == "duplicate_step"
        assert len(destination.requests) == 1
        assert status(stack, message_id)["pipeline_status"] == "sent"

    @pytest.mark.parametrize("idempotent_retries", [True, False])
    def test_a_lease_that_expired_mid_delivery_does_not_let_the_old_owner_finish(
        self, stack, tenancy, ingest_api, destination, idempotent_retries
    ):
        """A run's lease ran out while it waited on the destination and another run took the
        message over. The old run's finishing update is refused (the lease is not its own): it
        writes nothing. The takeover knows the old run may have called the destination: with
        `idempotent_retries` it sends again with the same Idempotency-Key and finishes `sent`;
        without, it ends `error` + uncertain without calling (an operator reconciles)."""
        import threading  # noqa: PLC0415
        import time  # noqa: PLC0415

        configure(stack, tenancy, destination, idempotent_retries=idempotent_retries)
        # The slow run's call is answered only once the takeover has run; a takeover's own call
        # (with idempotent retries) is answered at once.
        takeover_done = threading.Event()
        destination.script(Answer(200, "{}", hold=takeover_done), Answer(200, "{}"))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-LEASE"})
        [queued] = boto3.client("sqs").receive_message(QueueUrl=stack.queue_url)["Messages"]
        step = StepMessage.model_validate_json(queued["Body"])
        now = datetime.now(UTC)
        later = now + rules.LOCK_LEASE + timedelta(seconds=1)  # the slow run's lease has run out
        slow, fast = wiring.build_pipeline_worker(), wiring.build_pipeline_worker()
        slow._clock = lambda: now
        fast._clock = lambda: later
        reports: dict[str, str] = {}
        thread = threading.Thread(target=lambda: reports.update(slow=slow.run(step, now).reason))
        thread.start()
        # Progress, not a fixed time: the slow run holds the message and its business key and is
        # inside its call. Its lease alone is not enough: a takeover then would take the key
        # first and leave the slow run `entity_busy`.
        deadline = time.monotonic() + 60
        while destination.arrivals == 0:
            assert time.monotonic() < deadline, "the slow run never called the destination"
            time.sleep(0.01)
        assert "lease_owner" in status(stack, message_id)
        reports["fast"] = fast.run(step, later).reason
        takeover_done.set()
        thread.join(timeout=60)

        final = status(stack, message_id)
        if idempotent_retries:
            assert reports == {"slow": "lease_lost", "fast": "sent"}
            assert [r.headers["idempotency-key"] for r in destination.requests] == [message_id, message_id]
            assert final["pipeline_status"] == "sent"
        else:
            assert reports == {"slow": "lease_lost", "fast": "error"}
            assert [r.headers["idempotency-key"] for r in destination.requests] == [message_id]
            assert (final["pipeline_status"], final["uncertain"]) == ("error", True)
        assert "lease_owner" not in final
        assert final["step_seq"] == "1"

    def test_a_failure_after_delivery_retries_with_the_same_idempotency_key(
        self, stack, tenancy, ingest_api, worker, destination, monkeypatch
    ):
        """Worker dies after the destination applied the message but before the status was
        written: SQS redelivers, the destination sees the same Idempotency-Key twice."""
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-TWICE"})
        original = client("dynamodb").update_item
        state = {"failed": False}

        def fail_first_sent(**kwargs: Any) -> Any:
            values = json.dumps(kwargs.get("ExpressionAttributeValues", {}))
            if '"sent"' in values and not state["failed"]:
                state["failed"] = True
                raise ClientError({"Error": {"Code": "InternalServerError", "Message": "x"}}, "UpdateItem")
            return original(**kwargs)

        monkeypatch.setattr(client("dynamodb"), "update_item", fail_first_sent)
        worker()
        # The failed step is still on the queue (batch item failure); its visibility expires:
        assert expire_visibility(stack.queue_url) == 1
        worker()

        assert state["failed"]
        assert status(stack, message_id)["pipeline_status"] == "sent"
        keys = [r.headers["idempotency-key"] for r in destination.requests]
        assert keys == [message_id, message_id]

    def test_a_busy_entity_reschedules_without_using_the_attempt(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-LOCK"})
        record = status(stack, message_id)
        store = DynamoExecutions(stack.table)
        assert store.acquire_lock(record["entity_key"], "exe_other", datetime.now(UTC), rules.LOCK_LEASE)

        steps = boto3.client("sqs").receive_message(QueueUrl=stack.queue_url)["Messages"]
        boto3.client("sqs").change_message_visibility(
            QueueUrl=stack.queue_url, ReceiptHandle=steps[0]["ReceiptHandle"], VisibilityTimeout=0
        )
        worker(include_delayed=False, max_batches=1, settle=False)
        rescheduled = _peek_delayed(stack)
        assert rescheduled["lock_wait"] == 1
        assert rescheduled["step"] == "process"
        assert status(stack, message_id)["pipeline_status"] == "received"

        store.release_lock(record["entity_key"], "exe_other")
        worker()
        assert status(stack, message_id)["pipeline_status"] == "sent"

    def test_two_workers_on_one_entity_deliver_one_at_a_time(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        """Two versions of PO-11 (accept: both go through) handled by two concurrent workers:
        the entity lock serializes them, so the destination never sees them overlap."""
        import threading  # noqa: PLC0415

        configure(stack, tenancy, destination, handling=DuplicateHandling.ACCEPT)
        destination.script(Answer(200, "{}", delay_seconds=0.5))
        ids = [send(ingest_api, tenancy, {"po_number": "PO-11", "qty": q}) for q in (1, 2)]
        errors: list[BaseException] = []

        arn = boto3.client("sqs").get_queue_attributes(QueueUrl=stack.queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]

        def run() -> None:  # one Lambda instance: its own worker and handler, one record at a time
            try:
                handler = direct_handler(wiring.build_pipeline_worker())
                # Real delays here: a busy step waits its 2 s instead of spinning to lock_timeout.
                pump(
                    stack.queue_url,
                    arn,
                    handler,
                    max_batches=20,
                    include_delayed=False,
                    settle=False,
                    batch_size=1,
                )
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        worker(max_batches=200)  # whatever a thread left rescheduled

        assert errors == []
        assert [status(stack, i)["pipeline_status"] for i in ids] == ["sent", "sent"]
        first, second = sorted(destination.requests, key=lambda r: r.arrived)
        assert second.arrived >= first.answered  # never both in flight

    def test_a_lock_left_by_a_dead_worker_is_taken_over_after_its_lease(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-DEAD"})
        entity = status(stack, message_id)["entity_key"]
        # A worker died holding the lock 6 minutes ago (lease 5 minutes): no finally ran.
        DynamoExecutions(stack.table).acquire_lock(
            entity, "exe_dead:run_1", datetime.now(UTC) - timedelta(minutes=6), rules.LOCK_LEASE
        )

        handled = worker()

        assert handled == 1  # one step (process and deliver), no busy reschedule
        assert status(stack, message_id)["pipeline_status"] == "sent"

    def test_after_thirty_waits_the_message_ends_in_lock_timeout(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-STUCK"})
        record = status(stack, message_id)
        DynamoExecutions(stack.table).acquire_lock(
            record["entity_key"], "exe_other", datetime.now(UTC), rules.LOCK_LEASE
        )
        handled = worker(max_batches=200)  # fast-forwarded: lock waits 0..30

        assert handled == rules.MAX_LOCK_WAITS + 1

        final = status(stack, message_id)
        assert final["pipeline_status"] == "error"
        assert final["last_retry_error_class"] == "lock_timeout"
        assert destination.requests == []

    def test_a_stale_step_after_the_status_moved_on_is_dropped(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-STALE"})
        worker()
        # Past the recent-completion window, a late deliver step of the same execution arrives.
        boto3.client("dynamodb").update_item(
            TableName=stack.table,
            Key={"PK": {"S": f"MSG#{message_id}"}, "SK": {"S": "STATUS"}},
            UpdateExpression="SET completed_at = :long_ago",
            ExpressionAttributeValues={":long_ago": {"S": "2026-01-01T00:00:00.000000Z"}},
        )
        late = late_step(stack, message_id, PipelineStep.DELIVER)

        wiring.pipeline_worker().run(late, datetime.now(UTC))

        assert status(stack, message_id)["pipeline_status"] == "sent"
        assert len(destination.requests) == 1

    def test_recent_completion_drops_the_same_work_for_five_minutes(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-RECENT"})
        worker()
        again = late_step(stack, message_id, PipelineStep.PROCESS)

        report = wiring.pipeline_worker().run(again, datetime.now(UTC))

        assert report.reason == "recently_completed"

    @pytest.mark.parametrize("last_delivery", [False, True])
    def test_a_step_failing_for_the_last_time_releases_admission_only(
        self, stack, tenancy, ingest_api, destination, monkeypatch, last_delivery
    ):
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-DLQ"})
        [queued] = boto3.client("sqs").receive_message(QueueUrl=stack.queue_url)["Messages"]
        step = StepMessage.model_validate_json(queued["Body"])
        original = client("dynamodb").update_item

        def storage_down_for_outcomes(**kwargs: Any) -> Any:
            if '"sent"' in json.dumps(kwargs.get("ExpressionAttributeValues", {})):
                raise ClientError({"Error": {"Code": "InternalServerError", "Message": "x"}}, "UpdateItem")
            return original(**kwargs)

        monkeypatch.setattr(client("dynamodb"), "update_item", storage_down_for_outcomes)
        with pytest.raises(Exception, match="pipeline storage"):
            wiring.pipeline_worker().run(step, datetime.now(UTC), last_delivery=last_delivery)

        live = DynamoExecutions(stack.table).live_execution(message_id)
        assert (live is None) is last_delivery
        assert status(stack, message_id)["pipeline_status"] == "received"  # the DLQ never changes state

    def test_a_failed_reschedule_gives_the_lease_back_and_the_step_comes_back(
        self, stack, tenancy, ingest_api, worker, destination, monkeypatch
    ):
        """The entity is busy and the busy reschedule cannot be published: the step fails (SQS
        redelivers it), the message's lease is given back and the execution stays alive for the
        redelivered step, which runs once the entity is free."""
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-PUB"})
        entity = status(stack, message_id)["entity_key"]
        store = DynamoExecutions(stack.table)
        assert store.acquire_lock(entity, "exe_other", datetime.now(UTC), rules.LOCK_LEASE)
        [queued] = boto3.client("sqs").receive_message(QueueUrl=stack.queue_url)["Messages"]
        step = StepMessage.model_validate_json(queued["Body"])

        def queue_down(**_: Any) -> Any:
            raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "x"}}, "SendMessage")

        original = client("sqs").send_message
        monkeypatch.setattr(client("sqs"), "send_message", queue_down)
        with pytest.raises(Exception, match="pipeline queue"):
            wiring.pipeline_worker().run(step, datetime.now(UTC))
        monkeypatch.setattr(client("sqs"), "send_message", original)

        assert "lease_owner" not in status(stack, message_id)
        assert store.live_execution(message_id) == step.execution_id
        assert status(stack, message_id)["pipeline_status"] == "received"
        # SQS redelivers the step (its visibility runs out); the entity is free by then.
        store.release_lock(entity, "exe_other")
        assert expire_visibility(stack.queue_url) == 1
        worker()

        assert status(stack, message_id)["pipeline_status"] == "sent"
        assert len(destination.requests) == 1

    def test_a_second_execution_is_suppressed_while_one_is_live(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-ADM"})
        store = DynamoExecutions(stack.table)
        now = datetime.now(UTC)
        # The message was admitted with its first execution: no other one gets in meanwhile...
        assert not store.admit(message_id, "exe_operator", now, rules.ADMISSION_ABANDONED_AFTER)
        # ...until that one is idle for over 24 h (abandoned) and another takes it over.
        later = now + timedelta(hours=25)
        assert store.admit(message_id, "exe_operator", later, rules.ADMISSION_ABANDONED_AFTER)

        worker()

        assert status(stack, message_id)["pipeline_status"] == "received"
        assert destination.requests == []
        assert store.live_execution(message_id) == "exe_operator"

    def test_an_orphan_step_is_rechecked_through_the_grace_then_dropped(self, stack, worker, destination):
        ghost = StepMessage(
            message_id=new_id("msg"),
            tenant_id="t1",
            integration_id="int_erp",
            step=PipelineStep.PROCESS,
            execution_id="exe_x",
            correlation_id="c",
            publish_id=new_id("pub"),
        )
        boto3.client("sqs").send_message(QueueUrl=stack.queue_url, MessageBody=ghost.model_dump_json())

        handled = worker()  # re-checks fast-forwarded

        assert handled == 1 + rules.MAX_ORPHAN_CHECKS
        assert boto3.client("sqs").receive_message(QueueUrl=stack.queue_url).get("Messages", []) == []

    def test_an_old_orphan_is_dropped_at_once(self, stack):
        ghost = StepMessage(
            message_id=new_id("msg"),
            tenant_id="t1",
            integration_id="int_erp",
            step=PipelineStep.PROCESS,
            execution_id="exe_x",
            correlation_id="c",
            publish_id=new_id("pub"),
        )
        report = wiring.pipeline_worker().run(ghost, datetime.now(UTC) - timedelta(minutes=5))
        assert report.reason == "orphan"


def _peek_delayed(stack) -> dict[str, Any]:
    from moto.core import DEFAULT_ACCOUNT_ID  # noqa: PLC0415
    from moto.sqs.models import sqs_backends  # noqa: PLC0415

    queue = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].get_queue(stack.queue_url.rsplit("/", 1)[-1])
    delayed = [m for m in queue._messages if m.delayed]
    assert len(delayed) == 1
    return json.loads(delayed[0].body)


class TestLogs:
    def test_worker_logs_carry_ids_and_never_the_payload(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        import io  # noqa: PLC0415
        import logging  # noqa: PLC0415

        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-LOG", "cpf": "123.456.789-09"})
        load_handler("PipelineWorkerFunction")  # its Powertools configuration reaches the hub loggers
        sink = io.StringIO()
        handlers = [h for h in logging.getLogger("hub").handlers if type(h) is logging.StreamHandler]
        assert handlers
        previous = [h.setStream(sink) for h in handlers]
        try:
            worker()
        finally:
            for handler, stream in zip(handlers, previous, strict=True):
                handler.setStream(stream)

        entries = [json.loads(line) for line in sink.getvalue().splitlines()]
        delivered = [e for e in entries if e["message"] == "delivered"]
        assert delivered, entries
        assert {
            k: delivered[0][k] for k in ("message_id", "tenant_id", "integration_id", "step", "attempt")
        } == {
            "message_id": message_id,
            "tenant_id": "t1",
            "integration_id": tenancy.integration_id,
            "step": "deliver",
            "attempt": 0,
        }
        assert delivered[0]["correlation_id"]
        assert "123.456.789-09" not in sink.getvalue()
        assert "123.456.789-09" not in json.dumps(log_of(stack, message_id), default=str)


# --- issue 30: the worker's time guard ---------------------------------------------------------


def receive_batch(stack, count: int) -> list[dict[str, Any]]:
    """`count` step messages taken off the pipeline queue, as one receive of the event source."""
    sqs = boto3.client("sqs")
    messages: list[dict[str, Any]] = []
    while len(messages) < count:
        answer = sqs.receive_message(
            QueueUrl=stack.queue_url,
            MaxNumberOfMessages=10,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages += answer.get("Messages", [])
    return messages


def invoke_batch(stack, messages: list[dict[str, Any]], remaining_seconds: float) -> dict[str, Any]:
    """The real handler over `messages` with a context that has `remaining_seconds` left; the
    messages it did not report failed are deleted, as the event source does."""
    handler = load_handler("PipelineWorkerFunction")
    records = [lambda_record(m, stack.env["HUB_PIPELINE_QUEUE_ARN"], REGION) for m in messages]
    answer: dict[str, Any] = handler({"Records": records}, LambdaContext(remaining_seconds))
    failed = {item["itemIdentifier"] for item in answer["batchItemFailures"]}
    for message in messages:
        if message["MessageId"] not in failed:
            boto3.client("sqs").delete_message(
                QueueUrl=stack.queue_url, ReceiptHandle=message["ReceiptHandle"]
            )
    return answer


def keys_seen(destination) -> Counter[str]:
    """How many requests reached the destination per message (our Idempotency-Key)."""
    return Counter(r.headers["idempotency-key"] for r in destination.requests)


class TestTimeGuard:
    def test_a_batch_short_of_time_returns_its_untaken_steps_at_once_and_each_is_delivered_once(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        """A step may need 1 + 2 + 5 = 8 s; the invocation has 8.5 s and the destination takes 1 s
        to answer: only the first step fits. The others are back on the queue at once (not after
        the 21-minute visibility timeout), as they came, and are delivered once when run again."""
        configure(stack, tenancy, destination, connect_timeout_seconds=1, read_timeout_seconds=2)
        destination.script(Answer(delay_seconds=1.0))
        ids = [send(ingest_api, tenancy, {"po_number": f"PO-G{n}"}) for n in range(4)]
        batch = receive_batch(stack, 4)

        answer = invoke_batch(stack, batch, remaining_seconds=8.5)

        assert answer == {"batchItemFailures": []}
        first, *untaken = batch
        assert keys_seen(destination) == {json.loads(first["Body"])["message_id"]: 1}
        back = boto3.client("sqs").receive_message(
            QueueUrl=stack.queue_url,
            MaxNumberOfMessages=10,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            VisibilityTimeout=0,
        )["Messages"]
        by_body = {m["Body"]: m for m in back}
        assert set(by_body) == {m["Body"] for m in untaken}
        for original in untaken:
            copy = by_body[original["Body"]]
            assert copy["MessageAttributes"] == original["MessageAttributes"]
            assert copy["MessageId"] != original["MessageId"]
        for message_id in ids:
            assert status(stack, message_id)["pipeline_status"] in ("received", "sent")

        worker()

        assert keys_seen(destination) == dict.fromkeys(ids, 1)
        assert {status(stack, m)["pipeline_status"] for m in ids} == {"sent"}

    def test_the_first_step_runs_with_its_read_timeout_capped_to_end_before_the_invocation(
        self, stack, tenancy, ingest_api, destination
    ):
        """The issue's connection: a read timeout near 300 s, longer than the whole invocation.
        The first step still runs (otherwise it would never be delivered), its attempt given up
        5 s before the invocation's end: an ordinary, uncertain `timeout`, not a killed worker."""
        configure(stack, tenancy, destination, connect_timeout_seconds=1, read_timeout_seconds=300)
        destination.script(Answer(delay_seconds=4.0))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-CAP"})
        batch = receive_batch(stack, 1)
        started = time.monotonic()

        answer = invoke_batch(stack, batch, remaining_seconds=8)

        assert time.monotonic() - started < 8 - 2  # ended with time to spare
        assert answer == {"batchItemFailures": []}
        final = status(stack, message_id)
        assert (final["pipeline_status"], final["last_retry_error_class"]) == ("error", "timeout")
        assert "within 300 s" not in final["dest_status_text"]
        assert log_of(stack, message_id)[-1]["uncertain"] is True
        # The destination records a request once it has answered (its 4 s are not over yet).
        wait_until(lambda: destination.requests, "the destination answered the one attempt")
        assert keys_seen(destination) == {message_id: 1}

    def test_an_untaken_step_whose_copy_is_refused_is_reported_and_delivered_once_later(
        self, stack, tenancy, ingest_api, worker, destination
    ):
        """SQS refuses the copies: the untaken steps are reported as batch item failures instead,
        so SQS keeps them (and returns them after the visibility timeout). Nothing is lost."""
        configure(stack, tenancy, destination, connect_timeout_seconds=1, read_timeout_seconds=2)
        destination.script(Answer(delay_seconds=1.0))
        ids = [send(ingest_api, tenancy, {"po_number": f"PO-R{n}"}) for n in range(3)]
        batch = receive_batch(stack, 3)
        events = client("sqs").meta.events

        def refuse(**_: Any) -> None:
            raise EndpointConnectionError(endpoint_url=stack.queue_url)

        events.register("before-call.sqs.SendMessage", refuse)
        try:
            answer = invoke_batch(stack, batch, remaining_seconds=8.5)
        finally:
            events.unregister("before-call.sqs.SendMessage", refuse)

        first, *untaken = batch
        assert answer == {"batchItemFailures": [{"itemIdentifier": m["MessageId"]} for m in untaken]}
        assert keys_seen(destination) == {json.loads(first["Body"])["message_id"]: 1}
        assert expire_visibility(stack.queue_url) == len(untaken)

        worker()

        assert keys_seen(destination) == dict.fromkeys(ids, 1)
        assert {status(stack, m)["pipeline_status"] for m in ids} == {"sent"}
