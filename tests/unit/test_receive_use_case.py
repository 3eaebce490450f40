"""receive-message as a use case: the real Ingestor on the in-memory ports (tests/fakes). The
same guarantees tests/integration checks through the handler on moto, in milliseconds."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

import pytest

from hub.domain.idempotency import DedupKind
from hub.domain.ids import new_id
from hub.domain.message import InboundMessage, PipelineStep, StepMessage
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import UnknownMessageTypes
from hub.errors import (
    IdempotencyKeyReused,
    MessagePending,
    NotFound,
    QueueUnavailable,
    ServiceUnavailable,
    StorageUnavailable,
    Unauthorized,
    UnknownMessageType,
)
from hub.ingest.receive import INGEST_DEADLINE_SECONDS, PENDING_WINDOW, ReceiveOutcome
from hub.ports import Claim, NewMessage
from tests.fakes import FakeClock, FakeMessages
from tests.fakes.world import API_KEY, INTEGRATION, KEYED, World

PO: dict[str, Any] = {"po_number": "PO-1", "lines": [{"sku": "A", "qty": 1}]}


@pytest.fixture
def world() -> World:
    # Each reading of the clock moves it on a millisecond: "before" and "after" never tie.
    return World(clock=FakeClock(tick=timedelta(milliseconds=1)))


def message_items(world: World) -> list[dict[str, object]]:
    return [
        item for (pk, sk), item in world.hub.table.items.items() if pk.startswith("MSG#") and sk == "STATUS"
    ]


class TestNewMessage:
    def test_is_stored_enqueued_and_answered_202(self, world: World) -> None:
        outcome = world.receive(PO)

        assert outcome.created
        assert outcome.body() == {
            "message_id": outcome.record.message_id,
            "pipeline_status": "received",
            "deduplicated": False,
        }
        stored = world.record(outcome.record.message_id)
        assert stored.pipeline_status is PipelineStatus.RECEIVED
        assert (stored.tenant_id, stored.integration_id, stored.version, stored.step_seq) == (
            "t1",
            INTEGRATION,
            1,
            0,
        )
        assert world.hub.messages.get_payload(stored.message_id) == (
            '{"lines":[{"qty":1,"sku":"A"}],"po_number":"PO-1"}'
        )
        [published] = world.hub.queue.published
        step = published.step
        assert (step.message_id, step.step, step.seq, step.execution_id) == (
            stored.message_id,
            PipelineStep.PROCESS,
            0,
            stored.execution_id,
        )
        assert published.delay_seconds == 0
        assert stored.entity_key.startswith(f"t1#{INTEGRATION}#{KEYED}#")

    def test_nothing_is_stored_when_the_queue_is_down(self, world: World) -> None:
        world.hub.queue.fail()

        with pytest.raises(QueueUnavailable):
            world.receive(PO)

        assert message_items(world) == []

    def test_a_storage_failure_is_an_unavailable_answer(self, world: World) -> None:
        world.hub.messages.fail_create = True

        with pytest.raises(StorageUnavailable):
            world.receive(PO)

        assert message_items(world) == []

    def test_a_storage_failure_of_the_message_item_leaves_claims_a_resend_takes_over(
        self, world: World
    ) -> None:
        world.hub.messages.fail_store = True
        with pytest.raises(StorageUnavailable):
            world.receive(PO, idempotency_key="k-store")
        world.hub.messages.fail_store = False

        with pytest.raises(MessagePending) as pending:
            world.receive(PO, idempotency_key="k-store")
        assert 1 <= pending.value.retry_after_seconds <= 15
        assert pending.value.headers() == {"Retry-After": str(pending.value.retry_after_seconds)}
        assert message_items(world) == []

        world.clock.advance(PENDING_WINDOW)
        outcome = world.receive(PO, idempotency_key="k-store")

        assert outcome.created
        assert [item["message_id"] for item in message_items(world)] == [outcome.record.message_id]
        assert world.receive(PO, idempotency_key="k-store").deduplicated_by is DedupKind.IDEMPOTENCY_KEY

    def test_a_lost_answer_after_the_commit_is_still_a_202(self, world: World) -> None:
        world.hub.messages.fail_create_after_commit = True

        outcome = world.receive(PO, idempotency_key="k-lost")

        assert outcome.created
        assert [item["message_id"] for item in message_items(world)] == [outcome.record.message_id]

    def test_an_unknown_key_or_integration_is_refused(self, world: World) -> None:
        inbound = InboundMessage(integration_id=INTEGRATION, message_type=KEYED, payload=PO)
        elsewhere = InboundMessage(integration_id="int_nope", message_type=KEYED, payload=PO)

        with pytest.raises(Unauthorized):
            world.ingestor.receive("hub_wrong", inbound, None, "c")
        with pytest.raises(Unauthorized):
            world.ingestor.receive(None, inbound, None, "c")
        with pytest.raises(NotFound):
            world.ingestor.receive(API_KEY, elsewhere, None, "c")
        assert world.hub.queue.published == []


class TestMessageTypes:
    """Issue 10, item 8: a type the integration does not define is refused unless it accepts them."""

    def test_an_undefined_type_is_422_naming_the_defined_ones_and_nothing_is_kept(self, world: World) -> None:
        with pytest.raises(UnknownMessageType) as refused:
            world.receive(PO, message_type="purchase_ordr")

        assert (refused.value.http_status, refused.value.code) == (422, "unknown_message_type")
        assert refused.value.details == {"field": "message_type", "known_types": ["order", "purchase_order"]}
        assert world.hub.queue.published == []
        assert message_items(world) == []

    def test_the_key_is_checked_first(self, world: World) -> None:
        inbound = InboundMessage(integration_id=INTEGRATION, message_type="nope", payload=PO)
        with pytest.raises(Unauthorized):
            world.ingestor.receive("hub_wrong", inbound, None, "c")

    def test_an_integration_that_accepts_them_takes_them_with_the_defaults(self, world: World) -> None:
        world.configure(unknown_message_types=UnknownMessageTypes.ACCEPT)

        outcome = world.receive(PO, message_type="invoice")

        assert outcome.created
        assert world.record(outcome.record.message_id).message_type == "invoice"
        assert outcome.record.entity_key == ""  # no business keys: the defaults
        assert len(world.hub.queue.published) == 1


class TestDeduplication:
    def test_by_idempotency_key(self, world: World) -> None:
        first = world.receive(PO, idempotency_key="order-1")

        again = world.receive(PO, idempotency_key="order-1")

        assert again.deduplicated_by is DedupKind.IDEMPOTENCY_KEY
        assert again.record.message_id == first.record.message_id
        assert again.body()["deduplicated_by"] == "idempotency_key"
        assert len(message_items(world)) == 1
        # The duplicate's first step was published before its store failed: an orphan step.
        assert len(world.hub.queue.published) == 2

    def test_by_fingerprint(self, world: World) -> None:
        first = world.receive(PO)

        again = world.receive(PO)

        assert (again.deduplicated_by, again.record.message_id) == (
            DedupKind.FINGERPRINT,
            first.record.message_id,
        )
        assert len(message_items(world)) == 1

    def test_the_same_key_with_another_request_is_refused(self, world: World) -> None:
        first = world.receive(PO, idempotency_key="order-2")

        with pytest.raises(IdempotencyKeyReused) as raised:
            world.receive({"po_number": "PO-2"}, idempotency_key="order-2")

        assert raised.value.details == {"message_id": first.record.message_id}
        assert len(message_items(world)) == 1

    def test_a_claim_past_its_retention_no_longer_deduplicates(self, world: World) -> None:
        first = world.receive(PO, idempotency_key="order-3")
        world.clock.advance(timedelta(hours=24))

        again = world.receive(PO, idempotency_key="order-3")

        assert again.created
        assert again.record.message_id != first.record.message_id

    def test_a_claim_written_after_the_request_began_is_a_race_winner(self, world: World) -> None:
        winner: list[ReceiveOutcome] = []
        raced = threading.Event()

        class Racing(FakeMessages):
            """Another request stores the same message between this one's start and its claim."""

            def claim(self, new: NewMessage, kind: DedupKind, now: datetime) -> Claim | None:
                if not raced.is_set():
                    raced.set()
                    winner.append(world.receive(PO, idempotency_key="order-4"))
                return super().claim(new, kind, now)

        world.use_messages(Racing(world.hub.table))

        loser = world.receive(PO, idempotency_key="order-4")

        assert loser.deduplicated_by is DedupKind.RACE_WINNER
        assert loser.record.message_id == winner[0].record.message_id
        assert winner[0].created

    def test_a_fingerprint_duplicate_gives_its_key_back(self, world: World) -> None:
        first = world.receive(PO, idempotency_key="k-1")

        again = world.receive(PO, idempotency_key="k-2")  # the same payload under another key
        other = world.receive({"po_number": "PO-9"}, idempotency_key="k-2")

        assert (again.deduplicated_by, again.record.message_id) == (
            DedupKind.FINGERPRINT,
            first.record.message_id,
        )
        assert other.created  # k-2 named no message: it is free for another request

    def test_a_stale_fingerprint_claim_is_taken_over(self, world: World) -> None:
        """A fingerprint claim naming a message whose own fingerprint differs (a claim left by a
        request that ended otherwise) answers nothing: the request takes it over."""
        first = world.receive(PO)
        fp_claim = next(item for (pk, _), item in world.hub.table.items.items() if pk.startswith("FP#"))
        ghost = world.receive({"po_number": "PO-other"})
        fp_claim["message_id"] = ghost.record.message_id  # now names a message with another fingerprint
        world.clock.advance(timedelta(seconds=1))

        again = world.receive(PO)

        assert again.created
        assert again.record.message_id != first.record.message_id


