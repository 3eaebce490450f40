"""The `sam build` output, run as on Lambda: every handler imported from its built folder with
the built layer on sys.path and nothing from the source tree or the dev venv (the local stack's
built mode, `make run BUILT=1`), answering the sample events of events/ and one message end to
end. `make validate` builds and runs this module (HUB_BUILT_DIR = the build for this machine's
architecture, devstack/build.py)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from devstack.__main__ import built_template
from devstack.demo import DEMO_ADMIN_TOKEN, DEMO_API_KEY, DEMO_INTEGRATION_ID, parameter_overrides, seed
from devstack.stack import LocalStack
from tests.aws import ROOT
from tests.destinations import HttpDestination
from tests.events import load_event

BUILT = Path(os.environ.get("HUB_BUILT_DIR", ROOT / ".aws-sam/host/build")).resolve()
SOURCE_FOLDERS = (ROOT / "layers", ROOT / "functions")


@pytest.fixture(scope="module")
def built_stack() -> Iterator[LocalStack]:
    template = built_template({"HUB_LOCAL_BUILT_DIR": str(BUILT)})  # what `make run BUILT=1` runs
    assert template is not None
    stack = LocalStack(
        template_path=template,
        project_root=ROOT,
        stack_name="hub-built",
        aws_port=0,
        api_port=0,
        url_port=0,
        echo_port=0,
        parameter_overrides=parameter_overrides(),
        # A warm publisher would otherwise keep "no subscription" for 30 s after the first test.
        env_overrides={"*": {"HUB_CONFIG_CACHE_SECONDS": "0"}},
        isolated_functions=True,
    )
    with stack:
        seed(stack)
        yield stack


def _ok(result: Any) -> Any:
    assert not (isinstance(result, dict) and "errorType" in result), result
    return result


def test_every_function_runs_from_the_build_alone(built_stack: LocalStack) -> None:
    specs = built_stack.model.specs
    assert len(specs) == 7
    for logical_id, spec in specs.items():
        assert spec.isolated, logical_id
        for folder in (spec.code_dir, *spec.layer_dirs):
            assert Path(folder).is_relative_to(BUILT), (logical_id, folder)
            assert not any(Path(folder).is_relative_to(source) for source in SOURCE_FOLDERS)
        # The layer brings every package the handlers import, boto3 with its botocore included.
        assert any((Path(folder) / "boto3").is_dir() for folder in spec.layer_dirs), logical_id


def test_the_sample_events_are_answered_by_the_built_handlers(built_stack: LocalStack) -> None:
    receive = load_event("receive_message.json")
    receive["headers"]["authorization"] = f"Bearer {DEMO_API_KEY}"
    answer = _ok(built_stack.invoke("IngestApiFunction", receive))
    assert answer["statusCode"] == 202, answer
    message_id = json.loads(answer["body"])["message_id"]

    lookup = load_event("get_message.json")
    lookup["headers"]["authorization"] = f"Bearer {DEMO_API_KEY}"
    lookup["rawPath"] = lookup["requestContext"]["http"]["path"] = f"/api/edi-hub/messages/{message_id}"
    lookup["pathParameters"] = {"message_id": message_id}
    answer = _ok(built_stack.invoke("IngestApiFunction", lookup))
    assert answer["statusCode"] == 200, answer
    assert json.loads(answer["body"])["message_id"] == message_id

    reprocess = load_event("admin_reprocess_message.json")
    reprocess["headers"]["authorization"] = f"Bearer {DEMO_ADMIN_TOKEN}"
    answer = _ok(built_stack.invoke("AdminApiFunction", reprocess))
    assert answer["statusCode"] == 404, answer  # the sample's message id does not exist here
    assert json.loads(answer["body"])["error"]["code"] == "not_found"

    # No Slack or e-mail configured: the notifier answers and sends nothing.
    _ok(built_stack.invoke("AlertNotifierFunction", load_event("alarm_notification.json")))
    run = _ok(built_stack.invoke("CertExpiryFunction", load_event("cert_expiry_scheduled.json")))
    assert run == {"checked": 0, "alerted": []}


def test_a_message_goes_end_to_end_through_the_built_handlers(built_stack: LocalStack) -> None:
    """Ingest (HTTP API), pipeline worker (SQS), outbox publisher (stream) and webhook sender
    (SQS), each from the build: the echo destination gets the order, a subscriber its events."""
    admin_url = built_stack.function_urls["AdminApiFunction"]
    with (
        HttpDestination() as subscriber,
        httpx.Client(
            base_url=admin_url, headers={"Authorization": f"Bearer {DEMO_ADMIN_TOKEN}"}, timeout=30
        ) as admin,
        httpx.Client(
            base_url=built_stack.api_url, headers={"Authorization": f"Bearer {DEMO_API_KEY}"}, timeout=30
        ) as api,
    ):
        created = admin.post(
            "/api/admin/tenants/tnt_demo/subscriptions",
            json={"url": subscriber.url, "event_types": ["message.*"]},
        )
        assert created.status_code == 201, created.text
        secret = created.json()["secret"]
        body = {
            "integration_id": DEMO_INTEGRATION_ID,
            "message_type": "purchase_order",
            "external_id": "PO-BUILT-1",
            "payload": {"po_number": "PO-BUILT-1", "lines": [{"sku": "A-1", "qty": 2}]},
        }
        accepted = api.post("/api/edi-hub/receive-message", json=body, headers={"Idempotency-Key": "built-1"})
        assert accepted.status_code == 202, accepted.text
        message_id = accepted.json()["message_id"]

        status = ""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and status != "sent":
            status = api.get(f"/api/edi-hub/messages/{message_id}").json()["pipeline_status"]
            time.sleep(0.5)
        assert status == "sent"
        events: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "message.sent" not in events:
            # Webhook.verify raises unless the built sender signed it with the subscription's secret.
            events = [
                Webhook(secret).verify(request.body, request.headers)["type"]
                for request in list(subscriber.requests)
            ]
            time.sleep(0.5)
        assert "message.sent" in events
