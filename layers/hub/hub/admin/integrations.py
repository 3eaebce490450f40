"""Integrations, managed by operators (issue 11): create, list, read, replace, delete, and a
preview of a message type's mapping on a sample payload.

Every save is validated by the models the pipeline reads (`hub.domain.tenancy.Integration` and
what it holds: mapping specs, JMESPath expressions, retry ladders, webhook verification), so what
the API accepts is what the worker and ingest can run; a refusal is 400 `validation_error` naming
the field. Saving clears `connection_gone_at`.

Updates are optimistic: each integration has a version (1 when created; an item written by hand
without one is version 1), `If-Match` names the version the caller read (412 when stale), and
every write is conditional on the version read, so two saves never silently overwrite each
other. A save whose content equals the stored one changes nothing (same version, no audit).

Secrets (webhook HMAC secrets, credential hashes, destination credentials) are write-only: no
answer shows them (`***`); a save that leaves one out, or sends the mask back, keeps the stored
one (see `keep_secrets`). Webhook secrets and destination credentials are sealed at rest
(hub.sealed_config); this API seals them but never opens them: it reads stand-ins, keeps a
stored seal by sending its stand-in back, and tells a secret sent again unchanged by its digest.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict

from hub.admin.audit import Audit
from hub.admin.versioned import Versioned
from hub.api.http import validated
from hub.domain import idempotency
from hub.domain.clock import utcnow
from hub.domain.destination_binding import AUTH_SECRET, check_resent
from hub.domain.ids import new_id
from hub.domain.redaction import CREDENTIAL_FIELDS, MASK, redact_credentials
from hub.domain.tenancy import Integration, MessageTypeConfig, Tenant
from hub.errors import (
    Conflict,
    HubError,
    NotFound,
    UnknownMessageType,
    ValidationFailed,
)
from hub.ingest.receptions import MARK_EVERY
from hub.mapping import MappingError, MappingTooLarge
from hub.mapping.engine import apply_mapping, looks_like_xml, passthrough, read_payload
from hub.pipeline.rules import LONGEST_IN_FLIGHT
from hub.ports import IntegrationStore, StoredIntegration
from hub.sealed_config import INTEGRATION_PATHS, in_clear, recognize

if TYPE_CHECKING:
    from hub.admin.access import Principal

logger = logging.getLogger(__name__)

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
#: Fields of a view the hub sets: a body may carry them back (a view edited and saved); they are
#: ignored, never stored from the request.
_READ_ONLY = ("version", "connection_gone_at", "last_received_at")


class IntegrationExists(Conflict):
    """An integration with this id already exists; nothing was changed."""

    code = "integration_exists"


class IntegrationInUse(Conflict):
    """Messages of the integration are still in flight or waiting: deleting it now would leave
    them without their configuration."""

    code = "integration_in_use"


class UnknownConnection(HubError):
    """`connection_id` names no connection of the integration's tenant."""

    code = "unknown_connection"
    http_status = 422


class IntegrationBody(Integration):
    """What a request may say: the pipeline's model, refusing unknown fields (a typo is a 400,
    never a setting silently dropped)."""

    model_config = ConfigDict(frozen=True, hide_input_in_errors=True, extra="forbid")


#: How long after its last recorded reception an integration may still have messages in flight:
#: the pipeline's bound, plus how much older than the last reception the record may be.
IN_FLIGHT_AFTER_RECEPTION = LONGEST_IN_FLIGHT + MARK_EVERY


