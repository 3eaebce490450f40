"""API keys: their life (active -> rotating -> revoked), the admin use cases over an in-memory
store, and the last-used day that ingest records at most once a day."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from hub.admin.access import BOOTSTRAP as OP
from hub.admin.api_keys import ApiKeyAdmin, ApiKeyExists, ApiKeyNotActive, UnknownIntegrations
from hub.admin.audit import Audit
from hub.api.admin.api_keys import Rotation
from hub.api.http import validated
from hub.domain.tenancy import API_KEY_PREFIX, ApiKey, ApiKeyState, hash_api_key
from hub.errors import NotFound, ValidationFailed
from hub.ingest.key_usage import KeyUsage
from tests.fakes.api_keys import FakeApiKeys, FakeKeyUse
from tests.fakes.audit import FakeAuditTrail

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def key(**overrides) -> ApiKey:
    return ApiKey(**{"key_id": "key_1", "tenant_id": "t1", "key_hash": "h1", **overrides})


class TestKeyLife:
    def test_a_key_without_an_end_is_active(self):
        assert key().state(NOW) is ApiKeyState.ACTIVE
        assert key().usable_at(NOW)

    def test_a_rotated_key_works_until_the_end_of_its_grace_then_not(self):
        rotated = key(expires_at=NOW + HOUR)

        assert rotated.state(NOW) is ApiKeyState.ROTATING
        assert rotated.usable_at(NOW + HOUR - timedelta(seconds=1))
        assert not rotated.usable_at(NOW + HOUR)
        assert rotated.state(NOW + HOUR) is ApiKeyState.REVOKED

    def test_a_revoked_key_is_never_usable(self):
        assert key(active=False).state(NOW) is ApiKeyState.REVOKED
        assert key(active=False, expires_at=NOW + HOUR).state(NOW) is ApiKeyState.REVOKED


@pytest.fixture
def store() -> FakeApiKeys:
    return FakeApiKeys(tenants={"t1", "t2"}, integrations={"int_a": "t1", "int_b": "t1", "int_x": "t2"})


@pytest.fixture
def admin(store: FakeApiKeys) -> ApiKeyAdmin:
    return ApiKeyAdmin(store, clock=lambda: NOW)


class TestRegister:
    """A key whose value and id the caller chose: only the local stack's demo seed (the README
    prints its key), never a route."""

    def test_stores_only_the_hash_under_the_given_id_and_audits_it(self, store):
        trail = FakeAuditTrail()
        admin = ApiKeyAdmin(store, clock=lambda: NOW, audit=Audit(trail))
        raw = "hub_demo_local-only-key-0000000000000000000000"

        view = admin.register("t1", raw, "key_0000000000000000000000demo", "demo", OP)

        [stored] = store.keys.values()
        assert (stored.key_id, stored.key_hash, stored.prefix) == (
            "key_0000000000000000000000demo",
            hash_api_key(raw),
            raw[:12],
        )
        assert stored.integration_ids is None
        assert "key" not in view
        assert view["state"] == "active"
        [entry] = trail.entries
        assert (entry.action, entry.actor_token_id) == ("api_key.created", OP.token_id)
        assert raw not in repr(entry)

    def test_the_same_key_again_is_refused_and_changes_nothing(self, admin, store):
        raw = "hub_demo_local-only-key-0000000000000000000000"
        admin.register("t1", raw, "key_0000000000000000000000demo", "demo", OP)

        with pytest.raises(ApiKeyExists):
            admin.register("t1", raw, "key_0000000000000000000000demo", "again", OP)

        assert [k.label for k in store.keys.values()] == ["demo"]

    def test_a_short_key_or_an_unknown_tenant_is_refused(self, admin, store):
        with pytest.raises(ValueError, match="at least 32"):
            admin.register("t1", "hub_short", "key_0000000000000000000000demo", None, OP)
        with pytest.raises(NotFound):
            admin.register("t9", "hub_demo_local-only-key-0000000000000000000000", "key_1", None, OP)
        assert store.keys == {}


class TestCreate:
    def test_the_key_is_shown_once_and_only_its_hash_is_stored(self, admin, store):
        created = admin.create("t1", "ERP prod", ["int_a"], OP)

        raw = created["key"]
        assert raw.startswith(API_KEY_PREFIX)
        assert created["prefix"] == raw[:12]
        [stored] = store.keys.values()
        assert stored.key_hash == hash_api_key(raw)
        assert raw not in stored.model_dump_json()
        assert created["state"] == "active"
        assert created["integration_ids"] == ["int_a"]
        assert created["created_at"] == "2026-11-30T12:00:00Z"

    def test_an_unknown_tenant_is_not_found(self, admin, store):
        with pytest.raises(NotFound):
            admin.create("t9", None, None, OP)
        assert store.keys == {}

    def test_unknown_and_other_tenants_integrations_are_named_alike(self, admin, store):
        with pytest.raises(UnknownIntegrations) as refused:
            admin.create("t1", None, ["int_a", "int_x", "int_nope"], OP)

        assert refused.value.http_status == 422
        assert refused.value.details == {"field": "integration_ids", "unknown": ["int_nope", "int_x"]}
        assert store.keys == {}

    def test_the_view_never_carries_the_hash(self, admin):
        created = admin.create("t1", None, None, OP)
        listed = admin.list_keys("t1", 10, None)["items"]

        assert [item["key_id"] for item in listed] == [created["key_id"]]
        assert "key" not in listed[0]
        assert hash_api_key(created["key"]) not in str(listed)


class TestRotate:
    def test_the_new_key_inherits_and_the_old_one_gets_its_grace(self, admin, store):
        old = admin.create("t1", "ERP", ["int_b"], OP)

        rotated = admin.rotate("t1", old["key_id"], timedelta(hours=24), OP)

        assert rotated["key"] != old["key"]
        assert (rotated["label"], rotated["integration_ids"]) == ("ERP", ["int_b"])
        assert rotated["rotated_from"] == old["key_id"]
        previous = rotated["previous"]
        assert (previous["state"], previous["expires_at"]) == ("rotating", "2026-12-01T12:00:00Z")
        assert previous["rotated_to"] == rotated["key_id"]
        assert store.keys[old["key_id"]].expires_at == NOW + timedelta(hours=24)

    def test_only_an_active_key_rotates(self, admin):
        old = admin.create("t1", None, None, OP)
        admin.rotate("t1", old["key_id"], HOUR, OP)
        revoked = admin.create("t1", None, None, OP)
        admin.revoke("t1", revoked["key_id"], OP)

        for key_id, state in ((old["key_id"], "rotating"), (revoked["key_id"], "revoked")):
            with pytest.raises(ApiKeyNotActive) as refused:
                admin.rotate("t1", key_id, HOUR, OP)
            assert refused.value.http_status == 409
            assert refused.value.details["state"] == state

    def test_grace_hours_is_chosen_within_bounds_and_a_rotating_key_does_not_rotate_again(self, admin):
        old = admin.create("t1", None, None, OP)

        def rotate(body: dict[str, int]) -> dict[str, Any]:
            """POST .../rotate as its handler runs it: the body parsed, then the use case."""
            grace = timedelta(hours=validated(Rotation, body, "request body").grace_hours)
            return admin.rotate("t1", old["key_id"], grace, OP)

        refusals = []
        for too_long_or_negative in (721, -1):
            with pytest.raises(ValidationFailed) as refused:
                rotate({"grace_hours": too_long_or_negative})
            refusals.append(refused.value)
        now = rotate({"grace_hours": 0})
        with pytest.raises(ApiKeyNotActive) as twice:
            rotate({"grace_hours": 1})

        assert [(r.http_status, r.code) for r in refusals] == [(400, "validation_error")] * 2
        assert now["previous"]["state"] == "revoked"  # grace 0: the old key ends at once
        assert (twice.value.http_status, twice.value.code) == (409, "api_key_not_active")

    def test_a_rotation_that_loses_a_race_is_a_conflict(self, admin, store):
        old = admin.create("t1", None, None, OP)
        real_rotate = store.rotate

        def revoked_meanwhile(stale, new, until):
            store.revoke(stale, NOW)  # another operator, between this rotation's read and write
            return real_rotate(stale, new, until)

        store.rotate = revoked_meanwhile

        with pytest.raises(ApiKeyNotActive) as refused:
            admin.rotate("t1", old["key_id"], HOUR, OP)
        assert refused.value.details["state"] == "revoked"
        assert list(store.keys) == [old["key_id"]]


class TestRevokeAndTenancy:
    def test_revoke_is_idempotent(self, admin):
        created = admin.create("t1", None, None, OP)

        first = admin.revoke("t1", created["key_id"], OP)
        again = admin.revoke("t1", created["key_id"], OP)

        assert first == again
        assert first["state"] == "revoked"
        assert first["revoked_at"] == "2026-11-30T12:00:00Z"

    def test_another_tenants_key_is_not_found(self, admin):
        created = admin.create("t1", None, None, OP)

        for action in (
            lambda: admin.revoke("t2", created["key_id"], OP),
            lambda: admin.rotate("t2", created["key_id"], HOUR, OP),
        ):
            with pytest.raises(NotFound):
                action()
        assert admin.list_keys("t2", 10, None)["items"] == []

    def test_the_listing_is_newest_first_and_pages(self, store):
        ids = iter(f"key_{n}" for n in range(3))
        admin = ApiKeyAdmin(store, clock=lambda: NOW)
        for _ in range(3):
            created = admin.create("t1", None, None, OP)
            store.keys[next(ids)] = store.keys.pop(created["key_id"]).model_copy()
        first = admin.list_keys("t1", 2, None)
        second = admin.list_keys("t1", 2, first["next_cursor"])

        assert [i["key_id"] for i in first["items"] + second["items"]] == [
            k.key_id for k in sorted(store.keys.values(), key=lambda k: k.key_id, reverse=True)
        ]
        assert second["next_cursor"] is None


class TestLastUsedDay:
    def test_recorded_once_per_key_and_day(self):
        store = FakeKeyUse()
        usage = KeyUsage(store)

        for _ in range(3):
            usage.seen(key(), NOW)
        usage.seen(key(key_hash="h2"), NOW)
        usage.seen(key(), NOW + timedelta(days=1))

        assert store.writes == [("h1", "2026-11-30"), ("h2", "2026-11-30"), ("h1", "2026-12-01")]

    def test_nothing_is_written_when_the_key_read_already_says_today(self):
        store = FakeKeyUse()

        KeyUsage(store).seen(key(last_used_day="2026-11-30"), NOW)

        assert store.writes == []

    def test_the_day_is_the_utc_day(self):
        store = FakeKeyUse()
        late_evening_in_sao_paulo = datetime(2026, 11, 30, 22, 30, tzinfo=timezone(timedelta(hours=-3)))

        KeyUsage(store).seen(key(), late_evening_in_sao_paulo)

        assert store.writes == [("h1", "2026-12-01")]

    def test_a_failing_write_never_raises_and_is_not_retried_that_day(self, caplog):
        store = FakeKeyUse(failing=True)
        usage = KeyUsage(store)

        with caplog.at_level(logging.WARNING):
            usage.seen(key(), NOW)
            usage.seen(key(), NOW)

        assert len(store.writes) == 1
        assert "key_1" in caplog.records[0].__dict__.get("key_id", "")

    def test_memory_is_bounded(self):
        store = FakeKeyUse()
        usage = KeyUsage(store, max_entries=2)

        for n in range(5):
            usage.seen(key(key_hash=f"h{n}"), NOW)

        assert len(usage._recorded) <= 2
