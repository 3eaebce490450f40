"""Connections through the real AdminApiFunction handler on moto (stack from template.yaml):
create, list with a cursor, read with its ETag, PUT with If-Match, DELETE (refused while an
integration uses it), sefaz and the uploaded certificate, the auth matrix, the audit log; the
connection test against real local servers; and the real worker delivering a message of an
integration that names its connection by `connection_id`."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from hub.adapters.dynamo import keys
from hub.adapters.dynamo.connections import destination_of
from hub.adapters.dynamo.table import Table
from hub.admin.access import Role
from hub.domain.tenancy import Integration, IntegrationMode, MessageTypeConfig
from tests.aws import LambdaContext, load_handler
from tests.destinations import Answer, HttpDestination
from tests.events import admin_event
from tests.integration.conftest import ADMIN_TOKEN, opening_sealer
from tests.pipeline import send, status
from tests.pki import PFX_PASSWORD, Pki

WSDL = "nfelib:nfe/wsdl/v4_0/nfestatusservico4.wsdl"


def path(tenant_id: str = "t1", connection_id: str | None = None, *rest: str) -> str:
    base = f"/api/admin/tenants/{tenant_id}/connections"
    return "/".join([base, *([connection_id] if connection_id else []), *rest])


@dataclass(frozen=True)
class Answered:
    status: int
    body: Any
    headers: dict[str, str]

    @property
    def code(self) -> str:
        return str(self.body["error"]["code"])


#: The auth matrix's callers: "tok-<role>-<t1|t2|platform>", each a real admin token created
#: over the API (with the bootstrap token) at its first use.
CALLERS = {
    f"tok-{role.value}-{scope or 'platform'}": (role, scope) for role in Role for scope in ("t1", "t2", None)
}


@pytest.fixture
def api(stack) -> Any:
    handler = load_handler("AdminApiFunction")
    minted: dict[str, str] = {}

    def real_token(caller: str) -> str:
        if caller not in minted:
            role, scope = CALLERS[caller]
            body = {"label": caller, "role": role.value, "tenant_id": scope}
            event = admin_event("POST", "/api/admin/tokens", token=ADMIN_TOKEN, body=body)
            created = json.loads(handler(event, LambdaContext())["body"])
            minted[caller] = created["token"]
        return minted[caller]

    def call(method: str, route: str, *, token: str | None = ADMIN_TOKEN, **options: Any) -> Answered:
        if token in CALLERS:
            token = real_token(token)
        answer = handler(admin_event(method, route, token=token, **options), LambdaContext())
        body = json.loads(answer["body"]) if answer.get("body") else None
        return Answered(answer["statusCode"], body, answer.get("headers", {}))

    return call


@pytest.fixture
def tenants(stack, tenancy) -> None:
    """t1 and t2 exist (the tenancy fixture writes them, with integrations and keys)."""


def rest(url: str = "https://erp.example.com/orders", **fields: Any) -> dict[str, Any]:
    return {"url": url, **fields}


def put_integration_item(
    stack, integration_id: str, tenant_id: str, connection_id: str, **config: Any
) -> None:
    """An integration naming a connection, as the integrations admin writes it (GSI1, top-level
    connection_id, the reference in config_json too)."""
    integration = Integration(
        integration_id=integration_id,
        tenant_id=tenant_id,
        name=integration_id,
        mode=IntegrationMode.ORCHESTRATION,
        connection_id=connection_id,
        message_types={"purchase_order": MessageTypeConfig(duplicate_key_fields=("po_number",))},
        **config,
    )
    Table(stack.table).put(
        {
            **keys.integration_key(tenant_id, integration_id),
            "GSI1PK": keys.tenant_integrations_partition(tenant_id),
            "GSI1SK": integration_id,
            "item_type": "integration",
            "tenant_id": tenant_id,
            "connection_id": connection_id,
            "version": 1,
            "config_json": integration.model_dump_json(),
        }
    )


def upload(api, pki: Pki, connection_id: str, tenant_id: str = "t1") -> None:
    body = {
        "tenant_id": tenant_id,
        "pkcs12_base64": base64.b64encode(pki.client_pfx).decode(),
        "password": PFX_PASSWORD.decode(),
    }
    answer = api("POST", f"/api/admin/connections/{connection_id}/certificate", body=body)
    assert answer.status == 201, answer.body


class TestCrud:
    def test_create_read_list_with_etags_and_masked_credentials(self, stack, tenants, api):
        created = api("POST", path(), body=rest(name="ERP", auth={"kind": "bearer", "token": "tok-SECRET"}))

        assert created.status == 201, created.body
        connection_id = created.body["connection_id"]
        assert connection_id.startswith("con_")
        assert (created.body["version"], created.headers["ETag"]) == (1, '"1"')
        assert created.body["auth"]["token"] == "***"
        read = api("GET", path("t1", connection_id))
        assert (read.status, read.body, read.headers["ETag"]) == (200, created.body, '"1"')
        listed = api("GET", path())
        assert [c["connection_id"] for c in listed.body["items"]] == [connection_id]
        assert "tok-SECRET" not in json.dumps([created.body, read.body, listed.body])

    def test_the_listing_pages_with_a_cursor(self, stack, tenants, api):
        for name in ("c", "a", "b"):
            assert api("POST", path(), body=rest(connection_id=name)).status == 201
        api("POST", path("t2"), body=rest(connection_id="z"))

        first = api("GET", path(), query={"limit": "2"})
        second = api("GET", path(), query={"limit": "2", "cursor": first.body["next_cursor"]})

        assert [c["connection_id"] for c in first.body["items"]] == ["a", "b"]
        assert [c["connection_id"] for c in second.body["items"]] == ["c"]
        assert second.body["next_cursor"] is None
        assert api("GET", path(), query={"cursor": "garbage"}).status == 400

    def test_a_taken_id_is_409_within_its_tenant_only_and_a_missing_tenant_404(self, stack, tenants, api):
        """Issue 27, point 7: connection ids are unique within a tenant. t2 creating t1's id is
        simply another connection (a 409 would tell t2 that the id exists elsewhere), and each
        tenant's update and delete touch its own only."""
        assert api("POST", path(), body=rest(connection_id="erp")).status == 201

        taken = api("POST", path("t1"), body=rest(connection_id="erp"))
        theirs = api("POST", path("t2"), body=rest("https://t2.example.com/in", connection_id="erp"))
        missing = api("POST", path("nobody"), body=rest())

        assert (taken.status, taken.code) == (409, "connection_exists")
        assert (theirs.status, theirs.body["tenant_id"], theirs.body["version"]) == (201, "t2", 1)
        assert (missing.status, missing.code) == (404, "not_found")
        assert api("GET", path("t1", "erp")).body["url"] == "https://erp.example.com/orders"
        assert api("GET", path("t2", "erp")).body["url"] == "https://t2.example.com/in"
        # Pausing each is its own change (its own state item and `connection.paused` event).
        for tenant in ("t1", "t2"):
            paused = api("POST", "/api/admin/connections/erp/pause", query={"tenant_id": tenant})
            assert (paused.status, paused.body["tenant_id"], paused.body["paused"]) == (200, tenant, True)

        changed = api("PUT", path("t2", "erp"), body=rest("https://t2.example.com/v2"))
        assert (changed.status, changed.body["version"]) == (200, 2)
        assert api("GET", path("t1", "erp")).body["version"] == 1
        assert api("DELETE", path("t2", "erp")).status == 204
        assert api("GET", path("t2", "erp")).status == 404
        assert api("GET", path("t1", "erp")).body["url"] == "https://erp.example.com/orders"

    def test_another_tenants_id_answers_exactly_as_a_missing_one_on_every_route(self, stack, tenants, api):
        """t2 addressing an id only t1 has gets the answer of a never-existing id: read, update,
        delete, the test tool, the callback token and pause / resume / state."""
        assert api("POST", path(), body=rest(connection_id="erp")).status == 201
        routes = [
            ("GET", (), {}),
            ("PUT", (), {"body": rest()}),
            ("DELETE", (), {}),
            ("POST", ("test",), {}),
            ("GET", ("callback-token",), {}),
            ("POST", ("callback-token",), {"body": {}}),
        ]
        for method, rest_of_path, options in routes:
            theirs = api(method, path("t2", "erp", *rest_of_path), **options)
            never = api(method, path("t2", "never", *rest_of_path), **options)
            assert (theirs.status, theirs.body) == (
                never.status,
                json.loads(json.dumps(never.body).replace("never", "erp")),
            ), (method, rest_of_path)
            assert theirs.status == 404
        for method, action in (("POST", "pause"), ("POST", "resume"), ("GET", "state")):
            theirs = api(method, f"/api/admin/connections/erp/{action}", query={"tenant_id": "t2"})
            never = api(method, f"/api/admin/connections/never/{action}", query={"tenant_id": "t2"})
            assert theirs.status == never.status == 404
            assert theirs.body == json.loads(json.dumps(never.body).replace("never", "erp"))
        assert (
            api("GET", "/api/admin/connections/erp/state", query={"tenant_id": "t1"}).body["paused"] is False
        )

    def test_put_with_if_match_and_the_same_content_changes_nothing(self, stack, tenants, api):
        api(
            "POST",
            path(),
            body=rest(connection_id="erp", auth={"kind": "basic", "username": "u", "password": "pw"}),
        )

        changed = api(
            "PUT",
            path("t1", "erp"),
            body=rest(url="https://erp.example.com/v2", auth={"kind": "basic", "username": "u"}),
            headers={"if-match": '"1"'},
        )
        same = api("PUT", path("t1", "erp"), body=_spec_of(changed.body))
        stale = api("PUT", path("t1", "erp"), body=rest(name="late"), headers={"if-match": '"1"'})

        assert (changed.status, changed.body["version"], changed.headers["ETag"]) == (200, 2, '"2"')
        assert (same.status, same.body["version"]) == (200, 2)
        assert (stale.status, stale.code, stale.body["error"]["details"]) == (
            412,
            "precondition_failed",
            {"current_version": 2},
        )
        item = Table(stack.table).get(keys.connection_key("t1", "erp"))
        # Kept, sealed: not in the configuration, opened as the worker opens it.
        assert "password" not in json.loads(item["config_json"])["auth"]
        assert set(item["sealed"]) == {"auth.password"}
        assert destination_of(item, opening_sealer(stack)).auth.password == "pw"

    def test_delete_is_refused_while_an_integration_uses_it(self, stack, tenants, api):
        api("POST", path(), body=rest(connection_id="erp"))
        put_integration_item(stack, "int_uses", "t1", "erp")

        in_use = api("DELETE", path("t1", "erp"))
        put_integration_item(stack, "int_uses", "t1", "other")
        stale = api("DELETE", path("t1", "erp"), headers={"if-match": '"7"'})
        deleted = api("DELETE", path("t1", "erp"), headers={"if-match": '"1"'})

        assert (in_use.status, in_use.code, in_use.body["error"]["details"]) == (
            409,
            "connection_in_use",
            {"integration_ids": ["int_uses"]},
        )
        assert (stale.status, deleted.status, deleted.body) == (412, 204, None)
        assert api("GET", path("t1", "erp")).status == 404

    def test_sefaz_needs_the_uploaded_certificate_and_forces_soap_12(self, stack, tenants, api, pki):
        sefaz = {
            "connection_id": "sefaz-sp",
            "platform": "sefaz",
            "url": "https://nfe.fazenda.sp.gov.br/ws/nfestatusservico4.asmx",
            "soap": {"wsdl": WSDL, "operation": "nfeStatusServicoNF"},
        }

        refused = api("POST", path(), body=sefaz)
        upload(api, pki, "sefaz-sp")
        created = api("POST", path(), body=sefaz)

        assert (refused.status, refused.code) == (422, "certificate_required")
        assert created.status == 201, created.body
        assert (created.body["protocol"], created.body["soap"]["soap_version"]) == ("soap", "1.2")
        assert created.body["use_client_certificate"] is True

    def test_a_bundle_that_is_no_ca_is_400_naming_the_field(self, stack, tenants, api, pki):
        answer = api("POST", path(), body=rest(trusted_ca_pem=pki.server.cert_pem.decode()))

        assert (answer.status, answer.code) == (400, "validation_error")
        assert [d["field"] for d in answer.body["error"]["details"]] == ["trusted_ca_pem"]

    def test_mutations_are_audited_with_credentials_redacted(self, stack, tenants, api):
        api("POST", path(), body=rest(connection_id="erp", auth={"kind": "bearer", "token": "tok-SECRET"}))
        api("PUT", path("t1", "erp"), body=rest(name="renamed", auth={"kind": "bearer"}))
        api("DELETE", path("t1", "erp"))

        audit = [i for i in stack.scan() if i["PK"]["S"] == keys.audit_partition("t1")]
        actions = sorted(i["action"]["S"] for i in audit)
        assert actions == ["connection.created", "connection.deleted", "connection.updated"]
        assert "tok-SECRET" not in json.dumps(audit)


