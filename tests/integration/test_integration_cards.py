"""Integration cards (issue 13) through the real admin handler on moto: every fact set up the
way the product sets it (connections and certificates over the API, pause over the API, the
breaker opened by its own adapter, a 410 flagged by the worker's adapter), read back as badges
with a bounded number of DynamoDB requests per page; and the create form's unsaved preview."""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest

from hub.adapters.aws import client
from hub.adapters.dynamo.connection_state import DynamoConnectionStates
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.domain.clock import utcnow
from hub.domain.tenancy import Destination, Integration, IntegrationMode
from tests.aws import LambdaContext, load_handler
from tests.events import admin_event
from tests.integration.conftest import ADMIN_TOKEN, HttpAnswer
from tests.pki import PFX_PASSWORD, Pki, issue, pkcs12_of

CARDS = "/api/admin/tenants/{tenant}/integration-cards"


@pytest.fixture
def admin(stack) -> Any:
    handler = load_handler("AdminApiFunction")

    def call(method: str, path: str, *, token: str | None = ADMIN_TOKEN, **options: Any) -> HttpAnswer:
        answer = handler(admin_event(method, path, token=token, **options), LambdaContext())
        body = json.loads(answer["body"]) if answer.get("body") else {}
        return HttpAnswer(answer["statusCode"], body, answer.get("headers", {}))

    return call


def token(admin: Any, role: str, tenant_id: str | None) -> str:
    created = admin("POST", "/api/admin/tokens", body={"label": role, "role": role, "tenant_id": tenant_id})
    assert created.status == 201, created.body
    return str(created.body["token"])


def connection(admin: Any, connection_id: str, pki: Pki | None = None, valid_days: int = 0) -> None:
    """A connection of t1; with `pki`, its client certificate (valid `valid_days`) is uploaded
    first, under the connection's id, as the page does."""
    spec: dict[str, Any] = {
        "connection_id": connection_id,
        "name": connection_id,
        "url": "https://erp.example/in",
    }
    if pki is not None:
        pfx = pkcs12_of(issue(pki.ca, f"client {connection_id}", valid_days=valid_days), pki.ca)
        upload = admin(
            "POST",
            f"/api/admin/connections/{connection_id}/certificate",
            body={
                "tenant_id": "t1",
                "pkcs12_base64": base64.b64encode(pfx).decode(),
                "password": PFX_PASSWORD.decode(),
            },
        )
        assert upload.status == 201, upload.body
        spec["use_client_certificate"] = True
    created = admin("POST", "/api/admin/tenants/t1/connections", body=spec)
    assert created.status == 201, created.body


def integration(
    admin: Any, integration_id: str, connection_id: str | None, mode: str = "orchestration"
) -> None:
    body: dict[str, Any] = {"integration_id": integration_id, "name": integration_id, "mode": mode}
    if connection_id is not None:
        body["connection_id"] = connection_id
    created = admin("POST", "/api/admin/tenants/t1/integrations", body=body)
    assert created.status == 201, created.body


@pytest.fixture
def world(stack, admin, pki: Pki) -> dict[str, str]:
    """Tenant t1 with one integration per badge, t2 with one of its own; viewer tokens of both."""
    for tenant_id in ("t1", "t2"):
        assert (
            admin("POST", "/api/admin/tenants", body={"tenant_id": tenant_id, "name": tenant_id}).status
            == 201
        )
    # Certificates expiring in 5 and 20 whole days (issued "now + N + 1 days", read a moment later).
    connection(admin, "con_soon", pki, valid_days=6)
    connection(admin, "con_later", pki, valid_days=21)
    for plain in ("con_paused", "con_open", "con_gone", "con_fine"):
        connection(admin, plain)
    integration(admin, "int_soon", "con_soon")
    integration(admin, "int_later", "con_later")
    integration(admin, "int_paused", "con_paused")
    integration(admin, "int_open", "con_open")
    integration(admin, "int_gone", "con_gone")
    integration(admin, "int_observed", "con_fine", mode="observability")
    integration(admin, "int_shares", "con_paused")  # two cards, one connection
    # Written before connections were items: the destination is embedded, no connection id.
    DynamoConfigRepository(stack.table).put_integration(
        Integration(
            integration_id="int_embedded",
            tenant_id="t1",
            name="legacy",
            mode=IntegrationMode.ORCHESTRATION,
            destination=Destination(url="https://legacy.example/in"),
        )
    )
    assert (
        admin(
            "POST", "/api/admin/tenants/t2/integrations", body={"integration_id": "int_t2", "name": "x"}
        ).status
        == 201
    )

    # Paused over the API (operator).
    assert admin("POST", "/api/admin/connections/con_paused/pause", query={"tenant_id": "t1"}).status == 200
    # The breaker opened by its own adapter, as the worker opens it.
    states = DynamoConnectionStates(stack.table)
    assert states.open(states.get("t1", "con_open"), utcnow(), 60) is not None
    # A 410 flagged by the worker's adapter.
    config = DynamoConfigRepository(stack.table)
    gone = config.get_integration("t1", "int_gone")
    assert gone is not None
    config.flag_connection_gone(gone, utcnow(), "410")
    return {"viewer": token(admin, "viewer", "t1"), "other": token(admin, "viewer", "t2")}


