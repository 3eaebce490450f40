"""The interfaces use cases depend on. Adapters in ``hub.adapters`` implement them over AWS;
use cases never import boto3."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    # Annotations only: the alert functions never load the message and tenancy models (nor
    # the mapping and webhook models inside an integration), the others load them where used.
    from hub.alerts.model import Alert, AlertGroup
    from hub.domain.delivery_status import CallbackCredential, CallbackStatus, DeliveryStatus
    from hub.domain.idempotency import DedupKind
    from hub.domain.message import MessageRecord, StepMessage
    from hub.domain.status import PipelineStatus
    from hub.domain.tenancy import ApiKey, Connection, Destination, Integration, Tenant


@dataclass(frozen=True)
class Claim:
    """A stored idempotency or fingerprint claim: this (integration, key) belongs to a message."""

    kind: DedupKind
    message_id: str
    fingerprint: str
    #: The request the claim was made by (see idempotency.request_hash).
    request_sha256: str
    #: When it was written: a claim written after a request began is that request's race winner.
    claimed_at: datetime | None = None


@dataclass(frozen=True)
class NewMessage:
    """A message to create, with the claims that make its creation idempotent."""

    record: MessageRecord
    payload_text: str
    idempotency_key_hash: str | None
    request_sha256: str
    idempotency_expires_at: datetime
    #: The end of the payload fingerprint's deduplication window.
    fingerprint_expires_at: datetime
    #: The partner sent the correlation id (x-correlation-id); else it is the gateway's request
    #: id. Decides whether search indexes it beside an external id (keys.lookup_values).
    correlation_given: bool = False
    #: Until when the payload is kept (it rides on the fingerprint claim, which lives that long;
    #: None: as long as the fingerprint's window).
    payload_expires_at: datetime | None = None


@dataclass(frozen=True)
class QueueFilter:
    """The admin queue's optional filters (issue 13). `since` (inclusive) and `until`
    (exclusive) bound the last change for a status tab and the receipt for `all`."""

    integration_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def fingerprint(self) -> str:
        """Names the filter combination; a cursor carries it, so it cannot page another one."""
        parts = (
            self.integration_id or "",
            self.since.astimezone(UTC).isoformat() if self.since else "",
            self.until.astimezone(UTC).isoformat() if self.until else "",
        )
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class QueuePage:
    """One page of an admin queue tab: the rows' listed fields, newest change first."""

    rows: list[dict[str, Any]]
    #: Opaque; None on the last page.
    next_cursor: str | None


@dataclass(frozen=True)
class StatusCount:
    """How many of a tenant's messages are in one status, counted up to a cap (issue 28)."""

    count: int
    #: The count stopped before the status partition's end: the cap was reached, or (with a
    #: filter) the read bound was; there are at least `count`.
    at_least: bool


class ConfigRepository(Protocol):
    def get_api_key(self, key_hash: str) -> ApiKey | None: ...

    def get_integration(self, tenant_id: str, integration_id: str) -> Integration | None:
        """The tenant's integration (ids are unique within a tenant only); None when absent."""
        ...

    def get_tenant(self, tenant_id: str) -> Tenant | None: ...

    def put_tenant(self, tenant: Tenant) -> None: ...

    def put_integration(self, integration: Integration) -> None: ...

    def put_api_key(self, api_key: ApiKey) -> None: ...

    def flag_connection_gone(self, integration: Integration, now: datetime, dest_status: str | None) -> None:
        """Marks the integration's connection as gone (the destination answered 410), announcing
        `connection.gone` when it was not gone yet. Saving the integration again clears it."""
        ...


@dataclass(frozen=True)
class ApiKeyPage:
    """One page of a tenant's API keys, newest first."""

    keys: list[ApiKey]
    #: Opaque; None on the last page.
    next_cursor: str | None