def integration_view(stored: StoredIntegration) -> dict[str, Any]:
    """An integration as the admin API shows it: its configuration with every secret masked,
    its version, whether its connection was found gone (410), and about when it last received
    a message (hub.ingest.receptions: up to 5 minutes early; null when never)."""
    shown = redact_credentials(stored.integration.model_dump(mode="json"))
    return {**shown, "version": stored.version, "last_received_at": _iso(stored.last_received_at)}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _has_scheme_of(incoming: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    """Secrets carry over only within the same kind of verification or authentication."""
    return all(incoming.get(k, stored.get(k)) == stored.get(k) for k in ("scheme", "kind"))


def keep_secrets(incoming: Any, stored: Any) -> Any:
    """`incoming` with every secret it leaves out (absent, null) or sends back masked taken from
    `stored`, at the same place and within the same scheme or auth kind; credential-like header
    values sent back masked likewise. Anything else in `incoming` is kept as given."""
    if not isinstance(incoming, dict) or not isinstance(stored, dict) or not _has_scheme_of(incoming, stored):
        return incoming
    merged = dict(incoming)
    for key, old in stored.items():
        new = incoming.get(key)
        if key.lower() in CREDENTIAL_FIELDS:
            if old is not None and (new is None or _masked(new)):
                merged[key] = old
        elif key == "headers" and isinstance(new, dict) and isinstance(old, dict):
            merged[key] = {h: old.get(h, v) if v == MASK else v for h, v in new.items()}
        elif key in incoming:
            merged[key] = keep_secrets(new, old)
    return merged


def _destination_secrets_sent(destination: Any) -> set[str]:
    """The auth secrets an embedded `destination` in the request carries itself (a secret left
    out, null or masked is kept from the stored one, so it is not "sent")."""
    auth = destination.get("auth") if isinstance(destination, dict) else None
    if not isinstance(auth, dict):
        return set()
    return {f"auth.{name}" for name in AUTH_SECRET.values() if auth.get(name) not in (None, MASK)}


def _check_embedded_destination(stored: Integration | None, saved: Integration, sent: set[str]) -> None:
    """The rules connections follow (issue 27), for a destination embedded in an integration
    (written before connections were their own items): a client certificate is presented only
    through a connection (`connection_id`), so an embedded destination may not name one it did
    not already; and a save moving a kept secret to another origin must send it again."""
    destination = saved.destination
    if destination is None:
        return
    before = stored.destination if stored is not None else None
    named = destination.client_certificate_id
    if named is not None and (before is None or before.client_certificate_id != named):
        raise ValidationFailed(
            "request body failed validation",
            details=[
                {
                    "field": "destination.client_certificate_id",
                    "problem": "a client certificate is presented through a connection: set connection_id",
                }
            ],
        )
    if before is None:
        return
    check_resent(
        before,
        destination,
        sent=sent,
        owner="the integration's",
        prefix="destination.",
        certificate_hint="a client certificate moves with a connection only (set connection_id)",
    )


def _masked(value: Any) -> bool:
    return value == MASK or (isinstance(value, list) and bool(value) and all(v == MASK for v in value))


def _config(stored: StoredIntegration) -> dict[str, Any]:
    """What a save compares: the configuration, without what the hub sets."""
    return stored.integration.model_dump(mode="json", exclude={"connection_gone_at"})


def _recognized(integration: Integration, current: StoredIntegration) -> Integration:
    """`integration` with each secret equal to the sealed one stored at its field replaced by
    the stand-in (the same secret sent again is no change, and keeps its seal)."""
    if not current.sealed:
        return integration
    data = recognize(integration.model_dump(mode="json"), INTEGRATION_PATHS, current.sealed)
    return Integration.model_validate_json(json.dumps(data))


def preview_message(
    config: MessageTypeConfig, payload: dict[str, Any] | str, *, refuse_too_large: bool = False
) -> dict[str, Any]:
    """What the worker would make of `payload` under `config`, computed as it does (parse the
    payload, business-key values, mapping or passthrough) with no side effect: the body and its
    content type, or the error the message would fail with (`ok: false`, the one error shape's
    inner object). With `refuse_too_large`, a mapping over the engine's limits raises
    MappingTooLarge instead (the preview routes answer 422: the spec must change)."""
    duplicate_key: dict[str, Any] | None = None
    try:
        # As the worker reads a message: XML text parsed once; JSON as given; other text as is.
        document = read_payload(payload) if isinstance(payload, str) and looks_like_xml(payload) else payload
        values = idempotency.duplicate_key_values(
            document if isinstance(document, dict) else "", config.duplicate_key_fields
        )
        duplicate_key = {
            "fields": list(config.duplicate_key_fields),
            "values": [json.loads(v) for v in values] if values else None,
            "handling": config.duplicate_handling.value,
        }
        mapped = apply_mapping(config.mapping, document) if config.mapping else passthrough(payload)
    except MappingError as failed:
        if refuse_too_large and isinstance(failed, MappingTooLarge):
            raise
        error: dict[str, Any] = {"code": failed.code, "message": failed.message}
        if failed.details is not None:
            error["details"] = failed.details
        return {"ok": False, "error": error, "duplicate_key": duplicate_key}
    return {
        "ok": True,
        "mapped": config.mapping is not None,
        "content_type": mapped.content_type,
        "body": mapped.body.decode("utf-8"),
        "duplicate_key": duplicate_key,
    }


class IntegrationAdmin:
    """The integration use cases of the admin API. Callers authorize first (the tenant comes
    from the path); an integration of another tenant is NotFound, like a missing one."""

    def __init__(self, store: IntegrationStore, audit: Audit, clock: Callable[[], datetime] = utcnow) -> None:
        self._store = store
        self._versions = Versioned("integration", audit, logger)
        self._clock = clock

    # --- reads -----------------------------------------------------------------------------

    def get(self, tenant_id: str, integration_id: str) -> dict[str, Any]:
        return integration_view(self._owned(tenant_id, integration_id))

    def list_integrations(self, tenant_id: str, limit: int, cursor: str | None) -> dict[str, Any]:
        self._tenant(tenant_id)
        page = self._store.list_integrations(tenant_id, limit, cursor)
        return {
            "items": [integration_view(s) for s in page.integrations],
            "next_cursor": page.next_cursor,
        }

    def preview(
        self,
        tenant_id: str,
        integration_id: str,
        message_type: str,
        payload: dict[str, Any] | str,
        config: MessageTypeConfig | None = None,
    ) -> dict[str, Any]:
        """`preview_message` under the saved rules of `message_type`, or under `config` (an
        unsaved message type, as a form holds it before saving). Nothing is written or sent."""
        integration = self._owned(tenant_id, integration_id).integration
        if config is None:
            if not integration.takes_message_type(message_type):
                raise UnknownMessageType(
                    "this integration does not define this message type",
                    details={"field": "message_type", "known_types": sorted(integration.message_types)},
                )
            config = integration.message_type_config(message_type)
        return {"message_type": message_type, **preview_message(config, payload, refuse_too_large=True)}

    def preview_unsaved(
        self, tenant_id: str, config: MessageTypeConfig, payload: dict[str, Any] | str
    ) -> dict[str, Any]:
        """`preview_message` under `config` alone, for a form whose integration is not saved
        yet (the create form). Nothing is read but the tenant; nothing is written or sent."""
        self._tenant(tenant_id)
        return preview_message(config, payload, refuse_too_large=True)

    # --- writes ----------------------------------------------------------------------------

    def create(self, principal: Principal, tenant_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """A new integration (version 1); its id is generated (`int_` + 26 characters) unless
        given; `mode` absent is the tenant's default mode. IntegrationExists when the id is taken."""
        tenant = self._tenant(tenant_id)
        data = dict(body)
        integration_id = data.pop("integration_id", None) or new_id("int")
        if not isinstance(integration_id, str) or not _ID.fullmatch(integration_id):
            raise ValidationFailed(
                "request body failed validation",
                details=[{"field": "integration_id", "problem": "string_pattern_mismatch"}],
            )
        integration = self._validated(tenant, integration_id, data, None)
        try:
            stored = self._store.create(integration)
        except Conflict as taken:
            raise IntegrationExists(
                "an integration with this id exists", details={"integration_id": integration_id}
            ) from taken
        view = integration_view(stored)
        self._record(principal, "integration.created", stored, after=view)
        return view

    def replace(
        self,
        principal: Principal,
        tenant_id: str,
        integration_id: str,
        body: Mapping[str, Any],
        if_match: int | None,
    ) -> dict[str, Any]:
        """Replaces the whole configuration (what the body leaves out takes its default; secrets
        left out are kept). PreconditionFailed when `if_match` (or, without it, the version read
        here) is no longer the stored version."""
        current = self._owned(tenant_id, integration_id)
        self._versions.check(integration_id, current.version, if_match)
        data = {k: v for k, v in body.items() if k != "integration_id"}
        if body.get("integration_id") not in (None, integration_id):
            raise ValidationFailed(
                "request body failed validation",
                details=[{"field": "integration_id", "problem": "must be the path's integration id"}],
            )
        integration = self._validated(self._tenant(tenant_id), integration_id, data, current.integration)
        integration = _recognized(integration, current)
        unchanged = StoredIntegration(integration, current.version, current.last_received_at)
        if (
            _config(unchanged) == _config(current)
            and current.integration.connection_gone_at is None
            # An item with secrets in clear (written before sealing) is sealed by any save.
            and not in_clear(_config(current), INTEGRATION_PATHS)
        ):
            return integration_view(current)
        with self._versions.writing(integration_id):
            stored = self._store.replace(integration, current.version, current.sealed)
        stored = StoredIntegration(stored.integration, stored.version, current.last_received_at)
        before, after = integration_view(current), integration_view(stored)
        self._record(principal, "integration.updated", stored, before=before, after=after)
        return after

    def delete(self, principal: Principal, tenant_id: str, integration_id: str, if_match: int | None) -> None:
        """Deletes the integration unless messages of it wait in a queue tab (error,
        retry_pending, dead_letter): IntegrationInUse (409) then. See
        docs/decisions/integration-delete-in-use.md for what counts as in flight."""
        current = self._owned(tenant_id, integration_id)
        self._versions.check(integration_id, current.version, if_match)
        received = current.last_received_at
        if received is not None and self._clock() - received < IN_FLIGHT_AFTER_RECEPTION:
            raise IntegrationInUse(
                "this integration received messages recently; some may still be in flight: stop its "
                "traffic (revoke its keys, close its webhook) and delete it once they are done",
                details={
                    "integration_id": integration_id,
                    "reason": "in_flight",
                    "last_received_at": _iso(received),
                    "deletable_after": _iso(received + IN_FLIGHT_AFTER_RECEPTION),
                },
            )
        if self._store.has_waiting_messages(tenant_id, integration_id):
            raise IntegrationInUse(
                "messages of this integration wait (error, retry_pending or dead_letter): "
                "reprocess or cancel them first",
                details={"integration_id": integration_id, "reason": "waiting"},
            )
        try:
            with self._versions.writing(integration_id):
                self._store.delete(current)
        except Conflict as received_meanwhile:
            raise IntegrationInUse(
                "this integration received a message while it was being deleted",
                details={"integration_id": integration_id, "reason": "in_flight"},
            ) from received_meanwhile
        self._record(principal, "integration.deleted", current, before=integration_view(current))

    # --- helpers ---------------------------------------------------------------------------

    def _tenant(self, tenant_id: str) -> Tenant:
        tenant = self._store.get_tenant(tenant_id)
        if tenant is None:
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        return tenant

    def _owned(self, tenant_id: str, integration_id: str) -> StoredIntegration:
        found = self._store.get(tenant_id, integration_id)
        return self._versions.owned(found, lambda s: s.integration.tenant_id, tenant_id, integration_id)

    def _validated(
        self, tenant: Tenant, integration_id: str, body: dict[str, Any], stored: Integration | None
    ) -> Integration:
        data = {k: v for k, v in body.items() if k not in _READ_ONLY}
        if data.pop("tenant_id", tenant.tenant_id) != tenant.tenant_id:
            raise ValidationFailed(
                "request body failed validation",
                details=[{"field": "tenant_id", "problem": "must be the path's tenant"}],
            )
        if data.get("mode") is None:
            data["mode"] = tenant.default_mode.value
        sent = _destination_secrets_sent(data.get("destination"))
        if stored is not None:
            data = keep_secrets(data, stored.model_dump(mode="json"))
        data.update(tenant_id=tenant.tenant_id, integration_id=integration_id)
        checked = validated(IntegrationBody, data, "request body")
        integration = Integration.model_validate_json(checked.model_dump_json())
        _check_embedded_destination(stored, integration, sent)
        connection_id = integration.connection_id
        if connection_id is not None and not self._store.connection_exists(tenant.tenant_id, connection_id):
            raise UnknownConnection(
                "no such connection in this tenant",
                details={"field": "connection_id", "connection_id": connection_id},
            )
        return integration

    def _record(self, principal: Principal, action: str, stored: StoredIntegration, **views: Any) -> None:
        """The audit entry of `action` (`before` / `after`: the views), its log line naming the version."""
        integration = stored.integration
        at, version = self._clock(), stored.version
        self._versions.record(
            principal, action, integration.tenant_id, integration.integration_id, at, version=version, **views
        )
