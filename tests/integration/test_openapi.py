"""Both APIs publish an OpenAPI 3.1 document generated from their routes. Fetched here through
the real handlers on moto; checked as OpenAPI; every route the resolvers register is in it with
its method; every error code it lists is one the hub defines, at that code's status.

What each route really answers is checked by tests/openapi_contract.py on every answer any
integration test gets through the two handlers; the tests below drive every route with the
representative bad requests (no credentials, a malformed body, a request no route takes), so
each route's common failures are checked even where no other test sends them."""

from __future__ import annotations

import copy
import importlib
import json
import pkgutil
import sys
from functools import cache
from typing import Any

import pytest
from openapi_spec_validator import validate

import hub
from hub.api.openapi import error_codes
from hub.errors import HubError
from tests.aws import LambdaContext, load_handler
from tests.events import admin_event, load_event
from tests.integration.conftest import ADMIN_TOKEN
from tests.openapi_contract import UNROUTED, check_answer

PARTNER, ADMIN = "IngestApiFunction", "AdminApiFunction"
#: A connection as the admin API takes it.
CONNECTION = {"connection_id": "c1", "name": "ERP", "url": "https://erp.example.com/orders"}
#: A value each path parameter's pattern takes.
SAMPLE_PARAMETERS = {
    "tenant_id": "t1",
    "connection_id": "c1",
    "integration_id": "i1",
    "message_type": "po",
    "message_id": "msg_" + "0" * 26,
    "key_id": "key_" + "0" * 26,
    "token_id": "tok_" + "0" * 26,
    "lane": "pipeline",
    "subscription_id": "sub1",
    "job_id": "bulk_" + "0" * 26,
}


def partner_event(method: str, path: str, *, headers: dict[str, str] | None = None, body: str | None = None):
    """An HTTP API v2.0 event as the `$default` stage passes it, with no API key."""
    event = load_event("get_message.json")
    event["routeKey"] = f"{method} {path}"
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["pathParameters"] = None
    event["headers"] = {"host": event["headers"]["host"], **(headers or {})}
    event["body"], event["isBase64Encoded"] = body, False
    return event


def call(logical_id: str, event: dict[str, Any]) -> tuple[int, Any]:
    """The real handler's answer (checked against the document by load_handler's wrapper)."""
    answer = load_handler(logical_id)(event, LambdaContext())
    return answer["statusCode"], json.loads(answer["body"]) if answer.get("body") else None


def handler_module(logical_id: str):
    load_handler(logical_id)
    return sys.modules[f"_handler_{logical_id}"]


def routes(logical_id: str) -> list[tuple[str, str]]:
    """(method, OpenAPI path) of every route the handler's resolver registers."""
    app = handler_module(logical_id).app
    return sorted((r.method.upper(), r.openapi_path) for r in [*app._static_routes, *app._dynamic_routes])


def concrete(openapi_path: str) -> str:
    for name, value in SAMPLE_PARAMETERS.items():
        openapi_path = openapi_path.replace("{" + name + "}", value)
    assert "{" not in openapi_path, f"no sample value for a parameter of {openapi_path}"
    return openapi_path


@pytest.fixture
def documents(stack) -> dict[str, dict[str, Any]]:
    """Both documents, fetched through the real handlers (the admin one with a token), by the
    module's first test: rendering them is most of a test's time, and each test reads them."""
    return copy.deepcopy(_fetched())


@cache  # a GET changes nothing in moto: the documents alone are kept
def _fetched() -> dict[str, dict[str, Any]]:
    status, partner = call(PARTNER, partner_event("GET", "/api/openapi.json"))
    assert status == 200
    status, admin = call(ADMIN, admin_event("GET", "/api/admin/openapi.json", token=ADMIN_TOKEN))
    assert status == 200
    return {PARTNER: partner, ADMIN: admin}


