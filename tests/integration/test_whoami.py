"""`GET /api/admin/me` (issue 13) through the real admin handler on moto, with real tokens minted
over the API by the bootstrap token: who the token is, and `can`, what its role may do. Then the
same tokens against one real route per action: the route refuses (403) exactly what `can` says
the page must not offer, so the mapping and the routes cannot drift apart."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from hub.admin.access import Action
from tests.aws import LambdaContext, load_handler
from tests.events import admin_event
from tests.integration.conftest import ADMIN_TOKEN, HttpAnswer, Tenancy
from tests.pipeline import send

ME = "/api/admin/me"
#: caller -> (role, tenant scope)
CALLERS: dict[str, tuple[str, str | None]] = {
    "tenant_viewer": ("viewer", "t1"),
    "tenant_operator": ("operator", "t1"),
    "tenant_admin": ("admin", "t1"),
    "platform_viewer": ("viewer", None),
    "platform_operator": ("operator", None),
    "platform_admin": ("admin", None),
}


@dataclass
class World:
    call: Callable[..., HttpAnswer]
    tokens: dict[str, str]
    token_ids: dict[str, str]
    message_id: str


@pytest.fixture
def world(stack, tenancy: Tenancy, ingest_api) -> World:
    handler = load_handler("AdminApiFunction")

    def call(method: str, path: str, *, token: str | None = ADMIN_TOKEN, **options: Any) -> HttpAnswer:
        answer = handler(admin_event(method, path, token=token, **options), LambdaContext())
        body = json.loads(answer["body"]) if answer.get("body") else {}
        return HttpAnswer(answer["statusCode"], body, answer.get("headers", {}))

    tokens: dict[str, str] = {}
    token_ids: dict[str, str] = {}
    for caller, (role, tenant_id) in CALLERS.items():
        created = call(
            "POST", "/api/admin/tokens", body={"label": caller, "role": role, "tenant_id": tenant_id}
        )
        assert created.status == 201, created.body
        tokens[caller], token_ids[caller] = created.body["token"], created.body["token_id"]
    connection = {"connection_id": "con_probe", "url": "https://erp.example/in"}
    assert call("POST", "/api/admin/tenants/t1/connections", body=connection).status == 201
    return World(call, tokens, token_ids, send(ingest_api, tenancy, {"po_number": "PO-ME"}))


@pytest.mark.parametrize("caller", list(CALLERS))
def test_me_names_the_token_its_scope_and_role(world: World, caller: str) -> None:
    role, tenant_id = CALLERS[caller]

    answer = world.call("GET", ME, token=world.tokens[caller])

    assert answer.status == 200, answer.body
    assert answer.body["token_id"] == world.token_ids[caller]
    assert answer.body["label"] == caller
    assert (answer.body["role"], answer.body["tenant_id"], answer.body["platform"]) == (
        role,
        tenant_id,
        tenant_id is None,
    )
    assert set(answer.body["can"]) == {a.value for a in Action}
    # Never the token itself.
    assert world.tokens[caller] not in json.dumps(answer.body)


def test_a_viewer_is_offered_no_action(world: World) -> None:
    can = world.call("GET", ME, token=world.tokens["tenant_viewer"]).body["can"]
    assert {action for action, allowed in can.items() if allowed} == {"view", "preview"}


def test_the_bootstrap_token_answers_as_a_platform_admin(world: World) -> None:
    answer = world.call("GET", ME)
    assert answer.status == 200
    assert answer.body["token_id"] == "bootstrap-admin"
    assert (answer.body["role"], answer.body["tenant_id"], answer.body["platform"]) == ("admin", None, True)
    assert all(answer.body["can"].values())


@pytest.mark.parametrize("presented", [None, "hub_adm_not-a-token", "nonsense"])
def test_without_a_valid_token_401_in_the_one_error_shape(world: World, presented: str | None) -> None:
    answer = world.call("GET", ME, token=presented)
    assert answer.status == 401
    assert answer.body["error"]["code"] == "unauthorized"
    assert set(answer.body) == {"error"}


def test_a_revoked_token_is_401_at_once(world: World) -> None:
    assert world.call("GET", ME, token=world.tokens["tenant_operator"]).status == 200
    revoked = world.call("POST", f"/api/admin/tokens/{world.token_ids['tenant_operator']}/revoke")
    assert revoked.status == 200
    assert world.call("GET", ME, token=world.tokens["tenant_operator"]).status == 401


def _probes(message_id: str) -> dict[Action, tuple[str, str, dict[str, Any]]]:
    """One real route per action, whose allowed answer is not 403 (404 for a missing resource
    where the role is checked first, 409 for a message in flight, 400 for a bad body)."""
    missing_key = "key_" + "0" * 26
    return {
        Action.VIEW: ("GET", "/api/admin/tenants/t1/integrations", {}),
        Action.PREVIEW: (
            "POST",
            "/api/admin/tenants/t1/mapping-preview",
            {"body": {"payload": {}, "config": {}}},
        ),
        Action.REPROCESS: ("POST", "/api/edi-hub/reprocess-message", {"body": {"message_id": message_id}}),
        Action.CANCEL: ("POST", f"/api/admin/messages/{message_id}/cancel-retry", {}),
        Action.PAUSE: ("POST", "/api/admin/connections/con_probe/pause", {"query": {"tenant_id": "t1"}}),
        Action.TEST_CONNECTION: ("POST", "/api/admin/tenants/t1/connections/con_missing/test", {}),
        Action.MANAGE_DELIVERIES: ("POST", "/api/admin/tenants/t1/subscriptions/sub_missing/enable", {}),
        Action.REDRIVE: ("POST", "/api/admin/dlq/pipeline/redrive", {}),
        Action.ERASE: ("POST", "/api/admin/tenants/t1/erasures", {"body": {"external_id": "nobody"}}),
        Action.CONFIGURE: ("POST", "/api/admin/tenants/t1/integrations", {"body": {}}),
        Action.MANAGE_CERTIFICATES: (
            "POST",
            "/api/admin/connections/con_probe/certificate",
            {"body": {"tenant_id": "t1", "pkcs12_base64": "AAAA", "password": "x"}},
        ),
        Action.MANAGE_KEYS: ("POST", f"/api/admin/tenants/t1/api-keys/{missing_key}/revoke", {}),
        Action.MANAGE_TOKENS: (
            "POST",
            "/api/admin/tokens",
            {"body": {"label": "probe", "role": "viewer", "tenant_id": "t1"}},
        ),
        Action.LIST_TENANTS: ("GET", "/api/admin/tenants", {}),
        Action.MANAGE_TENANTS: ("POST", "/api/admin/tenants/t1/enable", {}),
    }


def test_every_action_is_refused_by_its_route_exactly_when_me_says_it_may_not(world: World) -> None:
    probes = _probes(world.message_id)
    assert set(probes) == set(Action)
    mismatches = []
    for caller, raw in [*world.tokens.items(), ("bootstrap", ADMIN_TOKEN)]:
        can = world.call("GET", ME, token=raw).body["can"]
        for action, (method, path, options) in probes.items():
            answer = world.call(method, path, token=raw, **options)
            assert answer.status not in (401, 500), (caller, action, answer.body)
            if (answer.status == 403) == can[action.value]:
                mismatches.append((caller, action.value, can[action.value], answer.status))
    assert mismatches == []
