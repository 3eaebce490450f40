"""Every admin route declares its permission where it is declared (issue 27, point 8): the list
comes from the resolver's own route table after include_router, never from a hand-kept list."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel

from devstack.openapi import handler_module
from hub.admin.access import Access, Role, Scope, TenantFrom, declared, public, requires, tenant
from hub.api.admin.guard import access_guard, registered_routes, undeclared
from hub.api.http import install_error_handlers
from hub.api.openapi import documented
from hub.api.static_site import StaticSite
from tests.aws import LambdaContext
from tests.events import admin_event

#: Just enough of a Lambda context for Powertools.
CONTEXT: Any = LambdaContext()


@pytest.fixture(scope="module")
def admin_app() -> LambdaFunctionUrlResolver:
    app = handler_module("AdminApiFunction").app
    assert isinstance(app, LambdaFunctionUrlResolver)
    return app


def test_every_route_of_the_admin_app_declares_its_permission(admin_app: LambdaFunctionUrlResolver) -> None:
    routes = registered_routes(admin_app)

    assert len(routes) >= 58  # the routers' routes are in the table, not only app.py's
    assert undeclared(admin_app) == []


def test_the_admin_api_declares_every_kind_of_scope_but_public(admin_app: LambdaFunctionUrlResolver) -> None:
    scopes = {access.scope for r in registered_routes(admin_app) if (access := declared(r.func))}

    # Nothing is public among the routes: the page is served before routing (next test).
    assert scopes == {Scope.ANY_TOKEN, Scope.PLATFORM, Scope.TENANT, Scope.USE_CASE}


def test_the_public_page_is_no_route_of_the_resolver(admin_app: LambdaFunctionUrlResolver) -> None:
    """lambda_handler answers `/admin...` from the page before the resolver sees it: no route
    may live there, or it would be public without declaring it."""
    paths = [route.path for route in registered_routes(admin_app)]

    assert [p for p in paths if StaticSite.serves(p)] == []
    assert StaticSite.serves("/admin/static/app.js")


class _TenantPath(BaseModel):
    tenant_id: str


def _app_with(router: Router) -> LambdaFunctionUrlResolver:
    app = LambdaFunctionUrlResolver()
    install_error_handlers(app)
    app.use([access_guard])
    app.include_router(router)
    return app


def test_the_check_reports_a_route_without_a_declaration() -> None:
    router = Router()

    @router.get("/api/admin/declared")
    @requires(public())
    def declared_route() -> Response:
        return Response(200)

    @router.get("/api/admin/forgotten/<tenant_id>")
    def forgotten(tenant_id: str) -> Response:
        return Response(200)

    assert undeclared(_app_with(router)) == ["GET /api/admin/forgotten/<tenant_id>"]


def test_the_check_reports_a_tenant_route_with_no_model_naming_its_tenant() -> None:
    router = Router()

    @router.get("/api/admin/things/<tenant_id>")
    @documented(path=_TenantPath)
    @requires(tenant(Role.VIEWER))
    def named(tenant_id: str) -> Response:
        return Response(200)

    @router.get("/api/admin/other/<tenant_id>")
    @requires(tenant(Role.VIEWER, tenant_from=TenantFrom.QUERY))  # no query model documented
    def unnamed(tenant_id: str) -> Response:
        return Response(200)

    assert undeclared(_app_with(router)) == ["GET /api/admin/other/<tenant_id>"]


def test_an_undeclared_route_is_refused_at_run_time_and_never_runs() -> None:
    router = Router()
    ran: list[str] = []

    @router.get("/api/admin/forgotten")
    def forgotten() -> Response:
        ran.append("forgotten")
        return Response(200, body="{}")

    answer: dict[str, Any] = _app_with(router).resolve(
        admin_event("GET", "/api/admin/forgotten", token=None), CONTEXT
    )

    assert answer["statusCode"] == 500
    assert json.loads(answer["body"])["error"]["code"] == "internal_error"
    assert ran == []


def test_a_public_route_runs_without_a_token() -> None:
    router = Router()

    @router.get("/api/admin/open")
    @requires(public())
    def open_route() -> Response:
        return Response(200, body='{"open":true}', content_type="application/json")

    answer = _app_with(router).resolve(admin_event("GET", "/api/admin/open", token=None), CONTEXT)

    assert (answer["statusCode"], json.loads(answer["body"])) == (200, {"open": True})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"scope": Scope.TENANT},  # no role
        {"scope": Scope.PLATFORM},  # no role
        {"scope": Scope.USE_CASE},  # no role
        {"scope": Scope.PUBLIC, "role": Role.ADMIN},  # a role means nothing here
        {"scope": Scope.TENANT, "role": Role.ADMIN},  # no tenant_from
        {"scope": Scope.PLATFORM, "role": Role.ADMIN, "tenant_from": TenantFrom.PATH},
    ],
)
def test_a_declaration_that_says_too_little_or_too_much_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"role|tenant_from"):
        Access(**kwargs)
