"""Bulk jobs (issue 28, point 3) through the real admin and pipeline-worker handlers on moto,
delivering to a real HTTP destination on 127.0.0.1: every matching message acted on once,
paced, across pages, with a page run twice after a crash, a cancel, and the force rule."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import boto3
import pytest

from hub import wiring
from hub.adapters.dynamo.messages import DynamoMessageRepository
from hub.domain.bulk_page import BulkPage
from hub.domain.retry import RetryPolicy
from tests.destinations import Answer
from tests.pipeline import configure, expire_visibility, schedules, send, status

DEAD_AT_ONCE = RetryPolicy(retry_auto_enabled=True, retry_max=0)
WAIT = RetryPolicy(retry_auto_enabled=True, retry_max=5)


@pytest.fixture
def paced(stack, monkeypatch):
    """2 messages per second: a page of a bulk job is 10 messages (five seconds' worth)."""
    monkeypatch.setenv("HUB_RELEASE_RATE_PER_SECOND", "2")
    wiring.reset()


def dead_lettered(stack, tenancy, ingest_api, worker, destination, n: int, prefix: str = "PO") -> list[str]:
    configure(stack, tenancy, destination, retry_policy=DEAD_AT_ONCE)
    destination.script(Answer(503))
    ids = [send(ingest_api, tenancy, {"po_number": f"{prefix}-{i}"}) for i in range(n)]
    worker()
    assert {status(stack, m)["pipeline_status"] for m in ids} == {"dead_letter"}
    return ids


def send_with_external_id(ingest_api, tenancy, external_id: str) -> str:
    """One purchase order of its own (a fresh PO number) under `external_id`; its id."""
    from tests.events import http_event  # noqa: PLC0415

    body = {
        "integration_id": tenancy.integration_id,
        "message_type": "purchase_order",
        "external_id": external_id,
        "payload": {"po_number": f"{external_id}-{uuid.uuid4().hex[:8]}"},
    }
    headers: dict[str, str | None] = {"authorization": f"Bearer {tenancy.key}", "idempotency-key": None}
    answer = ingest_api(http_event("receive_message.json", body=body, headers=headers))
    assert answer.status == 202, answer.body
    return str(answer.body["message_id"])


def create(admin_api, **body: Any):
    return admin_api("POST", "/api/admin/bulk-jobs", body={"tenant_id": "t1", **body})


def job(admin_api, job_id: str) -> dict[str, Any]:
    answer = admin_api("GET", f"/api/admin/bulk-jobs/{job_id}", query={"tenant_id": "t1"})
    assert answer.status == 200, answer.body
    return answer.body


def delivered_ok(destination) -> Counter[str]:
    """How many times each message's delivery key reached the destination (our Idempotency-Key)."""
    return Counter(r.headers["idempotency-key"] for r in destination.requests)


def bulk_log(stack, message_id: str) -> list[dict[str, Any]]:
    return [e for e in DynamoMessageRepository(stack.table).message_log(message_id) if e.get("bulk_job")]


def pipeline_messages(stack) -> list[dict[str, Any]]:
    return stack.drain_queue()


class TestReprocessEveryDeadLetter:
    def test_every_match_is_sent_once_across_pages_with_one_audit_entry(
        self, stack, tenancy, ingest_api, worker, destination, admin_api, paced
    ):
        ids = dead_lettered(stack, tenancy, ingest_api, worker, destination, 23)
        destination.script(Answer(200))

        created = create(admin_api, action="reprocess", filter={"tab": "dead_letter"})

        assert created.status == 202, created.body
        assert (created.body["state"], created.body["action"], created.body["matched"]) == (
            "running",
            "reprocess",
            0,
        )
        worker()
        final = job(admin_api, created.body["job_id"])
        assert (final["state"], final["matched"], final["done"], final["skipped"], final["failed"]) == (
            "completed",
            23,
            23,
            0,
            0,
        )
        assert {status(stack, m)["pipeline_status"] for m in ids} == {"sent"}
        # Each message: its failed first attempt and exactly one more, the job's.
        assert delivered_ok(destination) == Counter(dict.fromkeys(ids, 2))
        for message_id in ids:
            [entry] = bulk_log(stack, message_id)
            assert (entry["event"], entry["bulk_job"]) == ("message.reprocessed", created.body["job_id"])
        audit = admin_api("GET", "/api/admin/tenants/t1/audit").body["items"]
        assert [e["action"] for e in audit].count("bulk_job.created") == 1
        assert [e["action"] for e in audit].count("message.reprocessed") == 0

    def test_steps_are_paced_and_pages_follow_one_another(
        self, stack, tenancy, ingest_api, worker, destination, admin_api, paced
    ):
        dead_lettered(stack, tenancy, ingest_api, worker, destination, 12)
        created = create(admin_api, action="reprocess", filter={"tab": "dead_letter"})
        [first_page] = pipeline_messages(stack)
        assert first_page == {
            "bulk_job": created.body["job_id"],
            "tenant_id": "t1",
            "page": 0,
            "cursor": None,
        }

        assert wiring.bulk_runner().run(BulkPage.model_validate(first_page)) == "run"

        queued = sqs_delays(stack)
        steps = [d for body, d in queued if "step" in body]
        pages = sorted((body["page"], d) for body, d in queued if "bulk_job" in body)
        # Ten messages at two per second: delays 0,0,1,1,...,4,4; the next page after five seconds;
        # and this page again once its lease has run out (dropped then, as it is done).
        assert sorted(steps) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
        assert pages == [(0, 121), (1, 5)]
        assert job(admin_api, created.body["job_id"])["matched"] == 10


def sqs_delays(stack) -> list[tuple[dict[str, Any], int]]:
    """Every message on the pipeline queue with the delay it was sent with (moto's record)."""
    import json  # noqa: PLC0415

    from moto.core import DEFAULT_ACCOUNT_ID  # noqa: PLC0415
    from moto.sqs.models import sqs_backends  # noqa: PLC0415

    queue = sqs_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].get_queue(stack.queue_url.rsplit("/", 1)[-1])
    return [
        (
            json.loads(m.body),
            round((m.delayed_until - (m.sent_timestamp or 0)) / 1000) if m.delayed_until else 0,
        )
        for m in queue._messages
    ]