class ApiKeyStore(Protocol):
    """API keys as the admin API manages them (hub.admin.api_keys)."""

    def tenant_exists(self, tenant_id: str) -> bool: ...

    def tenant_integrations(self, tenant_id: str, integration_ids: Collection[str]) -> set[str]:
        """Those of `integration_ids` the tenant has (ids are unique within a tenant only)."""
        ...

    def create(self, key: ApiKey) -> None:
        """Stores a new key (its hash and metadata), listed under its tenant; Conflict when a
        key of the same hash is stored (nothing is overwritten)."""
        ...

    def find(self, tenant_id: str, key_id: str) -> ApiKey | None:
        """The tenant's key `key_id` as stored now; None when absent or another tenant's."""
        ...

    def list_keys(self, tenant_id: str, limit: int, cursor: str | None) -> ApiKeyPage:
        """The tenant's keys, newest first. Raises ValidationFailed for a cursor this listing
        did not give out."""
        ...

    def revoke(self, key: ApiKey, now: datetime) -> ApiKey:
        """Marks the key revoked (idempotent); the key as stored afterwards."""
        ...

    def rotate(self, old: ApiKey, new: ApiKey, grace_until: datetime) -> ApiKey:
        """Stores `new` and ends `old` at `grace_until`, atomically, only while `old` is still
        active with no end (else Conflict); `old` as it is afterwards."""
        ...


@dataclass(frozen=True)
class TenantPage:
    """One page of tenants, by tenant id."""

    tenants: list[Tenant]
    #: Opaque; None on the last page.
    next_cursor: str | None


class TenantStore(Protocol):
    """Tenants as the admin API manages them (hub.admin.tenants)."""

    def create(self, tenant: Tenant) -> None:
        """Stores a new tenant, listed; TenantExists (409) when the id is taken."""
        ...

    def get(self, tenant_id: str) -> Tenant | None:
        """The tenant as stored now (a consistent read); None when absent."""
        ...

    def list_tenants(self, limit: int, cursor: str | None) -> TenantPage:
        """Tenants by id. Raises ValidationFailed for a cursor this listing did not give out."""
        ...

    def update(self, tenant_id: str, changes: Mapping[str, Any], now: datetime) -> Tenant:
        """Sets `changes` (model field names) and `updated_at` on an existing tenant, and lists
        it if it was not (a tenant written by hand); NotFound when absent. The tenant afterwards."""
        ...


@dataclass(frozen=True)
class ConnectionPage:
    """One page of a tenant's connections, by connection id."""

    connections: list[Connection]
    #: Opaque; None on the last page.
    next_cursor: str | None


class VersionConflict(Exception):
    """A conditional write of a versioned item lost: the stored version is `current` (None: the
    item is gone)."""

    def __init__(self, current: int | None) -> None:
        super().__init__("version changed")
        self.current = current


class ConnectionStore(Protocol):
    """Connections as the admin API manages them (hub.admin.connections). Connection ids are
    unique within a tenant only (like integration ids): another tenant's connection of the same
    id is another resource, never seen here."""

    def tenant_exists(self, tenant_id: str) -> bool: ...

    def has_certificate(self, tenant_id: str, connection_id: str) -> bool:
        """Whether the tenant uploaded a client certificate under `connection_id`."""
        ...

    def create(self, connection: Connection) -> None:
        """Stores a new connection, listed under its tenant; Conflict when the tenant already has
        one of that id."""
        ...

    def with_credentials(self, connection: Connection) -> Destination:
        """`connection`'s destination with its sealed credentials opened (the connection test
        only: every other read shows stand-ins). KeyServiceUnavailable when KMS does not answer."""
        ...

    def get(self, tenant_id: str, connection_id: str) -> Connection | None:
        """The tenant's connection as stored now (a consistent read); None when absent."""
        ...

    def list_connections(self, tenant_id: str, limit: int, cursor: str | None) -> ConnectionPage:
        """The tenant's connections by id. ValidationFailed for a cursor it did not give out."""
        ...

    def replace(self, connection: Connection, expected_version: int) -> None:
        """Stores `connection` (its version already the next one) only while the stored version
        is `expected_version`; VersionConflict otherwise."""
        ...

    def delete(self, tenant_id: str, connection_id: str, expected_version: int) -> None:
        """Deletes the connection only while its version is `expected_version`; VersionConflict
        otherwise."""
        ...

    def integrations_using(self, tenant_id: str, connection_id: str) -> list[str]:
        """Ids of the tenant's integrations whose `connection_id` is this connection."""
        ...

    def clear_connection_gone(
        self, tenant_id: str, integration_ids: Collection[str], connection_id: str
    ) -> None:
        """Removes `connection_gone_at` from these integrations of the tenant while they still use the
        connection (an integration switched away meanwhile is left alone)."""
        ...


