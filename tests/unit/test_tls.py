"""Client TLS contexts: PKCS#12 loading without the clear key on disk, caching, typed errors."""

from __future__ import annotations

import ssl
import stat
import tempfile
from pathlib import Path

import pytest

from hub.delivery import tls
from hub.delivery.port import ClientCertificate, unusable_destination_class
from hub.delivery.tls import (
    CertificateInvalid,
    TrustedRootsInvalid,
    certificate_fingerprint,
    client_ssl_context,
)
from hub.domain.failure import ErrorClass
from tests.pki import PFX_PASSWORD, Pki, build_pki


@pytest.fixture(scope="module")
def pki() -> Pki:
    return build_pki()


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    tls.clear_cache()


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_key_file_is_private_encrypted_and_removed(
    pki: Pki, temp_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, int, bytes]] = []
    load_cert_chain = ssl.SSLContext.load_cert_chain

    def spy(self: ssl.SSLContext, certfile: str, keyfile: str | None = None, password: object = None) -> None:
        seen.append((certfile, stat.S_IMODE(Path(certfile).stat().st_mode), Path(certfile).read_bytes()))
        load_cert_chain(self, certfile, keyfile, password)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl.SSLContext, "load_cert_chain", spy)

    context = client_ssl_context(ClientCertificate(pki.client_pfx, PFX_PASSWORD))

    [(path, mode, content)] = seen
    assert Path(path).parent == temp_dir
    assert mode == 0o600
    assert b"BEGIN ENCRYPTED PRIVATE KEY" in content
    assert b"BEGIN PRIVATE KEY" not in content
    assert content.count(b"BEGIN CERTIFICATE") == 2  # leaf + CA chain
    assert list(temp_dir.iterdir()) == []
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2


def test_legacy_3des_pkcs12_loads(pki: Pki, temp_dir: Path) -> None:
    context = client_ssl_context(ClientCertificate(pki.legacy_client_pfx, PFX_PASSWORD))

    assert isinstance(context, ssl.SSLContext)
    assert list(temp_dir.iterdir()) == []


def test_wrong_password_is_certificate_invalid_without_the_password(pki: Pki, temp_dir: Path) -> None:
    with pytest.raises(CertificateInvalid) as caught:
        client_ssl_context(ClientCertificate(pki.client_pfx, b"s3cret-guess"))

    error = caught.value
    assert error.code == "certificate_invalid"
    assert "s3cret-guess" not in str(error)
    assert error.__cause__ is None
    assert error.__suppress_context__
    assert list(temp_dir.iterdir()) == []


def test_not_pkcs12_is_certificate_invalid(pki: Pki) -> None:
    with pytest.raises(CertificateInvalid):
        client_ssl_context(ClientCertificate(pki.client.cert_pem, PFX_PASSWORD))


def test_contexts_are_cached_per_certificate_and_ca(pki: Pki) -> None:
    certificate = ClientCertificate(pki.client_pfx, PFX_PASSWORD)
    same = ClientCertificate(bytes(certificate.pfx), bytes(certificate.password))

    first = client_ssl_context(certificate)

    assert client_ssl_context(same) is first
    assert client_ssl_context(certificate, ca_pem=pki.ca.cert_pem) is not first
    assert client_ssl_context(None) is not first


def test_fingerprint_depends_on_pfx_and_password(pki: Pki) -> None:
    pfx = pki.client_pfx
    right = certificate_fingerprint(ClientCertificate(pfx, PFX_PASSWORD))

    assert certificate_fingerprint(ClientCertificate(bytes(pfx), PFX_PASSWORD)) == right
    assert certificate_fingerprint(ClientCertificate(pfx, b"other")) != right
    assert certificate_fingerprint(ClientCertificate(pki.legacy_client_pfx, PFX_PASSWORD)) != right


def test_a_failed_load_is_not_cached(pki: Pki) -> None:
    with pytest.raises(CertificateInvalid):
        client_ssl_context(ClientCertificate(pki.client_pfx, b"wrong"))

    assert isinstance(client_ssl_context(ClientCertificate(pki.client_pfx, PFX_PASSWORD)), ssl.SSLContext)


def test_extra_ca_is_trusted(pki: Pki) -> None:
    context = client_ssl_context(None, ca_pem=pki.ca.cert_pem)

    subjects = [str(ca["subject"]) for ca in context.get_ca_certs()]
    assert any("'Hub Test CA'" in subject for subject in subjects)


def test_pinned_roots_replace_the_system_store_and_unloadable_ones_are_tls_material_errors(pki) -> None:
    pinned = client_ssl_context(None, pinned_roots=pki.ca.cert_pem)

    assert [c["subject"] for c in pinned.get_ca_certs()] == [
        ((("countryName", "BR"),), (("organizationName", "Hub Test PKI"),), (("commonName", "Hub Test CA"),))
    ]
    assert pinned.check_hostname is True
    with pytest.raises(TrustedRootsInvalid) as unloadable:
        client_ssl_context(
            None, pinned_roots=b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
        )
    assert unusable_destination_class(unloadable.value.code) is ErrorClass.TLS
    assert unusable_destination_class("configuration_error") is ErrorClass.SYNTAX
