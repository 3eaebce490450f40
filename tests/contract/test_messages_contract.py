"""The message repository (ingest's claims and message item, reads, operator moves): the same answers from the
in-memory fake and from the DynamoDB adapter."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from hub.adapters.dynamo.table import epoch
from hub.domain.idempotency import DedupKind
from hub.domain.ids import new_id
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import ApiKey
from hub.errors import ClaimTaken, InvalidTransition, LeaseHeld, NotFound, TransitionNotAllowed
from hub.pipeline.ports import Taken
from hub.ports import Claim
from tests.contract.backends import Backend
from tests.contract.scenario import (
    DAY,
    LEASE,
    NOW,
    created,
    new_message,
    pending_message,
    retry_pending,
    sent,
    step_of,
    taken,
)

LATER = NOW + timedelta(minutes=1)


def claims_of(raised: pytest.ExceptionInfo[ClaimTaken]) -> list[Claim]:
    claims = [c for c in raised.value.claims if isinstance(c, Claim)]
    assert len(claims) == len(raised.value.claims)
    return claims


class TestCreate:
    def test_stores_the_message_received_and_its_payload_on_the_fingerprint_claim(
        self, backend: Backend
    ) -> None:
        record = created(backend)

        assert record.pipeline_status is PipelineStatus.RECEIVED
        assert (record.version, record.step_seq, record.active_at) == (1, 0, epoch(NOW))
        assert record.completed_at is None
        assert backend.messages.get_payload(record.message_id, NOW) == '{"po_number":"PO-1"}'
        assert backend.executions.payload(record, NOW) == '{"po_number":"PO-1"}'
        assert backend.messages.message_log(record.message_id) == []
        item = backend.item(record.message_id)
        assert item is not None
        assert "payload" not in item
        assert item["fingerprint"] == record.fingerprint
        assert "GSI1PK" not in item
        # Defaults and ingest-only values are not stored.
        assert not {"retry_count", "uncertain", "payload_sha256", "lease_owner"} & set(item)

    def test_the_fingerprint_claim_outlives_its_window_to_keep_the_payload(self, backend: Backend) -> None:
        fingerprint = new_id("fp")
        first = new_message(fingerprint=fingerprint, payload_expires_at=NOW + 7 * DAY)
        backend.messages.create(first, NOW)

        # After the window a new message with the same payload takes the claim over; the first
        # still reads its payload there (the same bytes: the claim is content-addressed).
        second = new_message(fingerprint=fingerprint, payload_expires_at=NOW + 8 * DAY)
        backend.messages.create(second, NOW + DAY)

        assert backend.messages.get_payload(first.record.message_id, NOW) == '{"po_number":"PO-1"}'
        assert backend.messages.get_payload(second.record.message_id, NOW) == '{"po_number":"PO-1"}'

    def test_a_message_stored_before_issue_29_still_reads_its_payload(self, backend: Backend) -> None:
        record = created(backend)
        legacy = backend.item(record.message_id)
        assert legacy is not None
        backend.put_item({**legacy, "payload": '{"old":1}'})

        assert backend.messages.get_payload(record.message_id, NOW) == '{"old":1}'

    def test_missing_reads(self, backend: Backend) -> None:
        ghost = new_message()

        assert backend.messages.get(ghost.record.message_id) is None
        assert backend.messages.get_payload(ghost.record.message_id, NOW) is None
        assert backend.messages.message_log(ghost.record.message_id) == []
        assert backend.executions.payload(ghost.record, NOW) is None
        assert backend.executions.live_execution(ghost.record.message_id, NOW) is None

    def test_a_taken_idempotency_claim_names_the_earlier_message(self, backend: Backend) -> None:
        key = new_id("key")
        first = created(backend, key_hash=key, request_sha256="req-A")
        loser = new_message(key_hash=key, request_sha256="req-B")

        with pytest.raises(ClaimTaken) as raised:
            backend.messages.create(loser, LATER)

        [claim] = claims_of(raised)
        assert claim == Claim(
            kind=DedupKind.IDEMPOTENCY_KEY,
            message_id=first.message_id,
            fingerprint=first.fingerprint,
            request_sha256="req-A",
            claimed_at=NOW,
        )
        assert backend.messages.get(loser.record.message_id) is None
        # The loser's fingerprint claim was released: nothing names its message.
        assert backend.messages.claim(loser, DedupKind.FINGERPRINT, LATER) is None

    def test_a_taken_fingerprint_claim_names_the_earlier_message_and_the_key_claim_is_released(
        self, backend: Backend
    ) -> None:
        fingerprint = new_id("fp")
        first = created(backend, fingerprint=fingerprint)
        loser = new_message(fingerprint=fingerprint, key_hash=new_id("key"))

        with pytest.raises(ClaimTaken) as raised:
            backend.messages.create(loser, LATER)

        [claim] = claims_of(raised)
        assert (claim.kind, claim.message_id, claim.claimed_at) == (
            DedupKind.FINGERPRINT,
            first.message_id,
            NOW,
        )
        assert backend.messages.get(loser.record.message_id) is None
        assert backend.messages.claim(loser, DedupKind.IDEMPOTENCY_KEY, LATER) is None

    def test_a_claim_is_taken_over_only_while_it_is_unchanged(self, backend: Backend) -> None:
        fingerprint = new_id("fp")
        dead = new_message(fingerprint=fingerprint)
        assert backend.messages.claim(dead, DedupKind.FINGERPRINT, NOW) is None  # no message follows
        first, second = new_message(fingerprint=fingerprint), new_message(fingerprint=fingerprint)
        held = backend.messages.claim(first, DedupKind.FINGERPRINT, LATER)
        assert held is not None
        assert held.message_id == dead.record.message_id
        assert backend.messages.claim(second, DedupKind.FINGERPRINT, LATER) == held

        assert backend.messages.take_over(first, DedupKind.FINGERPRINT, held, LATER) is None
        now_held = backend.messages.take_over(second, DedupKind.FINGERPRINT, held, LATER)

        assert now_held is not None
        assert now_held.message_id == first.record.message_id

    def test_release_deletes_only_a_claim_still_naming_the_message(self, backend: Backend) -> None:
        key = new_id("key")
        mine, other = new_message(key_hash=key), new_message(key_hash=key)
        assert backend.messages.claim(mine, DedupKind.IDEMPOTENCY_KEY, NOW) is None

        backend.messages.release(other, DedupKind.IDEMPOTENCY_KEY)  # names `mine`: kept
        held = backend.messages.claim(other, DedupKind.IDEMPOTENCY_KEY, NOW)
        backend.messages.release(mine, DedupKind.IDEMPOTENCY_KEY)

        assert held is not None
        assert held.message_id == mine.record.message_id
        assert backend.messages.claim(other, DedupKind.IDEMPOTENCY_KEY, NOW) is None

    def test_both_claims_taken_name_the_earlier_message(self, backend: Backend) -> None:
        key, fingerprint = new_id("key"), new_id("fp")
        first = created(backend, key_hash=key, fingerprint=fingerprint)

        with pytest.raises(ClaimTaken) as raised:
            backend.messages.create(new_message(key_hash=key, fingerprint=fingerprint), LATER)

        claims = claims_of(raised)
        assert [(c.kind, c.message_id) for c in claims] == [
            (DedupKind.IDEMPOTENCY_KEY, first.message_id),
            (DedupKind.FINGERPRINT, first.message_id),
        ]

    def test_an_expired_claim_is_taken_over(self, backend: Backend) -> None:
        key, fingerprint = new_id("key"), new_id("fp")
        old = new_message(key_hash=key, fingerprint=fingerprint, expires_at=NOW)
        backend.messages.create(old, NOW - DAY)
        new = new_message(key_hash=key, fingerprint=fingerprint, request_sha256="req-new")

        backend.messages.create(new, NOW)  # expires_at == now: expired

        for kind in (DedupKind.IDEMPOTENCY_KEY, DedupKind.FINGERPRINT):
            held = backend.messages.claim(new_message(key_hash=key, fingerprint=fingerprint), kind, NOW)
            assert held is not None
            assert held.message_id == new.record.message_id

    def test_a_claim_counts_until_its_window_ends(self, backend: Backend) -> None:
        fingerprint = new_id("fp")
        backend.messages.create(new_message(fingerprint=fingerprint, expires_at=NOW + DAY), NOW)
        probe = new_message(fingerprint=fingerprint)

        live = backend.messages.claim(probe, DedupKind.FINGERPRINT, NOW + DAY - timedelta(seconds=1))
        expired = backend.messages.claim(probe, DedupKind.FINGERPRINT, NOW + DAY)

        assert live is not None
        assert expired is None

    def test_concurrent_creates_have_exactly_one_winner(self, backend: Backend) -> None:
        fingerprint = new_id("fp")
        racers = 5
        barrier = threading.Barrier(racers)
        news = [new_message(fingerprint=fingerprint) for _ in range(racers)]
        results: list[str] = []

        def race(n: int) -> None:
            barrier.wait(timeout=10)
            try:
                backend.messages.create(news[n], NOW)
                results.append("created")
            except ClaimTaken:
                results.append("claim_taken")

        threads = [threading.Thread(target=race, args=(n,)) for n in range(racers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)

        assert sorted(results) == ["claim_taken"] * (racers - 1) + ["created"]
        assert sum(backend.messages.get(n.record.message_id) is not None for n in news) == 1

    def test_get_for_key_reads_the_api_key_and_the_message(self, backend: Backend) -> None:
        record = created(backend)
        key_hash = new_id("hash")
        backend.config.put_api_key(ApiKey(key_id="k1", tenant_id="t1", key_hash=key_hash))

        api_key, found = backend.messages.get_for_key(key_hash, record.message_id)
        nobody, missing = backend.messages.get_for_key(new_id("hash"), new_id("msg"))

        assert api_key == ApiKey(key_id="k1", tenant_id="t1", key_hash=key_hash)
        assert found == record
        assert (nobody, missing) == (None, None)


class TestTransition:
    def test_moves_the_status_and_bumps_the_version(self, backend: Backend) -> None:
        record = created(backend)

        moved = backend.messages.transition(
            record, PipelineStatus.ERROR, LATER, log=[{"event": "x"}], dest_status="503"
        )

        assert (moved.pipeline_status, moved.version, moved.step_seq) == (PipelineStatus.ERROR, 2, 0)
        assert (moved.dest_status, moved.updated_at) == ("503", LATER)
        item = backend.item(record.message_id)
        assert item is not None
        assert item["GSI1PK"] == "TENANT#t1#STATUS#error"
        assert item["GSI1SK"] == f"2026-11-30T12:01:00.000000Z#{record.message_id}"
        # The move's stamp (issue 13): the new status and the version written, on its entry.
        assert item["log"] == [{"at": "2026-11-30T12:01:00.000000Z", "event": "x", "to": "error", "v": 2}]
        assert item["version"] == 2
        # GSI2 (every message by receipt: tenant id, received_at) was set at creation.
        assert item["GSI2PK"] == "t1"
        assert "GSI2SK" not in item

    def test_outside_the_table_is_refused_with_no_write(self, backend: Backend) -> None:
        record = created(backend)
        done = backend.messages.transition(record, PipelineStatus.SENT, NOW)
        before = backend.item(record.message_id)

        with pytest.raises(TransitionNotAllowed) as raised:
            backend.messages.transition(done, PipelineStatus.ERROR, LATER)

        assert raised.value.details == {"message_id": record.message_id, "from": "sent", "to": "error"}
        assert backend.item(record.message_id) == before

    def test_identity_fields_are_not_changeable(self, backend: Backend) -> None:
        record = created(backend)
        with pytest.raises(ValueError, match="tenant_id"):
            backend.messages.transition(record, PipelineStatus.MAPPED, NOW, tenant_id="t2")

    def test_a_stale_record_is_an_invalid_transition(self, backend: Backend) -> None:
        record = created(backend)
        backend.messages.transition(record, PipelineStatus.SENT, NOW)

        with pytest.raises(InvalidTransition) as raised:
            backend.messages.transition(record, PipelineStatus.MAPPED, LATER)

        assert raised.value.details == {"message_id": record.message_id, "from": "sent", "to": "mapped"}

    def test_a_missing_or_foreign_message_is_not_found(self, backend: Backend) -> None:
        record = created(backend)

        with pytest.raises(NotFound):
            backend.messages.transition(
                record.model_copy(update={"message_id": new_id("msg")}), PipelineStatus.MAPPED, NOW
            )
        with pytest.raises(NotFound):
            backend.messages.transition(
                record.model_copy(update={"tenant_id": "t2"}), PipelineStatus.MAPPED, NOW
            )

    def test_out_of_retry_pending_the_version_must_match(self, backend: Backend) -> None:
        pending = pending_message(backend)

        again = backend.messages.transition(pending, PipelineStatus.RETRY_PENDING, LATER, retry_count=2)
        with pytest.raises(InvalidTransition):
            backend.messages.transition(pending, PipelineStatus.RETRY_PENDING, LATER, retry_count=2)

        assert (again.retry_count, again.version) == (2, pending.version + 1)

    def test_none_removes_a_field(self, backend: Backend) -> None:
        pending = pending_message(backend)

        cleared = backend.messages.transition(pending, PipelineStatus.ERROR, LATER, next_retry_at=None)

        assert cleared.next_retry_at is None
        item = backend.item(pending.message_id)
        assert item is not None
        assert "next_retry_at" not in item


class TestLogBound:
    def test_operator_moves_keep_the_last_twenty_entries(self, backend: Backend) -> None:
        record = created(backend)
        for n in range(21):
            record = backend.messages.transition(
                record, PipelineStatus.RECEIVED, NOW, log=[{"event": "x", "n": n}]
            )

        log = backend.messages.message_log(record.message_id)

        assert [e["n"] for e in log] == list(range(1, 21))


class TestRestart:
    def test_refused_while_an_execution_is_alive(self, backend: Backend) -> None:
        record = created(backend)

        assert backend.messages.restart(record, "exe_2", LATER, DAY) is None
        stored = backend.messages.get(record.message_id)
        assert stored == record

    def test_refused_while_a_retry_waits(self, backend: Backend) -> None:
        pending = pending_message(backend)

        assert backend.messages.restart(pending, "exe_2", LATER, DAY) is None

    def test_after_completion_starts_a_new_execution(self, backend: Backend) -> None:
        record = created(backend)
        done = backend.executions.finish(taken(backend, record), sent(), NOW)

        rerun = backend.messages.restart(done, "exe_2", LATER, DAY, [{"event": "message.reprocessed"}])

        assert rerun is not None
        assert rerun.pipeline_status is PipelineStatus.RECEIVED
        assert (rerun.execution_id, rerun.execution_started_at) == ("exe_2", LATER)
        assert (rerun.version, rerun.step_seq, rerun.completed_at) == (done.version + 1, 2, None)
        assert (rerun.dest_status, rerun.dest_status_text, rerun.retry_count) == (None, None, 0)
        assert rerun.active_at == epoch(LATER)
        assert backend.executions.live_execution(record.message_id, LATER) == "exe_2"
        assert [e.get("event") for e in backend.messages.message_log(record.message_id)] == [
            None,
            "message.reprocessed",
        ]
        # The new execution's first step takes the message.
        assert isinstance(backend.executions.take(step_of(rerun), "run-2", LATER, LEASE), Taken)

    def test_after_a_day_idle_takes_over(self, backend: Backend) -> None:
        record = created(backend)

        rerun = backend.messages.restart(record, "exe_2", NOW + DAY + timedelta(seconds=1), DAY)

        assert rerun is not None
        assert rerun.execution_id == "exe_2"

    def test_a_moved_status_is_an_invalid_transition(self, backend: Backend) -> None:
        record = created(backend)
        backend.executions.finish(taken(backend, record), sent(), NOW)

        with pytest.raises(InvalidTransition):
            backend.messages.restart(record, "exe_2", LATER, DAY)  # still believes `received`


class TestCancel:
    def test_cancels_a_waiting_retry_and_closes_its_execution(self, backend: Backend) -> None:
        pending = pending_message(backend)

        cancelled = backend.messages.cancel(pending, LATER, [{"event": "message.retry_cancelled"}])

        assert cancelled.pipeline_status is PipelineStatus.CANCELLED
        assert (cancelled.next_retry_at, cancelled.completed_at) == (None, LATER)
        assert (cancelled.version, cancelled.step_seq) == (pending.version + 1, pending.step_seq + 1)
        item = backend.item(pending.message_id)
        assert item is not None
        assert not {"GSI1PK", "GSI1SK", "next_retry_at", "lease_owner"} & set(item)
        assert item["log"][-1] == {
            "at": "2026-11-30T12:01:00.000000Z",
            "event": "message.retry_cancelled",
            "to": "cancelled",
            "v": pending.version + 1,
        }
        assert item["version"] == pending.version + 1
        assert backend.executions.live_execution(pending.message_id, LATER) is None

    def test_refused_with_lease_held_while_a_step_runs(self, backend: Backend) -> None:
        pending = pending_message(backend)
        held = backend.executions.take(step_of(pending, step="deliver"), "run-2", NOW, LEASE)
        assert isinstance(held, Taken)

        with pytest.raises(LeaseHeld):
            backend.messages.cancel(held.record, LATER)

        stored = backend.messages.get(pending.message_id)
        assert stored is not None
        assert stored.pipeline_status is PipelineStatus.RETRY_PENDING

    def test_allowed_once_the_lease_expired(self, backend: Backend) -> None:
        pending = pending_message(backend)
        held = backend.executions.take(step_of(pending, step="deliver"), "run-2", NOW, LEASE)
        assert isinstance(held, Taken)

        cancelled = backend.messages.cancel(held.record, NOW + LEASE + timedelta(seconds=1))

        assert cancelled.pipeline_status is PipelineStatus.CANCELLED
        assert cancelled.lease_owner is None

    def test_refused_as_an_invalid_transition_when_the_status_moved(self, backend: Backend) -> None:
        pending = pending_message(backend)
        held = backend.executions.take(step_of(pending, step="deliver"), "run-2", NOW, LEASE)
        assert isinstance(held, Taken)
        backend.executions.finish(held, retry_pending(retry_count=2), NOW)  # lease gone, status same

        with pytest.raises(InvalidTransition):
            backend.messages.cancel(pending, LATER)  # version moved on
        dead = backend.messages.get(pending.message_id)
        assert dead is not None
        dead = backend.messages.transition(dead, PipelineStatus.DEAD_LETTER, LATER)
        with pytest.raises(InvalidTransition) as raised:
            backend.messages.cancel(pending, LATER)

        assert raised.value.details == {
            "message_id": pending.message_id,
            "from": "dead_letter",
            "to": "cancelled",
        }

    def test_outside_the_table_is_refused_with_no_write(self, backend: Backend) -> None:
        record = created(backend)
        done = backend.executions.finish(taken(backend, record), sent(), NOW)
        before = backend.item(record.message_id)

        with pytest.raises(TransitionNotAllowed):
            backend.messages.cancel(done, LATER)

        assert backend.item(record.message_id) == before

    def test_a_missing_message_is_not_found(self, backend: Backend) -> None:
        pending = pending_message(backend)
        with pytest.raises(NotFound):
            backend.messages.cancel(pending.model_copy(update={"message_id": new_id("msg")}), LATER)
