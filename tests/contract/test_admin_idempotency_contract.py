"""The admin API's Idempotency-Key claims (hub.admin.idempotency.ClaimStore), run against the
in-memory fake (tests/fakes/admin_idempotency.py) and the DynamoDB adapter on moto: a key is
claimed once per token; a repeat finds the claim as stored (nothing written); the run holding
it keeps its answer or frees it, no other run can; a claim is free again once it expires, or
for the same request once its run's lease ends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hub.adapters.dynamo.admin_idempotency import DynamoAdminIdempotency
from hub.domain.admin_idempotency import ClaimState, StoredClaim
from hub.sealing import SealedBytes
from tests.contract.backends import BACKENDS, either
from tests.contract.scenario import fresh
from tests.fakes.admin_idempotency import FakeClaims

#: Whole seconds: the table keeps the lease and the expiry as epoch seconds.
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=30)
RETAINED = timedelta(hours=24)
ANSWER = SealedBytes(key_id="k1", encrypted_data_key=b"edk", nonce=b"n" * 12, ciphertext=b"sealed answer")


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> FakeClaims | DynamoAdminIdempotency:
    return either(request, FakeClaims, DynamoAdminIdempotency)


def claim(store, token: str, key: str, request: str, run: str, now: datetime = NOW):
    return store.claim(token, key, request, run, now=now, lease_until=now + LEASE, expires_at=now + RETAINED)


def test_a_key_is_claimed_once_per_token_and_a_repeat_finds_the_claim(store):
    token, key = fresh("adt"), fresh("key")

    assert claim(store, token, key, "req-1", "run-1") is None
    repeat = claim(store, token, key, "req-1", "run-2", NOW + timedelta(seconds=1))
    other_request = claim(store, token, key, "req-2", "run-3", NOW + timedelta(seconds=1))

    running = StoredClaim("req-1", ClaimState.RUNNING, NOW + LEASE, NOW + RETAINED)
    assert repeat is not None
    assert (repeat.claim, repeat.answer) == (running, None)
    assert other_request is not None
    assert other_request.claim == running
    # Another token's key of the same name is another claim.
    assert claim(store, fresh("adt"), key, "req-1", "run-4") is None


def test_only_the_holder_keeps_the_answer(store):
    token, key = fresh("adt"), fresh("key")
    claim(store, token, key, "req-1", "run-1")

    assert store.keep(token, key, "run-other", 201, ANSWER) is False
    assert store.keep(token, key, "run-1", 201, ANSWER) is True
    assert store.keep(fresh("adt"), key, "run-1", 201, ANSWER) is False

    found = claim(store, token, key, "req-1", "run-2", NOW + LEASE + timedelta(seconds=1))
    assert found is not None
    assert found.claim == StoredClaim("req-1", ClaimState.KEPT, None, NOW + RETAINED)
    assert found.answer == ANSWER


def test_only_the_holder_frees_the_claim(store):
    token, key = fresh("adt"), fresh("key")
    claim(store, token, key, "req-1", "run-1")

    store.release(token, key, "run-other")
    assert claim(store, token, key, "req-1", "run-2") is not None
    store.release(token, key, "run-1")
    store.release(token, key, "run-1")  # freed already: nothing happens

    assert claim(store, token, key, "req-1", "run-2") is None


def test_a_dead_runs_claim_is_free_for_the_same_request_and_an_expired_one_for_any(store):
    token, key = fresh("adt"), fresh("key")
    claim(store, token, key, "req-1", "run-1")
    after_the_lease = NOW + LEASE

    assert claim(store, token, key, "req-2", "run-2", after_the_lease) is not None
    assert claim(store, token, key, "req-1", "run-3", after_the_lease) is None
    # run-3 holds it now: the dead run's keep changes nothing.
    assert store.keep(token, key, "run-1", 200, ANSWER) is False
    assert store.keep(token, key, "run-3", 200, ANSWER) is True

    expired = after_the_lease + RETAINED
    assert claim(store, token, key, "req-2", "run-4", expired) is None
