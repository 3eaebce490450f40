"""Integration cards (issue 13): one card per integration for the operator's page, with the
badges an operator reads at a glance and the facts behind them.

`badges` is pure: it decides from an integration, its connection, the connection's client
certificate and the connection's pause / breaker state (whatever of these exist) at `now`.
Every badge carries its words (`text`) beside its `level`, so colour is never the only signal:

| kind              | text                                   | level                        |
|-------------------|----------------------------------------|------------------------------|
| `read_only`       | READ-ONLY                              | info (observability mode)    |
| `certificate`     | Cert expires in N d / today; expired   | warning <= 30 d, critical <= 7 d |
| `paused`          | Paused                                 | warning                      |
| `circuit_open`    | Circuit open (probing while a probe runs) | critical                  |
| `connection_gone` | Connection gone (after a 410)          | critical                     |

The thresholds are the certificate model's (hub.certificates.model, seed 000 scenario F); a
certificate more than 30 days from expiry has no badge. An integration that embeds its
destination (no `connection_id`) gets only the badges that apply to it: its certificate when the
destination names one, its breaker when the destination names a connection id.

`IntegrationCards` reads one page of a tenant's integrations (the listing's Query and
BatchGetItem) and the page's connections, certificates and connection states in batch reads
(`CardFacts`): a bounded number of requests per page, none per card.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from hub.certificates.model import CertificateMetadata, ExpiryLevel, days_to_expiry, expiry_level, iso
from hub.delivery.breaker import Circuit, ConnectionState
from hub.domain.clock import utcnow
from hub.domain.tenancy import Connection, Destination, IntegrationMode, Tenant
from hub.errors import NotFound
from hub.ports import IntegrationPage, StoredIntegration


class BadgeKind(StrEnum):
    READ_ONLY = "read_only"
    CERTIFICATE = "certificate"
    PAUSED = "paused"
    CIRCUIT_OPEN = "circuit_open"
    CONNECTION_GONE = "connection_gone"


class BadgeLevel(StrEnum):
    #: Blue: a fact, nothing wrong.
    INFO = "info"
    #: Yellow: look at it soon.
    WARNING = "warning"
    #: Red: deliveries fail or wait now, or will within days.
    CRITICAL = "critical"


@dataclass(frozen=True)
class Badge:
    kind: BadgeKind
    text: str
    level: BadgeLevel

    def view(self) -> dict[str, str]:
        return {"kind": self.kind.value, "text": self.text, "level": self.level.value}


@dataclass(frozen=True)
class CardInput:
    """What one card is computed from; every part but the integration may be missing."""

    integration: StoredIntegration
    #: The integration's connection item (None: embedded destination, or the connection is
    #: missing / another tenant's).
    connection: Connection | None = None
    #: The client certificate the destination presents (metadata only).
    certificate: CertificateMetadata | None = None
    #: The pause / breaker state of the connection the deliveries go through.
    state: ConnectionState | None = None


def certificate_badge(not_after: datetime, now: datetime) -> Badge | None:
    """None while more than 30 days are left; whole days left are floored (0 on the last day)."""
    level = expiry_level(not_after, now)
    if level is ExpiryLevel.OK:
        return None
    if level is ExpiryLevel.EXPIRED:
        return Badge(BadgeKind.CERTIFICATE, "Cert expired", BadgeLevel.CRITICAL)
    days = days_to_expiry(not_after, now)
    text = "Cert expires today" if days == 0 else f"Cert expires in {days} d"
    return Badge(
        BadgeKind.CERTIFICATE,
        text,
        BadgeLevel.CRITICAL if level is ExpiryLevel.CRITICAL else BadgeLevel.WARNING,
    )


def probing(state: ConnectionState, now: datetime) -> bool:
    """An open breaker whose one probe delivery is under way (its claim still holds)."""
    return (
        state.circuit is Circuit.OPEN
        and state.probe_message is not None
        and state.probe_until is not None
        and state.probe_until >= now
    )


def badges(card: CardInput, now: datetime) -> list[Badge]:
    """The card's badges, in a fixed order (mode, certificate, pause, breaker, gone)."""
    integration = card.integration.integration
    found: list[Badge] = []
    if integration.mode is IntegrationMode.OBSERVABILITY:
        found.append(Badge(BadgeKind.READ_ONLY, "READ-ONLY", BadgeLevel.INFO))
    if card.certificate is not None:
        cert = certificate_badge(card.certificate.not_after, now)
        if cert is not None:
            found.append(cert)
    if card.state is not None:
        if card.state.paused:
            found.append(Badge(BadgeKind.PAUSED, "Paused", BadgeLevel.WARNING))
        if card.state.circuit is Circuit.OPEN:
            text = "Circuit open (probing)" if probing(card.state, now) else "Circuit open"
            found.append(Badge(BadgeKind.CIRCUIT_OPEN, text, BadgeLevel.CRITICAL))
    if integration.connection_gone_at is not None:
        found.append(Badge(BadgeKind.CONNECTION_GONE, "Connection gone", BadgeLevel.CRITICAL))
    return found


