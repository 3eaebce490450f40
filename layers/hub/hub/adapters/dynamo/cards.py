"""What the integration cards need beside a page of integrations (hub.admin.cards.CardFacts):
the page's connections (``CONNECTION#<tenant>#<id>`` / ``CONFIG``), client certificates
(``CERT#<tenant>#<id>`` / ``CLIENT``, metadata only) and connection states
(``CONNSTATE#<tenant>#<id>`` / ``STATE``), read with
BatchGetItem, never one request per card.

A connection's certificate is uploaded under its own id (hub.admin.connections), so the first
batch asks for the connection, the certificate and the state of every connection id the page
names at once; only a destination whose `client_certificate_id` is another id (written by hand)
costs a second batch. With a page of at most 100 integrations that is at most 3 + 1 requests
(100 keys per request).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hub.adapters.certificates import metadata_from
from hub.adapters.dynamo import keys
from hub.adapters.dynamo.connection_state import state_from
from hub.adapters.dynamo.connections import connection_from
from hub.adapters.dynamo.table import Table
from hub.admin.cards import Facts
from hub.certificates.model import CertificateMetadata
from hub.delivery.breaker import ConnectionState
from hub.domain.tenancy import Connection
from hub.ports import StoredIntegration

Found = dict[tuple[str, str], dict[str, Any]]
#: (tenant id, connection or certificate id): ids are unique within a tenant only.
Scoped = tuple[str, str]


class DynamoCardFacts:
    def __init__(self, table_name: str) -> None:
        self._table = Table(table_name, "configuration storage")

    def read(self, integrations: Iterable[StoredIntegration]) -> Facts:
        """Facts by id; every key names the integration's tenant (a page is one tenant's)."""
        connection_ids: set[Scoped] = set()
        certificate_ids: set[Scoped] = set()
        state_ids: set[Scoped] = set()
        for stored in integrations:
            integration = stored.integration
            tenant = integration.tenant_id
            if integration.connection_id is not None:
                connection_ids.add((tenant, integration.connection_id))
                certificate_ids.add((tenant, integration.connection_id))
                state_ids.add((tenant, integration.connection_id))
            elif integration.destination is not None:
                if integration.destination.client_certificate_id:
                    certificate_ids.add((tenant, integration.destination.client_certificate_id))
                if integration.destination.connection_id:
                    state_ids.add((tenant, integration.destination.connection_id))
        found = self._get(connection_ids, certificate_ids, state_ids)
        connections = _connections(found, connection_ids)
        # A connection presenting a certificate uploaded under another id: one more batch.
        others = {
            (c.tenant_id, c.destination.client_certificate_id)
            for c in connections.values()
            if c.destination.client_certificate_id
        } - certificate_ids
        if others:
            found.update(self._get(set(), others, set()))
            certificate_ids |= others
        return Facts(
            connections=connections,
            certificates=_certificates(found, certificate_ids),
            states=_states(found, state_ids),
        )

    def _get(
        self, connection_ids: set[Scoped], certificate_ids: set[Scoped], state_ids: set[Scoped]
    ) -> Found:
        wanted = [
            *(keys.connection_key(*c) for c in sorted(connection_ids)),
            *(keys.certificate_key(*c) for c in sorted(certificate_ids)),
            *(keys.connection_state_key(*c) for c in sorted(state_ids)),
        ]
        return self._table.batch_get(wanted) if wanted else {}


def _item(found: Found, key: keys.Key) -> dict[str, Any] | None:
    return found.get((key["PK"], key["SK"]))


def _connections(found: Found, ids: set[Scoped]) -> dict[str, Connection]:
    return {
        connection_id: connection_from(item)
        for tenant_id, connection_id in ids
        if (item := _item(found, keys.connection_key(tenant_id, connection_id))) is not None
    }


def _certificates(found: Found, ids: set[Scoped]) -> dict[str, CertificateMetadata]:
    certificates: dict[str, CertificateMetadata] = {}
    for tenant_id, certificate_id in ids:
        item = _item(found, keys.certificate_key(tenant_id, certificate_id))
        # A record copied under another key is not this connection's (its seal names its own).
        if item is not None and item.get("connection_id") == certificate_id:
            certificates[certificate_id] = metadata_from(item)
    return certificates


def _states(found: Found, ids: set[Scoped]) -> dict[str, ConnectionState]:
    """Every asked connection's state; no item is the all-clear state (never paused or opened)."""
    return {c: state_from(t, c, _item(found, keys.connection_state_key(t, c))) for t, c in ids}
