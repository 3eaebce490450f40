"""Status-callback tokens of connections (issue 12, pattern 5), managed by admins.

A destination that confirms deliveries later (`POST /api/edi-hub/status-callback/{message_id}`)
authenticates with its connection's callback token. The hub mints it (256 random bits, shown
once), stores only its SHA-256, and compares in constant time: no KMS on the callback path.
Minting again rotates: the previous token keeps working for a grace period (24 h by default,
0 ends it at once). Revoking deletes the credential: every callback of the connection answers
401 until a new token is minted. Deleting the connection deletes it too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hub.admin.audit import Audit
from hub.domain.clock import utcnow
from hub.domain.delivery_status import (
    SHOWN_TOKEN_PREFIX_LENGTH,
    CallbackCredential,
    credential_view,
    generate_callback_token,
    hash_callback_token,
)
from hub.domain.ids import new_id
from hub.errors import NotFound
from hub.ports import CallbackCredentialStore, ConnectionStore

if TYPE_CHECKING:
    from hub.admin.access import Principal

logger = logging.getLogger(__name__)

#: Where a destination posts its callbacks (the message id goes in the path).
CALLBACK_PATH = "/api/edi-hub/status-callback/{message_id}"


class CallbackTokenAdmin:
    """Mint, show, revoke. The handler authorizes (admin role on the path's tenant); another
    tenant's connection is NotFound like a missing one."""

    def __init__(
        self,
        connections: ConnectionStore,
        credentials: CallbackCredentialStore,
        audit: Audit,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._connections = connections
        self._credentials = credentials
        self._audit = audit
        self._clock = clock

    def _require_connection(self, tenant_id: str, connection_id: str) -> None:
        stored = self._connections.get(tenant_id, connection_id)
        if stored is None or stored.tenant_id != tenant_id:
            raise NotFound("connection not found", details={"connection_id": connection_id})

    def describe(self, tenant_id: str, connection_id: str) -> dict[str, Any]:
        """The credential's metadata (never the token or its hash); `callback_token` null when
        the connection has none."""
        self._require_connection(tenant_id, connection_id)
        credential = self._credentials.get(tenant_id, connection_id)
        now = self._clock()
        mine = credential is not None and credential.tenant_id == tenant_id
        return {
            "connection_id": connection_id,
            "callback_path": CALLBACK_PATH,
            "callback_token": credential_view(credential, now) if credential is not None and mine else None,
        }

    def mint(
        self, principal: Principal, tenant_id: str, connection_id: str, grace: timedelta
    ) -> dict[str, Any]:
        """A new token, in the answer only (`token`); the previous one, if any, works until now
        + `grace`. Conflict when a concurrent mint or revoke came first."""
        self._require_connection(tenant_id, connection_id)
        now = self._clock()
        stored = self._credentials.get(tenant_id, connection_id)
        # A leftover of another tenant's connection of this id is replaced, never rotated from.
        current = stored if stored is not None and stored.tenant_id == tenant_id else None
        raw = generate_callback_token()
        credential = CallbackCredential(
            connection_id=connection_id,
            tenant_id=tenant_id,
            token_id=new_id("cbt"),
            token_sha256=hash_callback_token(raw),
            prefix=raw[:SHOWN_TOKEN_PREFIX_LENGTH],
            minted_at=now,
            previous_sha256=current.token_sha256 if current is not None and grace > timedelta(0) else None,
            previous_until=now + grace if current is not None and grace > timedelta(0) else None,
        )
        self._credentials.save(credential, stored.token_sha256 if stored is not None else None)
        view = credential_view(credential, now)
        self._audit.record(
            principal,
            tenant_id,
            "connection.callback_token_minted",
            {"connection_id": connection_id, "token_id": credential.token_id},
            now,
            before=credential_view(current, now) if current is not None else None,
            after=view,
        )
        logger.info(
            "callback token minted",
            extra={"tenant_id": tenant_id, "connection_id": connection_id, "actor": principal.token_id},
        )
        return {**view, "callback_path": CALLBACK_PATH, "token": raw}

    def revoke(self, principal: Principal, tenant_id: str, connection_id: str) -> None:
        """Deletes the connection's credential; NotFound when it has none."""
        self._require_connection(tenant_id, connection_id)
        current = self._credentials.get(tenant_id, connection_id)
        if (
            current is None
            or current.tenant_id != tenant_id
            or not self._credentials.revoke(tenant_id, connection_id)
        ):
            raise NotFound("the connection has no callback token", details={"connection_id": connection_id})
        now = self._clock()
        self._audit.record(
            principal,
            tenant_id,
            "connection.callback_token_revoked",
            {"connection_id": connection_id, "token_id": current.token_id},
            now,
            before=credential_view(current, now),
            after=None,
        )
        logger.info(
            "callback token revoked",
            extra={"tenant_id": tenant_id, "connection_id": connection_id, "actor": principal.token_id},
        )
