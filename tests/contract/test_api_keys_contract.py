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
from tests.contract.backends import BACKENDS
from tests.fakes.api_keys import FakeApiKeys

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> FakeApiKeys | DynamoApiKeys:
    if request.param == "fake":
        return FakeApiKeys(tenants={"t1"})
    return DynamoApiKeys(request.getfixturevalue("dynamo_table"))


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