def _spec_of(view: dict[str, Any]) -> dict[str, Any]:
    """A view sent back as a PUT body (masked secrets included: the mask keeps the stored one)."""
    dropped = {"connection_id", "tenant_id", "version", "created_at", "updated_at"}
    return {k: v for k, v in view.items() if k not in dropped}


class TestAuthMatrix:
    @pytest.fixture
    def existing(self, stack, tenants, api) -> None:
        assert api("POST", path(), body=rest(connection_id="erp", url="http://127.0.0.1:9/x")).status == 201

    @pytest.mark.parametrize(
        ("token", "read", "test", "write"),
        [
            ("tok-viewer-t1", 200, 403, 403),
            ("tok-operator-t1", 200, 200, 403),
            ("tok-admin-t1", 200, 200, 200),
            ("tok-viewer-platform", 200, 403, 403),
            ("tok-admin-platform", 200, 200, 200),
            ("tok-admin-t2", 404, 404, 404),
            ("tok-viewer-t2", 404, 404, 404),
        ],
    )
    def test_roles_and_scopes(self, existing, api, token, read, test, write):
        assert api("GET", path("t1", "erp"), token=token).status == read
        assert api("GET", path(), token=token).status == read
        assert api("POST", path("t1", "erp", "test"), token=token).status == test
        assert (
            api("PUT", path("t1", "erp"), token=token, body=rest(name="x", url="http://127.0.0.1:9/x")).status
            == write
        )
        assert api("POST", path(), token=token, body=rest()).status == (201 if write == 200 else write)
        if write == 200:
            assert api("DELETE", path("t1", "erp"), token=token).status == 204

    def test_no_token_is_401(self, existing, api):
        for method, route in (("GET", path()), ("GET", path("t1", "erp")), ("DELETE", path("t1", "erp"))):
            answer = api(method, route, token=None)
            assert (answer.status, answer.code) == (401, "unauthorized")


