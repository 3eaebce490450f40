"""The admin token store's contract (hub.admin.tokens.AdminTokenStore), run against the in-memory
fake (tests/fakes/admin_tokens.py) and the DynamoDB adapter on moto: a token found by hash and by
id, listed per scope (a tenant's, or the platform's) newest first in pages whose cursors only
that listing takes back, a revocation that keeps its first time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hub.adapters.dynamo.admin_tokens import DynamoAdminTokens
from hub.admin.access import Role
from hub.admin.tokens import AdminToken
from hub.errors import NotFound
from tests.contract.backends import BACKENDS, either
from tests.contract.scenario import all_pages, fresh, refuses_foreign_cursor
from tests.fakes.admin_tokens import FakeAdminTokens

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> FakeAdminTokens | DynamoAdminTokens:
    return either(request, FakeAdminTokens, DynamoAdminTokens)


def token(token_id: str, tenant_id: str | None) -> AdminToken:
    return AdminToken(
        token_id=token_id,
        token_hash=fresh("hash"),
        prefix="hubadm_x",
        label=f"label of {token_id}",
        role=Role.OPERATOR,
        tenant_id=tenant_id,
        created_at=NOW,
        created_by="bootstrap-admin",
    )


def listed(store, tenant_id: str | None, limit: int) -> list[str]:
    tokens = all_pages(lambda cursor: store.list_tokens(tenant_id, limit, cursor), "tokens", limit)
    return [t.token_id for t in tokens]


def test_a_token_is_found_by_hash_and_by_id(store):
    stored = token(fresh("adt"), fresh("t"))
    store.create(stored)

    assert store.by_hash(stored.token_hash) == stored
    assert store.get(stored.token_id) == stored
    assert store.by_hash(fresh("hash")) is None
    assert store.get(fresh("adt")) is None


def test_a_scopes_tokens_are_listed_newest_first_in_pages(store):
    tenant_id, prefix = fresh("t"), fresh("adt")
    mine = [f"{prefix}-{n}" for n in range(5)]
    for token_id in mine:
        store.create(token(token_id, tenant_id))
    store.create(token(fresh("adt"), fresh("t")))  # another tenant's

    assert listed(store, tenant_id, 2) == list(reversed(mine))
    platform = [t for t in listed(store, None, 50) if t.startswith(prefix)]
    assert platform == []


def test_a_cursor_of_another_scope_is_refused(store):
    other = fresh("t")
    for n in range(3):
        store.create(token(f"{fresh('adt')}-{n}", other))

    def tokens(owner: str | None, cursor: str | None):
        return store.list_tokens(owner, 1, cursor)

    refuses_foreign_cursor(tokens, fresh("t"), other)
    refuses_foreign_cursor(tokens, None, other)  # the platform's listing


def test_a_revocation_keeps_its_first_time_and_a_missing_token_is_not_found(store):
    stored = token(fresh("adt"), None)
    store.create(stored)

    first = store.revoke(stored, NOW)
    again = store.revoke(stored, NOW + timedelta(hours=1))

    assert first.revoked_at == again.revoked_at == NOW
    assert store.by_hash(stored.token_hash) == first
    assert not first.active
    with pytest.raises(NotFound):
        store.revoke(token(fresh("adt"), None), NOW)
