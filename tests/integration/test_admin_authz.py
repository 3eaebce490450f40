"""Every admin route against every kind of caller, through the real admin handler on moto.

The routes come from the admin app's own route table (after include_router) and what each
expects from the permission it declares (`@requires`, hub.admin.access): a test fails when a
route has no sample request here, so a new route cannot skip the matrix. The callers are real
tokens created over the API: none, an unknown one, a revoked one, another tenant's admin, the
tenant's viewer / operator / admin, and the platform's viewer / operator / admin. Expected: no,
unknown or revoked token → 401; another tenant's resource → 404, exactly as a missing one
(`<what> not found`); a role too low, or a tenant token on a platform route → 403 `forbidden`;
everyone else gets the route's own answer (its sample's `allowed`).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from devstack.openapi import handler_module
from hub.admin.access import Access, Role, Scope, declared
from hub.api.admin.guard import registered_routes
from tests.aws import built_once
from tests.integration.conftest import HttpAnswer, Stack, Tenancy
from tests.pipeline import send
from tests.pki import PFX_PASSWORD, Pki

TENANT = "t1"
OTHER = "t2"
CALLERS = (
    "none",
    "unknown",
    "revoked",
    "other_tenant_admin",
    "tenant_viewer",
    "tenant_operator",
    "tenant_admin",
    "platform_viewer",
    "platform_operator",
    "platform_admin",
)
CONNECTION = "erp"
CONNECTION_URL = "http://127.0.0.1:9/x"  # refused at once: the connection test answers quickly


@dataclass
class World:
    api: Callable[..., HttpAnswer]
    tokens: dict[str, str | None]
    message_id: str
    key_id: str
    token_id: str
    subscription_id: str
    pfx: bytes

    def call(self, caller: str, sample: Sample) -> HttpAnswer:
        method, path, options = sample.request(self)
        return self.api(method, path, token=self.tokens[caller], **options)


Request = tuple[str, str, dict[str, Any]]


@dataclass(frozen=True)
class Sample:
    """One request to a route, and what an allowed caller gets."""

    request: Callable[[World], Request]
    #: The route's own outcome for an allowed caller (e.g. 409 for a message in flight).
    allowed: int = 200
    #: Safe to repeat: every allowed caller makes the call; else only the least one allowed.
    repeatable: bool = True
    #: The tenant the request acts on; None: the platform's (a platform route, or a use-case
    #: route's null tenant).
    target: str | None = TENANT
    #: Done first with the bootstrap token (what the request needs to exist).
    given: Callable[[World], None] = field(default=lambda w: None)
    name: str = ""


def _get(path: str, **query: str) -> Callable[[World], Request]:
    return lambda w: ("GET", path, {"query": query or None})


def _post(path: str, body: Any = None, **query: str) -> Callable[[World], Request]:
    return lambda w: ("POST", path, {"body": body, "query": query or None})


def _call(method: str, path: str, body: Any = None) -> Callable[[World], Request]:
    return lambda w: (method, path, {"body": body})


def _ok(answer: HttpAnswer, *statuses: int) -> None:
    assert answer.status in statuses, answer.body


TENANT_PATH = f"/api/admin/tenants/{TENANT}"
CONNECTION_PATH = f"{TENANT_PATH}/connections/{CONNECTION}"
INTEGRATION_PATH = f"{TENANT_PATH}/integrations"


def _subscription(tail: str = "") -> Callable[[World], str]:
    return lambda w: f"{TENANT_PATH}/subscriptions/{w.subscription_id}{tail}"


def _upload(w: World, connection_id: str = "conn_a") -> dict[str, Any]:
    return {
        "tenant_id": TENANT,
        "pkcs12_base64": base64.b64encode(w.pfx).decode(),
        "password": PFX_PASSWORD.decode(),
    }


def _given_certificate(w: World) -> None:
    _ok(w.api("POST", "/api/admin/connections/conn_a/certificate", body=_upload(w)), 201)


def _given_callback_token(w: World) -> None:
    _ok(w.api("POST", f"{CONNECTION_PATH}/callback-token"), 201)


def _given_two_secrets(w: World) -> None:
    _ok(w.api("POST", _subscription("/rotate-secret")(w)), 201)


def _given_disabled(w: World) -> None:
    _ok(w.api("POST", _subscription("/disable")(w)), 200)


def _given_bulk_job(w: World) -> None:
    created = w.api("POST", "/api/admin/bulk-jobs", body=BULK_JOB)
    _ok(created, 202)
    w.bulk_job_id = created.body["job_id"]  # type: ignore[attr-defined]


def _bulk_job(tail: str = "") -> Callable[[World], Request]:
    return lambda w: (
        "GET" if not tail else "POST",
        f"/api/admin/bulk-jobs/{w.bulk_job_id}{tail}",  # type: ignore[attr-defined]
        {"query": {"tenant_id": TENANT}},
    )


PURCHASE_ORDER = {"duplicate_key_fields": ["po_number"]}
BULK_JOB = {"tenant_id": TENANT, "action": "cancel", "filter": {"tab": "dead_letter"}}

#: (method, rule) → its sample requests. Keys must be exactly the app's routes (a test checks).
SAMPLES: dict[tuple[str, str], list[Sample]] = {
    # --- messages: the tenant comes from the stored message
    ("GET", "/api/admin/messages/<message_id>"): [
        Sample(lambda w: ("GET", f"/api/admin/messages/{w.message_id}", {}))
    ],
    # In flight (just received): an authorized reprocess is refused by admission, 409.
    ("POST", "/api/edi-hub/reprocess-message"): [
        Sample(
            lambda w: ("POST", "/api/edi-hub/reprocess-message", {"body": {"message_id": w.message_id}}),
            allowed=409,
        )
    ],
    ("POST", "/api/admin/messages/<message_id>/cancel-retry"): [
        Sample(lambda w: ("POST", f"/api/admin/messages/{w.message_id}/cancel-retry", {}), allowed=409)
    ],
    # Erasure (issue 29): the message goes, so only the least privileged allowed caller erases it.
    ("POST", "/api/admin/messages/<message_id>/erase"): [
        Sample(lambda w: ("POST", f"/api/admin/messages/{w.message_id}/erase", {}), repeatable=False)
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/erasures"): [
        Sample(_post(f"{TENANT_PATH}/erasures", {"external_id": "nobody-has-this-one"}))
    ],
    ("GET", "/api/admin/messages/<message_id>/callbacks"): [
        Sample(lambda w: ("GET", f"/api/admin/messages/{w.message_id}/callbacks", {}))
    ],
    ("GET", "/api/admin/integrations/<integration_id>"): [
        Sample(_get("/api/admin/integrations/int_erp", tenant_id=TENANT))
    ],
    ("GET", "/api/admin/queue"): [Sample(_get("/api/admin/queue", tenant_id=TENANT, tab="error"))],
    ("GET", "/api/admin/queue/counts"): [Sample(_get("/api/admin/queue/counts", tenant_id=TENANT))],
    ("GET", "/api/admin/messages"): [Sample(_get("/api/admin/messages", tenant_id=TENANT, q="PO-AUTHZ"))],
    ("POST", "/api/admin/dlq/<lane>/redrive"): [
        Sample(_post("/api/admin/dlq/pipeline/redrive"), target=None)
    ],
    ("GET", "/api/admin/health"): [Sample(_get("/api/admin/health", tenant_id=TENANT))],
    # --- bulk jobs (the tenant in the body or the query)
    ("POST", "/api/admin/bulk-jobs"): [Sample(_post("/api/admin/bulk-jobs", BULK_JOB), allowed=202)],
    ("GET", "/api/admin/bulk-jobs"): [Sample(_get("/api/admin/bulk-jobs", tenant_id=TENANT))],
    ("GET", "/api/admin/bulk-jobs/<job_id>"): [Sample(_bulk_job(), given=_given_bulk_job)],
    ("POST", "/api/admin/bulk-jobs/<job_id>/cancel"): [Sample(_bulk_job("/cancel"), given=_given_bulk_job)],
    # --- connections
    ("POST", "/api/admin/connections/<connection_id>/certificate"): [
        Sample(
            lambda w: ("POST", "/api/admin/connections/conn_a/certificate", {"body": _upload(w)}), allowed=201
        )
    ],
    ("GET", "/api/admin/connections/<connection_id>/certificate"): [
        Sample(_get("/api/admin/connections/conn_a/certificate", tenant_id=TENANT), given=_given_certificate),
        # None uploaded: an authorized read is the route's own 404.
        Sample(_get("/api/admin/connections/conn_none/certificate", tenant_id=TENANT), allowed=404),
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/connections"): [
        Sample(_post(f"{TENANT_PATH}/connections", {"url": CONNECTION_URL}), allowed=201)
    ],
    ("GET", "/api/admin/tenants/<tenant_id>/connections"): [Sample(_get(f"{TENANT_PATH}/connections"))],
    ("GET", "/api/admin/tenants/<tenant_id>/connections/<connection_id>"): [Sample(_get(CONNECTION_PATH))],
    ("PUT", "/api/admin/tenants/<tenant_id>/connections/<connection_id>"): [
        Sample(_call("PUT", CONNECTION_PATH, {"name": "renamed", "url": CONNECTION_URL}))
    ],
    ("DELETE", "/api/admin/tenants/<tenant_id>/connections/<connection_id>"): [
        Sample(_call("DELETE", CONNECTION_PATH), allowed=204, repeatable=False)
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/connections/<connection_id>/test"): [
        Sample(_post(f"{CONNECTION_PATH}/test"))
    ],
    ("GET", "/api/admin/tenants/<tenant_id>/connections/<connection_id>/callback-token"): [
        Sample(_get(f"{CONNECTION_PATH}/callback-token"), given=_given_callback_token)
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/connections/<connection_id>/callback-token"): [
        Sample(_post(f"{CONNECTION_PATH}/callback-token"), allowed=201)
    ],
    ("DELETE", "/api/admin/tenants/<tenant_id>/connections/<connection_id>/callback-token"): [
        Sample(
            _call("DELETE", f"{CONNECTION_PATH}/callback-token"),
            allowed=204,
            repeatable=False,
            given=_given_callback_token,
        )
    ],
    ("POST", "/api/admin/connections/<connection_id>/pause"): [
        Sample(_post(f"/api/admin/connections/{CONNECTION}/pause", tenant_id=TENANT))
    ],
    ("POST", "/api/admin/connections/<connection_id>/resume"): [
        Sample(_post(f"/api/admin/connections/{CONNECTION}/resume", tenant_id=TENANT))
    ],
    ("GET", "/api/admin/connections/<connection_id>/state"): [
        Sample(_get(f"/api/admin/connections/{CONNECTION}/state", tenant_id=TENANT))
    ],
    # --- tenants
    ("POST", "/api/admin/tenants"): [Sample(_post("/api/admin/tenants", {"name": "New"}), 201, target=None)],
    ("GET", "/api/admin/tenants"): [Sample(_get("/api/admin/tenants"), target=None)],
    ("GET", "/api/admin/tenants/<tenant_id>"): [Sample(_get(TENANT_PATH))],
    ("PATCH", "/api/admin/tenants/<tenant_id>"): [
        Sample(_call("PATCH", TENANT_PATH, {"name": "T1 renamed"}))
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/disable"): [
        Sample(_post(f"{TENANT_PATH}/disable"), repeatable=False, target=None)
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/enable"): [Sample(_post(f"{TENANT_PATH}/enable"), target=None)],
    # --- API keys
    ("POST", "/api/admin/tenants/<tenant_id>/api-keys"): [Sample(_post(f"{TENANT_PATH}/api-keys"), 201)],
    ("GET", "/api/admin/tenants/<tenant_id>/api-keys"): [Sample(_get(f"{TENANT_PATH}/api-keys"))],
    ("POST", "/api/admin/tenants/<tenant_id>/api-keys/<key_id>/revoke"): [
        Sample(lambda w: ("POST", f"{TENANT_PATH}/api-keys/{w.key_id}/revoke", {}))
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/api-keys/<key_id>/rotate"): [
        Sample(lambda w: ("POST", f"{TENANT_PATH}/api-keys/{w.key_id}/rotate", {}), 201, repeatable=False)
    ],
    # --- admin tokens: the tenant is the body's / query's (null: the platform), checked by the use case
    ("POST", "/api/admin/tokens"): [
        Sample(_post("/api/admin/tokens", {"label": "new", "role": "viewer", "tenant_id": TENANT}), 201),
        Sample(
            _post("/api/admin/tokens", {"label": "new", "role": "viewer", "tenant_id": None}),
            201,
            target=None,
        ),
    ],
    ("GET", "/api/admin/tokens"): [
        Sample(_get("/api/admin/tokens", tenant_id=TENANT)),
        Sample(_get("/api/admin/tokens"), target=None),
    ],
    ("POST", "/api/admin/tokens/<token_id>/revoke"): [
        Sample(lambda w: ("POST", f"/api/admin/tokens/{w.token_id}/revoke", {}))
    ],
    ("GET", "/api/admin/me"): [Sample(_get("/api/admin/me"))],
    ("GET", "/api/admin/openapi.json"): [Sample(_get("/api/admin/openapi.json"))],
    # --- audit
    ("GET", "/api/admin/tenants/<tenant_id>/audit"): [Sample(_get(f"{TENANT_PATH}/audit"))],
    ("GET", "/api/admin/audit"): [Sample(_get("/api/admin/audit"), target=None)],
    # --- integrations
    ("POST", "/api/admin/tenants/<tenant_id>/integrations"): [
        Sample(
            _post(
                INTEGRATION_PATH,
                {
                    "integration_id": "int_new",
                    "name": "New",
                    "message_types": {"purchase_order": PURCHASE_ORDER},
                },
            ),
            201,
            repeatable=False,
        )
    ],
    ("GET", "/api/admin/tenants/<tenant_id>/integrations"): [Sample(_get(INTEGRATION_PATH))],
    ("GET", "/api/admin/tenants/<tenant_id>/integrations/<integration_id>"): [
        Sample(_get(f"{INTEGRATION_PATH}/int_erp"))
    ],
    ("PUT", "/api/admin/tenants/<tenant_id>/integrations/<integration_id>"): [
        Sample(
            _call(
                "PUT",
                f"{INTEGRATION_PATH}/int_erp_2",
                {
                    "integration_id": "int_erp_2",
                    "name": "Renamed",
                    "message_types": {"purchase_order": PURCHASE_ORDER},
                },
            )
        )
    ],
    ("DELETE", "/api/admin/tenants/<tenant_id>/integrations/<integration_id>"): [
        Sample(_call("DELETE", f"{INTEGRATION_PATH}/int_erp_2"), 204, repeatable=False)
    ],
    (
        "POST",
        "/api/admin/tenants/<tenant_id>/integrations/<integration_id>/message-types/<message_type>/preview",
    ): [
        Sample(
            _post(
                f"{INTEGRATION_PATH}/int_erp/message-types/purchase_order/preview",
                {"payload": {"po_number": "PO-1"}},
            )
        )
    ],
    ("GET", "/api/admin/tenants/<tenant_id>/integration-cards"): [
        Sample(_get(f"{TENANT_PATH}/integration-cards"))
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/mapping-preview"): [
        Sample(
            _post(
                f"{TENANT_PATH}/mapping-preview", {"payload": {"po_number": "PO-1"}, "config": PURCHASE_ORDER}
            )
        )
    ],
    # --- webhook subscriptions
    ("POST", "/api/admin/tenants/<tenant_id>/subscriptions"): [
        Sample(
            _post(
                f"{TENANT_PATH}/subscriptions", {"url": "https://hooks.example.com/a", "event_types": ["*"]}
            ),
            201,
        )
    ],
    ("GET", "/api/admin/tenants/<tenant_id>/subscriptions"): [Sample(_get(f"{TENANT_PATH}/subscriptions"))],
    ("GET", "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>"): [
        Sample(lambda w: ("GET", _subscription()(w), {}))
    ],
    ("PUT", "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>"): [
        Sample(
            lambda w: (
                "PUT",
                _subscription()(w),
                {"body": {"url": "https://hooks.example.com/b", "event_types": ["*"]}},
            )
        )
    ],
    ("DELETE", "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>"): [
        Sample(lambda w: ("DELETE", _subscription()(w), {}), 204, repeatable=False)
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/rotate-secret"): [
        Sample(lambda w: ("POST", _subscription("/rotate-secret")(w), {}), 201, repeatable=False)
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/retire-secrets"): [
        Sample(
            lambda w: ("POST", _subscription("/retire-secrets")(w), {}),
            repeatable=False,
            given=_given_two_secrets,
        )
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/enable"): [
        Sample(lambda w: ("POST", _subscription("/enable")(w), {}), repeatable=False, given=_given_disabled)
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/disable"): [
        Sample(lambda w: ("POST", _subscription("/disable")(w), {}), repeatable=False)
    ],
    ("GET", "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/failed-deliveries"): [
        Sample(lambda w: ("GET", _subscription("/failed-deliveries")(w), {}))
    ],
    ("POST", "/api/admin/tenants/<tenant_id>/subscriptions/<subscription_id>/failed-deliveries/replay"): [
        Sample(
            lambda w: (
                "POST",
                _subscription("/failed-deliveries/replay")(w),
                {"body": {"since": "2020-01-01T00:00:00Z"}},
            ),
            202,
        )
    ],
}

#: The admin app's routes, from its own table, with what each declares.
APP = handler_module("AdminApiFunction").app
DECLARED: dict[tuple[str, str], Access | None] = {
    (route.method, route.path): declared(route.func) for route in registered_routes(APP)
}
CASES = [
    pytest.param(key, n, sample, id=f"{key[0]} {key[1]}" + (f" #{n}" if n else ""))
    for key in sorted(DECLARED)
    for n, sample in enumerate(SAMPLES.get(key, []))
]


def test_every_route_of_the_app_has_a_sample_here_and_nothing_else_does() -> None:
    assert sorted(DECLARED) == sorted(SAMPLES)
    assert all(access is not None for access in DECLARED.values())


def expected(access: Access, sample: Sample, caller: str) -> int:
    if access.scope is Scope.PUBLIC:
        return sample.allowed
    if caller in ("none", "unknown", "revoked"):
        return 401
    if access.scope is Scope.ANY_TOKEN:
        return sample.allowed
    assert access.role is not None
    scope, _, role_name = caller.rpartition("_")
    platform_target = access.scope is Scope.PLATFORM or sample.target is None
    if platform_target and scope != "platform":
        return 403  # a tenant token on the platform's resource, whatever its role (or tenant)
    if scope == "other_tenant":
        return 404  # exactly as a missing resource
    return sample.allowed if Role(role_name).covers(access.role) else 403


def callers_for(access: Access, sample: Sample) -> list[str]:
    """Refused callers first (they must change nothing), then the allowed ones: all of them for
    a repeatable call, else the least privileged."""
    refused = [c for c in CALLERS if expected(access, sample, c) != sample.allowed]
    allowed = [c for c in CALLERS if c not in refused]
    return refused + (allowed if sample.repeatable else allowed[:1])


@dataclass(frozen=True)
class Made:
    """What the world's set-up made (the same for every test: `built_once`)."""

    tokens: dict[str, str | None]
    message_id: str
    key_id: str
    token_id: str
    subscription_id: str


