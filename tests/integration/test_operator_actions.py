"""Operator actions through the real AdminApiFunction handler (seed 000, scenarios C, D, G;
seed 002, 7): reprocess, cancel-retry, the queue tabs, DLQ redrive, and the admin token. Which
reprocesses and cancels the use case refuses: tests/unit/test_operator_moves.py."""

from __future__ import annotations

import copy
import threading
import time

import boto3
import pytest
from botocore.exceptions import ClientError

from hub import wiring
from hub.adapters.aws import client
from hub.adapters.dynamo.executions import DynamoExecutions
from hub.adapters.dynamo.keys import integration_key
from hub.adapters.dynamo.messages import DynamoMessageRepository
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.retry import RetryPolicy
from tests.destinations import Answer
from tests.pipeline import configure, expire_visibility, fire_all, schedules, send, status

AUTO = RetryPolicy(retry_auto_enabled=True, retry_max=5)


def audit_events(stack, message_id: str) -> list[dict]:
    """Operator actions in the message's log (kept on the message item)."""
    return [e for e in DynamoMessageRepository(stack.table).message_log(message_id) if "event" in e]


def reprocess(admin_api, message_id: str):
    return admin_api("POST", "/api/edi-hub/reprocess-message", body={"message_id": message_id})


class TestReprocess:
    def test_scenario_d_a_failed_message_is_reprocessed_by_the_operator_and_sent(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination)  # auto retry off: the product default
        destination.script(Answer(503), Answer(200))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-D"})
        worker()
        assert status(stack, message_id)["pipeline_status"] == "error"
        assert schedules(stack) == []

        answer = reprocess(admin_api, message_id)

        assert answer.status == 202
        assert answer.body["pipeline_status"] == "received"
        worker()
        final = status(stack, message_id)
        assert final["pipeline_status"] == "sent"
        assert final["dest_status"] == "200"
        # The same delivery key on both attempts: the destination can drop a repeat.
        assert [r.headers["idempotency-key"] for r in destination.requests] == [message_id, message_id]
        [event] = audit_events(stack, message_id)
        assert (event["event"], event["actor"]) == ("message.reprocessed", "bootstrap-admin")

    def test_a_failing_reprocess_follows_the_retry_policy_again(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination)
        destination.script(Answer(503))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-D2"})
        worker()
        configure(stack, tenancy, destination, retry_policy=AUTO)  # the operator turned auto retry on

        assert reprocess(admin_api, message_id).status == 202
        worker()

        pending = status(stack, message_id)
        assert (pending["pipeline_status"], pending["retry_count"]) == ("retry_pending", "1")

    def test_refused_while_a_retry_waits(self, stack, tenancy, ingest_api, worker, destination, admin_api):
        configure(stack, tenancy, destination, retry_policy=AUTO)
        destination.script(Answer(503))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-WAIT"})
        worker()

        refused = reprocess(admin_api, message_id)

        assert (refused.status, refused.body["error"]["code"]) == (409, "execution_in_flight")
        assert refused.body["error"]["details"]["pipeline_status"] == "retry_pending"
        assert status(stack, message_id)["pipeline_status"] == "retry_pending"
        assert stack.drain_queue() == []

    def test_a_message_delivered_after_the_operator_read_it_is_refused_as_delivered(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        """The refusal is the update's condition, not only the read: a reprocess that read the
        message in `error` while another reprocess delivered it is refused as delivered."""
        from hub.admin.operations import AlreadyDelivered  # noqa: PLC0415

        configure(stack, tenancy, destination)
        destination.script(Answer(503), Answer(200))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-RACE"})
        worker()
        repository = DynamoMessageRepository(stack.table)
        seen_in_error = repository.get(message_id)
        assert seen_in_error is not None
        assert seen_in_error.pipeline_status.value == "error"
        assert reprocess(admin_api, message_id).status == 202
        worker()
        assert status(stack, message_id)["pipeline_status"] == "sent"

        class ReadBeforeTheDelivery(DynamoMessageRepository):
            def get(self, wanted: str):  # the operator's read, taken before the delivery
                return seen_in_error if wanted == message_id else super().get(wanted)

        operations = copy.copy(wiring.operations())  # the cached one stays as it is
        operations._messages = ReadBeforeTheDelivery(stack.table)
        from hub.admin.access import Principal, Role  # noqa: PLC0415

        with pytest.raises(AlreadyDelivered):
            operations.reprocess(message_id, Principal("race-test", "race", Role.OPERATOR, None))
        assert status(stack, message_id)["pipeline_status"] == "sent"
        assert stack.drain_queue() == []

    def test_an_unknown_message_is_404_and_a_bad_body_400(self, stack, admin_api):
        missing = reprocess(admin_api, "msg_01aaaaaaaaaaaaaaaaaaaaaaaa")
        malformed = admin_api("POST", "/api/edi-hub/reprocess-message", body={"id": "x"})

        assert (missing.status, missing.body["error"]["code"]) == (404, "not_found")
        assert (malformed.status, malformed.body["error"]["code"]) == (400, "validation_error")
        assert {d["field"] for d in malformed.body["error"]["details"]} == {"message_id", "id"}


class TestCancelRetry:
    def test_scenario_g_cancel_while_waiting_stops_it_for_good(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination, retry_policy=AUTO)
        destination.script(Answer(503))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-G"})
        worker()
        [schedule] = schedules(stack)
        late_step = schedule["Target"]["Input"]

        answer = admin_api("POST", f"/api/admin/messages/{message_id}/cancel-retry")

        assert answer.status == 200
        assert answer.body["pipeline_status"] == "cancelled"
        cancelled = status(stack, message_id)
        assert cancelled["pipeline_status"] == "cancelled"
        assert "next_retry_at" not in cancelled
        assert schedules(stack) == []
        [event] = audit_events(stack, message_id)
        assert (event["event"], event["actor"], event["previous"]) == (
            "message.retry_cancelled",
            "bootstrap-admin",
            "retry_pending",
        )
        # A retry step already on its way (fired just before the delete) does nothing.
        boto3.client("sqs").send_message(QueueUrl=stack.queue_url, MessageBody=late_step)
        worker()
        assert status(stack, message_id)["pipeline_status"] == "cancelled"
        assert len(destination.requests) == 1
        # The execution is closed: the operator may still reprocess it later.
        assert DynamoExecutions(stack.table).live_execution(message_id) is None


class TestCancelRaces:
    def test_cancel_during_a_delivery_attempt_is_refused_until_it_ends(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination, retry_policy=AUTO)
        # The attempt's call is answered once the operator's cancel has been: they overlap.
        cancel_answered = threading.Event()
        destination.script(Answer(503), Answer(200, "{}", hold=cancel_answered))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-RACE"})
        worker()
        fire_all(stack)
        attempt = threading.Thread(target=worker)
        attempt.start()
        try:
            deadline = time.monotonic() + 60
            while not lock_held(stack):
                assert time.monotonic() < deadline, "the attempt never took the entity"
                time.sleep(0.02)

            answer = admin_api("POST", f"/api/admin/messages/{message_id}/cancel-retry")
        finally:
            cancel_answered.set()
            attempt.join()

        assert (answer.status, answer.body["error"]["code"]) == (409, "delivery_in_progress")
        assert status(stack, message_id)["pipeline_status"] == "sent"
        assert len(destination.requests) == 2

    def test_a_failed_schedule_delete_is_harmless_and_a_repeated_cancel_finishes_it(
        self, stack, tenancy, ingest_api, worker, destination, admin_api, monkeypatch
    ):
        configure(stack, tenancy, destination, retry_policy=AUTO)
        destination.script(Answer(503))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-DEL"})
        worker()
        # The admin function cannot reach the scheduler (an invalid group name is refused).
        monkeypatch.setenv("HUB_SCHEDULE_GROUP", "not a valid group!")
        wiring.reset()

        first = admin_api("POST", f"/api/admin/messages/{message_id}/cancel-retry")

        assert first.status == 200
        assert len(schedules(stack)) == 1  # left behind
        monkeypatch.setenv("HUB_SCHEDULE_GROUP", stack.env["HUB_SCHEDULE_GROUP"])
        wiring.reset()
        again = admin_api("POST", f"/api/admin/messages/{message_id}/cancel-retry")
        assert again.status == 200
        assert schedules(stack) == []
        assert status(stack, message_id)["pipeline_status"] == "cancelled"
        assert len(audit_events(stack, message_id)) == 1


def lock_held(stack) -> bool:
    items = boto3.client("dynamodb").scan(
        TableName=stack.table,
        # A running step holds its message's lease.
        FilterExpression="begins_with(PK, :msg) AND attribute_exists(lease_owner)",
        ExpressionAttributeValues={":msg": {"S": "MSG#"}},
    )["Items"]
    return bool(items)


class TestQueue:
    def test_tabs_list_newest_first_by_cursor_and_cursors_stay_in_their_tab(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination)
        destination.script(Answer(422, '{"error": "bad"}'))
        failed = []
        for n in range(3):
            failed.append(send(ingest_api, tenancy, {"po_number": f"PO-Q{n}"}))
            worker()

        def tab(**query: str):
            return admin_api("GET", "/api/admin/queue", query={"tenant_id": "t1", "tab": "error", **query})

        first = tab(limit="2")
        assert first.status == 200
        assert [row["message_id"] for row in first.body["items"]] == [failed[2], failed[1]]
        row = first.body["items"][0]
        assert (row["pipeline_status"], row["last_retry_error_class"], row["dest_status"]) == (
            "error",
            "http_4xx",
            "422",
        )
        assert "dest_status_text" not in row  # may quote the destination's answer
        second = tab(limit="2", cursor=first.body["next_cursor"])
        assert [row["message_id"] for row in second.body["items"]] == [failed[0]]
        assert second.body["next_cursor"] is None
        # Other tabs and tenants see none of them; a cursor cannot cross into them.
        assert (
            admin_api("GET", "/api/admin/queue", query={"tenant_id": "t1", "tab": "waiting"}).body["items"]
            == []
        )
        other_tab = admin_api(
            "GET",
            "/api/admin/queue",
            query={"tenant_id": "t1", "tab": "dead_letter", "cursor": first.body["next_cursor"]},
        )
        assert (other_tab.status, other_tab.body["error"]["code"]) == (400, "validation_error")
        crossed = admin_api(
            "GET",
            "/api/admin/queue",
            query={"tenant_id": "t2", "tab": "error", "cursor": first.body["next_cursor"]},
        )
        assert (crossed.status, crossed.body["error"]["code"]) == (400, "validation_error")

    @pytest.mark.parametrize(
        ("query", "field"),
        [
            ({"tenant_id": "t1", "tab": "sent"}, "tab"),
            ({"tab": "error"}, "tenant_id"),
            ({"tenant_id": "t1", "tab": "error", "limit": "1000"}, "limit"),
            ({"tenant_id": "t1", "tab": "error", "cursor": "not-a-cursor"}, "cursor"),
        ],
    )
    def test_bad_queries_are_400_naming_the_field(self, stack, admin_api, query, field):
        answer = admin_api("GET", "/api/admin/queue", query=query)
        assert answer.status == 400
        assert field in {d["field"] for d in answer.body["error"]["details"]}


def into_the_dlq(stack, worker) -> None:
    """Runs the worker receive by receive, as SQS redelivers a failing step, until SQS moves the
    step to the DLQ after HUB_PIPELINE_MAX_RECEIVES receives."""
    wiring.reset()  # a new worker instance: nothing of the integration cached
    receives = 0
    while receives < 20 and not dlq_depth(stack):
        receives += worker(settle=False, max_batches=1)
        expire_visibility(stack.queue_url)
    boto3.client("sqs").receive_message(QueueUrl=stack.queue_url)  # moto moves it on a receive
    assert receives == int(stack.env["HUB_PIPELINE_MAX_RECEIVES"])
    assert dlq_depth(stack) == 1


def poison_into_the_dlq(stack, tenancy, ingest_api, worker) -> tuple[str, object]:
    """A message whose first step raises something unexpected on every receive (its
    integration's stored configuration is broken) until SQS moves the step to the DLQ. Returns
    the message id and the good integration, to put back."""
    message_id = send(ingest_api, tenancy, {"po_number": "PO-POISON"})
    good = DynamoConfigRepository(stack.table).get_integration(tenancy.tenant_id, tenancy.integration_id)
    boto3.client("dynamodb").update_item(
        TableName=stack.table,
        Key={k: {"S": v} for k, v in integration_key(tenancy.tenant_id, tenancy.integration_id).items()},
        UpdateExpression="SET config_json = :broken",
        ExpressionAttributeValues={":broken": {"S": "{not json"}},
    )
    into_the_dlq(stack, worker)
    return message_id, good


class TestDeadLetterRedrive:
    def test_a_poison_step_ends_in_error_internal_and_its_step_in_the_dlq(
        self, stack, tenancy, ingest_api, destination, admin_api, worker
    ):
        """Issue 10, item 5: the step raised on every receive; on the last one the message
        moved to `error` / `internal`, shown in the error tab; the step still went to the DLQ
        (its alarm fires). A redrive once fixed changes nothing: the operator reprocesses."""
        configure(stack, tenancy, destination)
        message_id, good = poison_into_the_dlq(stack, tenancy, ingest_api, worker)

        failed = status(stack, message_id)
        assert failed["pipeline_status"] == "error"
        assert failed["last_retry_error_class"] == "internal"
        assert failed["dest_status_text"] == "internal error (ValidationError)"
        assert "dest_status" not in failed
        assert "uncertain" not in failed  # failed before the destination was called
        assert DynamoExecutions(stack.table).live_execution(message_id) is None
        assert destination.requests == []
        tab = admin_api("GET", "/api/admin/queue", query={"tenant_id": "t1", "tab": "error"})
        [row] = [r for r in tab.body["items"] if r["message_id"] == message_id]
        assert (row["pipeline_status"], row["last_retry_error_class"]) == ("error", "internal")

        DynamoConfigRepository(stack.table).put_integration(good)  # the cause is fixed
        assert admin_api("POST", "/api/admin/dlq/pipeline/redrive").body == {"lane": "pipeline", "moved": 1}
        worker()
        assert status(stack, message_id)["pipeline_status"] == "error"  # `error` is final
        assert destination.requests == []

        assert reprocess(admin_api, message_id).status == 202
        worker()
        assert status(stack, message_id)["pipeline_status"] == "sent"
        assert len(destination.requests) == 1

    def test_an_outage_on_every_receive_leaves_the_message_and_is_redriven_once_over(
        self, stack, tenancy, ingest_api, destination, admin_api, worker, monkeypatch
    ):
        """Not internal: the table was unavailable for the step on every receive. The message
        keeps its status (nothing is wrong with it) and a redrive after the outage resumes it."""
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-OUTAGE"})
        dynamodb = client("dynamodb")
        original = dynamodb.get_item
        wanted = {k: {"S": v} for k, v in integration_key(tenancy.tenant_id, tenancy.integration_id).items()}

        def integration_unreadable(**kwargs):
            if kwargs.get("Key") == wanted:
                raise ClientError({"Error": {"Code": "InternalServerError", "Message": "x"}}, "GetItem")
            return original(**kwargs)

        monkeypatch.setattr(dynamodb, "get_item", integration_unreadable)
        into_the_dlq(stack, worker)
        monkeypatch.setattr(dynamodb, "get_item", original)  # the outage is over

        assert status(stack, message_id)["pipeline_status"] == "received"
        assert "last_retry_error_class" not in status(stack, message_id)
        assert DynamoExecutions(stack.table).live_execution(message_id) is None
        assert destination.requests == []

        answer = admin_api("POST", "/api/admin/dlq/pipeline/redrive")

        assert answer.status == 200
        assert answer.body == {"lane": "pipeline", "moved": 1}
        assert dlq_depth(stack) == 0
        worker()
        assert status(stack, message_id)["pipeline_status"] == "sent"
        assert len(destination.requests) == 1

    def test_a_message_whose_step_went_to_the_dlq_can_be_reprocessed(
        self, stack, tenancy, ingest_api, destination, admin_api, worker
    ):
        configure(stack, tenancy, destination)
        message_id, good = poison_into_the_dlq(stack, tenancy, ingest_api, worker)
        DynamoConfigRepository(stack.table).put_integration(good)

        assert reprocess(admin_api, message_id).status == 202
        worker()

        assert status(stack, message_id)["pipeline_status"] == "sent"
        # Redriving the old step later is harmless: it belongs to an earlier execution.
        assert admin_api("POST", "/api/admin/dlq/pipeline/redrive").body["moved"] == 1
        worker()
        assert len(destination.requests) == 1

    def test_an_unknown_lane_is_404_naming_the_lanes(self, stack, admin_api):
        answer = admin_api("POST", "/api/admin/dlq/nfe/redrive")
        assert (answer.status, answer.body["error"]["code"]) == (404, "not_found")
        assert answer.body["error"]["details"] == {"lanes": ["pipeline"]}


def dlq_depth(stack) -> int:
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=stack.dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


class TestAdminToken:
    @pytest.mark.parametrize("token", [None, "", "hub_admin_wrong"])
    def test_without_the_admin_token_nothing_happens(
        self, stack, tenancy, ingest_api, worker, destination, admin_api, token
    ):
        configure(stack, tenancy, destination)
        destination.script(Answer(503))
        message_id = send(ingest_api, tenancy, {"po_number": "PO-AUTH"})
        worker()

        answer = admin_api(
            "POST", "/api/edi-hub/reprocess-message", body={"message_id": message_id}, token=token
        )

        assert (answer.status, answer.body["error"]["code"]) == (401, "unauthorized")
        assert status(stack, message_id)["pipeline_status"] == "error"
        assert stack.drain_queue() == []

    def test_the_admin_token_is_only_taken_as_a_bearer_token(self, stack, admin_api):
        from tests.integration.conftest import ADMIN_TOKEN  # noqa: PLC0415

        answer = admin_api(
            "GET",
            "/api/admin/queue",
            token=None,
            query={"tenant_id": "t1", "tab": "error"},
            headers={"x-api-key": ADMIN_TOKEN},
        )
        assert answer.status == 401

    def test_a_stack_without_an_admin_token_is_closed(self, stack, admin_api, monkeypatch):
        from hub.config import settings  # noqa: PLC0415

        monkeypatch.setenv("HUB_ADMIN_TOKEN_SECRET_ARN", "")
        settings.cache_clear()
        wiring.reset()

        answer = admin_api("GET", "/api/admin/queue", query={"tenant_id": "t1", "tab": "error"})

        assert (answer.status, answer.body["error"]["code"]) == (401, "unauthorized")
        assert answer.headers["WWW-Authenticate"] == "Bearer"
