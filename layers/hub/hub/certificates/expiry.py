"""The daily certificate-expiry alert (seed 000, scenario F): every stored client certificate is
checked against the buckets 30, 14, 7, 1 and 0 days before `not_after`; each bucket alerts once
per (connection, not_after), on Slack, and every certificate's days left go out as a metric.

A certificate is in the tightest bucket its days left reach, so one first seen at 5 days alerts
for 7 only (not for 30 and 14 as well), and an expired one is in bucket 0. Exactly once: the
alert record of (connection, not_after, bucket) is created by one conditional put before the
alert is sent; a rerun the same day finds it and sends nothing. A renewal changes `not_after`,
so its buckets start afresh. A failed send releases the record (the next run retries it) and
fails the run after the other certificates were handled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from hub.alerts.model import PRODUCT, Alert, AlertGroup, AlertKind, hour_bucket
from hub.certificates.model import CertificateExpiry, days_to_expiry, iso
from hub.domain.clock import utcnow
from hub.errors import AlertChannelUnavailable
from hub.ports import AlertChannel

logger = logging.getLogger(__name__)

#: Days before `not_after` at which an alert goes out, widest first.
BUCKETS = (30, 14, 7, 1, 0)
METRIC = "CertificateDaysToExpiry"
#: The fewest days any certificate read has left, once per run without a connection dimension:
#: one series an alarm can watch (CertificateExpiryAlarm, <= 7), where METRIC is one per connection.
MIN_METRIC = "CertificateMinDaysToExpiry"
#: A certificate expired longer ago than this is retired, not expiring: it leaves MIN_METRIC, or
#: one nobody renews (a retired connection's) would keep the alarm firing every day.
RETIRED_AFTER_DAYS = 30


def bucket_for(days_left: int) -> int | None:
    """The tightest bucket `days_left` has reached; None when more than 30 days are left."""
    reached = [bucket for bucket in BUCKETS if days_left <= bucket]
    return min(reached) if reached else None


class CertAlertClaims(Protocol):
    def claim(self, certificate: CertificateExpiry, bucket: int, now: datetime) -> bool:
        """Creates the alert record of (connection, not_after, bucket); False if it exists."""
        ...

    def mark_sent(self, certificate: CertificateExpiry, bucket: int, now: datetime) -> None: ...

    def release(self, certificate: CertificateExpiry, bucket: int) -> None:
        """Deletes an alert record whose alert did not go out, so the next run sends it."""
        ...


class CertificateListing(Protocol):
    def expiring_before(self, until: datetime) -> list[CertificateExpiry]: ...


class GaugeMetrics(Protocol):
    def gauge(self, name: str, value: float, **dimensions: str) -> None: ...


@dataclass(frozen=True)
class ExpiryRun:
    checked: int
    alerted: tuple[tuple[str, int], ...]
    failed: tuple[tuple[str, int], ...]


def expiry_alert(certificate: CertificateExpiry, bucket: int, days_left: int, now: datetime) -> Alert:
    if days_left < 0:
        headline = f"expired {-days_left} day(s) ago"
    elif days_left == 0:
        headline = "expires today" if certificate.not_after > now else "has expired"
    else:
        headline = f"expires in {days_left} day(s)"
    return Alert(
        group=AlertGroup(
            AlertKind.CERT_EXPIRY, certificate.connection_id, hour_bucket(now), certificate.tenant_id
        ),
        title=f"[{PRODUCT}] client certificate of connection {certificate.connection_id} {headline}",
        lines=(
            f"Tenant: {certificate.tenant_id}",
            f"Connection: {certificate.connection_id}",
            f"Not after: {iso(certificate.not_after)}",
            f"Alert bucket: {bucket} day(s)",
            "Details: GET /api/admin/connections/"
            f"{certificate.connection_id}/certificate?tenant_id={certificate.tenant_id}",
            "Renew: upload the new A1 certificate (POST to the same path).",
        ),
        tenant_id=certificate.tenant_id,
    )


class CertExpiryAlerter:
    def __init__(
        self,
        certificates: CertificateListing,
        claims: CertAlertClaims,
        channels: Sequence[AlertChannel],
        metrics: GaugeMetrics,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._certificates = certificates
        self._claims = claims
        self._channels = tuple(channels)
        self._metrics = metrics
        self._clock = clock

    def run(self) -> ExpiryRun:
        """One daily pass. Raises AlertChannelUnavailable after the pass when any alert could
        not be sent (those alerts stay pending for the next run or the scheduler's retry)."""
        # The default clock is looked up per run, so a test can move it under the real handler.
        now = (self._clock or utcnow)()
        # Only certificates within the widest bucket are read (sorted by not_after on the index).
        certificates = self._certificates.expiring_before(now + timedelta(days=BUCKETS[0] + 1))
        alerted: list[tuple[str, int]] = []
        failed: list[tuple[str, int]] = []
        watched = [
            days
            for days in (days_to_expiry(c.not_after, now) for c in certificates)
            if days >= -RETIRED_AFTER_DAYS
        ]
        if watched:  # none within 31 days (or only retired ones): no data, and the alarm stays OK
            self._metrics.gauge(MIN_METRIC, min(watched))
        for certificate in certificates:
            days_left = days_to_expiry(certificate.not_after, now)
            self._metrics.gauge(METRIC, days_left, connection_id=certificate.connection_id)
            bucket = bucket_for(days_left)
            if bucket is None or not self._claims.claim(certificate, bucket, now):
                continue
            try:
                self._send(expiry_alert(certificate, bucket, days_left, now))
            except AlertChannelUnavailable as exc:
                logger.warning(
                    "certificate expiry alert not sent",
                    extra={
                        "connection_id": certificate.connection_id,
                        "bucket": bucket,
                        "details": exc.details,
                    },
                )
                self._claims.release(certificate, bucket)
                failed.append((certificate.connection_id, bucket))
                continue
            self._claims.mark_sent(certificate, bucket, now)
            alerted.append((certificate.connection_id, bucket))
            logger.info(
                "certificate expiry alert sent",
                extra={"connection_id": certificate.connection_id, "bucket": bucket, "days_left": days_left},
            )
        if failed:
            raise AlertChannelUnavailable(
                "certificate expiry alerts not sent", details={"failed": [list(f) for f in failed]}
            )
        return ExpiryRun(checked=len(certificates), alerted=tuple(alerted), failed=())

    def _send(self, alert: Alert) -> None:
        if not self._channels:
            logger.warning("certificate expiry alert, no channel configured", extra={"title": alert.title})
        for channel in self._channels:
            channel.send(alert)
