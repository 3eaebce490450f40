"""A DynamoDB answer lost on the way back (found by the 10,000-message soak, issue 15).

The SDK resends a request whose answer did not arrive (a 5 s read timeout, standard retries):
when the first one had been applied, a conditional update's resend fails its own condition. The
pipeline's take and finishing update must read that as done, not as another run's: otherwise a
take waits out its own 5-minute lease, and a finishing update to `retry_pending` is reported as
"lease lost" and its retry's schedule is never created - the message waits forever.

The loss is made real on moto: botocore is told, once, that the applied request needs a retry
(its `needs-retry` event, where a read timeout would be caught), so it sends it again.
"""

from __future__ import annotations

import json
from typing import Any

from hub.domain.retry import RetryPolicy
from tests.destinations import Answer
from tests.pipeline import configure, schedules, send, status

AUTO = RetryPolicy(retry_auto_enabled=True, retry_max=2)


def _is_take(body: dict[str, Any]) -> bool:
    return "taken_from" in json.dumps(body.get("ExpressionAttributeNames", {}))


def _is_finish_to_retry_pending(body: dict[str, Any]) -> bool:
    values = json.dumps(body.get("ExpressionAttributeValues", {}))
    return (
        '"retry_pending"' in values
        and "lease_owner" in json.dumps(body.get("ExpressionAttributeNames", {}))
        and "REMOVE" in body.get("UpdateExpression", "")
    )


def test_a_finishing_update_resent_after_its_answer_was_lost_still_schedules_the_retry(
    stack, tenancy, ingest_api, worker, destination, resend_once
):
    configure(stack, tenancy, destination, retry_policy=AUTO)
    destination.script(Answer(503))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")
    resent = resend_once(_is_finish_to_retry_pending)

    worker()

    assert len(resent) == 1  # the finishing update was applied, then sent again
    pending = status(stack, message_id)
    assert (pending["pipeline_status"], pending["retry_count"]) == ("retry_pending", "1")
    assert "lease_owner" not in pending
    assert [s["Name"] for s in schedules(stack)] == [f"retry-{pending['execution_id']}-1"]
    assert len(destination.requests) == 1


def test_a_take_resent_after_its_answer_was_lost_is_the_runs_own_and_delivers_once(
    stack, tenancy, ingest_api, worker, destination, resend_once
):
    configure(stack, tenancy, destination, retry_policy=AUTO)
    destination.script(Answer(200))
    message_id = send(ingest_api, tenancy, {"n": 1}, "order")
    resent = resend_once(_is_take)

    worker(include_delayed=False)

    assert len(resent) == 1
    final = status(stack, message_id)
    assert final["pipeline_status"] == "sent"  # not refused as busy under its own lease
    assert "lease_owner" not in final
    assert [r.headers["idempotency-key"] for r in destination.requests] == [message_id]