class TestServed:
    def test_the_partner_document_needs_no_key_and_the_admin_one_a_token(self, stack):
        assert call(PARTNER, partner_event("GET", "/api/openapi.json"))[0] == 200
        status, body = call(ADMIN, admin_event("GET", "/api/admin/openapi.json", token=None))
        assert (status, body["error"]["code"]) == (401, "unauthorized")

    def test_a_tenant_viewer_token_reads_the_admin_document(self, stack, admin_api):
        assert admin_api("POST", "/api/admin/tenants", body={"tenant_id": "t1", "name": "T1"}).status == 201
        created = admin_api(
            "POST", "/api/admin/tokens", body={"label": "reader", "role": "viewer", "tenant_id": "t1"}
        )
        status, body = call(ADMIN, admin_event("GET", "/api/admin/openapi.json", token=created.body["token"]))
        assert status == 200
        assert body["info"]["title"] == "Integration Hub admin API"

    def test_both_documents_are_valid_openapi_3_1(self, documents):
        for document in documents.values():
            assert document["openapi"].startswith("3.1.")
            validate(document)  # raises on an invalid document

    def test_the_document_is_built_once_per_process(self, stack):
        module = handler_module(PARTNER)
        first = module.openapi_document().body
        assert module.openapi_document().body is first


class TestComplete:
    @pytest.mark.parametrize("logical_id", [PARTNER, ADMIN])
    def test_every_route_the_resolver_registers_is_documented_with_its_method(self, documents, logical_id):
        paths = documents[logical_id]["paths"]
        documented = sorted((method.upper(), path) for path, item in paths.items() for method in item)
        assert documented == routes(logical_id)

    @pytest.mark.parametrize("logical_id", [PARTNER, ADMIN])
    def test_every_documented_error_code_is_a_hub_error_at_its_status(self, documents, logical_id):
        defined = hub_error_codes()
        for path, item in documents[logical_id]["paths"].items():
            for method, operation in item.items():
                statuses = {int(s) for s in operation["responses"]}
                assert 500 in statuses, f"{method} {path}: internal_error is not documented"
                for status, response in operation["responses"].items():
                    if int(status) < 400:
                        continue
                    for code in error_codes(response):
                        assert (int(status), code) in defined, f"{method} {path}: {status} {code}"

    @pytest.mark.parametrize("logical_id", [PARTNER, ADMIN])
    def test_the_description_names_the_answers_of_requests_no_route_takes(self, documents, logical_id):
        for code in UNROUTED.values():
            assert code in documents[logical_id]["info"]["description"]

    @pytest.mark.parametrize("logical_id", [PARTNER, ADMIN])
    def test_an_optional_body_may_be_left_out_not_sent_as_null(self, documents, logical_id):
        """Found by fuzzing (issue 15): Powertools documents `Model | None` as `anyOf: [Model,
        null]`, so a client (or Schemathesis) sent `null`, which parse_body refuses with 400."""
        optional = []
        for path, item in documents[logical_id]["paths"].items():
            for method, operation in item.items():
                body = operation.get("requestBody")
                if body is None or body.get("required"):
                    continue
                optional.append(f"{method} {path}")
                assert body["required"] is False, f"{method} {path}"
                schema = body["content"]["application/json"]["schema"]
                assert {"type": "null"} not in schema.get("anyOf", []), f"{method} {path}"
        assert optional or logical_id == PARTNER  # the admin API has some (new key, rotation...)

    def test_a_body_left_out_is_taken_and_a_null_one_refused(self, stack, admin_api):
        assert admin_api("POST", "/api/admin/tenants", body={"tenant_id": "t1", "name": "T1"}).status == 201
        path = "/api/admin/tenants/t1/connections/c1/callback-token"
        assert admin_api("POST", "/api/admin/tenants/t1/connections", body=CONNECTION).status == 201
        event = admin_event("POST", path, token=ADMIN_TOKEN)
        event["body"] = "null"
        status, body = call(ADMIN, event)
        assert (status, body["error"]["code"]) == (400, "validation_error")
        assert call(ADMIN, admin_event("POST", path, token=ADMIN_TOKEN))[0] == 201

    def test_security_schemes(self, documents):
        partner, admin = documents[PARTNER], documents[ADMIN]
        assert set(partner["components"]["securitySchemes"]) == {
            "apiKeyBearer",
            "apiKeyHeader",
            "callbackToken",
        }
        receive = partner["paths"]["/api/edi-hub/receive-message"]["post"]
        assert receive["security"] == [{"apiKeyBearer": []}, {"apiKeyHeader": []}]
        # Destinations' status callbacks: their connection's callback token, not an API key.
        callback = partner["paths"]["/api/edi-hub/status-callback/{message_id}"]["post"]
        assert callback["security"] == [{"callbackToken": []}]
        assert (
            "security" not in partner["paths"]["/api/webhook/{tenant_id}/{integration_id}"]["post"]
        )  # signed
        assert "security" not in partner  # the document itself is public
        assert admin["security"] == [{"adminToken": []}]


