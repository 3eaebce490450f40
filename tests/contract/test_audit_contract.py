"""The audit trail's contract (hub.admin.audit.AuditTrail), run against the in-memory fake
(tests/fakes/audit.py) and the DynamoDB adapter on moto: an entry reads back as recorded (its
id given, or one the store gives it), a scope's log newest first in pages, a cursor only its own
scope's listing takes back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hub.adapters.dynamo.audit import DynamoAuditTrail
from hub.admin.audit import AuditEntry
from tests.contract.backends import BACKENDS, either
from tests.contract.scenario import all_pages, fresh, refuses_foreign_cursor
from tests.fakes.audit import FakeAuditTrail

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture(params=BACKENDS)
def trail(request: pytest.FixtureRequest) -> FakeAuditTrail | DynamoAuditTrail:
    return either(request, FakeAuditTrail, DynamoAuditTrail)


def entry(scope: str, n: int, **fields) -> AuditEntry:
    return AuditEntry(
        scope=scope,
        actor_token_id="adt_1",
        actor_label="ops",
        action=f"integration.updated.{n}",
        target={"integration_id": f"int_{n}"},
        at=NOW + timedelta(seconds=n),
        **fields,
    )


def read_all(trail, scope: str, limit: int) -> list[AuditEntry]:
    return all_pages(lambda cursor: trail.list_entries(scope, limit, cursor), "entries", limit)


def test_an_entry_reads_back_as_recorded(trail):
    scope = fresh("t")
    views = {"before": {"version": 1, "limits": None, "rate": 2.5}, "after": {"version": 2, "tags": ["a"]}}
    trail.record(entry(scope, 0, entry_id="aud_given", **views))
    trail.record(entry(scope, 1))

    given, generated = reversed(read_all(trail, scope, 10))

    assert given == entry(scope, 0, entry_id="aud_given", **views)
    assert generated.entry_id.startswith("aud_")
    assert generated == entry(scope, 1, entry_id=generated.entry_id)


def test_a_scopes_log_is_newest_first_in_pages(trail):
    scope = fresh("t")
    for n in (2, 0, 4, 1, 3):  # recorded out of order: listed by time
        trail.record(entry(scope, n))
    trail.record(entry(fresh("t"), 9))

    assert [e.action for e in read_all(trail, scope, 2)] == [
        f"integration.updated.{n}" for n in (4, 3, 2, 1, 0)
    ]
    assert read_all(trail, fresh("t"), 2) == []


def test_a_cursor_of_another_scope_is_refused(trail):
    other = fresh("t")
    for n in range(3):
        trail.record(entry(other, n))

    refuses_foreign_cursor(lambda scope, cursor: trail.list_entries(scope, 1, cursor), fresh("t"), other)
