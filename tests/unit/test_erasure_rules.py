"""Erasure by value as a use case (hub.admin.erasure) over in-memory ports: at most a batch per
call, `more` while the search has more, rows already gone skipped, one audit entry per call with
ids only, a viewer refused and another tenant's message not found; and the one value an erasure
by value needs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from hub.admin import erasure as rules
from hub.admin.access import BOOTSTRAP, Principal, Role
from hub.admin.audit import Audit, AuditEntry
from hub.admin.erasure import ErasedBy, Erasure
from hub.admin.search import SearchKind, SearchPage
from hub.api.admin.erasures import ErasureRequest
from hub.api.http import validated
from hub.domain.message import MessageRecord, PayloadFormat
from hub.domain.status import PipelineStatus
from hub.domain.tenancy import Tenant
from hub.errors import Forbidden, NotFound, ValidationFailed

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def record(message_id: str, tenant_id: str = "t1") -> MessageRecord:
    return MessageRecord(
        message_id=message_id,
        tenant_id=tenant_id,
        integration_id="int_erp",
        message_type="purchase_order",
        pipeline_status=PipelineStatus.SENT,
        received_at=NOW,
        updated_at=NOW,
        external_id="pessoa-42",
        correlation_id="corr",
        execution_id="exe_1",
        payload_format=PayloadFormat.JSON,
        payload_bytes=10,
    )


class Store:
    def __init__(self, *records: MessageRecord) -> None:
        self.records = {r.message_id: r for r in records}
        self.erased: list[str] = []

    def message(self, message_id: str) -> MessageRecord | None:
        return self.records.get(message_id)

    def erase(self, found: MessageRecord, now: datetime) -> None:
        self.erased.append(found.message_id)
        del self.records[found.message_id]


class Finder:
    """Pages of `size` rows over `ids` (newest first); rows of erased messages stay a while, as
    the index lags its items."""

    def __init__(self, ids: list[str], size: int = 3) -> None:
        self.ids, self.size = ids, size
        self.calls: list[dict[str, Any]] = []

    def search(self, tenant_id: str, q: str, by: SearchKind = SearchKind.ANY, **options: Any) -> SearchPage:
        self.calls.append({"tenant_id": tenant_id, "q": q, "by": by, **options})
        start = int(options.get("cursor") or 0)
        end = start + min(self.size, options["limit"])
        rows = [{"message_id": m} for m in self.ids[start:end]]
        return SearchPage(rows=rows, next_cursor=str(end) if end < len(self.ids) else None)


class Tenants:
    def get_tenant(self, tenant_id: str) -> Tenant | None:
        return Tenant(tenant_id=tenant_id, name=tenant_id) if tenant_id in ("t1", "t2") else None


class Trail:
    def __init__(self) -> None:
        self.entries: list[AuditEntry] = []

    def record(self, entry: AuditEntry) -> None:
        self.entries.append(entry)

    def list_entries(self, scope: str, limit: int, cursor: str | None) -> Any:
        raise NotImplementedError


def use_case(store: Store, finder: Finder, trail: Trail | None = None) -> Erasure:
    return Erasure(store, finder, Tenants(), Audit(trail), clock=lambda: NOW)


def test_a_call_erases_at_most_a_batch_and_says_there_is_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "ERASE_BATCH", 4)
    ids = [f"msg_{n}" for n in range(6)]
    store, finder, trail = Store(*map(record, ids)), Finder(ids), Trail()
    erasure = use_case(store, finder, trail)

    first = erasure.erase_by("t1", ErasedBy.EXTERNAL_ID, "pessoa-42", BOOTSTRAP)

    assert first == {"erased": ids[:4], "more": True}
    assert [call["limit"] for call in finder.calls] == [4, 1]
    assert all(call["include_expired"] and call["by"] is SearchKind.EXTERNAL_ID for call in finder.calls)
    [entry] = trail.entries
    assert (entry.action, dict(entry.target)) == ("messages.erased", {"tenant_id": "t1", "by": "external_id"})
    assert entry.after == {"message_ids": ids[:4], "count": 4, "more": True}
    assert "pessoa-42" not in repr(entry)


def test_rows_of_messages_already_gone_or_of_another_tenant_are_skipped() -> None:
    ids = ["msg_gone", "msg_other", "msg_1"]
    store = Store(record("msg_other", tenant_id="t2"), record("msg_1"))

    answer = use_case(store, Finder(ids)).erase_by("t1", ErasedBy.BUSINESS_KEY, "PO-1", BOOTSTRAP)

    assert answer == {"erased": ["msg_1"], "more": False}
    assert store.erased == ["msg_1"]


def test_a_call_reads_a_bounded_number_of_search_pages() -> None:
    ids = [f"msg_{n}" for n in range(50)]  # none stored any more: the index still lists them

    answer = use_case(Store(), finder := Finder(ids, size=2)).erase_by(
        "t1", ErasedBy.EXTERNAL_ID, "x", BOOTSTRAP
    )

    assert answer == {"erased": [], "more": True}
    assert len(finder.calls) == rules.MAX_SEARCH_PAGES


def test_one_message_needs_an_operator_of_its_tenant() -> None:
    store = Store(record("msg_1"))
    erasure = use_case(store, Finder([]))
    viewer = Principal("tok_v", "viewer", Role.VIEWER, "t1")
    elsewhere = Principal("tok_o", "other", Role.OPERATOR, "t2")

    with pytest.raises(Forbidden):
        erasure.erase_message("msg_1", viewer)
    with pytest.raises(NotFound):
        erasure.erase_message("msg_1", elsewhere)
    with pytest.raises(NotFound):
        erasure.erase_by("nobody", ErasedBy.EXTERNAL_ID, "x", BOOTSTRAP)
    assert store.erased == []

    operator = Principal("tok_op", "operator", Role.OPERATOR, "t1")
    assert erasure.erase_message("msg_1", operator) == {"erased": ["msg_1"], "more": False}


@pytest.mark.parametrize(
    "body",
    [{}, {"external_id": "a", "business_key": "b"}, {"external_id": ""}, {"cpf": "1"}],
)
def test_an_erasure_by_value_needs_exactly_one_value(body: dict[str, str]) -> None:
    """The body of POST /api/admin/tenants/<tenant_id>/erasures, as its handler parses it."""
    with pytest.raises(ValidationFailed) as refused:
        validated(ErasureRequest, body, "request body")

    assert (refused.value.http_status, refused.value.code) == (400, "validation_error")
