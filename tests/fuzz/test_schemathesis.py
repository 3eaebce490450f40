"""Schemathesis against both APIs' OpenAPI documents, on a local stack over HTTP (issue 15).

Each document is fetched from the running stack (`GET /api/openapi.json`, `GET
/api/admin/openapi.json`: what a client generator would read), and every operation in it is
fuzzed with valid credentials, with data that conforms to its schema (positive) and data that
does not (negative). Every answer must be: no 5xx, a documented status, a documented content
type and headers, a body that matches the documented schema (for an error: the one error shape,
its `code` in that status's enum), and a refusal of what the document says is invalid.

Known ids (the demo tenant's, a message the stack really holds) are offered to the generator
through Schemathesis dictionaries with a probability, so cases reach records that exist, not only
`404`s; the tally at the end checks that enough operations answered 2xx for the run to mean
something. Bounded for `make test`; `FUZZ_MAX_EXAMPLES=N` runs longer (bench/fuzz.py)."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.parameters import ParameterLocation
from schemathesis.errors import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from devstack.demo import (
    DEMO_ADMIN_TOKEN,
    DEMO_API_KEY,
    DEMO_CONNECTION_ID,
    DEMO_INTEGRATION_ID,
    DEMO_KEY_ID,
    DEMO_MESSAGE_TYPE,
    DEMO_TENANT_ID,
    DEMO_WEBHOOK_INTEGRATION_ID,
    demo_body,
    parameter_overrides,
    seed,
)
from devstack.stack import LocalStack
from tests.aws import local_stack_on_free_ports

pytestmark = pytest.mark.e2e

#: Examples per operation and generation mode. The default keeps this module near a minute on a
#: loaded 2-core CI machine (the partner API has 5 operations, the admin API 56);
#: FUZZ_MAX_EXAMPLES sets both for a longer run.
LONG_RUN = os.environ.get("FUZZ_MAX_EXAMPLES")
MAX_EXAMPLES = {
    "partner": int(LONG_RUN or 6),
    "admin": int(LONG_RUN or 3),
}
#: When set (bench/fuzz.py), the tally of each API is written there as JSON.
REPORT = os.environ.get("FUZZ_REPORT")
#: At least this share of each API's operations must answer 2xx to some case: a run where
#: (say) every request is refused for its credentials conforms to the document and proves
#: nothing.
MIN_SHARE_WITH_2XX = 0.5
RECEIVE, STATUS = "/api/edi-hub/receive-message", "/api/edi-hub/messages/{message_id}"


def one_error_shape(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every refusal is `{"error": {"code", "message"[, "details"]}}`, whatever its status."""
    if response.status_code < 400:
        return None
    body = json.loads(response.content)
    assert isinstance(body, dict), f"{response.status_code}: the error body is not an object"
    assert set(body) == {"error"}, f"{response.status_code}: keys {sorted(body)} beside `error`"
    error = body["error"]
    assert set(error) <= {"code", "message", "details"}, f"unexpected error keys {sorted(error)}"
    assert isinstance(error.get("code"), str), "no machine-readable `code`"
    assert isinstance(error.get("message"), str), "no `message`"
    return True


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    one_error_shape,
]


@pytest.fixture(scope="module")
def local_stack() -> Iterator[LocalStack]:
    # Both rate limits raised: a 429 conforms to the documents and proves nothing about the
    # route behind it. The per-tenant token bucket would refuse most of a run from one tenant;
    # the admin API's failed-token guard counts the negative cases' mangled tokens.
    overrides = {**parameter_overrides(), "TenantRatePerSecond": "100000", "TenantBurst": "1000000"}
    guard = {"AdminApiFunction": {"HUB_ADMIN_FAILED_TOKEN_LIMIT": "10000"}}
    with local_stack_on_free_ports(
        stack_name="hub-fuzz", parameter_overrides=overrides, env_overrides=guard
    ) as stack:
        seed(stack)
        yield stack


@pytest.fixture(scope="module")
def admin_url(local_stack: LocalStack) -> str:
    return str(local_stack.function_urls["AdminApiFunction"]).rstrip("/")


@pytest.fixture(scope="module")
def message_id(local_stack: LocalStack) -> str:
    """A message the stack holds, so the message routes of both APIs find one."""
    headers = {"Authorization": f"Bearer {DEMO_API_KEY}"}
    with httpx.Client(base_url=local_stack.api_url, headers=headers, timeout=30, trust_env=False) as api:
        answer = api.post("/api/edi-hub/receive-message", json=demo_body())
    assert answer.status_code == 202, answer.text
    return str(answer.json()["message_id"])


@pytest.fixture(scope="module")
def callback_token(admin_url: str) -> str:
    """The demo connection's status-callback token (the partner's callback route takes it)."""
    path = f"/api/admin/tenants/{DEMO_TENANT_ID}/connections/{DEMO_CONNECTION_ID}/callback-token"
    headers = {"Authorization": f"Bearer {DEMO_ADMIN_TOKEN}"}
    answer = httpx.post(f"{admin_url}{path}", headers=headers, json={}, timeout=30, trust_env=False)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["token"])


