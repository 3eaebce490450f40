"""Every admin route against every kind of caller, through the real admin handler on moto.

One table row per route: which scope it acts in (a tenant's, or the platform's only), the role
it needs, and what an allowed call answers. The callers are real tokens created over the API:
none, a revoked one, another tenant's admin, the tenant's viewer / operator / admin, and the
platform's viewer / operator / admin. Expected: no or revoked token → 401; another tenant's
resource → 404 (exactly as a missing one); a role too low, or a tenant token on a platform
route → 403 `forbidden`; everyone else gets the route's own answer.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from hub.admin.access import Role
from tests.integration.conftest import HttpAnswer, Stack, Tenancy
from tests.pipeline import send
from tests.pki import PFX_PASSWORD, Pki

TENANT = "t1"
OTHER = "t2"
CALLERS = (
    "none",
    "revoked",
    "other_tenant_admin",
    "tenant_viewer",
    "tenant_operator",
    "tenant_admin",
    "platform_viewer",
    "platform_operator",
    "platform_admin",
)


@dataclass
class World:
    api: Callable[..., HttpAnswer]
    tokens: dict[str, str | None]
    message_id: str
    key_id: str
    pfx: bytes

    def call(self, caller: str, route: Route) -> HttpAnswer:
        method, path, options = route.request(self)
        return self.api(method, path, token=self.tokens[caller], **options)


Request = tuple[str, str, dict[str, Any]]


@dataclass(frozen=True)
class Route:
    name: str
    request: Callable[[World], Request]
    role: Role
    #: The platform's only (a tenant token is 403 whatever its role).
    platform_only: bool = False
    #: What an allowed call answers (the route's own outcome, e.g. 409 for a message in flight).
    allowed: int = 200
    #: Safe to repeat: every allowed caller makes the call; else only the least one allowed.
    repeatable: bool = False


def _get(path: str, **query: str) -> Callable[[World], Request]:
    return lambda w: ("GET", path, {"query": query or None})


def _post(path: str, body: Any = None) -> Callable[[World], Request]:
    return lambda w: ("POST", path, {"body": body})


ROUTES = [
    # messages: the tenant comes from the stored message
    Route(
        "message view",
        lambda w: ("GET", f"/api/admin/messages/{w.message_id}", {}),
        Role.VIEWER,
        repeatable=True,
    ),
    # In flight (just received): an authorized reprocess is refused by admission, 409.
    Route(
        "reprocess",
        lambda w: ("POST", "/api/edi-hub/reprocess-message", {"body": {"message_id": w.message_id}}),
        Role.OPERATOR,
        allowed=409,
        repeatable=True,
    ),
    Route(
        "cancel retry",
        lambda w: ("POST", f"/api/admin/messages/{w.message_id}/cancel-retry", {}),
        Role.OPERATOR,
        allowed=409,  # not waiting: not cancellable
        repeatable=True,
    ),
    Route(
        "integration view",
        _get("/api/admin/integrations/int_erp", tenant_id=TENANT),
        Role.VIEWER,
        repeatable=True,
    ),
    Route("queue", _get("/api/admin/queue", tenant_id=TENANT, tab="error"), Role.VIEWER, repeatable=True),
    Route("health", _get("/api/admin/health", tenant_id=TENANT), Role.VIEWER, repeatable=True),
    Route(
        "dlq redrive",
        _post("/api/admin/dlq/pipeline/redrive"),
        Role.OPERATOR,
        platform_only=True,
        repeatable=True,
    ),
    Route(
        "certificate upload",
        lambda w: (
            "POST",
            "/api/admin/connections/conn_a/certificate",
            {
                "body": {
                    "tenant_id": TENANT,
                    "pkcs12_base64": base64.b64encode(w.pfx).decode(),
                    "password": PFX_PASSWORD.decode(),
                }
            },
        ),
        Role.ADMIN,
        allowed=201,
        repeatable=True,
    ),
    # No certificate uploaded: an authorized read is the route's own 404.
    Route(
        "certificate describe",
        _get("/api/admin/connections/conn_none/certificate", tenant_id=TENANT),
        Role.VIEWER,
        allowed=404,
        repeatable=True,
    ),
    # tenants
    Route(
        "tenant create",
        _post("/api/admin/tenants", {"name": "New"}),
        Role.ADMIN,
        platform_only=True,
        allowed=201,
        repeatable=True,
    ),
    Route("tenant list", _get("/api/admin/tenants"), Role.VIEWER, platform_only=True, repeatable=True),
    Route("tenant read", _get(f"/api/admin/tenants/{TENANT}"), Role.VIEWER, repeatable=True),
    Route(
        "tenant update",
        lambda w: ("PATCH", f"/api/admin/tenants/{TENANT}", {"body": {"name": "T1 renamed"}}),
        Role.ADMIN,
        repeatable=True,
    ),
    Route("tenant disable", _post(f"/api/admin/tenants/{TENANT}/disable"), Role.ADMIN, platform_only=True),
    Route(
        "tenant enable",
        _post(f"/api/admin/tenants/{TENANT}/enable"),
        Role.ADMIN,
        platform_only=True,
        repeatable=True,
    ),
    # API keys
    Route(
        "api key create",
        _post(f"/api/admin/tenants/{TENANT}/api-keys"),
        Role.ADMIN,
        allowed=201,
        repeatable=True,
    ),
    Route("api key list", _get(f"/api/admin/tenants/{TENANT}/api-keys"), Role.VIEWER, repeatable=True),
    Route(
        "api key revoke",
        lambda w: ("POST", f"/api/admin/tenants/{TENANT}/api-keys/{w.key_id}/revoke", {}),
        Role.ADMIN,
        repeatable=True,
    ),
    Route(
        "api key rotate",
        lambda w: ("POST", f"/api/admin/tenants/{TENANT}/api-keys/{w.key_id}/rotate", {}),
        Role.ADMIN,
        allowed=201,
    ),
    # admin tokens
    Route(
        "token create",
        _post("/api/admin/tokens", {"label": "new", "role": "viewer", "tenant_id": TENANT}),
        Role.ADMIN,
        allowed=201,
        repeatable=True,
    ),
    Route("token list", _get("/api/admin/tokens", tenant_id=TENANT), Role.VIEWER, repeatable=True),
    Route(
        "platform token create",
        _post("/api/admin/tokens", {"label": "new", "role": "viewer", "tenant_id": None}),
        Role.ADMIN,
        platform_only=True,
        allowed=201,
        repeatable=True,
    ),
    Route("platform token list", _get("/api/admin/tokens"), Role.VIEWER, platform_only=True, repeatable=True),
    # audit
    Route("tenant audit", _get(f"/api/admin/tenants/{TENANT}/audit"), Role.VIEWER, repeatable=True),
    Route("platform audit", _get("/api/admin/audit"), Role.VIEWER, platform_only=True, repeatable=True),
]


def expected(route: Route, caller: str) -> int:
    if caller in ("none", "revoked"):
        return 401
    scope, _, role_name = caller.partition("_")
    if caller == "other_tenant_admin":
        return 403 if route.platform_only else 404
    role = Role(role_name)
    if scope == "tenant" and route.platform_only:
        return 403
    return route.allowed if role.covers(route.role) else 403


def callers_for(route: Route) -> list[str]:
    """Refused callers first (they must change nothing), then the allowed ones: all of them for
    a repeatable call, else the least privileged."""
    refused = [
        c for c in CALLERS if expected(route, c) in (401, 403, 404) and expected(route, c) != route.allowed
    ]
    allowed = [c for c in CALLERS if c not in refused]
    return refused + (allowed if route.repeatable else allowed[:1])


@pytest.fixture
def world(stack: Stack, tenancy: Tenancy, admin_api: Any, ingest_api: Any, pki: Pki) -> World:
    tokens: dict[str, str | None] = {"none": None}
    for caller, tenant_id in (
        ("tenant_viewer", TENANT),
        ("tenant_operator", TENANT),
        ("tenant_admin", TENANT),
        ("other_tenant_admin", OTHER),
        ("platform_viewer", None),
        ("platform_operator", None),
        ("platform_admin", None),
        ("revoked", TENANT),
    ):
        role = caller.rpartition("_")[2] if caller != "revoked" else "admin"
        created = admin_api(
            "POST", "/api/admin/tokens", body={"label": caller, "role": role, "tenant_id": tenant_id}
        )
        assert created.status == 201, created.body
        tokens[caller] = created.body["token"]
        if caller == "revoked":
            revoked = admin_api("POST", f"/api/admin/tokens/{created.body['token_id']}/revoke")
            assert revoked.body["state"] == "revoked"
    key = admin_api("POST", f"/api/admin/tenants/{TENANT}/api-keys")
    assert key.status == 201
    return World(
        api=admin_api,
        tokens=tokens,
        message_id=send(ingest_api, tenancy, {"po_number": "PO-AUTHZ"}),
        key_id=key.body["key_id"],
        pfx=pki.client_pfx,
    )


@pytest.mark.parametrize("route", ROUTES, ids=[r.name for r in ROUTES])
def test_every_route_answers_each_caller_by_role_and_scope(world: World, route: Route) -> None:
    seen = {}
    for caller in callers_for(route):
        answer = world.call(caller, route)
        seen[caller] = answer.status
        want = expected(route, caller)
        if want in (401, 403) and want != route.allowed:
            assert answer.body["error"]["code"] == {401: "unauthorized", 403: "forbidden"}[want], (
                caller,
                answer.body,
            )
    assert seen == {caller: expected(route, caller) for caller in seen}


def test_another_tenants_message_is_the_same_404_as_a_missing_one(world: World) -> None:
    other = world.call("other_tenant_admin", ROUTES[0])
    missing = world.api("GET", "/api/admin/messages/msg_00000000000000000000000000")

    assert other.status == missing.status == 404
    assert other.body["error"]["code"] == missing.body["error"]["code"] == "not_found"
    assert other.body["error"]["message"] == missing.body["error"]["message"]


def test_a_tenant_token_stops_working_when_its_tenant_is_disabled(world: World) -> None:
    read = next(r for r in ROUTES if r.name == "tenant read")
    assert world.call("tenant_viewer", read).status == 200

    assert world.api("POST", f"/api/admin/tenants/{TENANT}/disable").status == 200

    assert world.call("tenant_viewer", read).status == 401
    assert world.call("platform_viewer", read).status == 200  # the tenant is still readable
    world.api("POST", f"/api/admin/tenants/{TENANT}/enable")
    assert world.call("tenant_viewer", read).status == 200


def test_a_revoked_token_is_refused_at_once(world: World) -> None:
    created = world.api(
        "POST", "/api/admin/tokens", body={"label": "short", "role": "viewer", "tenant_id": TENANT}
    )
    token = created.body["token"]
    assert world.api("GET", f"/api/admin/tenants/{TENANT}", token=token).status == 200

    world.api(
        "POST", f"/api/admin/tokens/{created.body['token_id']}/revoke", token=world.tokens["tenant_admin"]
    )

    refused = world.api("GET", f"/api/admin/tenants/{TENANT}", token=token)
    assert (refused.status, refused.body["error"]["code"]) == (401, "unauthorized")


def test_the_bootstrap_hash_comes_from_secrets_manager_not_the_environment(stack: Stack) -> None:
    import hashlib  # noqa: PLC0415

    import boto3  # noqa: PLC0415

    from tests.integration.conftest import ADMIN_TOKEN  # noqa: PLC0415

    digest = hashlib.sha256(ADMIN_TOKEN.encode()).hexdigest()
    arn = stack.env["HUB_ADMIN_TOKEN_SECRET_ARN"]
    assert boto3.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"] == digest
    assert digest not in "".join(stack.env.values())


def test_a_new_bootstrap_secret_value_applies_without_a_deploy(
    stack: Stack, admin_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib  # noqa: PLC0415

    import boto3  # noqa: PLC0415

    from hub import wiring  # noqa: PLC0415

    monkeypatch.setenv("HUB_SECRETS_CACHE_SECONDS", "0")  # no wait for the cache to age
    wiring.reset()
    assert admin_api("GET", "/api/admin/tenants").status == 200
    rotated = "hub_admin_the-next-bootstrap-token"

    boto3.client("secretsmanager").put_secret_value(
        SecretId=stack.env["HUB_ADMIN_TOKEN_SECRET_ARN"],
        SecretString=hashlib.sha256(rotated.encode()).hexdigest(),
    )

    assert admin_api("GET", "/api/admin/tenants").status == 401
    assert admin_api("GET", "/api/admin/tenants", token=rotated).status == 200