class TestPendingClaims:
    """A claim whose message does not exist yet (its request is still writing, or died): seed 004
    section 7 and issue 29 - 503 + Retry-After within the window, a takeover after it, one winner."""

    def _dead_request(self, world: World, key: str | None = "k-dead") -> None:
        """A request that wrote its claims and died before its message (its message put fails)."""
        world.hub.messages.fail_store = True
        with pytest.raises(StorageUnavailable):
            world.receive(PO, idempotency_key=key)
        world.hub.messages.fail_store = False

    def test_within_the_window_a_resend_is_told_to_wait(self, world: World) -> None:
        self._dead_request(world, key=None)

        with pytest.raises(MessagePending) as pending:
            world.receive(PO)

        assert (pending.value.http_status, pending.value.code) == (503, "message_pending")
        assert message_items(world) == []

    def test_after_the_window_one_resend_takes_over_and_is_stored_once(self, world: World) -> None:
        self._dead_request(world, key=None)
        world.clock.advance(PENDING_WINDOW)

        first = world.receive(PO)
        second = world.receive(PO)

        assert first.created
        assert (second.deduplicated_by, second.record.message_id) == (
            DedupKind.FINGERPRINT,
            first.record.message_id,
        )
        assert len(message_items(world)) == 1

    def test_two_resends_racing_for_a_takeover_make_one_message(self, world: World) -> None:
        self._dead_request(world)
        world.clock.advance(PENDING_WINDOW)
        answers: list[ReceiveOutcome] = []
        racing = threading.Event()

        class Overtaken(FakeMessages):
            """Another resend takes the claim over between this one's read and its takeover."""

            def take_over(self, new: NewMessage, kind: DedupKind, held: Claim, now: datetime) -> Claim | None:
                if not racing.is_set():
                    racing.set()
                    answers.append(world.receive(PO, idempotency_key="k-dead"))
                return super().take_over(new, kind, held, now)

        world.use_messages(Overtaken(world.hub.table))

        loser = world.receive(PO, idempotency_key="k-dead")

        [winner] = answers
        assert winner.created
        assert (loser.deduplicated_by, loser.record.message_id) == (
            DedupKind.RACE_WINNER,
            winner.record.message_id,
        )
        assert len(message_items(world)) == 1

    def test_a_message_is_never_written_after_the_deadline(self, world: World) -> None:
        class Slow(FakeMessages):
            """Claims that take longer than the ingest's deadline to write."""

            def claim(self, new: NewMessage, kind: DedupKind, now: datetime) -> Claim | None:
                world.clock.advance(timedelta(seconds=INGEST_DEADLINE_SECONDS))
                return super().claim(new, kind, now)

        world.use_messages(Slow(world.hub.table))
        with pytest.raises(ServiceUnavailable) as late:
            world.receive(PO, idempotency_key="k-late")
        assert late.value.code == "service_unavailable"
        assert message_items(world) == []

        world.use_messages(world.hub.messages)
        world.clock.advance(PENDING_WINDOW)
        outcome = world.receive(PO, idempotency_key="k-late")

        assert outcome.created
        assert len(message_items(world)) == 1

    def test_concurrent_requests_have_exactly_one_winner(
        self, world: World, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        racers = 4
        barrier = threading.Barrier(racers)
        publish = world.hub.queue.publish

        first_time = threading.local()

        def publish_together(step: StepMessage, delay_seconds: int = 0) -> None:
            # Every request has begun (read its clock) before any of them stores (a resend
            # does not wait again).
            if not getattr(first_time, "passed", False):
                first_time.passed = True
                barrier.wait(timeout=10)
            publish(step, delay_seconds)

        monkeypatch.setattr(world.hub.queue, "publish", publish_together)
        outcomes: list[ReceiveOutcome] = []

        def go() -> None:
            while True:  # a client resends after a 503 (a winner still writing its message;
                # on the shared fake clock, the others' pauses may even run out a winner's deadline)
                try:
                    outcomes.append(world.receive(PO, idempotency_key="race"))
                    return
                except ServiceUnavailable:
                    continue

        threads = [threading.Thread(target=go) for _ in range(racers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)

        assert len(outcomes) == racers
        assert sum(o.created for o in outcomes) == 1
        assert {o.deduplicated_by for o in outcomes if not o.created} <= {
            DedupKind.RACE_WINNER,
            DedupKind.IDEMPOTENCY_KEY,
        }
        assert len({o.record.message_id for o in outcomes}) == 1
        assert len(message_items(world)) == 1


class TestStatus:
    def test_the_owner_reads_its_message(self, world: World) -> None:
        created = world.receive(PO)

        record = world.ingestor.status(API_KEY, created.record.message_id)

        assert record.message_id == created.record.message_id

    def test_a_missing_message_is_not_found(self, world: World) -> None:
        with pytest.raises(NotFound):
            world.ingestor.status(API_KEY, new_id("msg"))
