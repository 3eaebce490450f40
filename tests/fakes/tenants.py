"""An in-memory `hub.ports.TenantStore` with the DynamoDB adapter's contract: ids are unique
(Conflict), tenants are listed by id, an update of a missing tenant is NotFound."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hub.domain.tenancy import Tenant
from hub.errors import Conflict, NotFound
from hub.ports import TenantPage


class FakeTenants:
    def __init__(self) -> None:
        self.tenants: dict[str, Tenant] = {}

    def create(self, tenant: Tenant) -> None:
        if tenant.tenant_id in self.tenants:
            raise Conflict("tenant exists")
        self.tenants[tenant.tenant_id] = tenant

    def get(self, tenant_id: str) -> Tenant | None:
        return self.tenants.get(tenant_id)

    def list_tenants(self, limit: int, cursor: str | None) -> TenantPage:
        after = sorted(t for t in self.tenants if cursor is None or t > cursor)
        page = [self.tenants[t] for t in after[:limit]]
        return TenantPage(tenants=page, next_cursor=page[-1].tenant_id if len(after) > limit else None)

    def update(self, tenant_id: str, changes: Mapping[str, Any], now: datetime) -> Tenant:
        if tenant_id not in self.tenants:
            raise NotFound("tenant not found")
        updated = Tenant.model_validate(
            {**self.tenants[tenant_id].model_dump(), **changes, "updated_at": now}
        )
        self.tenants[tenant_id] = updated
        return updated