def cards_of(admin: Any, viewer: str, **query: str) -> HttpAnswer:
    return admin("GET", CARDS.format(tenant="t1"), token=viewer, query=query or None)


def by_id(answer: HttpAnswer) -> dict[str, dict[str, Any]]:
    return {card["integration_id"]: card for card in answer.body["items"]}


def texts(card: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(b["kind"], b["text"], b["level"]) for b in card["badges"]]


def test_each_card_carries_its_badges_in_words_and_the_facts_behind_them(admin, world) -> None:
    answer = cards_of(admin, world["viewer"])

    assert answer.status == 200, answer.body
    assert answer.body["next_cursor"] is None
    cards = by_id(answer)
    assert sorted(cards) == [
        "int_embedded",
        "int_gone",
        "int_later",
        "int_observed",
        "int_open",
        "int_paused",
        "int_shares",
        "int_soon",
    ]
    assert texts(cards["int_soon"]) == [("certificate", "Cert expires in 5 d", "critical")]
    assert cards["int_soon"]["certificate"]["days_left"] == 5
    assert cards["int_soon"]["certificate"]["level"] == "critical"
    assert texts(cards["int_later"]) == [("certificate", "Cert expires in 20 d", "warning")]
    assert cards["int_later"]["certificate"]["not_after"].endswith("Z")
    assert texts(cards["int_paused"]) == [("paused", "Paused", "warning")]
    assert texts(cards["int_shares"]) == [("paused", "Paused", "warning")]
    assert cards["int_paused"]["connection_state"]["paused"] is True
    assert texts(cards["int_open"]) == [("circuit_open", "Circuit open", "critical")]
    assert cards["int_open"]["connection_state"]["circuit"] == "open"
    assert cards["int_open"]["connection_state"]["probe_at"] is not None
    assert texts(cards["int_gone"]) == [("connection_gone", "Connection gone", "critical")]
    assert cards["int_gone"]["connection_gone_at"] is not None
    assert texts(cards["int_observed"]) == [("read_only", "READ-ONLY", "info")]
    assert cards["int_observed"]["connection_state"] == {
        "connection_id": "con_fine",
        "paused": False,
        "circuit": "closed",
        "probing": False,
        "probe_at": None,
    }
    # An embedded destination has no connection, hence no state nor certificate to show.
    embedded = cards["int_embedded"]
    assert (embedded["destination"], embedded["connection_state"], embedded["badges"]) == (
        "embedded",
        None,
        [],
    )
    assert (embedded["platform"], embedded["protocol"]) == ("generic", "http")
    assert cards["int_soon"]["connection_name"] == "con_soon"
    assert cards["int_soon"]["connection_found"] is True
    # No secret, no certificate material.
    assert "pfx" not in json.dumps(answer.body).lower()


