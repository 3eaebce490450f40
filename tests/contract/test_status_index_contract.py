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


def failed_messages(backend: Backend, tenant_id: str, integrations: list[str]) -> None:
    """One message per entry of `integrations` moved to error, a minute apart in that order."""
    for n, integration_id in enumerate(integrations):
        new = new_message(
            tenant_id=tenant_id, integration_id=integration_id, received_at=NOW + timedelta(minutes=n)
        )
        backend.messages.create(new, NOW + timedelta(minutes=n))
        record = backend.messages.get(new.record.message_id)
        assert record is not None
        backend.messages.transition(record, S.ERROR, NOW + timedelta(minutes=30 + n))


def test_both_count_a_status_up_to_a_cap(both: tuple[Backend, Backend]) -> None:
    tenant_id = new_id("tnt")
    seen = []
    for backend in both:
        failed_messages(backend, tenant_id, ["int_a", "int_b"] * 3 + ["int_a"])
        # Other statuses and other tenants' messages are not counted.
        failed_messages(backend, new_id("tnt"), ["int_a"])
        backend.messages.create(new_message(tenant_id=tenant_id), NOW)
        index = backend.status_index

        counted = {
            "all": index.count_by_status(tenant_id, S.ERROR, 100),
            "capped": index.count_by_status(tenant_id, S.ERROR, 5),
            "at_the_cap": index.count_by_status(tenant_id, S.ERROR, 7),
            "int_b": index.count_by_status(tenant_id, S.ERROR, 100, "int_b"),
            "int_b_capped": index.count_by_status(tenant_id, S.ERROR, 2, "int_b"),
            "none_waiting": index.count_by_status(tenant_id, S.RETRY_PENDING, 100),
        }
        seen.append(counted)

        assert {name: (c.count, c.at_least) for name, c in counted.items()} == {
            "all": (7, False),
            "capped": (5, True),
            # A count at the cap means "that many or more".
            "at_the_cap": (7, True),
            "int_b": (3, False),
            "int_b_capped": (2, True),
            "none_waiting": (0, False),
        }
    fake, dynamo = seen
    assert fake == dynamo


def test_a_filtered_count_stops_at_its_read_bound(backend: Backend) -> None:
    """With a filter the count reads at most ten times its cap of rows (oldest change first):
    a rare integration behind them is then counted as "at least" what was seen."""
    tenant_id = new_id("tnt")
    failed_messages(backend, tenant_id, ["int_a"] * 10 + ["int_b"] * 2)

    bounded = backend.status_index.count_by_status(tenant_id, S.ERROR, 1, "int_b")
    whole = backend.status_index.count_by_status(tenant_id, S.ERROR, 3, "int_b")

    assert (bounded.count, bounded.at_least) == (0, True)
    assert (whole.count, whole.at_least) == (2, False)