@pytest.fixture
def https_destination(pki: Pki, tmp_path) -> Iterator[HttpDestination]:
    with HttpDestination(tls=pki.server_context(tmp_path)) as server:
        yield server


class TestTheTestTool:
    def test_rest_with_the_connections_trust_and_auth_is_ok(
        self, stack, tenants, api, pki, https_destination
    ):
        api(
            "POST",
            path(),
            body=rest(
                connection_id="erp",
                url=https_destination.url,
                trusted_ca_pem=pki.ca.cert_pem.decode(),
                auth={"kind": "api_key", "header_name": "X-Key", "api_key": "k-1"},
            ),
        )
        assert api("GET", path("t1", "erp"), token="tok-operator-t1").status == 200  # its token exists
        before = stack.scan()

        answer = api("POST", path("t1", "erp", "test"), token="tok-operator-t1")

        assert answer.status == 200
        assert answer.body == {
            "ok": True,
            "error_class": None,
            "cause": None,
            "host": https_destination.url.split("/")[2],
            "dest_status": "200",
            "detail": answer.body["detail"],
        }
        [seen] = https_destination.requests
        assert (seen.method, seen.headers["x-key"]) == ("GET", "k-1")
        # No message and no write but the test's own audit entry (issue 27).
        added = [item for item in stack.scan() if item not in before]
        assert [item["action"]["S"] for item in added] == ["connection.tested"]
        assert all(item in stack.scan() for item in before)

    def test_rest_an_untrusted_server_is_tls_and_a_401_is_http_401(
        self, stack, tenants, api, pki, https_destination
    ):
        api("POST", path(), body=rest(connection_id="untrusted", url=https_destination.url))
        api(
            "POST",
            path(),
            body=rest(
                connection_id="denied", url=https_destination.url, trusted_ca_pem=pki.ca.cert_pem.decode()
            ),
        )
        https_destination.script(Answer(401, "{}"))

        untrusted = api("POST", path("t1", "untrusted", "test")).body
        denied = api("POST", path("t1", "denied", "test")).body

        assert (untrusted["ok"], untrusted["error_class"]) == (False, "tls")
        assert (denied["ok"], denied["error_class"], denied["dest_status"]) == (False, "http_401", "401")

    def test_soap_over_mtls_with_the_uploaded_certificate(self, stack, tenants, api, pki, mtls_server):
        upload(api, pki, "sefaz-sp")
        sefaz = {
            "connection_id": "sefaz-sp",
            "platform": "sefaz",
            "url": mtls_server.url,
            "soap": {"wsdl": WSDL, "operation": "nfeStatusServicoNF"},
            "trusted_ca_pem": pki.ca.cert_pem.decode(),
        }
        assert api("POST", path(), body=sefaz).status == 201

        answer = api("POST", path("t1", "sefaz-sp", "test"))

        assert answer.body["ok"] is True, answer.body
        [seen] = mtls_server.requests
        assert seen.path.endswith("?wsdl")
        assert seen.client_subject == pki.client.subject

    def test_a_refused_handshake_is_tls(self, stack, tenants, api, pki, mtls_server):
        # No client certificate: the server requires one.
        api(
            "POST",
            path(),
            body=rest(connection_id="nocert", url=mtls_server.url, trusted_ca_pem=pki.ca.cert_pem.decode()),
        )

        answer = api("POST", path("t1", "nocert", "test"))

        assert (answer.status, answer.body["ok"], answer.body["error_class"]) == (200, False, "tls")
        assert mtls_server.requests == []


