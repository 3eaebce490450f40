"""Secrets sealed at rest (hub.sealed_config) through the admin use cases and the configuration
reads, over the fakes and an in-memory key service: sealed on save, kept on a PUT that leaves
them out, the same content again changes nothing, items written before sealing still read (and
get sealed at their next save), each reader opens only its purpose, a warm cache makes no key
service call per message."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hub.adapters.kms import KeyServiceUnavailable
from hub.admin.access import BOOTSTRAP
from hub.admin.audit import Audit
from hub.admin.connections import ConnectionAdmin, ConnectionSpec
from hub.admin.integrations import IntegrationAdmin
from hub.certificates.envelope import DataKey
from hub.config_cache import CachedConfig
from hub.domain.tenancy import Integration, Tenant
from hub.errors import ConfigurationError
from hub.ports import StoredIntegration
from hub.sealed_config import (
    DESTINATION_CREDENTIAL,
    INTEGRATION_PATHS,
    PURPOSES,
    STAND_IN,
    WEBHOOK_SECRET,
    Sealer,
    SecretUndecryptable,
    integration_owner,
)
from tests.fakes import ConfigState, FakeConfig
from tests.fakes.audit import FakeAuditTrail
from tests.fakes.connections import FakeConnections
from tests.fakes.data_keys import FakeDataKeys
from tests.fakes.integrations import FakeIntegrations

WHSEC = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ROTATED = "whsec_UVdYWVpBQkNERUZHSElKS0xNTk9QUVJT"
TOKEN = "tok-SEALED-0123456789"
SECRET_PATH = "inbound_webhook.verification.secrets"


class CountingKeys(FakeDataKeys):
    def __init__(self) -> None:
        super().__init__()
        self.generated = 0

    def generate(self, context: dict[str, str]) -> DataKey:
        self.generated += 1
        return super().generate(context)


class World:
    def __init__(self) -> None:
        self.keys = CountingKeys()
        self.state = ConfigState()
        self.audit = FakeAuditTrail()
        self.integrations = FakeIntegrations(self.state, self.keys)
        self.connections = FakeConnections(self.state, self.keys)
        self.admin = IntegrationAdmin(self.integrations, Audit(self.audit))
        self.connection_admin = ConnectionAdmin(self.connections, Audit(self.audit), tester=lambda: self)
        self.probed: list[Any] = []
        FakeConfig(self.state).put_tenant(Tenant(tenant_id="t1", name="T1"))

    def probe(self, destination: Any, tenant_id: str) -> dict[str, Any]:
        self.probed.append(destination)
        return {"ok": True, "error_class": None, "dest_status": "200", "detail": None}

    def reader(self, *purposes: str) -> FakeConfig:
        """The configuration as a function opening `purposes` reads it."""
        return FakeConfig(self.state, Sealer(self.keys, purposes))

    def saved(self, integration_id: str = "int_po") -> StoredIntegration:
        """The integration as stored: stand-ins at its sealed secrets, the seals beside it."""
        found = self.integrations.get("t1", integration_id)
        assert found is not None
        return found

    def stored_config(self, integration_id: str = "int_po") -> str:
        return self.saved(integration_id).integration.model_dump_json()


@pytest.fixture
def world() -> World:
    return World()


def body(secrets: Any = (WHSEC,), **changes: Any) -> dict[str, Any]:
    verification: dict[str, Any] = {"scheme": "standard_webhooks"}
    if secrets is not None:
        verification["secrets"] = list(secrets) if isinstance(secrets, tuple) else secrets
    return {
        "integration_id": "int_po",
        "name": "PO",
        "message_types": {"po": {}},
        "inbound_webhook": {"verification": verification, "adapter": {"message_type": "po"}},
        **changes,
    }


class TestIntegrations:
    def test_webhook_secrets_are_sealed_on_save_and_only_ingest_opens_them(self, world):
        world.admin.create(BOOTSTRAP, "t1", body())

        assert WHSEC not in world.stored_config()
        assert set(world.saved().sealed) == {SECRET_PATH}
        opened = world.reader(WEBHOOK_SECRET).get_integration("t1", "int_po")
        assert opened.inbound_webhook.verification.secrets == (WHSEC,)
        # The worker (destination credentials only) and the admin store see a stand-in.
        worker_view = world.reader(DESTINATION_CREDENTIAL).get_integration("t1", "int_po")
        assert worker_view.inbound_webhook.verification.secrets == (STAND_IN,)
        assert world.integrations.get("t1", "int_po").integration.inbound_webhook.verification.secrets == (
            STAND_IN,
        )
        assert world.keys.decrypts == 1  # only the ingest reader's

    @pytest.mark.parametrize("sent", [None, "***", ["***"]])
    def test_a_put_that_leaves_the_secret_out_keeps_its_seal_without_opening_it(self, world, sent):
        world.admin.create(BOOTSTRAP, "t1", body())
        sealed = world.saved().sealed

        saved = world.admin.replace(BOOTSTRAP, "t1", "int_po", body(sent, name="renamed"), None)

        assert saved["version"] == 2
        assert world.saved().sealed == sealed
        assert (world.keys.generated, world.keys.decrypts) == (1, 0)
        assert world.reader(WEBHOOK_SECRET).get_integration(
            "t1", "int_po"
        ).inbound_webhook.verification.secrets == (WHSEC,)

    def test_the_same_secret_again_changes_nothing(self, world):
        world.admin.create(BOOTSTRAP, "t1", body())
        sealed = world.saved().sealed

        again = world.admin.replace(BOOTSTRAP, "t1", "int_po", body(), None)

        assert again["version"] == 1
        assert len(world.audit.entries) == 1  # the creation only
        assert world.saved().sealed == sealed
        assert (world.keys.generated, world.keys.decrypts) == (1, 0)

    def test_a_new_secret_is_sealed_anew(self, world):
        world.admin.create(BOOTSTRAP, "t1", body())

        world.admin.replace(BOOTSTRAP, "t1", "int_po", body((WHSEC, ROTATED)), None)

        assert world.keys.generated == 2
        opened = world.reader(WEBHOOK_SECRET).get_integration("t1", "int_po")
        assert opened.inbound_webhook.verification.secrets == (WHSEC, ROTATED)

    def test_an_integration_saved_before_sealing_is_read_and_sealed_at_its_next_save(self, world):
        legacy = Integration.model_validate({**body(), "tenant_id": "t1"})
        FakeConfig(world.state, Sealer(None)).put_integration(legacy)  # no key: saved in clear
        assert WHSEC in world.stored_config()
        assert (
            world.reader(WEBHOOK_SECRET).get_integration("t1", "int_po").inbound_webhook
            == legacy.inbound_webhook
        )

        # Even the same content again: the save is what seals it.
        saved = world.admin.replace(BOOTSTRAP, "t1", "int_po", body(None), None)

        assert saved["version"] == 2
        assert WHSEC not in world.stored_config()
        assert set(world.saved().sealed) == {SECRET_PATH}
        assert (
            world.reader(WEBHOOK_SECRET).get_integration("t1", "int_po").inbound_webhook
            == legacy.inbound_webhook
        )

    def test_a_warm_cache_opens_once_not_per_message(self, world):
        world.admin.create(BOOTSTRAP, "t1", body())
        cached = CachedConfig(world.reader(WEBHOOK_SECRET), ttl_seconds=30)

        for _ in range(5):
            assert cached.get_integration("t1", "int_po").inbound_webhook.verification.secrets == (WHSEC,)

        assert world.keys.decrypts == 1


class TestConnections:
    def test_credentials_are_sealed_kept_recognized_and_opened_only_by_the_test(self, world):
        world.connection_admin.create(
            BOOTSTRAP,
            "t1",
            ConnectionSpec.model_validate(
                {"connection_id": "c", "url": "https://e.x/o", "auth": {"kind": "bearer", "token": TOKEN}}
            ),
        )
        stored = world.connections.get("t1", "c")
        assert stored is not None
        assert TOKEN not in stored.destination.model_dump_json()
        assert set(stored.sealed) == {"auth.token"}
        assert world.connections.get("t1", "c").destination.auth.token == STAND_IN

        def update(auth: dict[str, Any]) -> dict[str, Any]:
            spec = ConnectionSpec.model_validate({"url": "https://e.x/o", "auth": auth})
            return world.connection_admin.update(BOOTSTRAP, "t1", "c", spec, None)

        assert update({"kind": "bearer", "token": TOKEN})["version"] == 1  # the same again
        assert update({"kind": "bearer"})["version"] == 1  # left out: kept, nothing changed
        assert (world.keys.generated, world.keys.decrypts) == (1, 0)

        world.connection_admin.test(BOOTSTRAP, "t1", "c")

        [probed] = world.probed
        assert probed.auth.token == TOKEN
        assert world.keys.decrypts == 1

    def test_the_worker_opens_a_connections_credentials(self, world):
        world.connection_admin.create(
            BOOTSTRAP,
            "t1",
            ConnectionSpec.model_validate(
                {"connection_id": "c", "url": "https://e.x/o", "auth": {"kind": "bearer", "token": TOKEN}}
            ),
        )
        world.admin.create(BOOTSTRAP, "t1", {"integration_id": "int_c", "name": "c", "connection_id": "c"})

        assert (
            world.reader(DESTINATION_CREDENTIAL).get_integration("t1", "int_c").destination.auth.token
            == TOKEN
        )
        assert world.reader(WEBHOOK_SECRET).get_integration("t1", "int_c").destination.auth.token == STAND_IN


class TestSealer:
    def test_a_seal_opens_only_for_its_own_item(self, world):
        world.admin.create(BOOTSTRAP, "t1", body())
        config = json.loads(world.stored_config())
        blobs = world.saved().sealed
        sealer = Sealer(world.keys, PURPOSES)

        with pytest.raises(SecretUndecryptable):
            sealer.reveal(config, INTEGRATION_PATHS, "t1", integration_owner("int_other"), blobs)
        with pytest.raises(SecretUndecryptable):
            sealer.reveal(config, INTEGRATION_PATHS, "t2", integration_owner("int_po"), blobs)

    def test_a_seal_moved_to_another_field_is_refused(self, world):
        world.admin.create(BOOTSTRAP, "t1", body())
        moved = {"destination.auth.token": world.saved().sealed[SECRET_PATH]}

        with pytest.raises(SecretUndecryptable):
            Sealer(world.keys, PURPOSES).reveal(
                {}, INTEGRATION_PATHS, "t1", integration_owner("int_po"), moved
            )

    def test_a_key_service_outage_is_retryable(self):
        class Down(FakeDataKeys):
            def decrypt(self, encrypted: bytes, context: dict[str, str]) -> bytes:
                raise KeyServiceUnavailable("down")

        keys_ = Down()
        sealed = Sealer(keys_).seal(
            {"auth": {"token": TOKEN}}, {"auth.token": DESTINATION_CREDENTIAL}, "t1", "connection:c", {}
        )[1]

        with pytest.raises(KeyServiceUnavailable):
            Sealer(keys_, (DESTINATION_CREDENTIAL,)).reveal(
                {"auth": {}}, {"auth.token": DESTINATION_CREDENTIAL}, "t1", "connection:c", sealed
            )

    def test_a_stand_in_is_never_sealed_as_a_secret(self):
        with pytest.raises(ConfigurationError):
            Sealer(FakeDataKeys()).seal(
                {"auth": {"token": STAND_IN}},
                {"auth.token": DESTINATION_CREDENTIAL},
                "t1",
                "connection:c",
                {},
            )

    def test_without_a_key_values_stay_in_clear(self):
        config, blobs = Sealer(None).seal(
            {"auth": {"token": TOKEN}}, {"auth.token": DESTINATION_CREDENTIAL}, "t1", "connection:c", {}
        )

        assert (config, blobs) == ({"auth": {"token": TOKEN}}, {})
