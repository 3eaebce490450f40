"""An in-memory `hub.ports.TenantStore` with the DynamoDB adapter's contract: ids are unique
(Conflict), tenants are listed by id, an update of a missing tenant is NotFound."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hub.domain.tenancy import Tenant
from hub.errors import Conflict, NotFound
from hub.ports import TenantPage
from tests.fakes.pages import page


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
        ids, next_cursor = page(self.tenants, limit, cursor, "tenants")
        return TenantPage(tenants=[self.tenants[t] for t in ids], next_cursor=next_cursor)

    def update(self, tenant_id: str, changes: Mapping[str, Any], now: datetime) -> Tenant:
        if tenant_id not in self.tenants:
            raise NotFound("tenant not found")
        updated = Tenant.model_validate(
            {**self.tenants[tenant_id].model_dump(), **changes, "updated_at": now}
        )
        self.tenants[tenant_id] = updated
        return updated
