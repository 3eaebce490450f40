"""Issue 27, point 4 — credentials are bound to where they go, through the real
AdminApiFunction handler on moto (stack from template.yaml), with real HTTP servers on
127.0.0.1: the owner's endpoint and an attacker's. A PUT that moves a connection (url,
auth.token_url, soap endpoint or WSDL) to another scheme, host or port without its secret is
400 `secret_required`, and the connection test then still calls only the owner's server; with
the secret it is 200; a path change keeps the secret. Subscriptions likewise; the test tool is
audited. The use case's side of a move with its secret, or of a path change with the
certificate: tests/unit/test_connection_admin.py."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.destinations import Answer, HttpDestination
from tests.integration import test_connections as connections
from tests.integration.conftest import ADMIN_TOKEN
from tests.integration.test_connections import WSDL, path, upload
from tests.pki import PFX_PASSWORD, Pki

#: The connection tests' fixtures: the real admin handler (`api`) and the tenants t1, t2.
api = connections.api
tenants = connections.tenants


@pytest.fixture
def owner() -> Iterator[HttpDestination]:
    with HttpDestination() as server:
        yield server


@pytest.fixture
def attacker() -> Iterator[HttpDestination]:
    with HttpDestination() as server:
        yield server


def elsewhere(server: HttpDestination, route: str = "/steal") -> str:
    """The attacker's server under another host name (and port) than the owner's 127.0.0.1."""
    port = server.url.split(":")[2].split("/")[0]
    return f"http://localhost:{port}{route}"


def auth_of(kind: str, owner: HttpDestination) -> tuple[dict[str, Any], str, str]:
    """(the auth block, its secret's field path, the secret's value) of each auth kind."""
    return {
        "bearer": ({"kind": "bearer", "token": "tok-OWNER"}, "auth.token", "tok-OWNER"),
        "basic": ({"kind": "basic", "username": "u", "password": "pw-OWNER"}, "auth.password", "pw-OWNER"),
        "api_key": (
            {"kind": "api_key", "header_name": "X-Api-Key", "api_key": "key-OWNER"},
            "auth.api_key",
            "key-OWNER",
        ),
        "oauth2_client_credentials": (
            {
                "kind": "oauth2_client_credentials",
                "token_url": owner.url.replace("/orders", "/token"),
                "client_id": "cid",
                "client_secret": "cs-OWNER",
            },
            "auth.client_secret",
            "cs-OWNER",
        ),
    }[kind]


TOKEN_ANSWER = '{"access_token": "at-1", "token_type": "Bearer", "expires_in": 3600}'
KINDS = ["bearer", "basic", "api_key", "oauth2_client_credentials"]


def saw_secret(server: HttpDestination, secret: str) -> bool:
    """Whether any request the server received carried `secret` (headers or body, any encoding
    the auth kinds use)."""
    needles = {
        secret,
        base64.b64encode(f"u:{secret}".encode()).decode(),
        base64.b64encode(f"cid:{secret}".encode()).decode(),
    }
    for request in server.requests:
        text = json.dumps(request.headers) + request.body.decode("latin-1")
        if any(n in text for n in needles):
            return True
    return False


@pytest.mark.parametrize("kind", KINDS)
class TestEveryAuthKind:
    def test_a_new_host_without_the_secret_is_400_and_the_attacker_gets_nothing(
        self, stack, tenants, api, owner, attacker, kind
    ):
        auth, field, secret = auth_of(kind, owner)
        created = api("POST", path(), body={"connection_id": "erp", "url": owner.url, "auth": auth})
        assert created.status == 201, created.body
        masked_auth = created.body["auth"]

        moved = api("PUT", path("t1", "erp"), body={"url": elsewhere(attacker), "auth": masked_auth})

        assert (moved.status, moved.code) == (400, "secret_required"), moved.body
        assert [d["field"] for d in moved.body["error"]["details"]] == [field]
        assert moved.body["error"]["details"][0]["moved"] == ["url"]
        assert api("GET", path("t1", "erp")).body == created.body  # unchanged, same version
        api("POST", path("t1", "erp", "test"))
        assert attacker.requests == []
        assert owner.requests, "the test still calls the owner's endpoint"
        assert saw_secret(owner, secret)

    def test_a_path_change_without_the_secret_keeps_it(self, stack, tenants, api, owner, kind):
        auth, _, secret = auth_of(kind, owner)
        created = api("POST", path(), body={"connection_id": "erp", "url": owner.url, "auth": auth})

        changed = api(
            "PUT",
            path("t1", "erp"),
            body={"url": owner.url + "/v2?tenant=acme", "auth": created.body["auth"]},
        )

        assert changed.status == 200, changed.body
        assert changed.body["version"] == 2
        if kind == "oauth2_client_credentials":  # the token first, then the endpoint
            owner.script(Answer(body=TOKEN_ANSWER), Answer())
        api("POST", path("t1", "erp", "test"))
        assert any(r.path.startswith("/orders/v2?tenant=acme") for r in owner.requests)
        assert saw_secret(owner, secret)


def test_the_token_url_moving_needs_the_client_secret(stack, tenants, api, owner, attacker):
    auth, _, secret = auth_of("oauth2_client_credentials", owner)
    created = api("POST", path(), body={"connection_id": "erp", "url": owner.url, "auth": auth})
    stolen_at = {**created.body["auth"], "token_url": elsewhere(attacker, "/token")}

    moved = api("PUT", path("t1", "erp"), body={"url": owner.url, "auth": stolen_at})

    assert (moved.status, moved.code) == (400, "secret_required"), moved.body
    assert moved.body["error"]["details"] == [
        {
            "field": "auth.client_secret",
            "problem": "secret_required",
            "message": moved.body["error"]["details"][0]["message"],
            "moved": ["auth.token_url"],
        }
    ]
    api("POST", path("t1", "erp", "test"))
    assert attacker.requests == []
    assert saw_secret(owner, secret)
    path_only = {**created.body["auth"], "token_url": owner.url.replace("/orders", "/oauth2/token")}
    assert api("PUT", path("t1", "erp"), body={"url": owner.url, "auth": path_only}).status == 200
    with_secret = {**auth, "token_url": elsewhere(attacker, "/token")}
    assert api("PUT", path("t1", "erp"), body={"url": owner.url, "auth": with_secret}).status == 200


def inline(pki: Pki) -> dict[str, str]:
    return {"pkcs12_base64": base64.b64encode(pki.client_pfx).decode(), "password": PFX_PASSWORD.decode()}


class TestSoapWithTheClientCertificate:
    @pytest.fixture
    def sefaz(self, stack, tenants, api, pki, mtls_server) -> dict[str, Any]:
        upload(api, pki, "sefaz-sp")
        body = {
            "connection_id": "sefaz-sp",
            "platform": "sefaz",
            "url": mtls_server.url,
            "soap": {"wsdl": WSDL, "operation": "nfeStatusServicoNF"},
            "trusted_ca_pem": pki.ca.cert_pem.decode(),
        }
        created = api("POST", path(), body=body)
        assert created.status == 201, created.body
        return body

    def test_the_endpoint_moving_without_the_certificate_is_400(self, api, sefaz, attacker, mtls_server):
        moved = api("PUT", path("t1", "sefaz-sp"), body={**sefaz, "url": elsewhere(attacker, "/ws")})

        assert (moved.status, moved.code) == (400, "secret_required"), moved.body
        assert [d["field"] for d in moved.body["error"]["details"]] == ["client_certificate"]
        assert api("POST", path("t1", "sefaz-sp", "test")).body["ok"] is True
        assert attacker.requests == []
        assert len(mtls_server.requests) == 1

    def test_the_wsdl_moving_to_a_fetched_url_without_the_certificate_is_400(self, api, sefaz, attacker):
        soap = {**sefaz["soap"], "wsdl": elsewhere(attacker, "/svc?wsdl")}

        moved = api("PUT", path("t1", "sefaz-sp"), body={**sefaz, "soap": soap})

        assert (moved.status, moved.code) == (400, "secret_required"), moved.body
        assert moved.body["error"]["details"][0]["moved"] == ["soap.wsdl"]
        api("POST", path("t1", "sefaz-sp", "test"))
        assert attacker.requests == []

    def test_with_the_certificate_in_the_same_put_it_is_200(self, api, sefaz, attacker, pki):
        body = {**sefaz, "url": elsewhere(attacker, "/ws"), "client_certificate": inline(pki)}

        moved = api("PUT", path("t1", "sefaz-sp"), body=body)

        assert moved.status == 200, moved.body
        assert moved.body["url"] == elsewhere(attacker, "/ws")
        assert "client_certificate" not in moved.body
        assert PFX_PASSWORD.decode() not in json.dumps(moved.body)

    def test_a_connection_deleted_and_created_again_elsewhere_needs_the_certificate_again(
        self, api, sefaz, attacker, pki
    ):
        assert api("DELETE", path("t1", "sefaz-sp")).status == 204
        assert (
            api("GET", "/api/admin/connections/sefaz-sp/certificate", query={"tenant_id": "t1"}).status == 404
        )

        again = api("POST", path(), body={**sefaz, "url": elsewhere(attacker, "/ws")})

        assert (again.status, again.code) == (422, "certificate_required"), again.body
        api("POST", path("t1", "sefaz-sp", "test"))
        assert attacker.requests == []
        upload(api, pki, "sefaz-sp")
        assert api("POST", path(), body={**sefaz, "url": elsewhere(attacker, "/ws")}).status == 201


def subscriptions(*rest: str) -> str:
    return "/".join(["/api/admin/tenants/t1/subscriptions", *rest])


class TestSubscriptions:
    @pytest.fixture
    def hook(self, stack, tenants, api) -> dict[str, Any]:
        body = {"subscription_id": "hook", "url": "https://hooks.example.com/in", "event_types": ["*"]}
        created = api("POST", subscriptions(), body=body)
        assert created.status == 201, created.body
        return created.body

    def test_a_new_host_without_a_new_secret_is_400_and_changes_nothing(self, api, hook):
        body = {"url": "https://evil.example.com/in", "event_types": ["*"]}

        moved = api("PUT", subscriptions("hook"), body=body)

        assert (moved.status, moved.code) == (400, "secret_required"), moved.body
        assert [d["field"] for d in moved.body["error"]["details"]] == ["secret"]
        stored = api("GET", subscriptions("hook")).body
        assert (stored["url"], stored["version"]) == ("https://hooks.example.com/in", 1)

    def test_a_new_host_with_a_new_secret_replaces_every_secret(self, api, hook):
        new = "whsec_" + base64.b64encode(b"n" * 24).decode()
        body = {"url": "https://evil.example.com/in", "event_types": ["*"], "secret": new}

        moved = api("PUT", subscriptions("hook"), body=body)

        assert moved.status == 200, moved.body
        assert moved.body["secret"] == new
        assert [s["secret_id"] for s in moved.body["secrets"]] != [s["secret_id"] for s in hook["secrets"]]
        assert len(moved.body["secrets"]) == 1
        assert new not in json.dumps(api("GET", subscriptions("hook")).body)

    def test_a_new_host_with_rotate_secret_gets_a_generated_one_shown_once(self, api, hook):
        body = {"url": "https://evil.example.com/in", "event_types": ["*"], "rotate_secret": True}

        moved = api("PUT", subscriptions("hook"), body=body)

        assert moved.status == 200, moved.body
        assert moved.body["secret"].startswith("whsec_")
        assert len(moved.body["secrets"]) == 1

    def test_a_path_change_keeps_the_secret_and_a_secret_without_a_move_is_still_400(self, api, hook):
        changed = api(
            "PUT",
            subscriptions("hook"),
            body={"url": "https://hooks.example.com/v2?x=1", "event_types": ["*"]},
        )
        assert changed.status == 200, changed.body
        assert [s["secret_id"] for s in changed.body["secrets"]] == [s["secret_id"] for s in hook["secrets"]]
        assert "secret" not in changed.body
        again = {"url": "https://hooks.example.com/v2?x=1", "event_types": ["*"], "rotate_secret": True}
        assert api("PUT", subscriptions("hook"), body=again).code == "validation_error"


def test_the_connection_test_is_audited_with_who_where_and_the_outcome_only(
    stack, tenants, api, owner, attacker
):
    url = owner.url + "?sig=QUERY-SECRET"
    api(
        "POST",
        path(),
        body={"connection_id": "erp", "url": url, "auth": {"kind": "bearer", "token": "tok-OWNER"}},
    )
    api("POST", path(), body={"connection_id": "down", "url": elsewhere(attacker)})
    attacker.script(Answer(status=403, body="secret body"))

    ok = api("POST", path("t1", "erp", "test"), token="tok-operator-t1")
    refused = api("POST", path("t1", "down", "test"))

    assert (ok.status, ok.body["ok"], refused.body["error_class"]) == (200, True, "http_4xx")
    log = api("GET", "/api/admin/tenants/t1/audit").body["items"]
    tested = [e for e in log if e["action"] == "connection.tested"]
    assert [(e["target"], e["after"]) for e in tested] == [
        ({"connection_id": "down"}, {"host": "localhost", "outcome": "http_4xx", "dest_status": "403"}),
        ({"connection_id": "erp"}, {"host": "127.0.0.1", "outcome": "ok", "dest_status": "200"}),
    ]
    assert tested[1]["actor"]["label"] == "tok-operator-t1"
    assert tested[0]["actor"]["token_id"] != tested[1]["actor"]["token_id"]
    text = json.dumps(tested)
    assert "QUERY-SECRET" not in text
    assert "tok-OWNER" not in text
    assert "secret body" not in text
    assert ADMIN_TOKEN not in text