def config(message_id: str) -> schemathesis.Config:
    """Schemathesis' configuration: the stack's known ids offered (with a probability, so
    generated ones still come) for the parameters and body fields of those names."""
    known = {
        "tenant_id": DEMO_TENANT_ID,
        "integration_id": [DEMO_INTEGRATION_ID, DEMO_WEBHOOK_INTEGRATION_ID],
        "connection_id": DEMO_CONNECTION_ID,
        "message_id": message_id,
        "key_id": DEMO_KEY_ID,
        "message_type": DEMO_MESSAGE_TYPE,
    }
    dictionaries = {
        name: {"values": values if isinstance(values, list) else [values]} for name, values in known.items()
    }
    parameters: dict[str, Any] = {}
    for name in known:
        parameters[name] = {"dictionary": name, "probability": 0.8}
        parameters[f"body.{name}"] = {"dictionary": name, "probability": 0.8}
    return schemathesis.Config.from_dict(
        {
            "dictionaries": dictionaries,
            "parameters": parameters,
        }
    )


class Tally:
    """What one API's run did: answers per operation, mode and status, and what failed."""

    def __init__(self, api: str) -> None:
        self.api = api
        self.answers: Counter[tuple[str, str, int]] = Counter()
        self.failures: list[str] = []
        self.no_negative: list[str] = []
        #: The messages the partner API took (200 or 202 to receive-message).
        self.accepted: set[str] = set()

    def operations_with_2xx(self) -> set[str]:
        return {operation for operation, _, status in self.answers if 200 <= status < 300}

    def operations(self) -> set[str]:
        return {operation for operation, _, _ in self.answers}

    def answers_by_operation(self) -> dict[str, dict[str, int]]:
        table: dict[str, dict[str, int]] = {}
        for (operation, mode, status), n in sorted(self.answers.items()):
            table.setdefault(f"{operation} ({mode})", {})[str(status)] = n
        return table

    def summary(self) -> dict[str, Any]:
        by_status: Counter[int] = Counter()
        for (_, _, status), n in self.answers.items():
            by_status[status] += n
        return {
            "api": self.api,
            "cases": sum(self.answers.values()),
            "operations": len(self.operations()),
            "operations_with_2xx": len(self.operations_with_2xx()),
            "messages_accepted": len(self.accepted),
            "answers_2xx": sum(n for (_, _, s), n in self.answers.items() if 200 <= s < 300),
            "by_status": dict(sorted(by_status.items())),
            "answers": self.answers_by_operation(),
            "failures": self.failures,
            "no_negative_case": self.no_negative,
        }


def fuzz(
    schema: Any, tally: Tally, base_url: str, credentials: Callable[[str], dict[str, str]], examples: int
) -> None:
    """Every operation of `schema`, positive then negative, against `base_url`; check failures
    are collected in `tally` (one per operation and mode: Hypothesis stops at the first)."""
    hypothesis_settings = settings(
        max_examples=examples,
        derandomize=True,  # the same cases on every run: CI failures reproduce
        deadline=None,
        database=None,
        # Shrinking replays a failure against a live stack dozens of times: the long run only.
        phases=[Phase.explicit, Phase.reuse, Phase.generate, *([Phase.shrink] if LONG_RUN else [])],
        suppress_health_check=list(HealthCheck),
    )

    def check(mode: GenerationMode) -> Callable[[Any], None]:
        def sent(case: Any) -> None:
            headers = credentials(case.operation.path)
            if negated_headers(case):
                headers = {}  # the case's invalid headers, credentials too, are what it tests
            response = case.call(base_url=base_url, headers=headers, timeout=30)
            tally.answers[(case.operation.label, mode.value, response.status_code)] += 1
            if case.operation.path == RECEIVE and response.status_code in (200, 202):
                tally.accepted.add(response.json()["message_id"])
            case.validate_response(response, checks=CHECKS, headers=headers)

        return sent

    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            run = hypothesis_settings(given(case=operation.as_strategy(generation_mode=mode))(check(mode)))
            try:
                run()
            except Unsatisfiable:
                # Nothing in the operation can be made invalid (no parameters, no body).
                tally.no_negative.append(operation.label)
            except (Exception, FailureGroup) as failure:  # check failures, the transport's errors
                tally.failures.append(f"{operation.label} ({mode.value}): {failure}")


def negated_headers(case: Any) -> bool:
    """Whether this negative case made its headers invalid. Authorization is one of them (as
    Schemathesis models a bearer scheme), mangled or left out, and our valid credentials would
    replace the very value the case tests: such a case goes as generated."""
    meta = case.meta
    header = meta.components.get(ParameterLocation.HEADER) if meta is not None else None
    return header is not None and header.mode is GenerationMode.NEGATIVE


def report(tally: Tally) -> None:
    if REPORT:
        path = Path(REPORT)
        done = json.loads(path.read_text()) if path.exists() else {}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**done, tally.api: tally.summary()}, indent=2) + "\n")


