"""The API key store's `create`, run against the in-memory fake (tests/fakes/api_keys.py) and the
DynamoDB adapter on moto: a key is stored once, never over a key of the same hash (the local
stack's fixed demo key, seeded again, is a Conflict the seed expects, not a crash)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from hub.adapters.dynamo.api_keys import DynamoApiKeys
from hub.domain.tenancy import ApiKey, hash_api_key
from hub.errors import Conflict
from tests.contract.backends import BACKENDS, either
from tests.contract.scenario import all_pages, fresh, refuses_foreign_cursor
from tests.fakes.api_keys import FakeApiKeys

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> FakeApiKeys | DynamoApiKeys:
    return either(request, lambda: FakeApiKeys(tenants={"t1"}), DynamoApiKeys)


def key(raw: str, key_id: str, label: str) -> ApiKey:
    return ApiKey(key_id=key_id, tenant_id="t1", key_hash=hash_api_key(raw), label=label, created_at=NOW)


def test_a_key_is_stored_once_and_never_over_a_key_of_the_same_hash(store):
    raw = f"hub_{uuid.uuid4().hex}{uuid.uuid4().hex}"
    first_id, second_id = (f"key_{uuid.uuid4().hex[:26]}" for _ in range(2))
    store.create(key(raw, first_id, "first"))

    with pytest.raises(Conflict):
        store.create(key(raw, second_id, "second"))

    found = store.find("t1", first_id)
    assert found is not None
    assert found.label == "first"
    assert store.find("t1", second_id) is None


def test_a_tenants_keys_are_listed_newest_first_and_another_tenants_cursor_is_refused(store):
    tenant_id, other, prefix = fresh("t"), fresh("t"), fresh("key")
    for n in range(3):
        for owner in (tenant_id, other):
            store.create(
                ApiKey(
                    key_id=f"{prefix}{owner}{n}", tenant_id=owner, key_hash=hash_api_key(f"raw-{owner}-{n}")
                )
            )

    seen = all_pages(lambda cursor: store.list_keys(tenant_id, 2, cursor), "keys", 2)

    assert [k.key_id for k in seen] == [f"{prefix}{tenant_id}{n}" for n in (2, 1, 0)]
    refuses_foreign_cursor(lambda owner, cursor: store.list_keys(owner, 1, cursor), tenant_id, other)
