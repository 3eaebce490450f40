"""Issue 27, point 5: what a destination answers is not a channel back to the tenant. The
partner API never shows `dest_status_text`; admin views show a bounded, one-line, control-free
text for failures only; a 2xx answer's body is never stored."""

from __future__ import annotations

import json
import unicodedata

from hub.domain.retry import RetryPolicy
from tests.destinations import Answer
from tests.events import http_event
from tests.pipeline import configure, fire_all, send, status

#: What an internal server might answer: a secret-looking line, terminal escapes, a NUL, a bidi
#: override, and far more than 300 characters.
INTERNAL_ANSWER = (
    "AccessKeyId=ASIAINTERNAL\r\nSecretAccessKey=abc\x1b[31mred\x1b[0m\x00\u202eevil\u202c " + "x" * 2000
)


def partner_view(ingest_api, tenancy, message_id: str) -> dict:
    event = http_event(
        "get_message.json", headers={"x-api-key": tenancy.key}, path_parameters={"message_id": message_id}
    )
    answer = ingest_api(event)
    assert answer.status == 200, answer.body
    return answer.body


def test_a_2xx_answer_body_is_never_stored_nor_shown(
    stack, tenancy, ingest_api, worker, destination, admin_api
):
    configure(stack, tenancy, destination)
    destination.script(Answer(200, INTERNAL_ANSWER))
    message_id = send(ingest_api, tenancy, {"po_number": "PO-RC-1"})

    worker()

    stored = status(stack, message_id)
    assert stored["pipeline_status"] == "sent"
    assert "ASIAINTERNAL" not in json.dumps(stored)
    assert "dest_status_text" not in partner_view(ingest_api, tenancy, message_id)
    view = admin_api("GET", f"/api/admin/messages/{message_id}").body
    assert view["dest_status"] == "200"
    assert view["dest_status_text"] is None
    assert "ASIAINTERNAL" not in json.dumps(view)


def test_a_failure_shows_operators_a_bounded_control_free_line_and_partners_nothing(
    stack, tenancy, ingest_api, worker, destination, admin_api
):
    configure(stack, tenancy, destination)
    destination.script(Answer(400, INTERNAL_ANSWER))
    message_id = send(ingest_api, tenancy, {"po_number": "PO-RC-2"})

    worker()

    shown = partner_view(ingest_api, tenancy, message_id)
    assert shown["pipeline_status"] == "error"
    assert shown["dest_status"] == "400"
    assert "dest_status_text" not in shown
    assert "ASIAINTERNAL" not in json.dumps(shown)
    text = admin_api("GET", f"/api/admin/messages/{message_id}").body["dest_status_text"]
    assert text.startswith("AccessKeyId=ASIAINTERNAL SecretAccessKey=abc")
    assert len(text) <= 300
    assert [c for c in text if unicodedata.category(c) in {"Cc", "Cf"}] == []
    assert "\u202e" not in status(stack, message_id)["dest_status_text"]


def test_a_retry_that_succeeds_clears_the_earlier_failure_text(
    stack, tenancy, ingest_api, worker, destination, admin_api
):
    configure(stack, tenancy, destination, retry_policy=RetryPolicy(retry_auto_enabled=True, retry_max=2))
    destination.script(Answer(503, "maintenance until 10:00"), Answer(200, INTERNAL_ANSWER))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")
    worker()
    assert status(stack, message_id)["dest_status_text"] == "maintenance until 10:00"

    assert fire_all(stack) == 1
    worker()

    stored = status(stack, message_id)
    assert stored["pipeline_status"] == "sent"
    assert stored.get("dest_status_text") is None
    assert admin_api("GET", f"/api/admin/messages/{message_id}").body["dest_status_text"] is None