@pytest.fixture
def world(stack: Stack, tenancy: Tenancy, admin_api: Any, ingest_api: Any, pki: Pki) -> World:
    # About 15 requests through the handlers: made by the module's first test, then restored.
    made = built_once(__name__, lambda: _make(tenancy, admin_api, ingest_api))
    return World(api=admin_api, pfx=pki.client_pfx, **vars(made))


def _make(tenancy: Tenancy, admin_api: Any, ingest_api: Any) -> Made:
    tokens: dict[str, str | None] = {"none": None, "unknown": "hub_admin_nobody-has-this-token"}
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
    victim = admin_api(
        "POST", "/api/admin/tokens", body={"label": "victim", "role": "viewer", "tenant_id": TENANT}
    )
    key = admin_api("POST", f"{TENANT_PATH}/api-keys")
    connection = admin_api(
        "POST", f"{TENANT_PATH}/connections", body={"connection_id": CONNECTION, "url": CONNECTION_URL}
    )
    subscription = admin_api(
        "POST",
        f"{TENANT_PATH}/subscriptions",
        body={"url": "https://hooks.example.com/a", "event_types": ["*"]},
    )
    assert (victim.status, key.status, connection.status, subscription.status) == (201, 201, 201, 201)
    return Made(
        tokens=tokens,
        message_id=send(ingest_api, tenancy, {"po_number": "PO-AUTHZ"}),
        key_id=key.body["key_id"],
        token_id=victim.body["token_id"],
        subscription_id=subscription.body["subscription_id"],
    )


