"""Client certificates in the hub table, and the CertificateStore connectors use.

Items (PK / SK):

- ``CERT#<connection_id>`` / ``CLIENT``  the connection's certificate: public metadata in clear
  (subject, issuer, serial, not_before, not_after), the PKCS#12 file and its password sealed
  with AES-256-GCM, the KMS-encrypted data key, the nonces and the encryption context. On GSI1
  under the fixed partition ``CERT#EXPIRY``, sorted by ``<not_after>#<tenant>#<connection>``, so
  the daily expiry check is one Query of the certificates near expiry (never a Scan).
- ``CERTALERT#<connection_id>#<not_after>#<bucket>`` / ``ALERT``  one expiry alert (TTL).

Key shapes in hub.adapters.dynamo.keys. Connection ids are global (like integration ids) and
each certificate belongs to one tenant: an upload is refused (as a missing connection) when the
id's certificate or connection is another tenant's. A certificate may be uploaded before its
connection exists (a SEFAZ connection cannot be saved without one).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import Any

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.outbox import event_put
from hub.adapters.dynamo.table import (
    ConditionFailed,
    Table,
    TransactionCancelled,
    Update,
    encode,
    epoch,
    format_ts,
)
from hub.certificates.envelope import CertificateUndecryptable, DataKeys, SealedSecret
from hub.certificates.model import CertificateExpiry, CertificateMetadata, iso, parse_iso
from hub.certificates.service import StoredCertificate, open_certificate
from hub.delivery.port import ClientCertificate, DeliveryFailed
from hub.domain.failure import ErrorClass
from hub.domain.tenancy import Destination
from hub.outbox.events import EventType, OutboxEvent

logger = logging.getLogger(__name__)

_WHAT = "certificate storage"
#: How long an expiry alert record is kept after the certificate's not_after: an expired
#: certificate nobody renews is alerted again (bucket 0) once this has passed.
ALERT_RETENTION_AFTER_EXPIRY = timedelta(days=90)


def _alert_key(certificate: CertificateExpiry, bucket: int) -> keys.Key:
    return keys.cert_alert_key(
        certificate.tenant_id, certificate.connection_id, iso(certificate.not_after), bucket
    )


#: Longer than the expiry function's timeout: an unsent claim this old belongs to a dead run.
UNSENT_CLAIM_TAKEOVER = timedelta(minutes=15)


class NoCertificateStore:
    """A CertificateStore with no certificates: fine for destinations without mTLS."""

    def client_certificate(
        self, destination: Destination, tenant_id: str | None = None
    ) -> ClientCertificate | None:
        if destination.client_certificate_id:
            raise DeliveryFailed(ErrorClass.TLS, "client certificate store not configured")
        return None


class DynamoCertificateRepository:
    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, _WHAT)

    def put(self, certificate: StoredCertificate) -> None:
        m, s = certificate.metadata, certificate.sealed
        item = {
            **keys.certificate_key(m.tenant_id, m.connection_id),
            "item_type": "client_certificate",
            "tenant_id": m.tenant_id,
            "connection_id": m.connection_id,
            "subject": m.subject,
            "issuer": m.issuer,
            "serial": m.serial,
            "not_before": iso(m.not_before),
            "not_after": iso(m.not_after),
            "uploaded_at": format_ts(certificate.uploaded_at),
            "uploaded_by": certificate.uploaded_by,
            "algorithm": s.algorithm,
            "kms_key_id": s.key_id,
            "encrypted_data_key": s.encrypted_data_key,
            "encryption_context": s.context,
            "pfx_nonce": s.pfx_nonce,
            "pfx_ciphertext": s.pfx_ciphertext,
            "password_nonce": s.password_nonce,
            "password_ciphertext": s.password_ciphertext,
            **keys.certificate_expiry_index_keys(iso(m.not_after), m.tenant_id, m.connection_id),
        }
        # Keyed by tenant and connection id (ids are unique within a tenant only): another
        # tenant's certificate of the same connection id is another item, never met here.
        self._table.put(item)

    def get(self, tenant_id: str, connection_id: str) -> StoredCertificate | None:
        item = self._table.get(keys.certificate_key(tenant_id, connection_id))
        return _stored_from(item) if item else None

    def tenant_exists(self, tenant_id: str) -> bool:
        return self._table.get(keys.tenant_key(tenant_id)) is not None

    def expiring_before(self, until: datetime) -> list[CertificateExpiry]:
        found: list[CertificateExpiry] = []
        request: dict[str, Any] = {
            "IndexName": "GSI1",
            "KeyConditionExpression": "GSI1PK = :pk AND GSI1SK < :until",
            "ExpressionAttributeValues": encode({":pk": keys.CERT_EXPIRY_PARTITION, ":until": iso(until)}),
        }
        while True:
            items, last = self._table.query(**request)
            found += [_listed(item) for item in items]
            if last is None:
                return found
            request["ExclusiveStartKey"] = encode(last)


def _listed(item: dict[str, Any]) -> CertificateExpiry:
    """From the index keys alone: GSI1 projects a fixed attribute list meant for messages, so
    the sort key carries what the expiry check needs."""
    not_after, tenant_id, connection_id = keys.certificate_expiry_of(str(item["GSI1SK"]))
    return CertificateExpiry(tenant_id=tenant_id, connection_id=connection_id, not_after=parse_iso(not_after))


def metadata_from(item: dict[str, Any]) -> CertificateMetadata:
    return CertificateMetadata(
        tenant_id=str(item["tenant_id"]),
        connection_id=str(item["connection_id"]),
        subject=str(item["subject"]),
        issuer=str(item["issuer"]),
        serial=str(item["serial"]),
        not_before=parse_iso(str(item["not_before"])),
        not_after=parse_iso(str(item["not_after"])),
    )


def _stored_from(item: dict[str, Any]) -> StoredCertificate:
    sealed = SealedSecret(
        key_id=str(item["kms_key_id"]),
        encrypted_data_key=bytes(item["encrypted_data_key"]),
        context={str(k): str(v) for k, v in item["encryption_context"].items()},
        pfx_nonce=bytes(item["pfx_nonce"]),
        pfx_ciphertext=bytes(item["pfx_ciphertext"]),
        password_nonce=bytes(item["password_nonce"]),
        password_ciphertext=bytes(item["password_ciphertext"]),
        algorithm=str(item["algorithm"]),
    )
    return StoredCertificate(
        metadata=metadata_from(item),
        sealed=sealed,
        uploaded_at=datetime.strptime(str(item["uploaded_at"]), "%Y-%m-%dT%H:%M:%S.%f%z"),
        uploaded_by=str(item.get("uploaded_by", "")),
    )


class KmsCertificateStore:
    """The CertificateStore of connectors: the destination's `client_certificate_id` is the
    connection id its certificate was uploaded under. Decrypted in memory only; the decrypted
    certificate is cached per process until the stored one changes (one GetItem per delivery,
    one KMS Decrypt per upload and process)."""

    def __init__(self, repository: DynamoCertificateRepository, keys: DataKeys) -> None:
        self._repository = repository
        self._keys = keys
        self._cache: dict[tuple[str, str], tuple[bytes, ClientCertificate]] = {}
        self._lock = threading.Lock()

    def client_certificate(
        self, destination: Destination, tenant_id: str | None = None
    ) -> ClientCertificate | None:
        connection_id = destination.client_certificate_id
        if not connection_id:
            return None
        # Certificates are the tenant's own (keyed by tenant): without a tenant there is none.
        stored = self._repository.get(tenant_id, connection_id) if tenant_id is not None else None
        # A record whose own tenant or connection id is not the one asked for (copied under
        # another key) is refused: its encryption context names what it was sealed for.
        if (
            stored is None
            or stored.metadata.connection_id != connection_id
            or stored.metadata.tenant_id != tenant_id
        ):
            raise DeliveryFailed(ErrorClass.TLS, "no client certificate uploaded for this connection")
        version = stored.sealed.encrypted_data_key
        with self._lock:
            cached = self._cache.get((tenant_id, connection_id))
        if cached is not None and cached[0] == version:
            return cached[1]
        try:
            pfx, password = open_certificate(self._keys, stored)
        except CertificateUndecryptable:
            logger.error("stored client certificate does not decrypt", extra={"connection_id": connection_id})
            raise DeliveryFailed(ErrorClass.TLS, "stored client certificate cannot be decrypted") from None
        certificate = ClientCertificate(pfx=pfx, password=password)
        with self._lock:
            self._cache[(tenant_id, connection_id)] = (version, certificate)
        return certificate


class DynamoCertAlertClaims:
    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, _WHAT)

    def claim(self, certificate: CertificateExpiry, bucket: int, now: datetime) -> bool:
        item = {
            **_alert_key(certificate, bucket),
            "item_type": "cert_expiry_alert",
            "tenant_id": certificate.tenant_id,
            "connection_id": certificate.connection_id,
            "not_after": iso(certificate.not_after),
            "bucket": bucket,
            "created_at": format_ts(now),
            "expires_at": epoch(max(now, certificate.not_after) + ALERT_RETENTION_AFTER_EXPIRY),
        }
        try:
            self._table.put(
                item,
                # A claim whose run died before sending (no sent_at, older than any run can
                # last) is taken over: the alert is late, never lost.
                condition=(
                    "attribute_not_exists(PK) OR (attribute_not_exists(sent_at) AND created_at < :stale)"
                ),
                values={":stale": format_ts(now - UNSENT_CLAIM_TAKEOVER)},
            )
        except ConditionFailed:
            return False
        return True

    def mark_sent(self, certificate: CertificateExpiry, bucket: int, now: datetime) -> None:
        """The alert went out: `connection.certificate_expiring` leaves the outbox in the same
        transaction (its id names connection, not_after and bucket, so a claim taken over after
        a crash cannot announce it twice)."""
        key = _alert_key(certificate, bucket)
        expiring = OutboxEvent(
            id=f"{certificate.tenant_id}:{certificate.connection_id}:{iso(certificate.not_after)}:{bucket}",
            type=EventType.CONNECTION_CERTIFICATE_EXPIRING,
            tenant_id=certificate.tenant_id,
            occurred_at=now,
            connection_id=certificate.connection_id,
            details={"not_after": iso(certificate.not_after), "days_bucket": bucket},
        )
        sent = Update().set(sent_at=format_ts(now))
        try:
            self._table.transact([self._table.update_entry(key, sent), event_put(self._table, expiring, now)])
        except TransactionCancelled:
            self._table.update(key, sent)  # announced already by the run this claim was taken from

    def release(self, certificate: CertificateExpiry, bucket: int) -> None:
        try:
            self._table.delete(_alert_key(certificate, bucket), condition="attribute_not_exists(sent_at)")
        except ConditionFailed:
            return