def hub_error_codes() -> set[tuple[int, str]]:
    """(status, code) of every HubError class in the hub package."""
    for module in pkgutil.walk_packages(hub.__path__, "hub."):
        importlib.import_module(module.name)
    found: set[tuple[int, str]] = set()
    pending: list[type[HubError]] = [HubError]
    while pending:
        error = pending.pop()
        found.add((error.http_status, error.code))
        pending += error.__subclasses__()
    return found


class TestAnswersAreDocumented:
    """Each request goes through the real handler, whose wrapper checks the answer against the
    document (tests/openapi_contract.py); the asserts here check the request failed as meant.
    One stack per test, every route in a loop (a stack per route would cost minutes)."""

    def test_every_admin_route_without_a_token(self, stack):
        for method, path in routes(ADMIN):
            status, body = call(ADMIN, admin_event(method, concrete(path), token=None))
            assert (status, body["error"]["code"]) == (401, "unauthorized"), (method, path)

    def test_every_admin_route_with_a_malformed_body(self, stack):
        for method, path in routes(ADMIN):
            event = admin_event(method, concrete(path), token=ADMIN_TOKEN)
            event["body"] = '{"unfinished": '
            status, _ = call(ADMIN, event)
            assert status in {200, 400, 404}, (method, path)  # GET routes ignore a body

    @pytest.mark.parametrize(
        "problem",
        [
            {},
            {"headers": {"x-api-key": "hub_not_a_key", "content-type": "application/json"}, "body": "{"},
            {"headers": {"authorization": "Bearer hub_not_a_key", "content-type": "text/plain"}, "body": "x"},
            {"headers": {"content-type": "application/json"}, "body": "x" * 2_000_000},
        ],
        ids=["no-key", "malformed", "media-type", "too-large"],
    )
    def test_every_partner_route_with_a_bad_request(self, stack, problem):
        for method, path in routes(PARTNER):
            status, _ = call(PARTNER, partner_event(method, concrete(path), **copy.deepcopy(problem)))
            assert status != 500, (method, path)

    def test_requests_no_route_takes(self, stack):
        for logical_id, method, path, status in [
            (PARTNER, "GET", "/api/nowhere", 404),
            (PARTNER, "DELETE", "/api/edi-hub/receive-message", 405),
            (ADMIN, "GET", "/api/admin/nowhere", 404),
            (ADMIN, "DELETE", "/api/admin/tenants", 405),
        ]:
            if logical_id == PARTNER:
                event = partner_event(method, path)
            else:
                event = admin_event(method, path, token=ADMIN_TOKEN)
            answered, body = call(logical_id, event)
            assert (answered, body["error"]["code"]) == (status, UNROUTED[status])


class TestTheContractCanFail:
    """check_answer refuses what the document does not say."""

    def test_an_undocumented_status_code_or_body(self, documents):
        partner = documents[PARTNER]
        path = "/api/edi-hub/messages/{message_id}"
        error = json.dumps({"error": {"code": "not_found", "message": "no"}})
        check_answer(partner, path, "GET", 404, error)  # documented
        with pytest.raises(AssertionError, match="does not list"):
            check_answer(partner, path, "GET", 409, error)
        with pytest.raises(AssertionError, match="not in its documented codes"):
            check_answer(partner, path, "GET", 404, json.dumps({"error": {"code": "gone", "message": "x"}}))
        with pytest.raises(AssertionError, match="schema refuses"):
            check_answer(partner, path, "GET", 200, json.dumps({"message_id": 3}))
        with pytest.raises(AssertionError, match="unrouted"):
            check_answer(partner, None, "GET", 404, error)
