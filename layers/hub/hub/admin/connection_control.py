"""Pause and resume a connection (issue 12), operator role.

While paused, messages are still received and processed up to delivery, then wait on the
connection (`retry_pending` / `held_reason: paused`, hub.delivery.gate). Resume releases them at
the bounded rate (hub.delivery.release). Each change is one transaction with its outbox event
(`connection.paused` / `connection.resumed`) and an audit entry; pausing a paused connection
(or resuming a running one) changes nothing and records nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from hub.admin.access import Principal, Role
from hub.admin.audit import Audit
from hub.admin.versioned import Versioned
from hub.delivery.breaker import Circuit, ConnectionState
from hub.delivery.gate import ConnectionJob, JobKind
from hub.domain.clock import utcnow
from hub.domain.tenancy import Connection

logger = logging.getLogger(__name__)


class Connections(Protocol):
    def get(self, tenant_id: str, connection_id: str) -> Connection | None: ...


class PauseStates(Protocol):
    def get(self, tenant_id: str, connection_id: str) -> ConnectionState: ...
    def set_paused(
        self, tenant_id: str, connection_id: str, paused: bool, now: datetime, actor: str
    ) -> tuple[ConnectionState, ConnectionState] | None: ...


class ReleaseJobs(Protocol):
    def publish_job(self, job: ConnectionJob, delay_seconds: int = 0) -> None: ...


def state_view(connection: Connection, state: ConnectionState) -> dict[str, Any]:
    """What an operator sees of a connection's pause and breaker."""
    return {
        "connection_id": connection.connection_id,
        "tenant_id": connection.tenant_id,
        "paused": state.paused,
        "circuit": state.circuit.value,
        "probe_at": _iso(state.probe_at),
        "cooldown_seconds": state.cooldown_seconds if state.circuit is Circuit.OPEN else None,
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


class ConnectionControl:
    def __init__(
        self,
        connections: Connections,
        states: PauseStates,
        jobs: ReleaseJobs,
        audit: Audit,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._connections = connections
        self._states = states
        self._jobs = jobs
        self._versions = Versioned("connection", audit, logger)
        self._clock = clock

    def state(self, principal: Principal, tenant_id: str, connection_id: str) -> dict[str, Any]:
        connection = self._connection(principal, tenant_id, connection_id, Role.VIEWER)
        return state_view(connection, self._states.get(tenant_id, connection_id))

    def pause(self, principal: Principal, tenant_id: str, connection_id: str) -> dict[str, Any]:
        return self._set(principal, tenant_id, connection_id, paused=True)

    def resume(self, principal: Principal, tenant_id: str, connection_id: str) -> dict[str, Any]:
        return self._set(principal, tenant_id, connection_id, paused=False)

    def _set(
        self, principal: Principal, tenant_id: str, connection_id: str, *, paused: bool
    ) -> dict[str, Any]:
        connection = self._connection(principal, tenant_id, connection_id, Role.OPERATOR)
        now = self._clock()
        changed = self._states.set_paused(tenant_id, connection_id, paused, now, principal.token_id)
        if changed is None:
            return state_view(connection, self._states.get(tenant_id, connection_id))
        before, after = changed
        if not paused and after.holding is None:
            # The first page at once; an open breaker releases when its probe closes it.
            self._jobs.publish_job(
                ConnectionJob(
                    job=JobKind.RELEASE,
                    connection_id=connection_id,
                    tenant_id=connection.tenant_id,
                    generation=after.release_generation,
                )
            )
        action = "connection.paused" if paused else "connection.resumed"
        self._versions.record(
            principal,
            action,
            connection.tenant_id,
            connection_id,
            now,
            before={"paused": before.paused},
            after={"paused": after.paused},
        )
        return state_view(connection, after)

    def _connection(self, principal: Principal, tenant_id: str, connection_id: str, role: Role) -> Connection:
        """The tenant's stored connection, when `principal` may act on it with `role`: another
        tenant's is as missing as one that does not exist; Forbidden when the role is too low."""
        principal.require(role, tenant_id, what="connection")
        connection = self._connections.get(tenant_id, connection_id)
        if connection is None:
            raise self._versions.missing(connection_id)
        return connection