@contextmanager
def counted() -> Iterator[Counter[str]]:
    """Every DynamoDB request the handler makes meanwhile, by operation (botocore's own hook)."""
    calls: Counter[str] = Counter()
    events = client("dynamodb").meta.events

    def count(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    events.register("before-call.dynamodb.*", count, unique_id="count-cards")
    try:
        yield calls
    finally:
        events.unregister("before-call.dynamodb.*", unique_id="count-cards")


def test_a_page_costs_the_same_requests_whatever_its_size(admin, world) -> None:
    cards_of(admin, world["viewer"])  # warm: the token's first use
    with counted() as small:
        # int_embedded and int_gone: one connection's facts to read
        assert len(cards_of(admin, world["viewer"], limit="2").body["items"]) == 2
    with counted() as full:
        assert len(cards_of(admin, world["viewer"]).body["items"]) == 8

    assert full == small
    assert full["Query"] == 1
    # The page's integrations, then its connections + certificates + states: one batch each.
    assert full["BatchGetItem"] == 2
    assert "Scan" not in full
    # Only the token and the tenant are single reads; never one per card.
    assert full["GetItem"] <= 3


def test_cursor_pages_cover_every_card_once(admin, world) -> None:
    seen: list[str] = []
    cursor: str | None = None
    while True:
        query = {"limit": "3", **({"cursor": cursor} if cursor else {})}
        page = cards_of(admin, world["viewer"], **query)
        assert page.status == 200
        seen += [card["integration_id"] for card in page.body["items"]]
        cursor = page.body["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(set(seen))
    assert len(seen) == 8


def test_another_tenants_cards_are_404_like_a_missing_tenant(admin, world) -> None:
    other = cards_of(admin, world["other"])
    missing = admin("GET", CARDS.format(tenant="t9"))

    assert (other.status, other.body["error"]["code"]) == (404, "not_found")
    assert (missing.status, missing.body["error"]["code"]) == (404, "not_found")
    # And t2's own cards do not show t1's integrations.
    own = admin("GET", CARDS.format(tenant="t2"), token=world["other"])
    assert [c["integration_id"] for c in own.body["items"]] == ["int_t2"]


def test_without_a_token_401(admin, world) -> None:
    answer = cards_of(admin, None)  # type: ignore[arg-type]
    assert (answer.status, answer.body["error"]["code"]) == (401, "unauthorized")


def test_a_cursor_of_another_listing_is_refused(admin, world) -> None:
    connections = admin("GET", "/api/admin/tenants/t1/connections", query={"limit": "1"})
    foreign = connections.body["next_cursor"]
    assert foreign is not None
    answer = cards_of(admin, world["viewer"], cursor=foreign)
    assert (answer.status, answer.body["error"]["code"]) == (400, "validation_error")


class TestUnsavedPreview:
    """The create form previews a mapping before the integration exists."""

    def test_maps_a_sample_with_nothing_written(self, stack, admin, world) -> None:
        before = stack.scan()
        answer = admin(
            "POST",
            "/api/admin/tenants/t1/mapping-preview",
            token=world["viewer"],
            body={
                "payload": {"po_number": "PO-1", "amount": "2.5"},
                "config": {
                    "duplicate_key_fields": ["po_number"],
                    "mapping": {"output": {"order": {"path": "po_number"}}},
                },
            },
        )
        assert answer.status == 200, answer.body
        assert answer.body["ok"] is True
        assert json.loads(answer.body["body"]) == {"order": "PO-1"}
        assert answer.body["duplicate_key"]["values"] == ["PO-1"]
        assert stack.scan() == before

    def test_needs_a_config_and_the_callers_tenant(self, admin, world) -> None:
        no_config = admin(
            "POST", "/api/admin/tenants/t1/mapping-preview", token=world["viewer"], body={"payload": {}}
        )
        other = admin(
            "POST",
            "/api/admin/tenants/t1/mapping-preview",
            token=world["other"],
            body={"payload": {}, "config": {}},
        )
        missing = admin("POST", "/api/admin/tenants/t9/mapping-preview", body={"payload": {}, "config": {}})
        assert (no_config.status, no_config.body["error"]["code"]) == (400, "validation_error")
        assert other.status == 404
        assert missing.status == 404


def test_cards_shown_after_a_connection_is_saved_again_lose_the_gone_badge(admin, world) -> None:
    """Saving the connection is how an operator says the 410 is dealt with (issue 11)."""
    current = admin("GET", "/api/admin/tenants/t1/connections/con_gone")
    changed = {"name": "moved", "url": "https://erp.example/new"}
    saved = admin(
        "PUT",
        "/api/admin/tenants/t1/connections/con_gone",
        body=changed,
        headers={"if-match": current.headers["ETag"]},
    )
    assert saved.status == 200, saved.body
    assert by_id(cards_of(admin, world["viewer"]))["int_gone"]["badges"] == []


def test_an_expired_stored_certificate_reads_as_expired(stack, admin, world) -> None:
    """A certificate past its not_after (uploaded while valid) is critical and says so."""
    from hub.adapters.dynamo import keys  # noqa: PLC0415
    from hub.adapters.dynamo.table import Table, Update  # noqa: PLC0415

    past = (utcnow() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    Table(stack.table).update(keys.certificate_key("t1", "con_later"), Update().set(not_after=past))
    card = by_id(cards_of(admin, world["viewer"]))["int_later"]
    assert texts(card) == [("certificate", "Cert expired", "critical")]
    assert card["certificate"]["days_left"] < 0


def test_a_batch_read_of_more_than_100_keys_with_repeats_takes_one_request_per_100(stack) -> None:
    """DynamoDB refuses a BatchGetItem of more than 100 keys, or with a key twice (a page whose
    integrations share a connection); the table helper splits and de-duplicates."""
    from hub.adapters.dynamo.table import Table  # noqa: PLC0415

    table = Table(stack.table)
    for n in range(150):
        table.put({"PK": f"X#{n}", "SK": "ITEM", "n": n})
    asked = [{"PK": f"X#{n}", "SK": "ITEM"} for n in range(150)] + [{"PK": "X#0", "SK": "ITEM"}]

    with counted() as calls:
        found = table.batch_get(asked)

    assert len(found) == 150
    assert found[("X#149", "ITEM")]["n"] == 149
    assert calls["BatchGetItem"] == 2


def test_the_pages_create_and_edit_flow_for_a_sefaz_integration(stack, admin, pki: Pki, mtls_server) -> None:
    """The calls the Integrations view makes, in its order, as an admin of t1: sign in; upload
    the A1 under the connection id the page chose (the SEFAZ connection cannot be saved
    without it); save the connection (platform sefaz: SOAP 1.2 + mTLS filled in); test it;
    preview the unsaved mapping; save the integration in observability mode; see its card;
    switch the mode with If-Match; preview the saved type."""
    assert admin("POST", "/api/admin/tenants", body={"tenant_id": "t1", "name": "T1"}).status == 201
    signed_in = token(admin, "admin", "t1")

    def page(method: str, path: str, **options: Any) -> HttpAnswer:
        return admin(method, path, token=signed_in, **options)

    me = page("GET", "/api/admin/me").body
    assert (me["tenant_id"], me["can"]["configure"], me["can"]["manage_certificates"]) == ("t1", True, True)

    connection_id = "con_sefaz_sp"  # chosen by the page (the form's own generated id)
    uploaded = page(
        "POST",
        f"/api/admin/connections/{connection_id}/certificate",
        body={
            "tenant_id": "t1",
            "pkcs12_base64": base64.b64encode(pki.client_pfx).decode(),
            "password": PFX_PASSWORD.decode(),
        },
    )
    assert uploaded.status == 201, uploaded.body
    saved = page(
        "POST",
        "/api/admin/tenants/t1/connections",
        body={
            "connection_id": connection_id,
            "name": "SEFAZ SP",
            "platform": "sefaz",
            "url": mtls_server.url,
            "soap": {
                "wsdl": "nfelib:nfe/wsdl/v4_0/nfestatusservico4.wsdl",
                "operation": "nfeStatusServicoNF",
            },
            "trusted_ca_pem": pki.ca.cert_pem.decode(),
        },
    )
    assert saved.status == 201, saved.body
    assert (saved.body["protocol"], saved.body["soap"]["soap_version"]) == ("soap", "1.2")
    assert saved.body["use_client_certificate"] is True

    tested = page("POST", f"/api/admin/tenants/t1/connections/{connection_id}/test")
    assert tested.body["ok"] is True, tested.body

    message_type = {"mapping": {"output": {"order": {"path": "po_number"}}}}
    preview = page(
        "POST",
        "/api/admin/tenants/t1/mapping-preview",
        body={"payload": {"po_number": "PO-7"}, "config": message_type},
    )
    assert json.loads(preview.body["body"]) == {"order": "PO-7"}

    created = page(
        "POST",
        "/api/admin/tenants/t1/integrations",
        body={
            "integration_id": "int_nfe",
            "name": "NF-e",
            "mode": "observability",
            "connection_id": connection_id,
            "message_types": {"nfe": message_type},
        },
    )
    assert created.status == 201, created.body
    [card] = page("GET", CARDS.format(tenant="t1")).body["items"]
    assert [b["kind"] for b in card["badges"]] == ["read_only", "certificate"]
    assert card["badges"][1]["level"] == "warning"  # the test PKI's client certificate: 30 days
    assert (card["platform"], card["protocol"]) == ("sefaz", "soap")

    # Edit: the form holds the view it read; it saves it whole with the version it read.
    view = page("GET", "/api/admin/tenants/t1/integrations/int_nfe")
    edited = page(
        "PUT",
        "/api/admin/tenants/t1/integrations/int_nfe",
        body={**view.body, "mode": "orchestration"},
        headers={"if-match": view.headers["ETag"]},
    )
    assert edited.status == 200, edited.body
    [card] = page("GET", CARDS.format(tenant="t1")).body["items"]
    assert [b["kind"] for b in card["badges"]] == ["certificate"]
    saved_preview = page(
        "POST",
        "/api/admin/tenants/t1/integrations/int_nfe/message-types/nfe/preview",
        body={"payload": {"po_number": "PO-8"}},
    )
    assert json.loads(saved_preview.body["body"]) == {"order": "PO-8"}