class KeyUseStore(Protocol):
    def record_use(self, key_hash: str, day: str) -> None:
        """Sets the key's `last_used_day` to `day` (UTC, YYYY-MM-DD) unless it already is."""
        ...


class MessageRepository(Protocol):
    def claim(self, new: NewMessage, kind: DedupKind, now: datetime) -> Claim | None:
        """Writes `new`'s claim of `kind` (the fingerprint claim carries the payload) unless a
        live one is stored: None when the claim is now `new`'s, else the live claim that holds it
        (an expired one is taken over)."""
        ...

    def take_over(self, new: NewMessage, kind: DedupKind, held: Claim, now: datetime) -> Claim | None:
        """Replaces the claim `held` with `new`'s, only while it is still exactly `held`: None
        when it is now `new`'s, else the claim stored instead."""
        ...

    def release(self, new: NewMessage, kind: DedupKind) -> None:
        """Deletes `new`'s claim of `kind` if it still names `new`'s message (best effort: a claim
        left behind names a message that does not exist, which the next claimant takes over)."""
        ...

    def store(self, new: NewMessage, now: datetime) -> None:
        """Writes the message item (and its search pointer), never over an existing one."""
        ...

    def create(self, new: NewMessage, now: datetime) -> None:
        """Claims, then the message (what ingest does, without its answers): raises ClaimTaken
        naming the live claims other messages hold, having released its own."""
        ...

    def get(self, message_id: str) -> MessageRecord | None: ...

    def get_for_key(self, key_hash: str, message_id: str) -> tuple[ApiKey | None, MessageRecord | None]:
        """API key and message status, in one call."""
        ...

    def get_payload(self, message_id: str, now: datetime | None = None) -> str | None:
        """The payload; None once purged (its retention passed at `now`, deleted or not yet)."""
        ...

    def transition(
        self, record: MessageRecord, target: PipelineStatus, now: datetime, **changes: Any
    ) -> MessageRecord:
        """Moves the message from `record.pipeline_status` to `target`: only if the transition
        table allows it and the stored status is still the one the caller read (conditional
        update). Raises TransitionNotAllowed for a move outside the table, InvalidTransition when
        the stored record moved on; NotFound if absent or another tenant's."""
        ...


class StepQueue(Protocol):
    def publish(self, step: StepMessage, delay_seconds: int = 0) -> None:
        """Enqueues one step message, visible after `delay_seconds` (SQS caps it at 900).
        Raises QueueUnavailable if it was not accepted."""
        ...


class Metrics(Protocol):
    """Operational counters (CloudWatch EMF in Lambda). Dimensions stay few: each distinct
    combination is a billed custom metric."""

    def count(self, name: str, value: float = 1, **dimensions: str) -> None: ...

    def duration_ms(self, name: str, milliseconds: float, **dimensions: str) -> None: ...


@dataclass(frozen=True)
class AlertClaim:
    """The stored alert of one group (see hub.alerts): who raised it and where it went."""

    #: Identity of the event that raised it (the first dead letter's message id, the SNS
    #: message id): a retry of that event finishes the alert, any other event only counts.
    owner: str
    sent_channels: frozenset[str]
    #: True when this call created it.
    created: bool


class AlertClaimStore(Protocol):
    def claim(self, alert: Alert, owner: str, occurrences: int, now: datetime) -> AlertClaim:
        """Creates the group's alert record unless one exists (one conditional write: exactly
        one creator per group, also under concurrency); returns the stored record."""
        ...

    def count(self, group: AlertGroup, occurrences: int) -> None:
        """Adds later occurrences to the group's existing alert record."""
        ...

    def mark_sent(self, group: AlertGroup, channels: Iterable[str], now: datetime) -> None:
        """Records that the alert went out on `channels`."""
        ...


class AlertChannel(Protocol):
    #: Stable name, stored on the alert record ("slack", "email").
    name: str

    def send(self, alert: Alert) -> None:
        """Delivers the alert. Raises AlertChannelUnavailable if it was not accepted."""
        ...


@dataclass(frozen=True)
class StoredIntegration:
    """An integration as stored, with its version (1 for one written without a version)."""

    integration: Integration
    version: int
    #: When ingest last recorded a message for it (hub.ingest.receptions): at most its
    #: MARK_EVERY before the last reception; None when never recorded.
    last_received_at: datetime | None = None
    #: Its sealed secrets by field (hub.sealed_config): `integration` holds stand-ins there.
    sealed: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class IntegrationPage:
    """One page of a tenant's integrations, by integration id."""

    integrations: list[StoredIntegration]
    #: Opaque; None on the last page.
    next_cursor: str | None


