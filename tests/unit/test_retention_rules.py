"""Retention (issue 29) as plain rules: a tenant's own over the platform's defaults, the payload
never kept longer than its message, an expired TTL gone for a reader."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hub.domain.retention import Retention, check_overrides, expired
from hub.domain.tenancy import Tenant

DEFAULTS = Retention(payload_days=7, message_days=30)
NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("payload", "message", "effective"),
    [
        (None, None, (7, 30)),
        (2, None, (2, 30)),
        (None, 90, (7, 90)),
        # Only a message retention shorter than the payload default: the payload goes with it.
        (None, 3, (3, 3)),
        (5, 5, (5, 5)),
    ],
)
def test_a_tenants_own_wins_and_the_payload_never_outlives_its_message(payload, message, effective) -> None:
    tenant = Tenant(tenant_id="t", name="T", payload_retention_days=payload, message_retention_days=message)

    kept = tenant.retention(DEFAULTS)

    assert (kept.payload_days, kept.message_days) == effective


@pytest.mark.parametrize(
    ("payload", "message", "refused"),
    [
        (None, None, False),
        (None, 3, False),
        (30, None, False),
        (31, None, True),
        (10, 5, True),
        (5, 10, False),
    ],
)
def test_only_an_explicit_payload_longer_than_the_message_is_refused(payload, message, refused) -> None:
    assert bool(check_overrides(payload, message, DEFAULTS)) is refused


@pytest.mark.parametrize(("payload", "message"), [(0, 30), (7, 3651), (8, 7)])
def test_a_retention_out_of_bounds_or_the_wrong_way_round_does_not_exist(payload, message) -> None:
    with pytest.raises(ValueError, match=r"retention|longer"):
        Retention(payload_days=payload, message_days=message)


def test_an_item_is_gone_for_a_reader_from_its_ttl_on() -> None:
    at = int(NOW.timestamp())

    assert expired(at, NOW)
    assert expired(at - 1, NOW)
    assert not expired(at + 1, NOW)
    assert not expired(None, NOW)
    assert DEFAULTS.message_until(NOW) == NOW + timedelta(days=30)
    assert DEFAULTS.payload_until(NOW) == NOW + timedelta(days=7)
