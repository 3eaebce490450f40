"""Client TLS contexts for connectors: server verification plus an optional PKCS#12 client
certificate (mTLS, e.g. an ICP-Brasil A1 certificate for SEFAZ).

Python's `ssl` loads keys only from files, so the key is re-encrypted with a one-time random
password into a 0600 temporary file that is deleted right after loading: the clear key never
touches disk. Contexts are cached per certificate fingerprint, so a PFX is parsed once per process.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import ssl
import tempfile
import threading
from collections import OrderedDict

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from hub.delivery.port import ClientCertificate
from hub.errors import HubError

#: Contexts kept per process; a Lambda instance talks to few destinations.
_CACHE_SIZE = 32

#: Keys cache entries by an HMAC, so the cache never holds a guessable hash of a password.
_FINGERPRINT_KEY = secrets.token_bytes(32)


class CertificateInvalid(HubError):
    """The client certificate cannot be used: not PKCS#12, wrong password, or no key/certificate.
    Messages never contain the password or key material."""

    code = "certificate_invalid"
    http_status = 422


def certificate_fingerprint(certificate: ClientCertificate) -> str:
    """A process-local id of (PFX, password): equal inputs give equal ids, and the id reveals
    nothing about the password. Not stable across processes; use it only as a cache key."""
    mac = hmac.new(_FINGERPRINT_KEY, digestmod=hashlib.sha256)
    for part in (certificate.pfx, certificate.password):
        mac.update(len(part).to_bytes(8, "big"))
        mac.update(part)
    return mac.hexdigest()


_cache: OrderedDict[tuple[str | None, bytes | None], ssl.SSLContext] = OrderedDict()
_cache_lock = threading.Lock()


def client_ssl_context(
    certificate: ClientCertificate | None, *, ca_pem: bytes | None = None
) -> ssl.SSLContext:
    """A client context that verifies the server against the system trust store plus `ca_pem`
    (extra PEM CA certificates, e.g. ICP-Brasil roots or a test CA), checks the host name, requires
    TLS 1.2+, and presents `certificate` when given.

    Cached: the same (certificate, ca_pem) returns the same context object. Callers must not
    mutate it. Raises CertificateInvalid when the PKCS#12 cannot be opened.
    """
    key = (certificate_fingerprint(certificate) if certificate else None, ca_pem)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    context = _build_context(certificate, ca_pem)
    with _cache_lock:
        _cache[key] = context
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return context


def clear_cache() -> None:
    """Forgets every cached context (e.g. after a certificate is rotated)."""
    with _cache_lock:
        _cache.clear()


def _build_context(certificate: ClientCertificate | None, ca_pem: bytes | None) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if ca_pem:
        context.load_verify_locations(cadata=ca_pem.decode("ascii"))
    if certificate is not None:
        _load_client_certificate(context, certificate)
    return context


def _load_client_certificate(context: ssl.SSLContext, certificate: ClientCertificate) -> None:
    try:
        private_key, leaf, chain = pkcs12.load_key_and_certificates(
            certificate.pfx, certificate.password or None
        )
    except (ValueError, TypeError):
        # cryptography's message may echo parser details; ours names only the cause class.
        raise CertificateInvalid(
            "client certificate is not a PKCS#12 file or its password is wrong"
        ) from None
    if private_key is None or leaf is None:
        raise CertificateInvalid("client certificate PKCS#12 has no private key or no certificate")

    one_time = secrets.token_urlsafe(32).encode("ascii")
    pem = private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(one_time),
    ) + b"".join(_pem(cert) for cert in (leaf, *chain))
    # mkstemp semantics: created 0600, readable only by this user; removed when closed.
    with tempfile.NamedTemporaryFile(prefix="hub-mtls-", suffix=".pem", delete=True) as handle:
        handle.write(pem)
        handle.flush()
        try:
            context.load_cert_chain(handle.name, password=one_time)
        except ssl.SSLError:
            raise CertificateInvalid("client certificate key does not match its certificate") from None


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)
