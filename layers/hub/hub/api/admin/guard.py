"""The admin API's one access middleware (issue 27, point 8): every route declares its
permission where it is declared (hub.admin.access.requires), and this enforces it before the
route runs.

Per request: a public route runs as is. Otherwise the caller's address must not be blocked for
refused tokens (429, hub.admin.token_guard), the token must be a valid one (401) and within its
rate (429, hub.admin.token_throttle), and then the route's declaration is checked: a platform
route needs a platform token with the role (403); a tenant route validates the request part
naming the tenant with the very model the route parses it with (so a bad request is the same 422
it always was) and requires the role there (404 for another tenant's, as for a missing one; 403
for a role too low); a `use_case` route leaves the check to its use case, which reads the stored
item first. A request no route takes is authenticated too (401 before 404/405, as it always
was). A registered route that declares nothing is refused with the one internal-error answer,
never run: a test enumerates the routes so that never ships.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver, Route
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from pydantic import BaseModel

from hub.admin.access import Access, Principal, Scope, TenantFrom, declared
from hub.api.http import admin_principal, bearer_token, parse_body, parse_query, validated
from hub.api.openapi import documented_parts
from hub.errors import ConfigurationError, Unauthorized
from hub.wiring import admin as wiring

logger = logging.getLogger(__name__)

_PRINCIPAL: ContextVar[Principal | None] = ContextVar("admin_principal", default=None)


def principal() -> Principal:
    """The caller of the admin request being handled (set by `access_guard`)."""
    found = _PRINCIPAL.get()
    if found is None:  # a public route asking for a caller: a bug, never a guess
        raise ConfigurationError("no authenticated caller on this route")
    return found


def registered_routes(app: ApiGatewayResolver) -> list[Route]:
    """Every route of the resolver (those of its included routers too)."""
    # Powertools has no public listing; hub.api.routing.allowed_methods reads the same two lists.
    return [*app._static_routes, *app._dynamic_routes]


def undeclared(app: ApiGatewayResolver) -> list[str]:
    """`METHOD rule` of every route of `app` whose permission is missing or unusable (a tenant
    route without the model that names its tenant)."""
    problems = []
    for route in registered_routes(app):
        access = declared(route.func)
        if access is None or (access.scope is Scope.TENANT and _tenant_model(route, access) is None):
            problems.append(f"{route.method} {route.path}")
    return problems


def access_guard(app: ApiGatewayResolver, next_middleware: NextMiddleware) -> Response:
    route: Route | None = app.context.get("_route")
    access = declared(route.func) if route is not None else None
    if access is None and route is not None and any(route is r for r in registered_routes(app)):
        raise ConfigurationError(f"route {route.method} {route.path} declares no access")
    if access is not None and access.scope is Scope.PUBLIC:
        return next_middleware(app)
    caller = _authenticated(app)
    wiring.admin_token_throttle().admit(caller.token_id)  # 429 before the route does anything
    app.append_context(principal=caller)
    reset = _PRINCIPAL.set(caller)
    try:
        if access is not None and route is not None:
            _enforce(app, route, access, caller)
        return next_middleware(app)
    finally:
        _PRINCIPAL.reset(reset)


def _authenticated(app: ApiGatewayResolver) -> Principal:
    """The caller's principal. An address with too many refused tokens lately is answered 429
    before its token is looked at (hub.admin.token_guard)."""
    event = app.current_event
    source = event.request_context.http.source_ip or "unknown"  # type: ignore[attr-defined]
    guard = wiring.failed_token_guard()
    guard.check(source)
    try:
        return admin_principal(event, wiring.admin_authenticator().principal)
    except Unauthorized:
        if bearer_token(event) is not None:  # a token was guessed; a missing one guesses nothing
            failures = guard.failed(source)
            logger.warning("admin token refused", extra={"source_ip": source, "failures": failures})
        raise


def _enforce(app: ApiGatewayResolver, route: Route, access: Access, caller: Principal) -> None:
    if access.scope in (Scope.PLATFORM, Scope.TENANT):
        # In the order the routes always parsed: the path first, then what names the tenant.
        path_model = documented_parts(route.func).path
        path = validated(path_model, app.context.get("_route_args", {}), "path") if path_model else None
        assert access.role is not None  # Access checks it
        if access.scope is Scope.PLATFORM:
            caller.require_platform(access.role)
            return
        model = _tenant_model(route, access)
        if model is None:  # undeclared() reports it, so a test fails first
            raise ConfigurationError(f"route {route.method} {route.path} names no tenant model")
        if access.tenant_from is TenantFrom.PATH:
            named: Any = path
        elif access.tenant_from is TenantFrom.QUERY:
            named = parse_query(app.current_event, model)
        else:
            named = parse_body(app.current_event, model)
        caller.require(access.role, named.tenant_id, what=access.what)
    # ANY_TOKEN: authenticated is enough. USE_CASE: the use case checks once it knows the tenant.


def _tenant_model(route: Route, access: Access) -> type[BaseModel] | None:
    """The model whose `tenant_id` names a tenant route's tenant: the one the route parses that
    part of the request with (its `documented` model). None when there is none."""
    parts = documented_parts(route.func)
    model = {TenantFrom.PATH: parts.path, TenantFrom.QUERY: parts.query, TenantFrom.BODY: parts.body}[
        access.tenant_from or TenantFrom.PATH
    ]
    return model if model is not None and "tenant_id" in model.model_fields else None
