"""Property-based (Hypothesis) tests of the partner API's body and header parsing (issue 10):
for any body and headers, receive-message answers 2xx or one of the 4xx docs/api-guide.md documents,
in the one error shape; never a 5xx, never an uncaught exception. The same for the webhook
route with correctly signed bodies. Through the real IngestApiFunction handler, storage and
queue (moto, resources from template.yaml), one stack for all examples of a test.

Sized for `make test`: a fixed number of examples, derandomized (the same examples on every run
and machine), no example database, no deadline (a shared CI machine is slow at times).

Header values never hold lone surrogates: HTTP carries bytes, and API Gateway hands Lambda
decoded text; surrogates reach the hub only as JSON escapes in the body, which is generated.
"""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub import wiring
from hub.webhooks.signatures import sign_standard_webhooks
from tests.events import http_event
from tests.integration.test_inbound_webhook import HOOKS, SECRET, webhooks  # noqa: F401 (a fixture)

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "api-guide.md"

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def documented_4xx(route: str) -> frozenset[tuple[int, str]]:
    """Every `4xx code` the API guide's section on `route` lists in its answer table; a cell like
    "`422 missing_field` / `unknown_event_type`" gives both codes."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(f"\n### `{route}`")
    end = re.compile(r"\n##+ ").search(text, start + 1)
    section = text[start : end.start() if end else len(text)]
    found: set[tuple[int, str]] = set()
    for row in re.findall(r"^\| (`.*?) \|", section, flags=re.MULTILINE):
        for status, first, more in re.findall(r"`(4\d\d) ([a-z_]+)`((?:\s*/\s*`[a-z_]+`)*)", row):
            found |= {(int(status), code) for code in [first, *re.findall(r"`([a-z_]+)`", more)]}
    return frozenset(found)


RECEIVE_4XX = documented_4xx("POST /api/edi-hub/receive-message")
WEBHOOK_4XX = documented_4xx("POST /api/webhook/{tenant_id}/{integration_id}")


def test_the_api_guide_documents_each_routes_4xx():
    assert {(400, "malformed_json"), (401, "unauthorized"), (404, "not_found")} <= RECEIVE_4XX
    assert {(400, "malformed_json"), (401, "signature_invalid"), (422, "unknown_event_type")} <= WEBHOOK_4XX


def assert_documented_answer(answer: Any, documented: frozenset[tuple[int, str]]) -> None:
    """`answer` (an HttpAnswer) is 200/202 with a status, or a documented 4xx in the one shape."""
    status, body = answer.status, answer.body
    assert status < 500, body
    if status < 300:
        assert status in {200, 202}
        assert body["pipeline_status"] == "received"
        return
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) <= {"code", "message", "details"}
    assert isinstance(error["message"], str)
    assert (status, error["code"]) in documented, body


# --- strategies -------------------------------------------------------------------------------

#: Text as JSON strings can carry it, lone surrogates included (as escapes once dumped).
any_text = st.text(st.characters(codec=None), max_size=12) | st.text(
    st.sampled_from(["a", "é", "\u2028", "\x00", "\ud800", "\udfff", "\U0001f600"]), min_size=1, max_size=4
)
header_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(),  # NaN and ±Infinity included
    any_text,
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=10,
)


@st.composite
def deep(draw: st.DrawFn) -> Any:
    """A document nested 1-1,100 levels: around the limit, and beyond the parser's recursion."""
    depth = draw(st.one_of(st.integers(60, 70), st.integers(1, 1_100)))
    value: Any = draw(scalars)
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


#: Mostly JSON objects (what the payload model takes), some nested around and beyond the limit.
payloads = st.one_of(
    st.dictionaries(st.sampled_from(["po_number", "sku", "qty"]) | any_text, documents, max_size=4),
    deep().map(lambda value: {"deep": value}),
    documents,
)


def dumped(draw: st.DrawFn, document: Any) -> str:
    # ensure_ascii=True writes lone surrogates as "\ud800" escapes; False writes them raw.
    return json.dumps(document, ensure_ascii=draw(st.booleans()))


def mostly(draw: st.DrawFn, usual: Any, other: st.SearchStrategy[Any]) -> Any:
    """`usual` most of the time (Hypothesis favours small integers), else drawn from `other`."""
    return usual if draw(st.integers(0, 4)) < 4 else draw(other)


@st.composite
def receive_bodies(draw: st.DrawFn, integration_ids: list[str]) -> str | bytes:
    kind = draw(st.integers(0, 9))  # mostly a request; Hypothesis favours small integers
    if kind == 9:
        return draw(st.text(st.characters(codec=None), max_size=60))
    if kind == 8:
        return draw(st.binary(max_size=60))
    if kind == 7:
        return dumped(draw, draw(documents))
    body: dict[str, Any] = {
        "integration_id": mostly(draw, integration_ids[0], st.sampled_from(integration_ids) | any_text),
        "message_type": mostly(draw, "purchase_order", any_text),
        "payload": draw(payloads | any_text),
    }
    for name, values in (
        ("external_id", any_text | st.integers()),
        ("occurred_at", st.sampled_from(["2026-11-29T08:00:00-03:00", "2026-11-29T08:00:00"]) | any_text),
        ("tenant_id", any_text),
    ):
        if not draw(st.integers(0, 5)):
            body[name] = draw(values)
    return dumped(draw, body)


