"""A throwaway PKI built in code for mTLS tests: a CA, a server certificate for localhost, client
certificates (valid, expired, from another CA) and their PKCS#12 files (modern AES and legacy
3DES/SHA1, like older ICP-Brasil A1 files). Nothing here is a real secret."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PFX_PASSWORD = b"test-pfx-password"


@dataclass(frozen=True)
class Issued:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    @property
    def subject(self) -> str:
        return self.cert.subject.rfc4514_string()


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "BR"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Hub Test PKI"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def make_ca(common_name: str) -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - datetime.timedelta(days=1))
        .not_valid_after(_now() + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Issued(key, cert)


def issue(
    ca: Issued,
    common_name: str,
    *,
    server: bool = False,
    expired: bool = False,
    valid_days: int = 30,
) -> Issued:
    """A leaf certificate signed by `ca`: a localhost server certificate or a client one."""
    key = ec.generate_private_key(ec.SECP256R1())
    if expired:
        not_before, not_after = _now() - datetime.timedelta(days=30), _now() - datetime.timedelta(days=1)
    else:
        not_before, not_after = (
            _now() - datetime.timedelta(days=1),
            _now() + datetime.timedelta(days=valid_days),
        )
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    else:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    return Issued(key, builder.sign(ca.key, hashes.SHA256()))


def pkcs12_of(leaf: Issued, ca: Issued, password: bytes = PFX_PASSWORD, *, legacy: bool = False) -> bytes:
    """`leaf`'s key, certificate and CA chain as PKCS#12; `legacy` = 3DES/SHA1 (old A1 files)."""
    encryption: serialization.KeySerializationEncryption
    if legacy:
        encryption = (
            serialization.PrivateFormat.PKCS12.encryption_builder()
            .kdf_rounds(2048)
            .key_cert_algorithm(pkcs12.PBES.PBESv1SHA1And3KeyTripleDESCBC)
            .hmac_hash(hashes.SHA1())  # noqa: S303 - the legacy format under test
            .build(password)
        )
    else:
        encryption = serialization.BestAvailableEncryption(password)
    return pkcs12.serialize_key_and_certificates(b"client", leaf.key, leaf.cert, [ca.cert], encryption)


@dataclass(frozen=True)
class Pki:
    ca: Issued
    server: Issued
    client: Issued
    expired_client: Issued
    other_ca: Issued
    foreign_client: Issued

    @property
    def client_pfx(self) -> bytes:
        return pkcs12_of(self.client, self.ca)

    @property
    def legacy_client_pfx(self) -> bytes:
        return pkcs12_of(self.client, self.ca, legacy=True)

    @property
    def expired_client_pfx(self) -> bytes:
        return pkcs12_of(self.expired_client, self.ca)

    @property
    def foreign_client_pfx(self) -> bytes:
        return pkcs12_of(self.foreign_client, self.other_ca)

    def write_server_files(self, directory: Path) -> tuple[Path, Path, Path]:
        """(ca.pem, server.pem, server.key) in `directory`, for an ssl server context."""
        files = (
            (directory / "ca.pem", self.ca.cert_pem),
            (directory / "server.pem", self.server.cert_pem),
            (directory / "server.key", self.server.key_pem),
        )
        for path, data in files:
            path.write_bytes(data)
        return files[0][0], files[1][0], files[2][0]

    def server_context(self, directory: Path, *, require_client_certificate: bool = False) -> ssl.SSLContext:
        """A TLS server context with the localhost certificate (from this CA); with
        `require_client_certificate`, clients must present one issued by this CA."""
        ca, cert, key = self.write_server_files(directory)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        if require_client_certificate:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(cafile=str(ca))
        return context


@cache
def build_pki() -> Pki:
    """One PKI per test process (key generation is the slow part)."""
    ca = make_ca("Hub Test CA")
    other_ca = make_ca("Other Test CA")
    return Pki(
        ca=ca,
        server=issue(ca, "localhost", server=True),
        client=issue(ca, "Hub Test Client"),
        expired_client=issue(ca, "Hub Expired Client", expired=True),
        other_ca=other_ca,
        foreign_client=issue(other_ca, "Foreign Client"),
    )
