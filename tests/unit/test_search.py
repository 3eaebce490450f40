"""The search use case's pure parts (hub.admin.search): which business keys a value can be (the
same digests ingest makes), and pages cut by position that never lose or repeat a row, over a
fake at the port."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from hub.admin.search import (
    IndexSlice,
    MessageSearch,
    Named,
    PointKeys,
    SearchedMessage,
    SearchKind,
    business_key_values,
    point_keys,
)
from hub.domain.idempotency import duplicate_key_values, idempotency_key_hash
from hub.domain.tenancy import Integration, IntegrationMode, MessageTypeConfig
from hub.errors import CursorMismatch, ValidationFailed
from hub.pipeline.rules import entity_key
from hub.ports import IntegrationPage, StoredIntegration

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def integration(integration_id: str = "int_erp", **types: tuple[str, ...]) -> Integration:
    return Integration(
        integration_id=integration_id,
        tenant_id="t1",
        name=integration_id,
        mode=IntegrationMode.ORCHESTRATION,
        message_types={
            name: MessageTypeConfig(duplicate_key_fields=fields) for name, fields in types.items()
        },
    )


class TestBusinessKeys:
    @pytest.mark.parametrize(
        ("fields", "payload", "q"),
        [
            (("po_number",), {"po_number": "PO-4711"}, "PO-4711"),
            (("po_number",), {"po_number": 4711}, "4711"),
            (("po_number",), {"po_number": "4711"}, "4711"),
            (("po_number",), {"po_number": 12.5}, "12.5"),
            (("po_number",), {"po_number": "São Paulo|1"}, "São Paulo|1"),  # one field: `|` is the value's
            (("header.po",), {"header": {"po": "PO-9"}}, "PO-9"),
            (("supplier", "number"), {"supplier": "ACME", "number": 4711}, "ACME|4711"),
            (("supplier", "number"), {"supplier": "ACME"}, "ACME|null"),  # a field the payload lacks
        ],
    )
    def test_a_value_names_the_key_ingest_made_for_it(self, fields, payload, q):
        made = entity_key("t1", "int_erp", "po", duplicate_key_values(payload, fields))

        wanted = point_keys("t1", q, SearchKind.BUSINESS_KEY, [integration(po=fields)])

        assert made in wanted.entities
        assert (wanted.message_id, wanted.claims) == (None, ())

    def test_forms_per_value_and_the_number_of_values(self):
        assert business_key_values("PO-1", 1) == [['"PO-1"']]
        assert business_key_values("4711", 1) == [['"4711"'], ["4711"]]
        assert business_key_values("A|1", 2) == [['"A"', '"1"'], ['"A"', "1"]]
        assert business_key_values("A|1", 3) == []  # another number of values: not this key
        assert business_key_values("PO-1", 0) == []  # no duplicate-key fields: no key
        assert business_key_values("null", 1) == [['"null"']]  # an all-null key is no key at all

    def test_each_integration_and_keyed_type_and_only_the_tenants(self):
        wanted = point_keys(
            "t1",
            "PO-1",
            SearchKind.ANY,
            [integration("a", po=("po_number",), order=()), integration("b", invoice=("number",))],
        )

        assert wanted.entities == (
            entity_key("t1", "a", "po", ['"PO-1"']),
            entity_key("t1", "b", "invoice", ['"PO-1"']),
        )
        assert all(entity.startswith("t1#") for entity in wanted.entities)
        assert [integration_id for integration_id, _ in wanted.claims] == ["a", "b"]
        assert wanted.message_id is None  # not a message id's shape: no read for it

    def test_only_a_value_ingest_takes_as_an_idempotency_key_reads_claims(self):
        integrations = [integration("a"), integration("b")]
        assert len(point_keys("t1", "po-4711-v1", SearchKind.IDEMPOTENCY_KEY, integrations).claims) == 2
        assert point_keys("t1", "São Paulo", SearchKind.IDEMPOTENCY_KEY, integrations).claims == ()

    def test_only_a_message_id_shaped_value_reads_a_message_item(self):
        message_id = "msg_" + "0" * 26
        assert point_keys("t1", message_id, SearchKind.ANY, []).message_id == message_id
        assert point_keys("t1", message_id, SearchKind.EXTERNAL_ID, []).message_id is None
        assert not point_keys("t1", "PO-1", SearchKind.MESSAGE_ID, [integration(po=("po_number",))])


# --- pages over a fake at the port -----------------------------------------------------------


@dataclass
class FakeStore:
    """hub.admin.search.MessageSearchStore over plain dicts: messages, the value each is indexed
    under, and what claims / business keys name. Counts its reads."""

    stored: dict[str, SearchedMessage] = field(default_factory=dict)
    indexed: dict[str, list[str]] = field(default_factory=dict)  # value -> message ids
    claimed: dict[str, str] = field(default_factory=dict)  # idempotency key hash -> message id
    reads: list[str] = field(default_factory=list)

    def named(self, keys: PointKeys, now: datetime) -> Named:
        self.reads.append("named")
        named = Named()
        for _, digest in keys.claims:
            if digest in self.claimed:
                named.ids.setdefault(self.claimed[digest], set()).add(SearchKind.IDEMPOTENCY_KEY)
        if keys.message_id in self.stored:
            named.ids.setdefault(keys.message_id, set()).add(SearchKind.MESSAGE_ID)
            named.messages[keys.message_id] = self.stored[keys.message_id]
        return named

    def by_value(self, tenant_id: str, value: str, received_at_most: str | None, limit: int) -> IndexSlice:
        self.reads.append("by_value")
        rows = sorted(
            (
                (m, self.stored[m].received_at)
                for m in self.indexed.get(value, [])
                if self.stored[m].tenant_id == tenant_id
                and (received_at_most is None or self.stored[m].received_at <= received_at_most)
            ),
            # Newest first; at one instant, an order the search must not rely on.
            key=lambda row: (row[1], row[0][::-1]),
            reverse=True,
        )
        return IndexSlice(rows=rows[:limit], more=len(rows) > limit)

    def messages(self, message_ids: Collection[str]) -> dict[str, SearchedMessage]:
        self.reads.append("messages")
        return {m: self.stored[m] for m in message_ids if m in self.stored}

    def add(
        self, n: int, second: int, *, tenant_id: str = "t1", integration_id: str = "int_erp", **values: Any
    ) -> str:
        message_id = f"msg_{n:026d}"
        self.stored[message_id] = SearchedMessage(
            message_id=message_id,
            tenant_id=tenant_id,
            integration_id=integration_id,
            received_at=f"2026-12-01T10:00:{second:02d}.000000Z",
            row={"message_id": message_id},
            **values,
        )
        return message_id


@dataclass
class NoIntegrations:
    listed: list[str] = field(default_factory=list)

    def get(self, tenant_id: str, integration_id: str) -> StoredIntegration | None:
        return StoredIntegration(integration(integration_id), version=1)

    def list_integrations(self, tenant_id: str, limit: int, cursor: str | None) -> IntegrationPage:
        self.listed.append(tenant_id)
        return IntegrationPage(integrations=[], next_cursor=None)


def pages(search: MessageSearch, q: str, by: SearchKind, limit: int) -> list[list[str]]:
    found: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = search.search("t1", q, by, limit=limit, cursor=cursor)
        found.append([row["message_id"] for row in page.rows])
        cursor = page.next_cursor
        if cursor is None:
            return found
        assert len(found) < 100, "the cursor does not move on"


class TestPages:
    def world(self) -> tuple[FakeStore, MessageSearch, list[str]]:
        """Nine messages with external id PO-1, several received at the same instant, one of
        them also named by an idempotency claim; another tenant's with the same value."""
        store = FakeStore()
        ids = [
            store.add(n, second, external_id="PO-1") for n, second in enumerate([1, 2, 2, 2, 3, 5, 5, 7, 8])
        ]
        store.indexed["PO-1"] = list(ids)
        theirs = store.add(99, 4, tenant_id="t2", external_id="PO-1")
        store.indexed["PO-1"].append(theirs)
        store.claimed[idempotency_key_hash("PO-1")] = ids[3]
        store.stored[ids[3]] = replace(store.stored[ids[3]], idempotency_key="PO-1")
        search = MessageSearch(store, NoIntegrations(), clock=lambda: NOW)
        newest_first = sorted(ids, key=lambda m: (store.stored[m].received_at, m), reverse=True)
        return store, search, newest_first

    @pytest.mark.parametrize("limit", [1, 2, 3, 4, 9, 10])
    @pytest.mark.parametrize("by", [SearchKind.EXTERNAL_ID, SearchKind.ANY])
    def test_every_row_once_newest_received_first_whatever_the_page_size(self, limit, by):
        store, search, newest_first = self.world()

        found = pages(search, "PO-1", by, limit)

        flat = [m for page in found for m in page]
        assert sorted(flat) == sorted(newest_first)  # each once; another tenant's never
        received = [store.stored[m].received_at for m in flat]
        assert received == sorted(received, reverse=True)
        assert all(len(page) <= limit for page in found)

    @pytest.mark.parametrize("limit", [1, 2, 3])
    def test_an_old_row_found_by_a_claim_waits_for_the_newer_ones_the_index_has_not_read(self, limit):
        """Filtered by integration, a page of the index may hold none of its rows: the claimed
        message (older than every indexed one) must not come first."""
        store = FakeStore()
        claimed = store.add(0, 0, external_id="PO-OTHER", idempotency_key="PO-1")
        store.claimed[idempotency_key_hash("PO-1")] = claimed
        indexed = [
            store.add(n, n, integration_id="int_erp" if n % 3 == 0 else "int_erp_2", external_id="PO-1")
            for n in range(1, 10)
        ]
        store.indexed["PO-1"] = indexed
        search = MessageSearch(store, NoIntegrations(), clock=lambda: NOW)

        found: list[str] = []
        cursor: str | None = None
        while True:
            page = search.search(
                "t1", "PO-1", SearchKind.ANY, limit=limit, cursor=cursor, integration_id="int_erp"
            )
            found += [row["message_id"] for row in page.rows]
            if (cursor := page.next_cursor) is None:
                break

        assert found == [indexed[8], indexed[5], indexed[2], claimed]

    def test_a_row_found_twice_shows_once_by_the_first_kind(self):
        store, search, newest_first = self.world()
        claimed = store.claimed[next(iter(store.claimed))]

        page = search.search("t1", "PO-1", SearchKind.ANY, limit=50)

        rows = {row["message_id"]: row["matched_by"] for row in page.rows}
        assert len(page.rows) == len(rows) == len(newest_first)
        assert rows[claimed] == "external_id"  # before idempotency_key in MATCH_ORDER

    def test_kinds_that_need_no_integration_do_not_list_them(self):
        store = FakeStore()
        integrations = NoIntegrations()
        search = MessageSearch(store, integrations, clock=lambda: NOW)

        search.search("t1", "PO-1", SearchKind.EXTERNAL_ID)
        search.search("t1", "PO-1", SearchKind.CORRELATION_ID)
        search.search("t1", "msg_" + "0" * 26, SearchKind.MESSAGE_ID)
        assert integrations.listed == []
        search.search("t1", "PO-1", SearchKind.IDEMPOTENCY_KEY)
        assert integrations.listed == ["t1"]

    def test_a_cursor_is_bound_to_its_search_and_checked(self):
        _, search, _ = self.world()
        cursor = search.search("t1", "PO-1", SearchKind.ANY, limit=2).next_cursor
        assert cursor is not None

        with pytest.raises(CursorMismatch):
            search.search("t1", "PO-2", SearchKind.ANY, limit=2, cursor=cursor)
        with pytest.raises(CursorMismatch):
            search.search("t2", "PO-1", SearchKind.ANY, limit=2, cursor=cursor)
        for bad in ("", "@@", "e30", cursor[:-3]):
            with pytest.raises(ValidationFailed):
                search.search("t1", "PO-1", SearchKind.ANY, limit=2, cursor=bad or "x")