def with_body(event: dict[str, Any], body: str | bytes, as_base64: bool) -> dict[str, Any]:
    if isinstance(body, bytes) or as_base64:
        raw = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
        event["body"], event["isBase64Encoded"] = base64.b64encode(raw).decode(), True
    else:
        event["body"], event["isBase64Encoded"] = body, False
    return event


def extra_headers() -> st.SearchStrategy[dict[str, str]]:
    names = st.sampled_from(
        ["content-type", "x-correlation-id", "content-encoding", "accept", "x-forwarded-for"]
    ) | st.from_regex(r"x-[a-z0-9-]{1,12}", fullmatch=True)
    values = (
        st.sampled_from(["application/json", "text/plain", "application/json; charset=utf-8"]) | header_text
    )
    return st.dictionaries(names, values, max_size=4)


# --- receive-message --------------------------------------------------------------------------


@pytest.fixture
def unthrottled(stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hundreds of examples from one tenant within seconds: the tenant's rate limit (issue 14,
    tests/integration/test_rate_limits.py) would answer some of them 429 instead of what the
    example is about."""
    monkeypatch.setenv("HUB_TENANT_RATE_PER_SECOND", "100000")
    wiring.reset()


@pytest.mark.usefixtures("unthrottled")
def test_receive_message_answers_2xx_or_a_documented_4xx(tenancy, ingest_api):
    keys = [tenancy.key, tenancy.limited_key, tenancy.revoked_key, tenancy.other_key]
    ids = [tenancy.integration_id, tenancy.second_integration_id, tenancy.other_integration_id]

    @PROPERTY
    @given(
        body=receive_bodies(ids),
        as_base64=st.booleans(),
        auth=st.composite(
            lambda draw: mostly(
                draw,
                {"authorization": f"Bearer {tenancy.key}"},
                st.sampled_from(keys).map(lambda k: {"x-api-key": k})
                | header_text.map(lambda v: {"authorization": v})
                | st.just({}),
            )
        )(),
        idempotency_key=st.none() | st.from_regex(r"[A-Za-z0-9-]{1,20}", fullmatch=True) | header_text,
        headers=extra_headers(),
    )
    def check(body, as_base64, auth, idempotency_key, headers):
        event = http_event("receive_message.json", headers={"authorization": None, "idempotency-key": None})
        event["headers"].update({**headers, **auth})
        if idempotency_key is not None:
            event["headers"]["idempotency-key"] = idempotency_key
        assert_documented_answer(ingest_api(with_body(event, body, as_base64)), RECEIVE_4XX)

    check()


# --- the webhook route, correctly signed ------------------------------------------------------


@st.composite
def webhook_bodies(draw: st.DrawFn) -> bytes:
    kind = draw(st.integers(0, 9))
    if kind == 1:
        return draw(st.binary(max_size=60))
    if kind == 2:
        return dumped(draw, draw(documents)).encode("utf-8", "surrogatepass")
    event: dict[str, Any] = {
        "type": mostly(
            draw, "order.created", st.sampled_from(["order.cancelled", "order.shipped"]) | any_text
        ),
        "id": mostly(
            draw,
            draw(st.from_regex(r"evt_[a-z0-9]{1,8}", fullmatch=True)),
            st.integers() | any_text | st.none(),
        ),
        "created": mostly(draw, "2026-11-29T11:59:58-03:00", st.floats() | st.integers() | any_text),
        "data": mostly(draw, draw(st.dictionaries(any_text, documents, max_size=4)), payloads),
    }
    return dumped(draw, event).encode("utf-8", "surrogatepass")


@pytest.mark.usefixtures("webhooks", "unthrottled")
def test_a_signed_webhook_answers_2xx_or_a_documented_4xx(ingest_api):

    @PROPERTY
    @given(
        body=webhook_bodies(),
        as_base64=st.booleans(),
        msg_id=st.from_regex(r"msg_[A-Za-z0-9]{1,16}", fullmatch=True) | header_text.filter(bool),
        headers=extra_headers(),
    )
    def check(body, as_base64, msg_id, headers):
        timestamp = int(time.time())
        event = http_event(
            "webhook_standard.json", path_parameters={"tenant_id": "t1", "integration_id": HOOKS}
        )
        event["headers"].update(headers)
        event["headers"].update(
            {
                "webhook-id": msg_id,
                "webhook-timestamp": str(timestamp),
                "webhook-signature": sign_standard_webhooks(SECRET, msg_id, timestamp, body),
            }
        )
        # As the gateway passes it: text when it is UTF-8, else base64 (and base64 at times anyway).
        try:
            text: str | bytes = body.decode("utf-8")
        except UnicodeDecodeError:
            text = body
        assert_documented_answer(ingest_api(with_body(event, text, as_base64)), WEBHOOK_4XX)

    check()