def served(url: str, headers: dict[str, str], settings: schemathesis.Config) -> Any:
    """The document the stack serves at `url`, as a Schemathesis schema. Fetched here rather
    than with `from_url`, which leaves out the operation that serves the document itself."""
    answer = httpx.get(url, headers=headers, timeout=60, trust_env=False)
    assert answer.status_code == 200, answer.text
    return schemathesis.openapi.from_dict(answer.json(), config=settings)


def assert_meaningful(tally: Tally, schema: Any) -> None:
    summary = tally.summary()
    assert tally.failures == [], "\n\n".join(tally.failures)
    documented = {result.ok().label for result in schema.get_all_operations()}
    assert tally.operations() == documented, "every documented operation gets cases"
    assert 429 not in summary["by_status"], "the stack's rate limits were meant to be out of reach"
    reached = len(tally.operations_with_2xx()) / len(tally.operations())
    assert reached >= MIN_SHARE_WITH_2XX, f"too few operations answered 2xx: {summary}"


def test_partner_api_answers_as_its_document_says(
    local_stack: LocalStack, message_id: str, callback_token: str
) -> None:
    schema = served(f"{local_stack.api_url.rstrip('/')}/api/openapi.json", {}, config(message_id))

    def credentials(path: str) -> dict[str, str]:
        secret = callback_token if path.startswith("/api/edi-hub/status-callback/") else DEMO_API_KEY
        return {"Authorization": f"Bearer {secret}"}

    tally = Tally("partner")
    base_url = local_stack.api_url.rstrip("/")
    fuzz(schema, tally, base_url, credentials, MAX_EXAMPLES["partner"])
    report(tally)
    assert_meaningful(tally, schema)
    # Every message the fuzzing got accepted is stored readable: its status answers 200 as
    # documented (a value stored in a form the hub cannot read back answers 500 here).
    assert tally.accepted
    for accepted in sorted(tally.accepted):
        case = schema[STATUS]["GET"].Case(path_parameters={"message_id": accepted})
        response = case.call(base_url=base_url, headers=credentials(STATUS), timeout=30)
        case.validate_response(response, checks=CHECKS)
        assert response.status_code == 200, response.text


# After the partner API's test (same module, file order): admin cases revoke the demo key,
# disable the demo tenant, pause its connection... (docs/decisions/fuzzing.md).
def test_admin_api_answers_as_its_document_says(
    local_stack: LocalStack, admin_url: str, message_id: str
) -> None:
    token = {"Authorization": f"Bearer {DEMO_ADMIN_TOKEN}"}
    schema = served(f"{admin_url}/api/admin/openapi.json", token, config(message_id))
    tally = Tally("admin")
    fuzz(schema, tally, admin_url, lambda _path: token, MAX_EXAMPLES["admin"])
    report(tally)
    assert_meaningful(tally, schema)
    # Whatever the fuzzing stored reads back: every listing (and the views that need no id but
    # the tenant's) answers 200 as documented. An item written in a form its reader refuses
    # answers 500 here.
    listings = [
        operation
        for operation in (result.ok() for result in schema.get_all_operations())
        if operation.method.upper() == "GET" and set(re.findall(r"{(\w+)}", operation.path)) <= {"tenant_id"}
    ]
    assert len(listings) >= 10
    for operation in listings:
        tenant = {"tenant_id": DEMO_TENANT_ID}
        case = operation.Case(
            path_parameters=tenant if "{tenant_id}" in operation.path else {},
            query=listing_query(operation.path, tenant),
        )
        response = case.call(base_url=admin_url, headers=token, timeout=30)
        case.validate_response(response, checks=CHECKS)
        assert response.status_code == 200, f"{operation.label}: {response.text}"


def listing_query(path: str, tenant: dict[str, str]) -> dict[str, Any] | None:
    """The query a listing needs to answer 200 (the tenant in the query where the path has none)."""
    if path.endswith("/queue"):  # the `all` tab: the messages the partner API's fuzzing stored too
        return {**tenant, "tab": "all", "limit": 100}
    if path.endswith("/messages"):  # a search: by a value the fuzzing may well have stored
        return {**tenant, "q": "PO-4711"}
    if path.endswith(("/queue/counts", "/bulk-jobs")):
        return tenant
    return None


@pytest.mark.parametrize(
    ("status", "body", "passes"),
    [
        (404, {"error": {"code": "not_found", "message": "no such thing"}}, True),
        (400, {"error": {"code": "validation_error", "message": "bad", "details": [{"field": "x"}]}}, True),
        (200, {"anything": 1}, None),
        (400, {"message": "bad"}, False),
        (400, {"error": {"code": "x", "message": "bad"}, "trace": "..."}, False),
        (500, {"error": {"message": "no code"}}, False),
        (503, ["not", "an", "object"], False),
    ],
)
def test_the_error_shape_check_can_fail(status: int, body: Any, passes: bool | None) -> None:
    response = SimpleNamespace(status_code=status, content=json.dumps(body).encode())
    if passes is False:
        with pytest.raises(AssertionError):
            one_error_shape(None, response, None)
    else:
        assert one_error_shape(None, response, None) is passes
