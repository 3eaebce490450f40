"""The fakes' table refuses what DynamoDB refuses before it looks at an item, so a use case
tested on the fakes cannot rely on an update the real table would reject."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hub.adapters.dynamo.table import epoch
from hub.errors import StorageUnavailable
from tests.fakes.messages import lease_free
from tests.fakes.table import Change, ConditionFailed, FakeTable

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
KEY = ("MSG#m", "STATUS")


def test_one_attribute_in_two_clauses_is_refused() -> None:
    table = FakeTable()

    with pytest.raises(StorageUnavailable) as raised:
        table.update(KEY, Change().set(a=1).remove("a"))
    with pytest.raises(StorageUnavailable):
        table.update(KEY, Change().set(version=1).add("version"))
    with pytest.raises(StorageUnavailable):
        table.update(KEY, Change().set(log=[]).append_log([], [{"step": "x"}], NOW))

    assert raised.value.details == {"operation": "UpdateItem", "overlapping_paths": ["a"]}
    assert table.items == {}


def test_floats_and_datetimes_are_refused_at_any_depth() -> None:
    table = FakeTable()

    with pytest.raises(TypeError):
        table.put({"PK": "a", "SK": "b", "n": {"deep": [1.5]}})
    with pytest.raises(TypeError):
        table.update(KEY, Change().set(completed_at=NOW))
    with pytest.raises(TypeError):
        table.update(KEY, Change().append_log([], [{"ms": 0.5}], NOW))

    assert table.items == {}


def test_an_update_of_a_missing_item_creates_it_when_its_condition_holds() -> None:
    table = FakeTable()

    created = table.update(KEY, Change().set(a="x").add("version"))
    with pytest.raises(ConditionFailed) as failed:
        table.update(("MSG#n", "STATUS"), Change().set(a="y").where(lambda item: item is not None))

    assert created == {"PK": "MSG#m", "SK": "STATUS", "a": "x", "version": 1}
    assert failed.value.old is None


def test_reads_and_failed_conditions_hand_out_copies() -> None:
    table = FakeTable()
    table.put({"PK": KEY[0], "SK": KEY[1], "log": [{"n": 1}]})

    read = table.get(KEY)
    assert read is not None
    read["log"].append({"n": 2})
    with pytest.raises(ConditionFailed) as failed:
        table.update(KEY, Change().set(a=1).where(lambda _: False))
    assert failed.value.old is not None
    failed.value.old["log"].clear()

    assert table.get(KEY) == {"PK": KEY[0], "SK": KEY[1], "log": [{"n": 1}]}


def test_a_lease_without_an_expiry_never_expires() -> None:
    """As in a DynamoDB condition, where comparing an absent attribute is false."""
    assert lease_free(None, NOW)
    assert lease_free({"PK": "x"}, NOW)
    assert lease_free({"lease_owner": "r", "lease_until": epoch(NOW) - 1}, NOW)
    assert not lease_free({"lease_owner": "r", "lease_until": epoch(NOW)}, NOW)
    assert not lease_free({"lease_owner": "r"}, NOW + timedelta(days=365))
