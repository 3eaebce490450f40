"""Client TLS contexts for connectors: server verification (the system trust store, or a
connection's own trusted CA bundle) plus an optional PKCS#12 client certificate (mTLS, e.g. an
ICP-Brasil A1 certificate for SEFAZ).

Python's `ssl` loads keys only from files, so the key is re-encrypted with a one-time random
password into a 0600 temporary file that is deleted right after loading: the clear key never
touches disk. Contexts are cached per certificate fingerprint, so a PFX is parsed once per process.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import re
import secrets
import ssl
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
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


class TrustedRootsInvalid(HubError):
    """A connection's trusted CA bundle that TLS cannot load (saved bundles are checked by
    `parse_ca_bundle`, so only a bundle written around the admin API gets here)."""

    code = "trusted_roots_invalid"
    http_status = 422


#: Upper bounds of a connection's trusted CA bundle: the ICP-Brasil roots (v5, v10, v11) and a
#: few intermediates are well under; the item (400 KB in DynamoDB) keeps room for the rest.
MAX_CA_BUNDLE_BYTES = 64 * 1024
MAX_CA_BUNDLE_CERTIFICATES = 50

_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


@dataclass(frozen=True)
class TrustedCa:
    """What the admin API shows of one certificate of a trusted CA bundle."""

    subject: str
    not_after: datetime.datetime
    sha256: str


def parse_ca_bundle(pem: str, now: datetime.datetime) -> list[TrustedCa]:
    """The CA certificates of a PEM bundle, checked: only `CERTIFICATE` blocks (no keys, nothing
    else but whitespace between them), each an X.509 certificate with BasicConstraints `ca=True`,
    not expired at `now`, at most MAX_CA_BUNDLE_CERTIFICATES within MAX_CA_BUNDLE_BYTES; and the
    whole loads into an SSL context. ValueError naming the problem (never the key material)."""
    data = pem.encode("utf-8")
    if len(data) > MAX_CA_BUNDLE_BYTES:
        raise ValueError(f"the bundle is over {MAX_CA_BUNDLE_BYTES} bytes")
    blocks = list(_PEM_BLOCK.finditer(data))
    if not blocks:
        raise ValueError("no PEM certificate in the bundle")
    if _PEM_BLOCK.sub(b"", data).strip():
        raise ValueError("the bundle holds text outside PEM blocks")
    if len(blocks) > MAX_CA_BUNDLE_CERTIFICATES:
        raise ValueError(f"the bundle holds more than {MAX_CA_BUNDLE_CERTIFICATES} certificates")
    found: list[TrustedCa] = []
    for number, block in enumerate(blocks, start=1):
        if block.group(1) != b"CERTIFICATE":
            raise ValueError(f"block {number} is not a certificate (only CA certificates belong here)")
        try:
            cert = x509.load_pem_x509_certificate(block.group(0))
            constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
        except x509.ExtensionNotFound:
            raise ValueError(f"certificate {number} is not a CA certificate (no BasicConstraints)") from None
        except ValueError:
            raise ValueError(f"block {number} is not an X.509 certificate") from None
        if not constraints.ca:
            raise ValueError(f"certificate {number} is not a CA certificate (BasicConstraints ca=false)")
        if cert.not_valid_after_utc <= now:
            raise ValueError(f"certificate {number} expired")
        found.append(
            TrustedCa(
                subject=cert.subject.rfc4514_string(),
                not_after=cert.not_valid_after_utc,
                sha256=cert.fingerprint(hashes.SHA256()).hex(),
            )
        )
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=pem)
    except ssl.SSLError:
        raise ValueError("the bundle does not load as TLS trust anchors") from None
    return found


def certificate_fingerprint(certificate: ClientCertificate) -> str:
    """A process-local id of (PFX, password): equal inputs give equal ids, and the id reveals
    nothing about the password. Not stable across processes; use it only as a cache key."""
    mac = hmac.new(_FINGERPRINT_KEY, digestmod=hashlib.sha256)
    for part in (certificate.pfx, certificate.password):
        mac.update(len(part).to_bytes(8, "big"))
        mac.update(part)
    return mac.hexdigest()


_cache: OrderedDict[tuple[str | None, bytes | None, bytes | None], ssl.SSLContext] = OrderedDict()
_cache_lock = threading.Lock()


def client_ssl_context(
    certificate: ClientCertificate | None,
    *,
    ca_pem: bytes | None = None,
    pinned_roots: bytes | None = None,
) -> ssl.SSLContext:
    """A client context that checks the host name, requires TLS 1.2+, presents `certificate`
    when given, and verifies the server against:

    - `pinned_roots` alone when given (a connection's trusted CA bundle: it *replaces* the
      system trust store and `ca_pem`, so a pinned partner is trusted only through its roots);
    - else the system trust store plus `ca_pem` (extra PEM CA certificates, e.g. a test CA).

    Cached: the same (certificate, ca_pem, pinned_roots) returns the same context object. Callers
    must not mutate it. Raises CertificateInvalid when the PKCS#12 cannot be opened, and
    TrustedRootsInvalid when `pinned_roots` holds no usable certificate.
    """
    key = (certificate_fingerprint(certificate) if certificate else None, ca_pem, pinned_roots)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    context = _build_context(certificate, ca_pem, pinned_roots)
    with _cache_lock:
        _cache[key] = context
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return context


def clear_cache() -> None:
    """Forgets every cached context (e.g. after a certificate is rotated)."""
    with _cache_lock:
        _cache.clear()


def _build_context(
    certificate: ClientCertificate | None, ca_pem: bytes | None, pinned_roots: bytes | None
) -> ssl.SSLContext:
    if pinned_roots:
        # No default paths: only the connection's own roots are trust anchors.
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = True
        context.verify_mode = ssl.CERT_REQUIRED
        try:
            context.load_verify_locations(cadata=pinned_roots.decode("ascii"))
        except (ssl.SSLError, UnicodeDecodeError, ValueError):
            raise TrustedRootsInvalid("the connection's trusted CA bundle cannot be loaded") from None
    else:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        if ca_pem:
            context.load_verify_locations(cadata=ca_pem.decode("ascii"))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
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
