"""The connection use cases (hub.admin.connections) on the in-memory fakes: validation with the
pipeline's model, sefaz rules and the uploaded certificate, write-only credentials, versions,
deletion while in use, the audit trail, and the configuration repository resolving an
integration's `connection_id`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from hub.admin.access import BOOTSTRAP
from hub.admin.audit import Audit
from hub.admin.connections import (
    CertificateRequired,
    ConnectionAdmin,
    ConnectionExists,
    ConnectionInUse,
    ConnectionSpec,
)
from hub.config_cache import CachedConfig
from hub.domain.tenancy import AuthKind, Integration, IntegrationMode, Tenant
from hub.errors import NotFound, PreconditionFailed, ValidationFailed
from tests.fakes import ConfigState, FakeConfig
from tests.fakes.audit import FakeAuditTrail
from tests.fakes.connections import FakeConnections
from tests.pki import build_pki, make_ca

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
WSDL = "nfelib:nfe/wsdl/v4_0/nfestatusservico4.wsdl"


class World:
    def __init__(self) -> None:
        self.state = ConfigState()
        self.store = FakeConnections(self.state)
        self.config = FakeConfig(self.state)
        self.audit = FakeAuditTrail()
        self.probed: list[tuple[Any, str]] = []
        self.admin = ConnectionAdmin(self.store, Audit(self.audit), tester=lambda: self, clock=lambda: NOW)
        for tenant_id in ("t1", "t2"):
            self.config.put_tenant(Tenant(tenant_id=tenant_id, name=tenant_id))

    def probe(self, destination: Any, tenant_id: str) -> dict[str, Any]:
        self.probed.append((destination, tenant_id))
        return {"ok": True, "error_class": None, "dest_status": "200", "detail": "fine"}

    def upload_certificate(self, connection_id: str, tenant_id: str = "t1") -> None:
        self.state.certificates.add((tenant_id, connection_id))

    def integration(
        self, integration_id: str, connection_id: str, tenant_id: str = "t1", *, gone: bool = False
    ) -> None:
        """An integration naming the connection; `gone`: its destination answered 410."""
        config = Integration(
            integration_id=integration_id,
            tenant_id=tenant_id,
            name=integration_id,
            mode=IntegrationMode.ORCHESTRATION,
            connection_id=connection_id,
        )
        self.config.put_integration(config)
        if gone:
            self.config.flag_connection_gone(config, NOW, "410")


@pytest.fixture
def world() -> World:
    return World()


def spec(**fields: Any) -> ConnectionSpec:
    return ConnectionSpec.model_validate({"url": "https://erp.example.com/orders", **fields})


def sefaz_spec(**fields: Any) -> ConnectionSpec:
    return spec(
        platform="sefaz",
        url="https://nfe.fazenda.sp.gov.br/ws/nfestatusservico4.asmx",
        soap={"wsdl": WSDL, "operation": "nfeStatusServicoNF"},
        **fields,
    )


def fields_of(error: ValidationFailed) -> set[str]:
    return {d["field"] for d in error.details}


class TestCreate:
    def test_an_absent_id_is_generated_and_the_view_is_version_1(self, world):
        view = world.admin.create(BOOTSTRAP, "t1", spec(name="ERP"))

        assert view["connection_id"].startswith("con_")
        assert len(view["connection_id"]) == len("con_") + 26
        assert (view["version"], view["tenant_id"], view["name"], view["protocol"]) == (
            1,
            "t1",
            "ERP",
            "http",
        )
        assert world.admin.get("t1", view["connection_id"]) == view

    def test_a_taken_id_is_409_within_its_tenant_only(self, world):
        """Issue 27, point 7: ids are unique within a tenant; another tenant's same id is simply
        another connection (a 409 there would tell that the id exists elsewhere)."""
        world.admin.create(BOOTSTRAP, "t1", spec(connection_id="erp"))

        with pytest.raises(ConnectionExists) as taken:
            world.admin.create(BOOTSTRAP, "t1", spec(connection_id="erp"))
        theirs = world.admin.create(
            BOOTSTRAP, "t2", spec(connection_id="erp", url="https://t2.example.com/in")
        )

        assert taken.value.http_status == 409
        assert (theirs["tenant_id"], theirs["version"]) == ("t2", 1)
        assert world.admin.get("t1", "erp")["url"] == "https://erp.example.com/orders"
        assert world.admin.get("t2", "erp")["url"] == "https://t2.example.com/in"

    def test_an_unknown_tenant_is_404(self, world):
        with pytest.raises(NotFound):
            world.admin.create(BOOTSTRAP, "nobody", spec())

    def test_the_pipeline_model_refuses_what_it_cannot_deliver_naming_the_field(self, world):
        with pytest.raises(ValidationFailed) as refused:
            world.admin.create(BOOTSTRAP, "t1", spec(protocol="soap"))
        assert refused.value.details[0]["message"].endswith(
            "protocol soap needs soap settings (wsdl, operation)"
        )

        with pytest.raises(ValidationFailed) as bearer:
            world.admin.create(BOOTSTRAP, "t1", spec(auth={"kind": "bearer"}))
        assert fields_of(bearer.value) == {"auth.token"}

        with pytest.raises(ValidationFailed) as oauth:
            world.admin.create(
                BOOTSTRAP, "t1", spec(auth={"kind": "oauth2_client_credentials", "client_id": "c"})
            )
        assert fields_of(oauth.value) == {"auth.token_url", "auth.client_secret"}


class TestSefaz:
    def test_without_an_uploaded_certificate_it_is_422_certificate_required(self, world):
        with pytest.raises(CertificateRequired) as refused:
            world.admin.create(BOOTSTRAP, "t1", sefaz_spec(connection_id="sp"))

        assert (refused.value.http_status, refused.value.code) == (422, "certificate_required")
        assert world.store.get("t1", "sp") is None

    def test_another_tenants_certificate_under_the_id_does_not_count(self, world):
        world.upload_certificate("sp", tenant_id="t2")

        with pytest.raises(CertificateRequired):
            world.admin.create(BOOTSTRAP, "t1", sefaz_spec(connection_id="sp"))

    def test_with_the_certificate_it_is_soap_12_with_mtls_through_the_connections_certificate(self, world):
        world.upload_certificate("sp")

        view = world.admin.create(BOOTSTRAP, "t1", sefaz_spec(connection_id="sp"))

        assert (view["protocol"], view["soap"]["soap_version"], view["use_client_certificate"]) == (
            "soap",
            "1.2",
            True,
        )
        assert world.store.get("t1", "sp").destination.client_certificate_id == "sp"

    def test_soap_11_or_no_mtls_contradicts_sefaz_and_is_400(self, world):
        world.upload_certificate("sp")
        with pytest.raises(ValidationFailed):
            world.admin.create(
                BOOTSTRAP,
                "t1",
                sefaz_spec(connection_id="sp").model_copy(
                    update={"soap": sefaz_spec().soap.model_copy(update={"soap_version": "1.1"})}
                ),
            )
        with pytest.raises(ValidationFailed) as no_mtls:
            world.admin.create(BOOTSTRAP, "t1", sefaz_spec(connection_id="sp", use_client_certificate=False))
        assert fields_of(no_mtls.value) == {"use_client_certificate"}

    def test_a_generic_connection_may_use_its_uploaded_certificate_when_it_says_so(self, world):
        with pytest.raises(CertificateRequired):
            world.admin.create(BOOTSTRAP, "t1", spec(connection_id="m", use_client_certificate=True))
        world.upload_certificate("m")

        view = world.admin.create(BOOTSTRAP, "t1", spec(connection_id="m", use_client_certificate=True))

        assert view["use_client_certificate"] is True
        assert (
            world.admin.create(BOOTSTRAP, "t1", spec(connection_id="plain"))["use_client_certificate"]
            is False
        )


class TestSecrets:
    AUTHS = (
        {"kind": "bearer", "token": "tok-SECRET-1"},
        {"kind": "basic", "username": "erp", "password": "pw-SECRET-2"},
        {"kind": "api_key", "header_name": "X-Key", "api_key": "key-SECRET-3"},
        {
            "kind": "oauth2_client_credentials",
            "token_url": "https://auth.example.com/token",
            "client_id": "hub",
            "client_secret": "cs-SECRET-4",
        },
    )

    @pytest.mark.parametrize("auth", AUTHS, ids=lambda a: a["kind"])
    def test_views_and_the_audit_never_show_a_credential(self, world, auth):
        created = world.admin.create(BOOTSTRAP, "t1", spec(connection_id="c", auth=auth))
        listed = world.admin.list_connections("t1", 10, None)
        read = world.admin.get("t1", "c")

        secret = next(v for v in auth.values() if "SECRET" in v)
        shown = json.dumps([created, listed, read, [vars(e) for e in world.audit.entries]], default=str)
        assert secret not in shown
        assert "***" in json.dumps(created["auth"])
        assert (
            world.store.with_credentials(world.store.get("t1", "c")).auth.model_dump()[
                next(k for k, v in auth.items() if v == secret)
            ]
            == secret
        )

    def test_a_put_without_the_secret_or_with_the_mask_keeps_the_stored_one(self, world):
        world.admin.create(
            BOOTSTRAP, "t1", spec(connection_id="c", auth={"kind": "bearer", "token": "tok-1"})
        )

        world.admin.update(BOOTSTRAP, "t1", "c", spec(auth={"kind": "bearer"}, name="renamed"), None)
        assert world.store.with_credentials(world.store.get("t1", "c")).auth.token == "tok-1"
        world.admin.update(
            BOOTSTRAP, "t1", "c", spec(auth={"kind": "bearer", "token": "***"}, name="again"), None
        )
        assert world.store.with_credentials(world.store.get("t1", "c")).auth.token == "tok-1"

        world.admin.update(
            BOOTSTRAP, "t1", "c", spec(auth={"kind": "bearer", "token": "tok-2"}, name="again"), None
        )
        assert world.store.with_credentials(world.store.get("t1", "c")).auth.token == "tok-2"

    def test_changing_the_kind_drops_the_old_secret_and_needs_the_new_one(self, world):
        world.admin.create(
            BOOTSTRAP, "t1", spec(connection_id="c", auth={"kind": "bearer", "token": "tok-1"})
        )

        with pytest.raises(ValidationFailed) as missing:
            world.admin.update(BOOTSTRAP, "t1", "c", spec(auth={"kind": "basic", "username": "u"}), None)
        assert fields_of(missing.value) == {"auth.password"}

        world.admin.update(BOOTSTRAP, "t1", "c", spec(auth={"kind": "none"}), None)
        auth = world.store.with_credentials(world.store.get("t1", "c")).auth
        assert (auth.kind, auth.token) == (AuthKind.NONE, None)


class TestVersions:
    def test_a_change_bumps_the_version_and_is_audited_with_before_and_after(self, world):
        world.admin.create(BOOTSTRAP, "t1", spec(connection_id="c"))

        view = world.admin.update(BOOTSTRAP, "t1", "c", spec(url="https://erp.example.com/v2"), 1)

        assert (view["version"], view["url"]) == (2, "https://erp.example.com/v2")
        created, updated = world.audit.entries
        assert (created.action, updated.action) == ("connection.created", "connection.updated")
        assert (updated.scope, updated.target, updated.actor_token_id) == (
            "t1",
            {"connection_id": "c"},
            "bootstrap-admin",
        )
        assert (updated.before["version"], updated.after["version"]) == (1, 2)

    def test_the_same_content_changes_nothing(self, world):
        world.admin.create(
            BOOTSTRAP, "t1", spec(connection_id="c", name="ERP", auth={"kind": "bearer", "token": "t"})
        )
        writes = world.state.writes

        view = world.admin.update(BOOTSTRAP, "t1", "c", spec(name="ERP", auth={"kind": "bearer"}), 1)

        assert view["version"] == 1
        assert world.state.writes == writes
        assert len(world.audit.entries) == 1

    def test_a_stale_if_match_is_412_with_the_current_version(self, world):
        world.admin.create(BOOTSTRAP, "t1", spec(connection_id="c"))
        world.admin.update(BOOTSTRAP, "t1", "c", spec(name="first"), 1)

        with pytest.raises(PreconditionFailed) as stale:
            world.admin.update(BOOTSTRAP, "t1", "c", spec(name="second"), 1)
        assert stale.value.details == {"current_version": 2}
        with pytest.raises(PreconditionFailed):
            world.admin.delete(BOOTSTRAP, "t1", "c", 1)
        assert world.admin.get("t1", "c")["name"] == "first"

    def test_another_tenants_connection_is_not_found_for_every_use_case(self, world):
        world.admin.create(BOOTSTRAP, "t2", spec(connection_id="theirs"))

        for call in (
            lambda: world.admin.get("t1", "theirs"),
            lambda: world.admin.update(BOOTSTRAP, "t1", "theirs", spec(), None),
            lambda: world.admin.delete(BOOTSTRAP, "t1", "theirs", None),
            lambda: world.admin.test(BOOTSTRAP, "t1", "theirs"),
        ):
            with pytest.raises(NotFound):
                call()
        assert world.admin.list_connections("t1", 10, None)["items"] == []
        assert world.probed == []

    def test_a_save_clears_connection_gone_at_on_the_integrations_using_it(self, world):
        world.admin.create(BOOTSTRAP, "t1", spec(connection_id="c"))
        world.integration("int_a", "c", gone=True)
        world.integration("int_b", "other", gone=True)

        world.admin.update(BOOTSTRAP, "t1", "c", spec(url="https://erp.example.com/moved"), None)

        assert world.config.get_integration("t1", "int_a").connection_gone_at is None
        assert world.config.get_integration("t1", "int_b").connection_gone_at is not None


#: Issue 27, point 4: the owner's endpoint, and another host a moved connection would send to.
OWNER, ELSEWHERE = "https://erp.example.com/orders", "https://elsewhere.example.net/steal"
BOUND_AUTHS = {
    "bearer": {"kind": "bearer", "token": "tok-OWNER"},
    "basic": {"kind": "basic", "username": "u", "password": "pw-OWNER"},
    "api_key": {"kind": "api_key", "header_name": "X-Api-Key", "api_key": "key-OWNER"},
    "oauth2_client_credentials": {
        "kind": "oauth2_client_credentials",
        "token_url": "https://erp.example.com/token",
        "client_id": "cid",
        "client_secret": "cs-OWNER",
    },
}


class TestCredentialBinding:
    """A move to another host with the credential sent again, or a move of the path only, is
    saved (the refusals: tests/unit/test_destination_binding.py and the handler's answer in
    tests/integration/test_credential_binding.py)."""

    @pytest.mark.parametrize("kind", list(BOUND_AUTHS))
    def test_a_new_host_with_the_secret_is_saved(self, world, kind):
        auth = BOUND_AUTHS[kind]
        world.admin.create(BOOTSTRAP, "t1", spec(connection_id="erp", url=OWNER, auth=auth))

        moved = world.admin.update(BOOTSTRAP, "t1", "erp", spec(url=ELSEWHERE, auth=auth), None)

        assert (moved["url"], moved["version"]) == (ELSEWHERE, 2)

    def test_another_path_on_the_same_endpoint_keeps_the_certificate(self, world):
        world.upload_certificate("sefaz-sp")
        world.admin.create(BOOTSTRAP, "t1", sefaz_spec(connection_id="sefaz-sp"))
        endpoint = world.admin.get("t1", "sefaz-sp")["url"]

        same_endpoint = spec(
            connection_id="sefaz-sp",
            platform="sefaz",
            url=endpoint + "/v2",
            soap={"wsdl": WSDL, "operation": "nfeStatusServicoNF"},
        )

        changed = world.admin.update(BOOTSTRAP, "t1", "sefaz-sp", same_endpoint, None)

        assert changed["version"] == 2
        assert world.store.get("t1", "sefaz-sp").destination.client_certificate_id == "sefaz-sp"


class TestDelete:
    def test_in_use_is_409_naming_the_integrations_then_it_deletes(self, world):
        world.admin.create(BOOTSTRAP, "t1", spec(connection_id="c"))
        world.integration("int_a", "c")
        world.integration("int_x", "c", tenant_id="t2")  # another tenant's item never counts

        with pytest.raises(ConnectionInUse) as in_use:
            world.admin.delete(BOOTSTRAP, "t1", "c", None)
        assert (in_use.value.http_status, in_use.value.code) == (409, "connection_in_use")
        assert in_use.value.details == {"integration_ids": ["int_a"]}

        world.integration("int_a", "elsewhere")
        world.admin.delete(BOOTSTRAP, "t1", "c", 1)

        with pytest.raises(NotFound):
            world.admin.get("t1", "c")
        assert world.audit.entries[-1].action == "connection.deleted"
        assert world.audit.entries[-1].after is None


class TestTrustedRoots:
    def test_a_ca_bundle_is_stored_and_shown(self, world):
        pem = (build_pki().ca.cert_pem + build_pki().other_ca.cert_pem).decode()

        view = world.admin.create(BOOTSTRAP, "t1", spec(connection_id="c", trusted_ca_pem=pem))

        assert view["trusted_ca_pem"] == pem
        assert world.store.get("t1", "c").destination.trusted_ca_pem == pem

    @pytest.mark.parametrize(
        "bundle",
        [
            "not a certificate",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            "leaf",
            "key",
            "expired",
            "trailing",
        ],
    )
    def test_what_is_no_ca_certificate_is_400_naming_the_field(self, world, bundle):
        pki = build_pki()
        pem = {
            "leaf": pki.server.cert_pem.decode(),
            "key": pki.ca.cert_pem.decode() + pki.client.key_pem.decode(),
            "expired": _expired_ca_pem(),
            "trailing": pki.ca.cert_pem.decode() + "junk after\n",
        }.get(bundle, bundle)

        with pytest.raises(ValidationFailed) as refused:
            world.admin.create(BOOTSTRAP, "t1", spec(connection_id="c", trusted_ca_pem=pem))

        assert fields_of(refused.value) == {"trusted_ca_pem"}
        assert "PRIVATE" not in json.dumps(refused.value.details)
        assert world.store.get("t1", "c") is None

    def test_a_bundle_over_the_bound_is_refused(self):
        with pytest.raises(ValueError, match="trusted_ca_pem"):
            spec(trusted_ca_pem="x" * (64 * 1024 + 1))


def _expired_ca_pem() -> str:
    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415

    ca = make_ca("Old CA")
    old = (
        x509.CertificateBuilder()
        .subject_name(ca.cert.subject)
        .issuer_name(ca.cert.subject)
        .public_key(ca.key.public_key())
        .serial_number(1)
        .not_valid_before(datetime(2020, 1, 1, tzinfo=UTC))
        .not_valid_after(datetime(2021, 1, 1, tzinfo=UTC))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca.key, hashes.SHA256())
    )
    return old.public_bytes(serialization.Encoding.PEM).decode()


class TestTestTool:
    def test_it_probes_the_stored_destination_and_writes_only_its_audit_entry(self, world):
        world.admin.create(BOOTSTRAP, "t1", spec(connection_id="c", auth={"kind": "bearer", "token": "tok"}))
        writes, entries = world.state.writes, len(world.audit.entries)

        assert world.admin.test(BOOTSTRAP, "t1", "c")["ok"] is True

        [(destination, tenant_id)] = world.probed
        assert (destination.connection_id, destination.auth.token, tenant_id) == ("c", "tok", "t1")
        assert world.state.writes == writes
        assert len(world.audit.entries) == entries + 1
        tested = world.audit.entries[-1]
        assert (tested.action, dict(tested.target), tested.actor_token_id) == (
            "connection.tested",
            {"connection_id": "c"},
            BOOTSTRAP.token_id,
        )
        assert tested.after == {"host": "erp.example.com", "outcome": "ok", "dest_status": "200"}
        assert "tok" not in json.dumps([tested.before, tested.after])

    def test_a_failed_test_is_audited_with_its_error_class_only(self, world):
        world.admin.create(BOOTSTRAP, "t1", spec(connection_id="c", url="https://erp.example.com/p?k=v"))
        world.probe = lambda d, t: {
            "ok": False,
            "error_class": "http_4xx",
            "dest_status": "403",
            "detail": "body: the server said something secret",
        }

        world.admin.test(BOOTSTRAP, "t1", "c")

        tested = world.audit.entries[-1]
        assert tested.after == {"host": "erp.example.com", "outcome": "http_4xx", "dest_status": "403"}


class TestResolution:
    def test_an_integration_naming_a_connection_gets_its_destination(self, world):
        world.admin.create(BOOTSTRAP, "t1", spec(connection_id="c", auth={"kind": "bearer", "token": "tok"}))
        world.integration("int_a", "c")

        resolved = world.config.get_integration("t1", "int_a")

        assert resolved.connection_id == "c"
        assert (resolved.destination.url, resolved.destination.auth.token) == (
            "https://erp.example.com/orders",
            "tok",
        )

    def test_a_missing_or_foreign_connection_resolves_to_no_destination(self, world):
        world.admin.create(BOOTSTRAP, "t2", spec(connection_id="theirs"))
        world.integration("int_a", "theirs")
        world.integration("int_b", "missing")

        assert world.config.get_integration("t1", "int_a").destination is None
        assert world.config.get_integration("t1", "int_b").destination is None

    def test_the_cache_keeps_the_resolved_integration(self, world):
        world.admin.create(BOOTSTRAP, "t1", spec(connection_id="c"))
        world.integration("int_a", "c")
        cached = CachedConfig(world.config, ttl_seconds=60)

        first = cached.get_integration("t1", "int_a")
        reads = world.config.integration_reads
        again = cached.get_integration("t1", "int_a")

        assert again == first
        assert again.destination is not None
        assert world.config.integration_reads == reads


class TestConnectorTester:
    @staticmethod
    def raising(error: Exception) -> Any:
        from hub.delivery.probe import ConnectorTester  # noqa: PLC0415
        from hub.domain.tenancy import DestinationProtocol  # noqa: PLC0415

        class Raises:
            def probe(self, destination: Any, tenant_id: str | None) -> Any:
                raise error

        return ConnectorTester({DestinationProtocol.HTTP: Raises})

    def test_a_connection_the_connector_refuses_is_reported_like_the_worker_reports_it(self):
        from hub.delivery.tls import CertificateInvalid, TrustedRootsInvalid  # noqa: PLC0415
        from hub.domain.tenancy import Destination  # noqa: PLC0415
        from hub.errors import ConfigurationError  # noqa: PLC0415

        destination = Destination(url="https://erp.example.com/orders")
        for error, error_class in (
            (CertificateInvalid("bad pfx"), "tls"),
            (TrustedRootsInvalid("bad roots"), "tls"),
            (ConfigurationError("no such operation"), "syntax"),
        ):
            result = self.raising(error).probe(destination, "t1")
            assert (result["ok"], result["error_class"], result["detail"]) == (
                False,
                error_class,
                error.message,
            )

    def test_our_own_outage_is_not_blamed_on_the_connection(self):
        from hub.domain.tenancy import Destination  # noqa: PLC0415
        from hub.errors import StorageUnavailable  # noqa: PLC0415

        with pytest.raises(StorageUnavailable):
            self.raising(StorageUnavailable("down")).probe(Destination(url="https://erp.example.com/x"), "t1")
