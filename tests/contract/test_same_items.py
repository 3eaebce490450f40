"""The fake and the DynamoDB adapter store the same items: one scenario run on both, the stored
items compared after every step (so a fake that answers right but stores differently - another
key, a None instead of an absent attribute, a string instead of a number - is caught too)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hub.adapters.dynamo import keys
from hub.domain.ids import new_id
from hub.domain.status import PipelineStatus
from hub.pipeline.ports import Outcome, Taken
from tests.contract.backends import Backend
from tests.contract.scenario import DAY, LEASE, NOW, new_message, retry_pending, sent, step_of

LATER = NOW + timedelta(minutes=1)


def stored(backend: Backend, message_id: str, entity: str, key_hash: str, fingerprint: str) -> dict[str, Any]:
    return {
        "message": backend.item(message_id),
        "entity": backend.entity_item(entity),
        "idempotency_claim": backend.raw(keys.idempotency_claim_key("t1", "int_contract", key_hash)),
        "fingerprint_claim": backend.raw(keys.fingerprint_claim_key("t1", "int_contract", fingerprint)),
    }


def test_a_message_through_take_finish_retry_and_operator_moves(both: tuple[Backend, Backend]) -> None:
    message_id, execution_id = new_id("msg"), new_id("exe")
    entity = f"int_contract#purchase_order#{new_id('bk')}"
    key_hash, fingerprint = new_id("key"), new_id("fp")
    new = new_message(
        message_id=message_id, execution_id=execution_id, key_hash=key_hash, fingerprint=fingerprint
    )
    snapshots: list[list[dict[str, Any]]] = [[], []]

    for n, backend in enumerate(both):
        m, x = backend.messages, backend.executions

        def snap(backend: Backend = backend, n: int = n) -> None:
            snapshots[n].append(stored(backend, message_id, entity, key_hash, fingerprint))

        m.create(new, NOW)
        snap()
        record = m.get(message_id)
        assert record is not None
        held = x.take(step_of(record), "run-1", NOW, LEASE)
        assert isinstance(held, Taken)
        snap()
        hold = x.take_entity(entity, "run-1", message_id, NOW, LEASE)
        assert hold is not None
        snap()
        x.release_entity(hold, message_id)
        pending = x.finish(held, retry_pending(), NOW)
        snap()
        again = x.take(step_of(pending, step="deliver"), "run-2", LATER, LEASE)
        assert isinstance(again, Taken)
        x.release(again, LATER)
        snap()
        cancelled = m.cancel(
            pending.model_copy(update={"version": pending.version + 2}), LATER, [{"event": "c"}]
        )
        snap()
        rerun = m.restart(cancelled, "exe_2", LATER, DAY, [{"event": "r"}])
        assert rerun is not None
        snap()
        third = x.take(step_of(rerun), "run-3", LATER, LEASE)
        assert isinstance(third, Taken)
        x.finish(third, Outcome(PipelineStatus.SENT, {"uncertain": None}, sent().log), LATER)
        x.mark_superseded(message_id, "msg_newer")
        snap()
        x.release_admission(message_id, "exe_2", LATER)  # finished: nothing happens
        x.admit(message_id, "exe_3", LATER, DAY)
        snap()

    fake, dynamo = snapshots
    assert len(fake) == len(dynamo) == 9
    for step, (mine, theirs) in enumerate(zip(fake, dynamo, strict=True)):
        assert mine == theirs, f"after step {step}"


def test_a_large_payload_on_a_taken_over_claim(both: tuple[Backend, Backend]) -> None:
    old_id, new_id_ = new_id("msg"), new_id("msg")
    fingerprint = new_id("fp")
    payload = '{"text":"' + "y" * 3000 + '"}'
    items: list[list[dict[str, Any] | None]] = []
    for backend in both:
        backend.messages.create(
            new_message(message_id=old_id, execution_id="exe_o", fingerprint=fingerprint, expires_at=NOW),
            NOW - DAY,
        )
        backend.messages.create(
            new_message(message_id=new_id_, execution_id="exe_n", fingerprint=fingerprint, payload=payload),
            NOW,
        )
        items.append(
            [
                backend.item(new_id_),
                backend.raw(keys.payload_key(new_id_)),
                backend.raw(keys.fingerprint_claim_key("t1", "int_contract", fingerprint)),
            ]
        )

    fake, dynamo = items
    assert fake == dynamo
    assert fake[2] is not None
    assert fake[2]["message_id"] == new_id_
