"""Admin tokens (issue 11): created over the admin API (shown once, stored as a SHA-256 with a
short visible prefix), each scoped to one tenant or to the platform, with a role.

Who may create what: a token is created by an `admin` of its scope (a tenant admin for its own
tenant, a platform admin for any tenant or the platform), never with a role above the
creator's. A revoked token, and a token of a disabled (or missing) tenant, authenticates
nothing (401). The bootstrap token is not stored: its hash comes with the stack, it is a
platform admin and it cannot be revoked here (change its secret instead).
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from hub.admin.access import BOOTSTRAP, Principal, Role
from hub.admin.audit import PLATFORM_SCOPE, Audit
from hub.domain.clock import utcnow
from hub.domain.ids import new_id
from hub.domain.tenancy import hash_api_key, tenant_accepts_traffic
from hub.errors import Forbidden, NotFound, Unauthorized
from hub.ports import TenantStore

logger = logging.getLogger(__name__)

ADMIN_TOKEN_PREFIX = "hub_adm_"  # noqa: S105 - the visible prefix
#: `hub_adm_` and 8 characters of the random part (48 of its 256 bits): shown and stored.
SHOWN_TOKEN_PREFIX_LENGTH = len(ADMIN_TOKEN_PREFIX) + 8


def generate_admin_token() -> str:
    return f"{ADMIN_TOKEN_PREFIX}{secrets.token_urlsafe(32)}"


def hash_admin_token(raw: str) -> str:
    """Hex SHA-256, as API keys (and as the bootstrap token's hash is deployed)."""
    return hash_api_key(raw)


@dataclass(frozen=True)
class AdminToken:
    token_id: str
    token_hash: str
    prefix: str
    label: str
    role: Role
    #: None: a platform token.
    tenant_id: str | None
    created_at: datetime
    #: The token id of whoever created it.
    created_by: str
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def principal(self) -> Principal:
        return Principal(token_id=self.token_id, label=self.label, role=self.role, tenant_id=self.tenant_id)


@dataclass(frozen=True)
class AdminTokenPage:
    tokens: list[AdminToken]
    next_cursor: str | None


class AdminTokenStore(Protocol):
    def create(self, token: AdminToken) -> None:
        """Stores a new token, findable by hash and by id, listed under its scope."""
        ...

    def by_hash(self, token_hash: str) -> AdminToken | None:
        """The token with this hash as stored now (a consistent read: a revocation counts at
        once); None when there is none."""
        ...

    def get(self, token_id: str) -> AdminToken | None: ...

    def list_tokens(self, tenant_id: str | None, limit: int, cursor: str | None) -> AdminTokenPage:
        """A tenant's tokens (None: the platform's), newest first. ValidationFailed for a cursor
        this listing did not give out."""
        ...

    def revoke(self, token: AdminToken, now: datetime) -> AdminToken:
        """Idempotent: a revoked token keeps its first `revoked_at`."""
        ...


def token_view(token: AdminToken) -> dict[str, Any]:
    """A token as the admin API shows it: never the token, nor its hash."""
    return {
        "token_id": token.token_id,
        "prefix": token.prefix,
        "label": token.label,
        "role": token.role.value,
        "tenant_id": token.tenant_id,
        "state": "active" if token.active else "revoked",
        "created_at": _iso(token.created_at),
        "created_by": token.created_by,
        "revoked_at": _iso(token.revoked_at),
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


_REFUSED = "a valid admin token is required (Authorization: Bearer <token>)"


class Authenticator:
    """Who is behind a presented admin token: the bootstrap token (its hash from the stack's
    secret, read when first needed) or a stored, active token of an active tenant."""

    def __init__(
        self, bootstrap_sha256: Callable[[], str], tokens: AdminTokenStore, tenants: TenantStore
    ) -> None:
        self._bootstrap_sha256 = bootstrap_sha256
        self._tokens = tokens
        self._tenants = tenants

    def principal(self, presented: str) -> Principal:
        """Unauthorized for an empty, unknown or revoked token and for a token of a disabled or
        missing tenant; every refusal is the same answer."""
        if not presented:
            raise Unauthorized(_REFUSED)
        digest = hash_admin_token(presented)
        # Stored tokens first: they keep working while Secrets Manager (the bootstrap hash) fails.
        token = self._tokens.by_hash(digest) if presented.startswith(ADMIN_TOKEN_PREFIX) else None
        if token is not None:
            return self._usable(token)
        bootstrap = self._bootstrap_sha256()
        if bootstrap and hmac.compare_digest(digest, bootstrap):
            return BOOTSTRAP
        raise Unauthorized(_REFUSED)

    def _usable(self, token: AdminToken) -> Principal:
        if not token.active:
            raise Unauthorized(_REFUSED)
        if token.tenant_id is not None:
            tenant = self._tenants.get(token.tenant_id)
            # Unlike ingest (a key whose tenant item was never written works), an admin token
            # always belongs to a tenant created through the API: a missing one is refused.
            if tenant is None or not tenant_accepts_traffic(tenant):
                raise Unauthorized(_REFUSED)
        return token.principal()


class TokenAdmin:
    """Creating, listing and revoking admin tokens. Each use case checks the caller itself: a
    token's scope is known only from the request (create, list) or the stored token (revoke)."""

    def __init__(
        self,
        store: AdminTokenStore,
        tenants: TenantStore,
        audit: Audit,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._store = store
        self._tenants = tenants
        self._audit = audit
        self._clock = clock

    def create(self, principal: Principal, tenant_id: str | None, label: str, role: Role) -> dict[str, Any]:
        """A new token: its view plus `token`, the secret, never retrievable again."""
        self._require(principal, Role.ADMIN, tenant_id, what="tenant")
        if not principal.role.covers(role):
            raise Forbidden(
                "a token cannot be given a role above its creator's",
                details={"role": principal.role.value, "asked": role.value},
            )
        if tenant_id is not None and self._tenants.get(tenant_id) is None:
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        raw = generate_admin_token()
        now = self._clock()
        token = AdminToken(
            token_id=new_id("tok"),
            token_hash=hash_admin_token(raw),
            prefix=raw[:SHOWN_TOKEN_PREFIX_LENGTH],
            label=label,
            role=role,
            tenant_id=tenant_id,
            created_at=now,
            created_by=principal.token_id,
        )
        self._store.create(token)
        view = token_view(token)
        self._audit.record(
            principal, _scope(tenant_id), "admin_token.created", {"token_id": token.token_id}, now, after=view
        )
        logger.info("admin token created", extra={"token_id": token.token_id, "tenant_id": tenant_id})
        return {**view, "token": raw}

    def list_tokens(
        self, principal: Principal, tenant_id: str | None, limit: int, cursor: str | None
    ) -> dict[str, Any]:
        self._require(principal, Role.VIEWER, tenant_id, what="tenant")
        if tenant_id is not None and self._tenants.get(tenant_id) is None:
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        page = self._store.list_tokens(tenant_id, limit, cursor)
        return {
            "tenant_id": tenant_id,
            "items": [token_view(t) for t in page.tokens],
            "next_cursor": page.next_cursor,
        }

    def revoke(self, principal: Principal, token_id: str) -> dict[str, Any]:
        """Idempotent. Another scope's token (a platform token for a tenant's caller) is the same
        NotFound as a missing one; it stops authenticating at once."""
        token = self._store.get(token_id)
        if token is None or not principal.sees(token.tenant_id):
            raise NotFound("admin token not found", details={"token_id": token_id})
        self._require(principal, Role.ADMIN, token.tenant_id, what="admin token")
        if not token.active:
            return token_view(token)
        now = self._clock()
        revoked = self._store.revoke(token, now)
        self._audit.record(
            principal,
            _scope(token.tenant_id),
            "admin_token.revoked",
            {"token_id": token_id},
            now,
            before=token_view(token),
            after=token_view(revoked),
        )
        logger.info("admin token revoked", extra={"token_id": token_id})
        return token_view(revoked)

    @staticmethod
    def _require(principal: Principal, role: Role, tenant_id: str | None, *, what: str) -> None:
        if tenant_id is None:
            principal.require_platform(role)
        else:
            principal.require(role, tenant_id, what=what)


def _scope(tenant_id: str | None) -> str:
    return tenant_id if tenant_id is not None else PLATFORM_SCOPE
