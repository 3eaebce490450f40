"""The APIs' OpenAPI documents as a contract on every answer the tests see.

`tests.aws.load_handler` wraps the partner and admin handlers with `conforming`: each answer
any integration test gets through them must be documented (its route and method, its status,
its error code in that status's `code` enum) and its body must match the documented schema. So the
documents are checked against what the routes really answer, by every test that drives them,
and a route that starts answering something new fails the test that made it answer so, until the
route's `answers(...)` says it."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

from jsonschema import Draft202012Validator

from hub.api.openapi import error_codes
from hub.api.openapi_document import generate

#: The handlers whose answers are checked, and where unrouted requests go.
DOCUMENTED = frozenset({"IngestApiFunction", "AdminApiFunction"})
#: What a request no route takes answers (install_error_handlers); each document's description
#: must say so.
UNROUTED = {404: "route_not_found", 405: "method_not_allowed"}

_documents: dict[str, dict[str, Any]] = {}


def document_of(logical_id: str, module: ModuleType) -> dict[str, Any]:
    """The handler module's OpenAPI document (generated once per test process)."""
    if logical_id not in _documents:
        _documents[logical_id] = generate(module.app, module.OPENAPI)
    return _documents[logical_id]


def operation_for(module: ModuleType, method: str, path: str) -> str | None:
    """The OpenAPI path of the route that takes `method` `path`, None when no route does."""
    for route in [*module.app._static_routes, *module.app._dynamic_routes]:
        if route.method.upper() == method.upper() and route.rule.match(path):
            return str(route.openapi_path)
    return None


def check_answer(
    document: dict[str, Any], openapi_path: str | None, method: str, status: int, body_text: str | None
) -> None:
    """AssertionError unless the answer is one the document gives for this route."""
    body = json.loads(body_text) if body_text else None
    if openapi_path is None:
        code = (body or {}).get("error", {}).get("code")
        assert UNROUTED.get(status) == code, f"unrouted {method} answered {status} {code}"
        assert code in document["info"]["description"], f"{code} is not in the document's description"
        return
    operation = document["paths"][openapi_path][method.lower()]
    where = f"{method} {openapi_path} answered {status}"
    assert str(status) in operation["responses"], f"{where}, which its document does not list"
    response = operation["responses"][str(status)]
    if status >= 400:
        code = (body or {}).get("error", {}).get("code")
        assert code in error_codes(response), f"{where} `{code}`, not in its documented codes"
    content = response.get("content")
    if content is None:
        assert body is None, f"{where} with a body; its document says none"
        return
    schema = content["application/json"]["schema"]
    validator = Draft202012Validator({**schema, "components": document["components"]})
    problems = [error.message for error in validator.iter_errors(body)]
    assert problems == [], f"{where} with a body its documented schema refuses: {problems[:3]}"


def conforming(
    logical_id: str, module: ModuleType, handler: Callable[[dict[str, Any], Any], Any]
) -> Callable[[dict[str, Any], Any], Any]:
    """`handler`, checking each answer against its module's document (check_answer)."""

    def call(event: dict[str, Any], context: Any) -> Any:
        answer = handler(event, context)
        method = event["requestContext"]["http"]["method"]
        path = event["rawPath"]
        check_answer(
            document_of(logical_id, module),
            operation_for(module, method, path),
            method,
            answer["statusCode"],
            answer.get("body"),
        )
        return answer

    return call
