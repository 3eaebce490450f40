"""An in-memory `hub.ports.IntegrationStore` (and `hub.ingest.receptions.ReceptionStore`) over
the fakes' `ConfigState`, with the DynamoDB adapter's contract (tests/contract/
test_integrations_contract.py): ids taken once per tenant, writes at the version read
(VersionConflict), a replace that clears the gone flag and keeps the reception, a delete refused
by a reception meanwhile, listing by id, waiting messages found by their status."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from hub.adapters.dynamo.keys import LISTED_STATUSES
from hub.certificates.envelope import DataKeys
from hub.domain.message import MessageRecord
from hub.domain.tenancy import Integration, Tenant
from hub.errors import Conflict
from hub.ports import IntegrationPage, StoredIntegration
from hub.sealed_config import Sealer
from tests.fakes.config import ConfigState, SavedIntegration, at_version, saved_integration
from tests.fakes.data_keys import SHARED_KEYS
from tests.fakes.pages import page


def _no_messages() -> Iterable[MessageRecord]:
    return ()


class FakeIntegrations:
    """`messages` lists the stored messages (FakeMessages.records): what waits is read there."""

    def __init__(
        self,
        state: ConfigState | None = None,
        keys: DataKeys | None = SHARED_KEYS,
        messages: Callable[[], Iterable[MessageRecord]] = _no_messages,
    ) -> None:
        self.state = state or ConfigState()
        #: Seals what it is given; never opens (the admin API's reads show stand-ins).
        self._sealer = Sealer(keys)
        self._messages = messages

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        return self.state.tenants.get(tenant_id)

    def connection_exists(self, tenant_id: str, connection_id: str) -> bool:
        return (tenant_id, connection_id) in self.state.connections

    def get(self, tenant_id: str, integration_id: str) -> StoredIntegration | None:
        saved = self.get_saved(tenant_id, integration_id)
        return saved.stored() if saved is not None else None

    def get_saved(self, tenant_id: str, integration_id: str) -> SavedIntegration | None:
        return self.state.integrations.get((tenant_id, integration_id))

    def create(self, integration: Integration) -> StoredIntegration:
        with self.state.lock:
            if (integration.tenant_id, integration.integration_id) in self.state.integrations:
                raise Conflict("integration exists")
            shown, blobs = saved_integration(integration, self._sealer)
            self.state.save_integration(SavedIntegration(shown, 1, blobs))
        return StoredIntegration(integration, 1)

    def replace(
        self, integration: Integration, expected_version: int, sealed: Mapping[str, Any] | None = None
    ) -> StoredIntegration:
        """At the next version; the gone flag cleared, the reception kept."""
        with self.state.lock:
            old = at_version(
                self.get_saved(integration.tenant_id, integration.integration_id), expected_version
            )
            shown, blobs = saved_integration(integration, self._sealer, sealed)
            kept = old.last_received_at
            self.state.save_integration(SavedIntegration(shown, expected_version + 1, blobs, kept))
        return StoredIntegration(integration, expected_version + 1)

    def delete(self, current: StoredIntegration) -> None:
        tenant_id, integration_id = current.integration.tenant_id, current.integration.integration_id
        with self.state.lock:
            old = at_version(self.get_saved(tenant_id, integration_id), current.version)
            if old.last_received_at != current.last_received_at:
                raise Conflict("a message was received meanwhile")
            del self.state.integrations[(tenant_id, integration_id)]
            self.state.writes += 1

    def list_integrations(self, tenant_id: str, limit: int, cursor: str | None) -> IntegrationPage:
        with self.state.lock:
            mine = [i for (t, i) in self.state.integrations if t == tenant_id]
        ids, next_cursor = page(mine, limit, cursor, f"integrations:{tenant_id}")
        found = [stored for i in ids if (stored := self.get(tenant_id, i)) is not None]
        return IntegrationPage(integrations=found, next_cursor=next_cursor)

    def has_waiting_messages(self, tenant_id: str, integration_id: str) -> bool:
        return any(
            record.tenant_id == tenant_id
            and record.integration_id == integration_id
            and record.pipeline_status in LISTED_STATUSES
            for record in self._messages()
        )

    def mark_received(self, tenant_id: str, integration_id: str, at: datetime) -> None:
        """Never creates an integration, never moves the reception back."""
        with self.state.lock:
            saved = self.state.integrations.get((tenant_id, integration_id))
            if saved is None or (saved.last_received_at is not None and saved.last_received_at >= at):
                return
            saved.last_received_at = at
            self.state.writes += 1
