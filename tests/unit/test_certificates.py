"""Pure certificate rules: days left, badge level, expiry buckets, upload checks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hub.certificates.expiry import bucket_for
from hub.certificates.model import (
    CertificatePasswordInvalid,
    CertificateRejected,
    ExpiryLevel,
    days_to_expiry,
    decode_pkcs12_base64,
    expiry_level,
    inspect_pkcs12,
)
from tests.pki import PFX_PASSWORD, build_pki

NOW = datetime(2026, 11, 1, 7, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("left", "days", "level"),
    [
        (timedelta(days=45), 45, ExpiryLevel.OK),
        (timedelta(days=31), 31, ExpiryLevel.OK),
        (timedelta(days=30, hours=5), 30, ExpiryLevel.WARNING),
        (timedelta(days=8), 8, ExpiryLevel.WARNING),
        (timedelta(days=7, hours=23), 7, ExpiryLevel.CRITICAL),
        (timedelta(hours=3), 0, ExpiryLevel.CRITICAL),
        (timedelta(seconds=0), 0, ExpiryLevel.EXPIRED),
        (-timedelta(hours=1), -1, ExpiryLevel.EXPIRED),
    ],
)
def test_days_left_and_badge_level(left: timedelta, days: int, level: ExpiryLevel) -> None:
    assert days_to_expiry(NOW + left, NOW) == days
    assert expiry_level(NOW + left, NOW) is level


@pytest.mark.parametrize(
    ("days", "bucket"),
    [
        (40, None),
        (31, None),
        (30, 30),
        (15, 30),
        (14, 14),
        (8, 14),
        (7, 7),
        (5, 7),
        (2, 7),
        (1, 1),
        (0, 0),
        (-3, 0),
    ],
)
def test_the_tightest_bucket_reached(days: int, bucket: int | None) -> None:
    assert bucket_for(days) == bucket


def test_a_legacy_3des_file_opens_and_a_wrong_password_does_not() -> None:
    pki = build_pki()
    public = inspect_pkcs12(pki.legacy_client_pfx, PFX_PASSWORD, datetime.now(UTC))
    assert public.subject == pki.client.subject
    with pytest.raises(CertificatePasswordInvalid):
        inspect_pkcs12(pki.legacy_client_pfx, b"wrong", datetime.now(UTC))


def test_base64_with_line_breaks_is_accepted_and_garbage_is_not() -> None:
    assert decode_pkcs12_base64("aGVs\nbG8=\n") == b"hello"
    with pytest.raises(CertificateRejected):
        decode_pkcs12_base64("not base64!")