@pytest.mark.parametrize(("route", "n", "sample"), CASES)
def test_every_route_answers_each_caller_by_its_declared_role_and_scope(
    world: World, route: tuple[str, str], n: int, sample: Sample
) -> None:
    access = DECLARED[route]
    assert access is not None
    sample.given(world)
    seen = {}
    for caller in callers_for(access, sample):
        answer = world.call(caller, sample)
        seen[caller] = answer.status
        want = expected(access, sample, caller)
        if want != sample.allowed:
            error = answer.body["error"]
            assert error["code"] == {401: "unauthorized", 403: "forbidden", 404: "not_found"}[want], (
                caller,
                answer.body,
            )
            if want == 404:  # the declaration's `what`: the same words as for a missing one
                assert error["message"] == f"{access.what} not found", (caller, answer.body)
    assert seen == {caller: expected(access, sample, caller) for caller in seen}


def test_another_tenants_message_is_the_same_404_as_a_missing_one(world: World) -> None:
    [message_view] = SAMPLES[("GET", "/api/admin/messages/<message_id>")]
    other = world.call("other_tenant_admin", message_view)
    missing = world.api("GET", "/api/admin/messages/msg_00000000000000000000000000")

    assert other.status == missing.status == 404
    assert other.body["error"]["code"] == missing.body["error"]["code"] == "not_found"
    assert other.body["error"]["message"] == missing.body["error"]["message"]


def test_a_tenant_token_stops_working_when_its_tenant_is_disabled(world: World) -> None:
    [read] = SAMPLES[("GET", "/api/admin/tenants/<tenant_id>")]
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