def destination_of(card: CardInput) -> Destination | None:
    """Where the integration delivers: its connection's destination, or the embedded one."""
    if card.connection is not None:
        return card.connection.destination
    return card.integration.integration.destination


def card_view(card: CardInput, now: datetime) -> dict[str, Any]:
    """The card as the admin API shows it: what the integration is, the badges, and the raw
    facts behind them (certificate expiry, connection state) for the detail."""
    stored = card.integration
    integration = stored.integration
    destination = destination_of(card)
    return {
        "integration_id": integration.integration_id,
        "tenant_id": integration.tenant_id,
        "name": integration.name,
        "mode": integration.mode.value,
        "version": stored.version,
        "connection_id": integration.connection_id,
        "connection_name": card.connection.name if card.connection is not None else None,
        #: Whether the named connection was found (False: missing; deliveries fail as `error`).
        "connection_found": card.connection is not None if integration.connection_id else None,
        "destination": "connection"
        if integration.connection_id
        else ("embedded" if integration.destination is not None else None),
        "platform": destination.platform.value if destination is not None else None,
        "protocol": destination.protocol.value if destination is not None else None,
        "message_types": sorted(integration.message_types),
        "retry_auto_enabled": integration.retry_policy.retry_auto_enabled,
        "inbound_webhook_enabled": integration.inbound_webhook is not None,
        "last_received_at": _iso(stored.last_received_at),
        "connection_gone_at": _iso(integration.connection_gone_at),
        "certificate": _certificate_facts(card.certificate, now),
        "connection_state": _state_facts(card.state, now),
        "badges": [b.view() for b in badges(card, now)],
    }


def _certificate_facts(certificate: CertificateMetadata | None, now: datetime) -> dict[str, Any] | None:
    if certificate is None:
        return None
    return {
        "connection_id": certificate.connection_id,
        "subject": certificate.subject,
        "not_after": iso(certificate.not_after),
        "days_left": days_to_expiry(certificate.not_after, now),
        "level": expiry_level(certificate.not_after, now).value,
    }


def _state_facts(state: ConnectionState | None, now: datetime) -> dict[str, Any] | None:
    if state is None:
        return None
    return {
        "connection_id": state.connection_id,
        "paused": state.paused,
        "circuit": state.circuit.value,
        "probing": probing(state, now),
        "probe_at": _iso(state.probe_at) if state.circuit is Circuit.OPEN else None,
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


# --- the use case -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """What `CardFacts.read` found, by id (absent: not stored)."""

    connections: Mapping[str, Connection] = field(default_factory=dict)
    certificates: Mapping[str, CertificateMetadata] = field(default_factory=dict)
    states: Mapping[str, ConnectionState] = field(default_factory=dict)


class CardFacts(Protocol):
    def read(self, integrations: Iterable[StoredIntegration]) -> Facts:
        """The connections the integrations name, the client certificates their destinations
        present and the states of the connections they deliver through, in batch reads (a
        bounded number of requests, whatever the page's size)."""
        ...


class IntegrationListing(Protocol):
    def get_tenant(self, tenant_id: str) -> Tenant | None: ...
    def list_integrations(self, tenant_id: str, limit: int, cursor: str | None) -> IntegrationPage: ...


def assemble(stored: StoredIntegration, facts: Facts) -> CardInput:
    """One card's input from the page's facts. Only the integration's tenant's connection and
    certificate count (ids are global: another tenant's item is as missing as none)."""
    integration = stored.integration
    tenant_id = integration.tenant_id
    connection: Connection | None = None
    if integration.connection_id is not None:
        found = facts.connections.get(integration.connection_id)
        connection = found if found is not None and found.tenant_id == tenant_id else None
        # A missing connection delivers nowhere: no certificate, no state of its own to show.
        destination = connection.destination if connection is not None else None
        through = integration.connection_id if connection is not None else None
    else:
        destination = integration.destination
        through = destination.connection_id if destination is not None else None
    certificate: CertificateMetadata | None = None
    if destination is not None and destination.client_certificate_id:
        cert = facts.certificates.get(destination.client_certificate_id)
        certificate = cert if cert is not None and cert.tenant_id == tenant_id else None
    state: ConnectionState | None = None
    if through is not None:
        held = facts.states.get(through)
        state = held if held is not None and held.tenant_id in ("", tenant_id) else None
    return CardInput(stored, connection, certificate, state)


class IntegrationCards:
    """`GET /api/admin/tenants/{tenant}/integration-cards`. The caller authorizes (viewer of the
    path's tenant)."""

    def __init__(
        self, integrations: IntegrationListing, facts: CardFacts, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self._integrations = integrations
        self._facts = facts
        self._clock = clock

    def cards(self, tenant_id: str, limit: int, cursor: str | None) -> dict[str, Any]:
        """One page, in the integrations listing's order and with its cursor."""
        if self._integrations.get_tenant(tenant_id) is None:
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        page = self._integrations.list_integrations(tenant_id, limit, cursor)
        facts = self._facts.read(page.integrations)
        now = self._clock()
        return {
            "tenant_id": tenant_id,
            "items": [card_view(assemble(stored, facts), now) for stored in page.integrations],
            "next_cursor": page.next_cursor,
        }