class IntegrationStore(Protocol):
    """Integrations as the admin API manages them (hub.admin.integrations). The item is the one
    the pipeline reads (`INTEGRATION#<tenant>#<id>` / `CONFIG`, `config_json`): integration ids
    are unique within a tenant only."""

    def get_tenant(self, tenant_id: str) -> Tenant | None: ...

    def connection_exists(self, tenant_id: str, connection_id: str) -> bool:
        """Whether the tenant has connection `connection_id` (another tenant's connection of the
        same id is another resource: False)."""
        ...

    def get(self, tenant_id: str, integration_id: str) -> StoredIntegration | None:
        """The tenant's integration as stored now (a consistent read); None when absent."""
        ...

    def create(self, integration: Integration) -> StoredIntegration:
        """Stores a new integration at version 1, listed under its tenant; Conflict when the
        tenant already has one of that id."""
        ...

    def replace(
        self, integration: Integration, expected_version: int, sealed: Mapping[str, Any] | None = None
    ) -> StoredIntegration:
        """Replaces the configuration (clearing `connection_gone_at`) at the next version, only
        while the stored version is `expected_version`: else VersionConflict naming the current
        one (None when gone). Keeps the hub's other attributes of the item. Secrets
        are sealed; a stand-in keeps the seal `sealed` (the version read) holds at its field."""
        ...

    def delete(self, current: StoredIntegration) -> None:
        """Deletes the integration while it is as read in `current`: the same version
        (VersionConflict otherwise, naming the current one; None when gone) and no reception
        recorded since (Conflict otherwise)."""
        ...

    def list_integrations(self, tenant_id: str, limit: int, cursor: str | None) -> IntegrationPage:
        """The tenant's integrations by id. Raises ValidationFailed for a cursor this listing
        did not give out."""
        ...

    def has_waiting_messages(self, tenant_id: str, integration_id: str) -> bool:
        """Whether a message of the integration waits for an operator or a retry: `error`,
        `retry_pending` or `dead_letter` (the statuses the admin queue tabs list)."""
        ...


# --- delivery-status callbacks (issue 12, pattern 5) -------------------------------------------


@dataclass(frozen=True)
class ReceivedCallback:
    """One status callback as a destination sent it, with when the hub got it."""

    message_id: str
    tenant_id: str
    connection_id: str
    callback_id: str
    status: CallbackStatus
    received_at: datetime
    occurred_at: datetime | None = None
    detail: str | None = None
    external_ref: str | None = None
    #: Its message's TTL (epoch seconds; issue 29): the record goes no later than its message.
    message_expires_at: int | None = None


@dataclass(frozen=True)
class CallbackPage:
    """A page of a message's callbacks, newest first."""

    rows: list[dict[str, Any]]
    #: Opaque; None on the last page.
    next_cursor: str | None


class DeliveryStatusStore(Protocol):
    def message(self, message_id: str) -> MessageRecord | None: ...

    def credential(self, tenant_id: str, connection_id: str) -> CallbackCredential | None: ...

    def record_callback(self, received: ReceivedCallback) -> None:
        """Keeps the callback as received (for troubleshooting, with a TTL)."""
        ...

    def advance(
        self, record: MessageRecord, status: DeliveryStatus, now: datetime
    ) -> tuple[MessageRecord, bool]:
        """Moves the message's `delivery_status` to `status` in one conditional update, only when
        the rank rules allow it from the stored one (bumping its version); the message as it
        stands afterwards and whether it moved."""
        ...

    def callbacks(self, message_id: str, limit: int, cursor: str | None) -> CallbackPage:
        """The message's callbacks, newest first. ValidationFailed for a foreign cursor."""
        ...


class CallbackCredentialStore(Protocol):
    def get(self, tenant_id: str, connection_id: str) -> CallbackCredential | None: ...

    def save(self, credential: CallbackCredential, replacing: str | None) -> None:
        """Stores the credential while the stored token is still `replacing` (None: none);
        Conflict otherwise."""
        ...

    def revoke(self, tenant_id: str, connection_id: str) -> bool:
        """Deletes the credential; False when there was none."""
        ...
