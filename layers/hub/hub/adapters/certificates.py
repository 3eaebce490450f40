"""Client certificates for mTLS connectors.

The encrypted certificate store (PKCS#12 + password under KMS envelope encryption) is built with
the certificate upload; until then a destination that names a certificate fails its delivery
with a `tls` error instead of silently going without one.
"""

from __future__ import annotations

from hub.delivery.port import ClientCertificate, DeliveryFailed
from hub.domain.failure import ErrorClass
from hub.domain.tenancy import Destination


class NoCertificateStore:
    """A CertificateStore with no certificates: fine for destinations without mTLS."""

    def client_certificate(self, destination: Destination) -> ClientCertificate | None:
        if destination.client_certificate_id:
            raise DeliveryFailed(ErrorClass.TLS, "client certificate store not configured")
        return None
