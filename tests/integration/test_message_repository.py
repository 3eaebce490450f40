"""The DynamoDB message repository and the ingest use case against moto: races, transitions,
claim expiry. Real adapters throughout; concurrency is forced with a barrier, not mocked."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from hub.adapters.dynamo.messages import DynamoMessageRepository
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.adapters.sqs import SqsStepQueue
from hub.config import settings
from hub.domain.idempotency import DedupKind
from hub.domain.message import InboundMessage, MessageRecord, PayloadFormat
from hub.domain.status import PipelineStatus
from hub.errors import InvalidTransition, NotFound, TransitionNotAllowed
from hub.ingest.receive import Ingestor
from hub.ports import NewMessage

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


class BarrierQueue(SqsStepQueue):
    """The real queue, except that every caller waits for the others after publishing its
    first step, right before its storing transaction: all of them then race for the claims."""

    def __init__(self, queue_url: str, barrier: threading.Barrier) -> None:
        super().__init__(queue_url)
        self._barrier = barrier

    def publish(self, *args, **kwargs):
        super().publish(*args, **kwargs)
        self._barrier.wait(timeout=10)


@pytest.mark.parametrize("idempotency_key", ["race-key", None], ids=["with-key", "fingerprint-only"])
def test_concurrent_requests_have_exactly_one_winner(stack, tenancy, idempotency_key):
    racers = 4
    barrier = threading.Barrier(racers)
    ingestor = Ingestor(
        DynamoConfigRepository(stack.table),
        DynamoMessageRepository(stack.table),
        BarrierQueue(stack.queue_url, barrier),
        settings(),
    )
    inbound = InboundMessage(
        integration_id=tenancy.integration_id, message_type="purchase_order", payload={"po_number": "RACE"}
    )
    outcomes = []

    def go() -> None:
        outcomes.append(ingestor.receive(tenancy.key, inbound, idempotency_key, "corr"))

    threads = [threading.Thread(target=go) for _ in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)

    assert len(outcomes) == racers
    assert sum(o.created for o in outcomes) == 1
    assert {o.deduplicated_by for o in outcomes if not o.created} == {DedupKind.RACE_WINNER}
    assert len({o.record.message_id for o in outcomes}) == 1
    assert len(stack.message_items()) == 1
    # Every racer enqueued its step before storing; the losers' steps name messages that were
    # never stored, which the pipeline worker drops.
    steps = stack.drain_queue()
    assert len(steps) == racers
    assert sum(step["message_id"] == outcomes[0].record.message_id for step in steps) == 1


def _new_message(message_id: str, fingerprint: str, expires_at: datetime) -> NewMessage:
    record = MessageRecord(
        message_id=message_id,
        tenant_id="t1",
        integration_id="int_erp",
        message_type="purchase_order",
        pipeline_status=PipelineStatus.RECEIVED,
        received_at=NOW,
        updated_at=NOW,
        correlation_id="c",
        execution_id="exe_1",
        fingerprint=fingerprint,
        payload_sha256="h",
        payload_format=PayloadFormat.JSON,
        payload_bytes=2,
    )
    return NewMessage(
        record=record,
        payload_text="{}",
        idempotency_key_hash="k" * 64,
        request_sha256="r",
        idempotency_expires_at=expires_at,
        fingerprint_expires_at=expires_at,
    )


def test_an_expired_claim_not_yet_removed_by_ttl_no_longer_blocks(stack):
    repo = DynamoMessageRepository(stack.table)
    repo.create(
        _new_message("msg_old", "fp1", expires_at=NOW - timedelta(hours=1)), NOW - timedelta(hours=25)
    )

    repo.create(_new_message("msg_new", "fp1", expires_at=NOW + timedelta(hours=24)), NOW)

    claim = boto3.client("dynamodb").get_item(
        TableName=stack.table, Key={"PK": {"S": "FP#t1#int_erp#fp1"}, "SK": {"S": "CLAIM"}}
    )["Item"]
    assert claim["message_id"]["S"] == "msg_new"


class TestTransitions:
    def _created(self, stack) -> tuple[DynamoMessageRepository, MessageRecord]:
        repo = DynamoMessageRepository(stack.table)
        new = _new_message("msg_t", "fp-t", NOW + timedelta(hours=1))
        repo.create(new, NOW)
        return repo, new.record

    def test_allowed_transition_updates_status_fields_and_index(self, stack):
        repo, record = self._created(stack)
        later = NOW + timedelta(seconds=5)

        updated = repo.transition(
            record, PipelineStatus.ERROR, later, dest_status="503", dest_status_text="busy"
        )

        assert updated.pipeline_status is PipelineStatus.ERROR
        assert updated.dest_status == "503"
        assert updated.updated_at == later
        [item] = stack.message_items()
        assert item["GSI1PK"]["S"] == "TENANT#t1#STATUS#error"
        assert item["GSI1SK"]["S"].startswith("2026-11-29T12:00:05")

    def test_none_removes_a_field(self, stack):
        repo, record = self._created(stack)
        pending = repo.transition(record, PipelineStatus.ERROR, NOW, next_retry_at=NOW)
        assert pending.next_retry_at == NOW
        cleared = repo.transition(pending, PipelineStatus.CANCELLED, NOW, next_retry_at=None)
        assert cleared.next_retry_at is None

    def test_a_stale_step_cannot_regress_a_sent_message(self, stack):
        repo, record = self._created(stack)
        repo.transition(record, PipelineStatus.SENT, NOW, dest_status="200")

        with pytest.raises(InvalidTransition) as raised:
            # The caller still holds the old `received` record: the stored status decides.
            repo.transition(record, PipelineStatus.MAPPED, NOW)

        assert raised.value.details == {"message_id": "msg_t", "from": "sent", "to": "mapped"}
        assert stack.message_items()[0]["pipeline_status"]["S"] == "sent"

    def test_missing_message_is_not_found(self, stack):
        repo, record = self._created(stack)
        ghost = record.model_copy(update={"message_id": "msg_ghost"})
        with pytest.raises(NotFound):
            repo.transition(ghost, PipelineStatus.MAPPED, NOW)

    def test_another_tenant_cannot_move_it_nor_learn_its_status(self, stack):
        repo, record = self._created(stack)
        with pytest.raises(NotFound) as raised:
            repo.transition(record.model_copy(update={"tenant_id": "t2"}), PipelineStatus.MAPPED, NOW)
        assert raised.value.details is None

    def test_a_late_retry_cannot_revive_a_cancelled_message(self, stack):
        repo, record = self._created(stack)
        mapped = repo.transition(record, PipelineStatus.MAPPED, NOW)
        pending = repo.transition(mapped, PipelineStatus.RETRY_PENDING, NOW, retry_count=1)
        repo.transition(pending, PipelineStatus.CANCELLED, NOW)

        with pytest.raises(InvalidTransition) as raised:
            # The scheduled retry still believes the message is retry_pending.
            repo.transition(pending, PipelineStatus.SENT, NOW)

        assert raised.value.details["from"] == "cancelled"
        assert stack.message_items()[0]["pipeline_status"]["S"] == "cancelled"

    def test_a_further_retry_applies_once_even_when_two_copies_decide_it(self, stack):
        repo, record = self._created(stack)
        mapped = repo.transition(record, PipelineStatus.MAPPED, NOW)
        pending = repo.transition(mapped, PipelineStatus.RETRY_PENDING, NOW, retry_count=1)
        later = NOW + timedelta(seconds=30)

        again = repo.transition(pending, PipelineStatus.RETRY_PENDING, later, retry_count=2)
        with pytest.raises(InvalidTransition):
            # A second copy of the same attempt read the same record: it must not count again.
            repo.transition(pending, PipelineStatus.RETRY_PENDING, later, retry_count=2)

        assert again.retry_count == 2
        assert stack.message_items()[0]["retry_count"]["N"] == "2"

    def test_a_transition_outside_the_table_is_refused_before_any_write(self, stack):
        repo, record = self._created(stack)
        sent = repo.transition(record, PipelineStatus.SENT, NOW)
        with pytest.raises(TransitionNotAllowed):
            repo.transition(sent, PipelineStatus.ERROR, NOW)  # a sent message only goes back to received
        assert stack.message_items()[0]["pipeline_status"]["S"] == "sent"

    def test_identity_fields_cannot_be_changed_by_a_transition(self, stack):
        repo, record = self._created(stack)
        with pytest.raises(ValueError, match="tenant_id"):
            repo.transition(record, PipelineStatus.MAPPED, NOW, tenant_id="t2")
