"""The operator's web page (issue 13) in a real browser: Playwright driving Debian's Chromium
against the local stack's admin Function URL, with real destinations on 127.0.0.1. Skipped with
the reason printed when Chromium or Playwright is missing (`.ci/run` installs Chromium)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import httpx
import pytest

from devstack.demo import DEMO_ADMIN_TOKEN, DEMO_INTEGRATION_ID, DEMO_TENANT_ID, pointed_at
from hub.domain.ids import new_id
from hub.domain.message import PipelineStep, StepMessage
from tests import browser
from tests.destinations import Answer, HttpDestination
from tests.pipeline import AUTO, integration, post, wait_for_status

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.e2e

WHY_NOT = browser.unavailable()
if WHY_NOT:
    pytest.skip(f"browser tests skipped: {WHY_NOT}", allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402 - only once the skip above did not happen


@pytest.fixture
def destination() -> Iterator[HttpDestination]:
    with HttpDestination() as server:
        yield server


def row(page: Page, message_id: str) -> Any:
    return page.locator(f'tr[data-message-id="{message_id}"]')


def test_the_page_is_served_with_a_strict_policy_and_no_cookie(admin_url: str) -> None:
    answer = httpx.get(f"{admin_url}/admin/queue", timeout=30, trust_env=False)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert "set-cookie" not in answer.headers
    assert httpx.get(f"{admin_url}/admin/static/nope.js", timeout=30, trust_env=False).status_code == 404
    assert httpx.post(f"{admin_url}/admin/queue", timeout=30, trust_env=False).status_code == 405


def test_a_wrong_token_is_refused_and_a_right_one_signs_in(page: Page) -> None:
    page.goto("/admin")
    page.get_by_label("Admin token").fill("hub_admin_not-a-real-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("unauthorized")

    page.get_by_label("Admin token").fill(DEMO_ADMIN_TOKEN)
    page.get_by_role("button", name="Sign in").click()

    expect(page.locator("#who")).to_contain_text("admin")
    # The token lives in this tab's sessionStorage only: no cookie was set.
    assert page.context.cookies() == []


def test_an_operator_reprocesses_a_dead_lettered_message_and_watches_it_become_sent(
    page: Page, api, local_stack, destination: HttpDestination
) -> None:
    destination.script(Answer(503))
    dead_letter = AUTO.model_copy(update={"retry_max": 1, "retry_dead_letter": True})
    message_id = post(api, integration(local_stack, destination.url, dead_letter))
    wait_for_status(api, message_id, "dead_letter")
    destination.script(Answer(200))

    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/queue?tab=dead_letter")
    expect(page.get_by_role("tab", name="Dead-letter")).to_have_attribute("aria-selected", "true")
    expect(row(page, message_id)).to_contain_text("dead letter")
    browser.screenshot(page, "queue")
    row(page, message_id).get_by_role("button", name="Reprocess").click()
    expect(page.get_by_role("dialog")).to_contain_text(message_id)
    page.get_by_role("dialog").get_by_role("button", name="Reprocess").click()

    # The row redraws from the API's answers, without a reload of the page (the hub first, as
    # long as it works; then the page).
    assert wait_for_status(api, message_id, "sent", sleep=browser.pumping(page))["pipeline_status"] == "sent"
    expect(row(page, message_id)).to_contain_text("sent")
    assert len(destination.requests) == 3


def test_an_operator_cancels_a_waiting_retry(
    page: Page, api, local_stack, destination: HttpDestination
) -> None:
    destination.script(Answer(503))
    slow = AUTO.model_copy(update={"ladder_seconds": (600,)})
    message_id = post(api, integration(local_stack, destination.url, slow))
    wait_for_status(api, message_id, "retry_pending")

    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/queue?tab=waiting")
    waiting = row(page, message_id)
    expect(waiting).to_contain_text("retry 1 of 3")
    expect(waiting).to_contain_text("in 10 min")
    waiting.get_by_role("button", name="Cancel").click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel message").click()

    expect(waiting).to_contain_text("cancelled")
    expect(waiting.get_by_role("button")).to_have_count(0)
    assert wait_for_status(api, message_id, "cancelled", sleep=browser.pumping(page))["next_retry_at"] is None


def test_an_operator_erases_a_message_after_confirming(
    page: Page, api, admin, local_stack, destination: HttpDestination
) -> None:
    message_id = post(api, integration(local_stack, destination.url, AUTO))
    wait_for_status(api, message_id, "sent")

    browser.sign_in(page, DEMO_ADMIN_TOKEN, f"/admin/messages/{message_id}")
    expect(page.locator("main")).to_contain_text("Kept until")
    page.get_by_role("button", name="Erase (GDPR)").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(message_id)
    expect(dialog).to_contain_text("very same payload")
    dialog.get_by_role("button", name="Erase").click()

    expect(page).to_have_url(re.compile(r"/admin/queue"))
    assert admin.get(f"/api/admin/messages/{message_id}").status_code == 404
    assert api.get(f"/api/edi-hub/messages/{message_id}").status_code == 404


def test_the_message_detail_shows_its_timeline(
    page: Page, api, local_stack, destination: HttpDestination
) -> None:
    destination.script(Answer(503), Answer(200))
    message_id = post(api, integration(local_stack, destination.url, AUTO))
    wait_for_status(api, message_id, "sent")

    browser.sign_in(page, DEMO_ADMIN_TOKEN, f"/admin/messages/{message_id}")

    expect(page.get_by_role("heading", name=re.compile(message_id))).to_be_visible()
    timeline = page.locator("ol.timeline")
    expect(timeline).to_contain_text("Delivery attempt 2")
    expect(page.locator("pre[data-part=payload]")).to_contain_text("PO-")
    # (docs/operator-page.md's picture of it: test_admin_page_operator, a message with four attempts.)


def test_a_viewer_sees_no_action_buttons_and_a_forged_call_is_refused(
    page: Page, api, admin, local_stack, destination: HttpDestination
) -> None:
    destination.script(Answer(503))
    dead_letter = AUTO.model_copy(update={"retry_max": 0, "retry_dead_letter": True})
    message_id = post(api, integration(local_stack, destination.url, dead_letter))
    wait_for_status(api, message_id, "dead_letter")
    viewer = browser.admin_token(admin, "viewer", DEMO_TENANT_ID)

    browser.sign_in(page, viewer, "/admin/queue?tab=dead_letter")

    expect(row(page, message_id)).to_be_visible()
    expect(page.locator("main").get_by_role("button", name=re.compile("Reprocess|Cancel"))).to_have_count(0)
    forged = page.evaluate(
        """async ([token, id]) => {
            const answer = await fetch('/api/edi-hub/reprocess-message', {method: 'POST',
              headers: {Authorization: 'Bearer ' + token, 'Content-Type': 'application/json'},
              body: JSON.stringify({message_id: id})});
            return [answer.status, (await answer.json()).error.code];
        }""",
        [viewer, message_id],
    )
    assert forged == [403, "forbidden"]
    assert (
        wait_for_status(api, message_id, "dead_letter", sleep=browser.pumping(page))["pipeline_status"]
        == "dead_letter"
    )
    # Nor on the message view (issue 28: an operator gets Reprocess and Cancel there; issue 29: Erase).
    page.goto(f"/admin/messages/{message_id}")
    expect(page.get_by_role("heading", name=re.compile(message_id))).to_be_visible()
    moves = re.compile("Reprocess|Cancel|Erase")
    expect(page.locator("main").get_by_role("button", name=moves)).to_have_count(0)


def test_health_shows_a_dead_letter_lane_and_an_operator_redrives_it(page: Page, api, local_stack) -> None:
    # A step of a message that was never stored: harmless when it runs again (dropped as an orphan).
    orphan = StepMessage(
        message_id=new_id("msg"),
        tenant_id=DEMO_TENANT_ID,
        integration_id="int_never",
        step=PipelineStep.PROCESS,
        execution_id=new_id("exe"),
        correlation_id=str(uuid.uuid4()),
        publish_id=new_id("pub"),
    )
    with pointed_at(local_stack):
        boto3.client("sqs").send_message(
            QueueUrl=local_stack.resources["PipelineDLQ"], MessageBody=orphan.model_dump_json()
        )
    post(api, DEMO_INTEGRATION_ID)  # something to count this hour

    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/health")

    lane = page.locator('tr[data-lane="pipeline"]')
    expect(lane).to_contain_text("1 in DLQ")
    expect(page.locator("svg.chart polyline[data-series=received]")).to_have_count(1)
    expect(page.locator("ul.legend")).to_contain_text("Received")
    browser.screenshot(page, "health")
    lane.get_by_role("button", name="Redrive pipeline").click()
    page.get_by_role("dialog").get_by_role("button", name="Redrive").click()

    expect(page.get_by_role("status")).to_contain_text("Moved 1 message(s) back to pipeline")
    expect(page.locator('tr[data-lane="pipeline"]')).to_contain_text("DLQ empty")


def test_a_tenant_viewer_sees_its_integrations_but_no_lanes(page: Page, admin) -> None:
    browser.sign_in(page, browser.admin_token(admin, "viewer", DEMO_TENANT_ID), "/admin/health")

    expect(page.get_by_role("heading", name=f"Integrations of {DEMO_TENANT_ID}")).to_be_visible()
    expect(page.get_by_role("heading", name="Lanes")).to_have_count(0)
    expect(page.get_by_role("button", name=re.compile("Redrive"))).to_have_count(0)
