"""The admin queue tabs (issue 13): the fake index and the DynamoDB adapter list the same rows
in the same order, page the same way and refuse the same cursors."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from hub.domain.ids import new_id
from hub.domain.message import MessageRecord
from hub.domain.status import PipelineStatus
from hub.errors import CursorMismatch, ValidationFailed
from hub.ports import QueueFilter
from tests.contract.backends import Backend
from tests.contract.scenario import NOW, new_message

S = PipelineStatus


def world(backend: Backend, tenant_id: str, ids: list[str]) -> list[MessageRecord]:
    """Six messages a minute apart, alternating integrations; every third one moved to error
    (a minute after the last receipt, in receipt order)."""
    records = []
    for n, message_id in enumerate(ids):
        new = new_message(
            message_id=message_id,
            tenant_id=tenant_id,
            integration_id="int_a" if n % 2 == 0 else "int_b",
            received_at=NOW + timedelta(minutes=n),
        )
        backend.messages.create(new, NOW + timedelta(minutes=n))
        record = backend.messages.get(message_id)
        assert record is not None
        if n % 3 == 0:
            record = backend.messages.transition(record, S.ERROR, NOW + timedelta(minutes=10 + n))
        records.append(record)
    return records


def pages(list_page: Any, limit: int, **filters: Any) -> tuple[list[str], int]:
    ids, cursor, count = [], None, 0
    while True:
        page = list_page(limit, cursor, QueueFilter(**filters))
        count += 1
        ids += [row["message_id"] for row in page.rows]
        cursor = page.next_cursor
        if cursor is None:
            return ids, count


def test_both_list_page_and_filter_the_same(both: tuple[Backend, Backend]) -> None:
    tenant_id = new_id("tnt")
    ids = [new_id("msg") for _ in range(6)]
    seen: list[dict[str, Any]] = []
    for backend in both:
        records = world(backend, tenant_id, ids)
        index = backend.status_index

        def received(limit: int, cursor: str | None, filters: QueueFilter, index: Any = index) -> Any:
            return index.list_received(tenant_id, limit, cursor, filters)

        def errors(limit: int, cursor: str | None, filters: QueueFilter, index: Any = index) -> Any:
            return index.list_by_status(tenant_id, S.ERROR, limit, cursor, filters)

        first = index.list_received(tenant_id, 50, None)
        result: dict[str, Any] = {
            "rows": first.rows,
            "all": pages(received, 4),
            "int_b": pages(received, 2, integration_id="int_b"),
            "window": pages(received, 2, since=NOW + timedelta(minutes=1), until=NOW + timedelta(minutes=4)),
            "errors": pages(errors, 1),
            "errors_since": pages(errors, 5, since=NOW + timedelta(minutes=13)),
            "row_of_record": index.row(records[0]),
        }
        seen.append(result)

        assert [row["message_id"] for row in first.rows] == list(reversed(ids))
        assert [row["pipeline_status"] for row in first.rows] == ["received", "received", "error"] * 2
        assert result["all"] == (list(reversed(ids)), 2)
        assert result["int_b"][0] == [ids[5], ids[3], ids[1]]
        assert result["window"][0] == [ids[3], ids[2], ids[1]]
        assert result["errors"][0] == [ids[3], ids[0]]
        assert result["errors_since"] == ([ids[3]], 1)
        # The row an action answers with is the row the listing shows.
        [listed] = [row for row in errors(5, None, QueueFilter()).rows if row["message_id"] == ids[0]]
        assert result["row_of_record"] == listed
    fake, dynamo = seen
    assert fake == dynamo


@pytest.mark.parametrize(
    ("filters", "error"),
    [
        ({"integration_id": "int_b"}, CursorMismatch),
        ({"since": NOW}, CursorMismatch),
        ({}, None),
    ],
)
def test_a_cursor_is_bound_to_its_filters(backend: Backend, filters: dict[str, Any], error: Any) -> None:
    tenant_id = new_id("tnt")
    world(backend, tenant_id, [new_id("msg") for _ in range(3)])
    cursor = backend.status_index.list_received(tenant_id, 1, None).next_cursor
    assert cursor

    if error is None:
        assert backend.status_index.list_received(tenant_id, 5, cursor, QueueFilter(**filters)).rows
    else:
        with pytest.raises(error):
            backend.status_index.list_received(tenant_id, 5, cursor, QueueFilter(**filters))
    with pytest.raises(ValidationFailed):
        backend.status_index.list_by_status(tenant_id, S.ERROR, 5, cursor)  # another index's
    with pytest.raises(ValidationFailed):
        backend.status_index.list_received(new_id("tnt"), 5, cursor)  # another tenant's
