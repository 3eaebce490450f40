"""Building blocks of the contract tests: a message to create, its first step, fixed times, fresh
ids, and a listing read page by page."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hub.domain.ids import new_id
from hub.domain.message import MessageRecord, PayloadFormat, PipelineStep, StepMessage
from hub.domain.status import PipelineStatus
from hub.errors import ValidationFailed
from hub.pipeline import rules
from hub.pipeline.ports import Outcome, Taken
from hub.ports import NewMessage
from tests.contract.backends import Backend

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LEASE = rules.LOCK_LEASE
DAY = timedelta(hours=24)


def fresh(prefix: str) -> str:
    """An id no other test uses (the DynamoDB side shares one table per module)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def all_pages(list_page: Callable[[str | None], Any], field: str, limit: int) -> list[Any]:
    """Every item of a listing (`list_page(cursor)`, its items in `field`), page by page, each
    page at most `limit`, until it gives no cursor."""
    seen: list[Any] = []
    cursor = None
    while True:
        page = list_page(cursor)
        items = getattr(page, field)
        assert len(items) <= limit
        seen += items
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


def refuses_foreign_cursor(list_page: Callable[[Any, str | None], Any], mine: str | None, other: str) -> None:
    """A cursor `other`'s listing gave out (`list_page(owner, cursor)`, a page of one) is
    ValidationFailed in `mine`'s (`other` must hold more than one item)."""
    foreign = list_page(other, None).next_cursor
    assert foreign is not None
    with pytest.raises(ValidationFailed):
        list_page(mine, foreign)


def new_message(
    *,
    message_id: str | None = None,
    integration_id: str = "int_contract",
    fingerprint: str | None = None,
    key_hash: str | None = None,
    request_sha256: str = "req-1",
    payload: str = '{"po_number":"PO-1"}',
    expires_at: datetime = NOW + DAY,
    tenant_id: str = "t1",
    execution_id: str | None = None,
    received_at: datetime = NOW,
    payload_expires_at: datetime | None = None,
) -> NewMessage:
    message_id = message_id or new_id("msg")
    record = MessageRecord(
        message_id=message_id,
        tenant_id=tenant_id,
        integration_id=integration_id,
        message_type="purchase_order",
        pipeline_status=PipelineStatus.RECEIVED,
        received_at=received_at,
        updated_at=received_at,
        correlation_id="corr",
        execution_id=execution_id or new_id("exe"),
        fingerprint=fingerprint or f"fp-{message_id}",
        payload_sha256="sha",
        payload_format=PayloadFormat.JSON,
        payload_bytes=len(payload),
        idempotency_key="key" if key_hash else None,
    )
    return NewMessage(
        record=record,
        payload_text=payload,
        idempotency_key_hash=key_hash,
        request_sha256=request_sha256,
        idempotency_expires_at=expires_at,
        fingerprint_expires_at=expires_at,
        payload_expires_at=payload_expires_at,
    )


def created(backend: Backend, now: datetime = NOW, **fields: Any) -> MessageRecord:
    """A stored message (status `received`, version 1, step_seq 0), as read back."""
    new = new_message(**fields)
    backend.messages.create(new, now)
    record = backend.messages.get(new.record.message_id)
    assert record is not None
    return record


def step_of(record: MessageRecord, **changes: Any) -> StepMessage:
    """The step the message expects now (its execution and sequence)."""
    step = StepMessage(
        message_id=record.message_id,
        tenant_id=record.tenant_id,
        integration_id=record.integration_id,
        step=PipelineStep.PROCESS,
        execution_id=record.execution_id,
        correlation_id=record.correlation_id,
        publish_id=new_id("pub"),
        seq=record.step_seq,
    )
    return step.model_copy(update=changes)


def taken(backend: Backend, record: MessageRecord, owner: str = "run-1", now: datetime = NOW) -> Taken:
    held = backend.executions.take(step_of(record), owner, now, LEASE)
    assert isinstance(held, Taken), held
    return held


def sent(entries: int = 1) -> Outcome:
    return Outcome(
        PipelineStatus.SENT,
        {"dest_status": "200", "dest_status_text": "ok"},
        [{"step": "sent", "status": "success", "n": n} for n in range(entries)],
    )


def retry_pending(retry_count: int = 1, at: datetime = NOW + timedelta(minutes=1)) -> Outcome:
    return Outcome(
        PipelineStatus.RETRY_PENDING,
        {"retry_count": retry_count, "next_retry_at": at, "last_retry_error_class": "http_5xx"},
        [{"step": "deliver", "status": "failure", "error_class": "http_5xx"}],
        closes=False,
    )


def pending_message(backend: Backend) -> MessageRecord:
    """A message waiting for its first retry (execution open, no lease)."""
    record = created(backend)
    return backend.executions.finish(taken(backend, record), retry_pending(), NOW)