def purge(stack) -> int:
    """Drops every message of the pipeline queue, delayed ones too (a worker's lost sends); how many."""
    lost = len(sqs_delays(stack))
    boto3.client("sqs").purge_queue(QueueUrl=stack.queue_url)
    return lost


class TestCrashAndRepeat:
    def test_a_page_run_again_after_a_crash_acts_on_each_message_once(
        self, stack, tenancy, ingest_api, worker, destination, admin_api, paced, monkeypatch
    ):
        ids = dead_lettered(stack, tenancy, ingest_api, worker, destination, 8)
        destination.script(Answer(200))
        created = create(admin_api, action="reprocess", filter={"tab": "dead_letter"})
        [page] = pipeline_messages(stack)
        runner = wiring.bulk_runner()
        store = runner._store
        real_finish = store.finish_page

        def crash(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("the worker died after acting, before recording the page")

        monkeypatch.setattr(store, "finish_page", crash)
        with pytest.raises(RuntimeError):
            runner.run(BulkPage.model_validate(page))
        monkeypatch.setattr(store, "finish_page", real_finish)
        assert purge(stack) == 9  # the first run's steps and its page's copy, lost with the worker

        # The page message comes back once its lease has run out; its copy acts on nobody twice.
        claim_expired(stack, created.body["job_id"])
        assert runner.run(BulkPage.model_validate(page)) == "run"
        worker()

        final = job(admin_api, created.body["job_id"])
        assert (final["state"], final["matched"], final["done"]) == ("completed", 8, 8)
        assert {status(stack, m)["pipeline_status"] for m in ids} == {"sent"}
        assert delivered_ok(destination) == Counter(dict.fromkeys(ids, 2))
        for message_id in ids:
            assert len(bulk_log(stack, message_id)) == 1

    def test_a_copy_of_a_page_message_while_it_runs_waits_and_a_done_one_is_dropped(
        self, stack, tenancy, ingest_api, worker, destination, admin_api, paced
    ):
        dead_lettered(stack, tenancy, ingest_api, worker, destination, 3)
        created = create(admin_api, action="cancel", filter={"tab": "dead_letter"})
        [page] = pipeline_messages(stack)
        runner = wiring.bulk_runner()

        assert runner.run(BulkPage.model_validate(page)) == "run"
        assert runner.run(BulkPage.model_validate(page)) == "dropped"
        assert job(admin_api, created.body["job_id"])["done"] == 3


def claim_expired(stack, job_id: str) -> None:
    boto3.client("dynamodb").update_item(
        TableName=stack.table,
        Key={"PK": {"S": f"BULKJOB#t1#{job_id}"}, "SK": {"S": "JOB"}},
        UpdateExpression="SET page_lease_until = :past",
        ExpressionAttributeValues={":past": {"N": "1"}},
    )


class TestTwoJobs:
    def test_a_rerun_of_a_page_does_not_act_again_after_another_job_acted_in_between(
        self, stack, tenancy, ingest_api, worker, destination, admin_api, monkeypatch
    ):
        [message_id] = dead_lettered(stack, tenancy, ingest_api, worker, destination, 1)
        first = create(admin_api, action="reprocess", filter={"tab": "dead_letter"})
        [page] = pipeline_messages(stack)
        runner = wiring.bulk_runner()
        real_finish = runner._store.finish_page

        def crash(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("the worker died after acting, before recording the page")

        monkeypatch.setattr(runner._store, "finish_page", crash)
        with pytest.raises(RuntimeError):
            runner.run(BulkPage.model_validate(page))
        monkeypatch.setattr(runner._store, "finish_page", real_finish)
        worker(include_delayed=False)  # the first job's reprocess fails again: dead_letter
        second = create(admin_api, action="reprocess", filter={"tab": "dead_letter"})
        [second_page] = [m for m in pipeline_messages(stack) if m.get("bulk_job") == second.body["job_id"]]
        assert runner.run(BulkPage.model_validate(second_page)) == "run"
        worker(include_delayed=False)
        assert status(stack, message_id)["pipeline_status"] == "dead_letter"

        claim_expired(stack, first.body["job_id"])
        assert runner.run(BulkPage.model_validate(page)) == "run"  # the first job's page again

        # Sent three times: its first attempt, once by each job - not a fourth by the rerun.
        assert delivered_ok(destination)[message_id] == 3
        assert job(admin_api, first.body["job_id"])["done"] == 1
        assert [e["bulk_job"] for e in bulk_log(stack, message_id)] == [
            first.body["job_id"],
            second.body["job_id"],
        ]
        assert status(stack, message_id)["pipeline_status"] == "dead_letter"


class TestFilterAndForce:
    def test_a_search_job_acts_only_on_the_tab_s_status_among_the_matches(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination, retry_policy=DEAD_AT_ONCE)
        destination.script(Answer(200), Answer(503))
        sent = send_with_external_id(ingest_api, tenancy, "PO-SEARCH")
        worker()
        dead = send_with_external_id(ingest_api, tenancy, "PO-SEARCH")
        worker()
        assert (status(stack, sent)["pipeline_status"], status(stack, dead)["pipeline_status"]) == (
            "sent",
            "dead_letter",
        )

        created = create(
            admin_api, action="cancel", filter={"tab": "dead_letter", "q": "PO-SEARCH", "by": "external_id"}
        )
        worker()

        final = job(admin_api, created.body["job_id"])
        assert (final["state"], final["matched"], final["done"]) == ("completed", 1, 1)
        assert status(stack, dead)["pipeline_status"] == "cancelled"
        assert status(stack, sent)["pipeline_status"] == "sent"

    def test_delivered_messages_are_skipped_unless_forced(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination)
        destination.script(Answer(200))
        sent = [send(ingest_api, tenancy, {"po_number": f"OK-{i}"}) for i in range(3)]
        worker()

        plain = create(admin_api, action="reprocess", filter={"tab": "all"})
        worker()
        skipped = job(admin_api, plain.body["job_id"])
        assert (skipped["matched"], skipped["done"], skipped["skipped"]) == (3, 0, 3)
        assert skipped["skipped_reasons"] == {"already_delivered": 3}
        assert delivered_ok(destination) == Counter(dict.fromkeys(sent, 1))

        forced = create(admin_api, action="reprocess", filter={"tab": "all"}, force=True)
        worker()
        assert job(admin_api, forced.body["job_id"])["done"] == 3
        assert delivered_ok(destination) == Counter(dict.fromkeys(sent, 2))

    def test_the_integration_and_error_class_filters_narrow_the_match(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        dead = dead_lettered(stack, tenancy, ingest_api, worker, destination, 2)
        destination.script(Answer(200))

        other_class = create(
            admin_api, action="cancel", filter={"tab": "dead_letter", "error_class": "timeout"}
        )
        other_integration = create(
            admin_api, action="cancel", filter={"tab": "dead_letter", "integration_id": "int_erp_2"}
        )
        worker()
        for created in (other_class, other_integration):
            assert job(admin_api, created.body["job_id"])["matched"] == 0
        assert {status(stack, m)["pipeline_status"] for m in dead} == {"dead_letter"}

        right = create(admin_api, action="cancel", filter={"tab": "dead_letter", "error_class": "http_5xx"})
        worker()
        assert job(admin_api, right.body["job_id"])["done"] == 2
        assert {status(stack, m)["pipeline_status"] for m in dead} == {"cancelled"}

    def test_cancel_every_waiting_message_deletes_their_schedules(
        self, stack, tenancy, ingest_api, worker, destination, admin_api
    ):
        configure(stack, tenancy, destination, retry_policy=WAIT)
        destination.script(Answer(503))
        waiting = [send(ingest_api, tenancy, {"po_number": f"W-{i}"}) for i in range(3)]
        worker(include_delayed=False)
        assert len(schedules(stack)) == 3

        created = create(admin_api, action="cancel", filter={"tab": "waiting"})
        worker(include_delayed=False)

        assert job(admin_api, created.body["job_id"])["done"] == 3
        assert {status(stack, m)["pipeline_status"] for m in waiting} == {"cancelled"}
        assert schedules(stack) == []


class TestCancelTheJob:
    def test_a_cancelled_job_runs_no_further_page(
        self, stack, tenancy, ingest_api, worker, destination, admin_api, paced
    ):
        ids = dead_lettered(stack, tenancy, ingest_api, worker, destination, 14)
        destination.script(Answer(200))
        created = create(admin_api, action="reprocess", filter={"tab": "dead_letter"})
        [page] = pipeline_messages(stack)
        wiring.bulk_runner().run(BulkPage.model_validate(page))  # the first page: 10 messages

        stopped = admin_api(
            "POST", f"/api/admin/bulk-jobs/{created.body['job_id']}/cancel", query={"tenant_id": "t1"}
        )
        again = admin_api(
            "POST", f"/api/admin/bulk-jobs/{created.body['job_id']}/cancel", query={"tenant_id": "t1"}
        )
        worker()

        assert (stopped.status, stopped.body["state"]) == (200, "cancelled")
        assert (again.status, again.body["state"]) == (200, "cancelled")
        final = job(admin_api, created.body["job_id"])
        assert (final["state"], final["done"]) == ("cancelled", 10)
        statuses = Counter(status(stack, m)["pipeline_status"] for m in ids)
        assert statuses == Counter({"sent": 10, "dead_letter": 4})
        audit = [e["action"] for e in admin_api("GET", "/api/admin/tenants/t1/audit").body["items"]]
        assert audit.count("bulk_job.cancelled") == 1


class TestTheApi:
    def test_jobs_are_listed_newest_first_and_another_tenant_s_job_is_not_found(self, stack, admin_api):
        first = create(admin_api, action="cancel", filter={"tab": "dead_letter"})
        second = create(admin_api, action="reprocess", filter={"tab": "error"})

        listed = admin_api("GET", "/api/admin/bulk-jobs", query={"tenant_id": "t1"})
        elsewhere = admin_api(
            "GET", f"/api/admin/bulk-jobs/{first.body['job_id']}", query={"tenant_id": "t2"}
        )

        assert [j["job_id"] for j in listed.body["items"]] == [second.body["job_id"], first.body["job_id"]]
        assert (elsewhere.status, elsewhere.body["error"]["code"]) == (404, "not_found")
        assert "cursor" not in listed.body["items"][0]

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"action": "delete", "filter": {}}, "action"),
            ({"action": "cancel", "filter": {"tab": "sent"}}, "filter.tab"),
            ({"action": "cancel", "filter": {"by": "external_id"}}, "filter"),
            (
                {
                    "action": "cancel",
                    "filter": {"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
                },
                "filter",
            ),
            ({"action": "cancel", "filter": {"error_class": "HTTP 5xx!"}}, "filter.error_class"),
            ({"action": "cancel", "filter": {}, "everything": True}, "everything"),
        ],
    )
    def test_a_bad_job_is_refused_naming_the_field(self, stack, admin_api, body, field):
        refused = create(admin_api, **body)

        assert (refused.status, refused.body["error"]["code"]) == (400, "validation_error")
        assert field in {d["field"] for d in refused.body["error"]["details"]}
        assert stack.drain_queue() == []

    def test_a_job_reads_as_its_view_without_internals(self, stack, admin_api):
        created = create(
            admin_api, action="cancel", filter={"tab": "dead_letter", "integration_id": "int_erp"}
        )

        shown = job(admin_api, created.body["job_id"])

        assert shown["filter"] == {"tab": "dead_letter", "integration_id": "int_erp"} | dict.fromkeys(
            ("error_class", "since", "until", "q", "by")
        )
        assert not {"cursor", "page_lease_until", "created_label", "created_role"} & set(shown)
        assert shown["created_by"] == "bootstrap-admin"
        assert expire_visibility(stack.queue_url) == 0