class TestWorkerDeliversThroughTheConnection:
    def test_a_message_of_an_integration_naming_its_connection_is_sent_with_its_auth(
        self, stack, tenancy, api, ingest_api, worker, destination
    ):
        body = rest(connection_id="erp", url=destination.url, auth={"kind": "bearer", "token": "tok-erp"})
        assert api("POST", path(), body=body).status == 201
        put_integration_item(stack, tenancy.integration_id, "t1", "erp")

        message_id = send(ingest_api, tenancy, {"po_number": "PO-CONN"})
        worker()

        final = status(stack, message_id)
        assert (final["pipeline_status"], final["dest_status"]) == ("sent", "200")
        [seen] = destination.requests
        assert seen.headers["authorization"] == "Bearer tok-erp"
        assert json.loads(seen.body) == {"po_number": "PO-CONN"}

    def test_mtls_and_the_connections_trusted_roots_without_any_system_trust(
        self, stack, tenancy, api, ingest_api, worker, mtls_server, pki
    ):
        upload(api, pki, "erp-mtls")
        body = rest(
            connection_id="erp-mtls",
            url=mtls_server.url,
            use_client_certificate=True,
            trusted_ca_pem=pki.ca.cert_pem.decode(),
        )
        assert api("POST", path(), body=body).status == 201
        put_integration_item(stack, tenancy.integration_id, "t1", "erp-mtls")

        message_id = send(ingest_api, tenancy, {"po_number": "PO-MTLS"})
        worker()

        final = status(stack, message_id)
        assert (final["pipeline_status"], final["dest_status"]) == ("sent", "200")
        assert mtls_server.requests[0].client_subject == pki.client.subject

    def test_each_tenant_delivers_through_its_own_connection_of_the_same_id(
        self, stack, tenancy, api, ingest_api, worker, destination
    ):
        """t1 and t2 both have connection `erp` and integration `int_erp` (issue 27, point 7):
        each message goes out through its own tenant's connection, with its own credentials."""
        with HttpDestination() as theirs:
            mine = rest(connection_id="erp", url=destination.url, auth={"kind": "bearer", "token": "tok-t1"})
            other = rest(connection_id="erp", url=theirs.url, auth={"kind": "bearer", "token": "tok-t2"})
            assert api("POST", path("t1"), body=mine).status == 201
            assert api("POST", path("t2"), body=other).status == 201
            put_integration_item(stack, tenancy.integration_id, "t1", "erp")
            put_integration_item(stack, tenancy.integration_id, "t2", "erp")
            t2 = dataclasses.replace(tenancy, key=tenancy.other_key, tenant_id="t2")

            sent_by_t1 = send(ingest_api, tenancy, {"po_number": "PO-T1"})
            sent_by_t2 = send(ingest_api, t2, {"po_number": "PO-T2"})
            worker()

            assert status(stack, sent_by_t1)["pipeline_status"] == "sent"
            assert status(stack, sent_by_t2)["pipeline_status"] == "sent"
            [to_t1] = destination.requests
            [to_t2] = theirs.requests
            assert (to_t1.headers["authorization"], json.loads(to_t1.body)) == (
                "Bearer tok-t1",
                {"po_number": "PO-T1"},
            )
            assert (to_t2.headers["authorization"], json.loads(to_t2.body)) == (
                "Bearer tok-t2",
                {"po_number": "PO-T2"},
            )

    @pytest.mark.parametrize("owner", ["missing", "t2"])
    def test_a_missing_or_foreign_connection_is_error_naming_it(
        self, stack, tenancy, api, ingest_api, worker, owner
    ):
        if owner == "t2":
            assert api("POST", path("t2"), body=rest(connection_id="theirs")).status == 201
        put_integration_item(stack, tenancy.integration_id, "t1", "theirs")

        message_id = send(ingest_api, tenancy, {"po_number": "PO-LOST"})
        worker()

        final = status(stack, message_id)
        assert (final["pipeline_status"], final["last_retry_error_class"]) == ("error", "syntax")
        assert "connection theirs not found for this tenant" in final["dest_status_text"]
        log = boto3.client("dynamodb").get_item(
            TableName=stack.table, Key={"PK": {"S": f"MSG#{message_id}"}, "SK": {"S": "STATUS"}}
        )
        assert "connection_id" in json.dumps(log["Item"]["log"])
