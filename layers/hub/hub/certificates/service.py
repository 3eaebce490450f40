"""Uploading and reading client certificates (admin API), and opening them for a connector.

A certificate belongs to one connection (its id is the destination's `client_certificate_id`)
and one tenant, which must exist (the connection need not yet: a SEFAZ connection cannot be saved
without its certificate). Uploading again replaces it (renewal): the new `not_after` resets the expiry
alert buckets by itself, since alerts are keyed on it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from hub.admin.audit import Audit
from hub.certificates.envelope import DataKeys, SealedSecret, open_sealed, seal
from hub.certificates.model import CertificateExpiry, CertificateMetadata, inspect_pkcs12
from hub.domain.clock import utcnow
from hub.errors import NotFound

if TYPE_CHECKING:
    from hub.admin.access import Principal

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredCertificate:
    metadata: CertificateMetadata
    sealed: SealedSecret
    uploaded_at: datetime
    uploaded_by: str


class CertificateRepository(Protocol):
    def put(self, certificate: StoredCertificate) -> None:
        """Stores (or replaces) the tenant's certificate of the connection id (another tenant's of
        the same id is another certificate)."""
        ...

    def get(self, tenant_id: str, connection_id: str) -> StoredCertificate | None: ...

    def tenant_exists(self, tenant_id: str) -> bool:
        """Whether the tenant exists (a certificate belongs to one)."""
        ...

    def expiring_before(self, until: datetime) -> list[CertificateExpiry]:
        """Every stored certificate whose `not_after` is before `until` (expired ones too)."""
        ...


def encryption_context(tenant_id: str, connection_id: str) -> dict[str, str]:
    return {"tenant_id": tenant_id, "connection_id": connection_id}


class CertificateService:
    def __init__(
        self,
        repository: CertificateRepository,
        keys: DataKeys,
        clock: Callable[[], datetime] = utcnow,
        audit: Audit | None = None,
    ) -> None:
        self._repository = repository
        self._keys = keys
        self._clock = clock
        self._audit = audit or Audit(None)

    def upload(
        self, tenant_id: str, connection_id: str, pfx: bytes, password: bytes, actor: Principal
    ) -> dict[str, Any]:
        """Checks the PKCS#12 (password, key matches certificate, not expired), seals it and its
        password, stores it; returns the public view. Raises NotFound for a tenant that does not
        exist (nothing is read or stored), a CertificateRejected subtype for an unusable file."""
        if not self._repository.tenant_exists(tenant_id):
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        now = self._clock()
        public = inspect_pkcs12(pfx, password, now)
        metadata = CertificateMetadata(
            tenant_id=tenant_id,
            connection_id=connection_id,
            subject=public.subject,
            issuer=public.issuer,
            serial=public.serial,
            not_before=public.not_before,
            not_after=public.not_after,
        )
        sealed = seal(self._keys, encryption_context(tenant_id, connection_id), pfx, password)
        previous = self._repository.get(tenant_id, connection_id)
        self._repository.put(StoredCertificate(metadata, sealed, now, actor.token_id))
        view = metadata.view(now)
        # The views only: never the PKCS#12 nor its password.
        self._audit.record(
            actor,
            tenant_id,
            "certificate.uploaded",
            {"connection_id": connection_id},
            now,
            before=previous.metadata.view(now)
            if previous and previous.metadata.tenant_id == tenant_id
            else None,
            after=view,
        )
        logger.info(
            "client certificate stored",
            extra={"tenant_id": tenant_id, "connection_id": connection_id, "serial": public.serial},
        )
        return view

    def describe(self, tenant_id: str, connection_id: str) -> dict[str, Any]:
        """The public view with badge data; another tenant's certificate is not found."""
        stored = self._repository.get(tenant_id, connection_id)
        if stored is None or stored.metadata.tenant_id != tenant_id:
            raise NotFound("no client certificate for this connection")
        return stored.metadata.view(self._clock())


def open_certificate(keys: DataKeys, stored: StoredCertificate) -> tuple[bytes, bytes]:
    """(pfx, password) of a stored certificate, decrypted in memory."""
    context = encryption_context(stored.metadata.tenant_id, stored.metadata.connection_id)
    return open_sealed(keys, stored.sealed, context)
