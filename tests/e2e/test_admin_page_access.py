"""The operator's page (issue 13), keys, tokens, subscriptions and the audit log, in a real
browser: Playwright driving Debian's Chromium against the local stack's admin Function URL. A
key created in the page works against the partner API until it is revoked in the page; a viewer
token created in the page is offered no action. Skipped with the reason printed when Chromium or
Playwright is missing (`.ci/run` installs Chromium)."""

from __future__ import annotations

import re
import time
import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from devstack.demo import DEMO_ADMIN_TOKEN, DEMO_API_KEY, DEMO_INTEGRATION_ID, DEMO_TENANT_ID, demo_body
from tests import browser
from tests.destinations import Answer, HttpDestination
from tests.waiting import wait_for

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.e2e

WHY_NOT = browser.unavailable()
if WHY_NOT:
    pytest.skip(f"browser tests skipped: {WHY_NOT}", allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402 - only once the skip above did not happen

ACTIONS = re.compile(r"^(Create|Revoke|Rotate|Delete|Disable|Enable|Replay)")


def receive(local_stack, key: str) -> httpx.Response:
    """A partner's call to the ingest API with `key`, resent as a partner would while the answer
    is a 503 (safe to resend: a loaded machine's storage timeout), a few times at most."""
    body = demo_body()
    body["payload"] = {**body["payload"], "po_number": f"PO-{uuid.uuid4().hex[:8]}"}
    body["external_id"] = body["payload"]["po_number"]
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": f"page-access-{uuid.uuid4().hex}"}
    with httpx.Client(base_url=local_stack.api_url, timeout=30, trust_env=False) as partner:
        for _ in range(5):
            answer = partner.post("/api/edi-hub/receive-message", json=body, headers=headers)
            if answer.status_code != 503:
                return answer
            time.sleep(float(answer.headers.get("Retry-After") or 1))  # the hub's own wait
        return answer


def shown_once(page: Page, section: str) -> str:
    """The secret shown once in a section of the page, read as a user would."""
    box = page.locator(f'[data-section="{section}"] [data-secret]')
    expect(box).to_be_visible()
    return box.inner_text().strip()


def test_an_api_key_created_in_the_page_works_until_it_is_revoked_there(page: Page, local_stack) -> None:
    label = f"page key {uuid.uuid4().hex[:6]}"
    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/access")
    form = page.get_by_role("form", name="New API key")
    form.get_by_label("Label").fill(label)
    form.get_by_role("button", name="Create API key").click()

    key = shown_once(page, "api-keys")
    assert key.startswith("hub_")
    accepted = receive(local_stack, key)
    assert accepted.status_code == 202, accepted.text

    row = page.locator('[data-section="api-keys"] tr', has_text=label)
    expect(row).to_contain_text("active")
    key_id = row.get_attribute("data-key-id")
    assert key_id is not None
    assert key_id.startswith("key_")
    # "Done" takes the secret out of the page.
    page.get_by_role("button", name="Done: hide it").click()
    expect(page.locator("[data-secret]")).to_have_count(0)
    assert key not in page.content()

    row.get_by_role("button", name=f"Revoke {label}").click()
    browser.confirm(page, key_id, "Revoke key")
    expect(row).to_contain_text("revoked")
    expect(row.get_by_role("button")).to_have_count(0)
    browser.screenshot(page, "access")

    refused = receive(local_stack, key)
    assert refused.status_code == 401, refused.text

    # The audit log: the creation and the revocation, newest first, with who and when.
    page.get_by_role("link", name="Audit log").click()
    created = page.locator('tr[data-action="api_key.created"]', has_text=key_id)
    revoked = page.locator('tr[data-action="api_key.revoked"]', has_text=key_id)
    for entry in (created, revoked):
        expect(entry).to_contain_text("bootstrap admin token")
        expect(entry.locator("time[datetime]").first).to_have_attribute("datetime", re.compile(r"^\d{4}-"))
    expect(revoked).to_contain_text("state")  # before/after: the state that changed
    expect(revoked).to_contain_text("revoked")
    entries = page.locator("#audit-results tbody tr")
    ids = [entries.nth(i).get_attribute("data-action") for i in range(entries.count())]
    assert ids.index("api_key.revoked") < ids.index("api_key.created")  # newest first
    browser.screenshot(page, "audit")


def test_a_rotated_key_is_shown_once_and_the_old_one_keeps_its_grace_period(page: Page, local_stack) -> None:
    label = f"rotated {uuid.uuid4().hex[:6]}"
    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/access")
    form = page.get_by_role("form", name="New API key")
    form.get_by_label("Label").fill(label)
    form.get_by_role("button", name="Create API key").click()
    old = shown_once(page, "api-keys")

    page.locator('[data-section="api-keys"] tr', has_text=label).first.get_by_role(
        "button", name=f"Rotate {label}"
    ).click()
    browser.confirm(page, "grace period", "Rotate key")

    expect(page.locator('[data-section="api-keys"]')).to_contain_text("keeps working until")
    new = shown_once(page, "api-keys")
    assert new != old
    rows = page.locator('[data-section="api-keys"] tr', has_text=label)
    expect(rows).to_have_count(2)
    expect(rows.filter(has_text="rotating")).to_have_count(1)
    assert receive(local_stack, old).status_code == 202  # within the grace period
    assert receive(local_stack, new).status_code == 202


def test_a_viewer_token_created_in_the_page_is_offered_no_action(contexts, admin_url: str) -> None:
    page = contexts()
    label = f"viewer {uuid.uuid4().hex[:6]}"
    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/access")
    form = page.get_by_role("form", name="New tenant admin token")
    form.get_by_label("Token label").fill(label)
    form.get_by_label("Role").select_option("viewer")
    form.get_by_role("button", name="Create admin token").click()
    viewer = shown_once(page, "tokens-tenant")
    assert viewer.startswith("hub_adm_")
    expect(page.locator('[data-section="tokens-tenant"] tr', has_text=label)).to_contain_text("viewer")

    seen = contexts()
    browser.sign_in(seen, viewer, "/admin/access")
    expect(seen.locator("#who")).to_contain_text("viewer")
    listed = seen.locator('[data-section="tokens-tenant"] tr', has_text=label)
    expect(listed).to_contain_text("you")
    expect(seen.locator('[data-section="api-keys"]')).to_contain_text("Partner API keys")
    expect(seen.get_by_role("form")).to_have_count(0)
    expect(seen.locator("main").get_by_role("button", name=ACTIONS)).to_have_count(0)

    seen.get_by_role("link", name="Subscriptions").click()
    expect(seen.get_by_role("heading", name="Subscriptions")).to_be_visible()
    expect(seen.get_by_role("form")).to_have_count(0)
    expect(seen.locator("main").get_by_role("button", name=ACTIONS)).to_have_count(0)

    # What is not offered is refused anyway: the viewer's own call from the page's origin.
    forged = seen.evaluate(
        """async ([token, tenant]) => {
            const answer = await fetch(`/api/admin/tenants/${tenant}/api-keys`, {method: 'POST',
              headers: {Authorization: 'Bearer ' + token, 'Content-Type': 'application/json'},
              body: JSON.stringify({label: 'forged'})});
            return [answer.status, (await answer.json()).error.code];
        }""",
        [viewer, DEMO_TENANT_ID],
    )
    assert forged == [403, "forbidden"]


def test_revoking_the_signed_in_token_asks_with_a_warning_and_signs_out(contexts, admin) -> None:
    made = admin.post(
        "/api/admin/tokens",
        json={"label": f"self {uuid.uuid4().hex[:6]}", "role": "admin", "tenant_id": DEMO_TENANT_ID},
    )
    assert made.status_code == 201, made.text
    token, label = made.json()["token"], made.json()["label"]
    page = contexts()
    browser.sign_in(page, token, "/admin/access")
    own = page.locator('[data-section="tokens-tenant"] tr', has_text=label)
    expect(own).to_contain_text("you")

    own.get_by_role("button", name=f"Revoke {label}").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Warning")
    expect(dialog).to_contain_text("signed in with")
    dialog.get_by_role("button", name="Keep it").click()
    expect(own).to_contain_text("active")

    own.get_by_role("button", name=f"Revoke {label}").click()
    browser.confirm(page, "signed in with", "Revoke my own token")
    expect(page.get_by_label("Admin token", exact=True)).to_be_visible()
    refused = admin.get("/api/admin/tokens", headers={"Authorization": f"Bearer {token}"})
    assert refused.status_code == 401


def test_a_subscription_created_in_the_page_is_listed_and_can_be_disabled(page: Page, admin) -> None:
    url = f"https://hooks.example.com/page/{uuid.uuid4().hex[:8]}"
    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/subscriptions")
    form = page.get_by_role("form", name="New subscription")
    form.get_by_label("Endpoint URL").fill(url)
    # Connection events only: a message event of another test of this stack, still on its way
    # through the outbox, would reach a new `message.*` subscription and fail at example.com.
    form.get_by_label("Event types").fill("connection.circuit_opened, connection.gone")
    form.get_by_role("button", name="Create subscription").click()

    secret = page.locator("[data-secret]")
    expect(secret).to_have_text(re.compile(r"^whsec_"))
    page.get_by_role("button", name="Done: hide it").click()
    expect(secret).to_have_count(0)
    item = page.locator("li.subscription", has_text=url)
    expect(item).to_contain_text("enabled")
    expect(item).to_contain_text("connection.circuit_opened")
    expect(item).to_contain_text("connection.gone")
    expect(item).to_contain_text("all integrations")
    subscription_id = item.get_attribute("data-subscription-id")

    item.get_by_role("button", name="Disable").click()
    browser.confirm(page, url, "Disable")
    expect(item).to_contain_text("disabled")
    item.get_by_role("button", name="Rotate secret").click()
    browser.confirm(page, "shown once", "Rotate secret")
    expect(secret).to_have_text(re.compile(r"^whsec_"))
    expect(item).to_contain_text("2 current")
    page.get_by_role("button", name="Done: hide it").click()
    item.get_by_role("button", name="Failed deliveries").click()
    expect(item).to_contain_text("No failed deliveries.")
    browser.screenshot(page, "subscriptions")

    stored = admin.get(f"/api/admin/tenants/{DEMO_TENANT_ID}/subscriptions/{subscription_id}").json()
    assert (stored["url"], stored["enabled"]) == (url, False)
    assert stored["event_types"] == ["connection.circuit_opened", "connection.gone"]

    item.get_by_role("button", name="Delete").click()
    browser.confirm(page, url, "Delete subscription")
    expect(item).to_have_count(0)
    gone = admin.get(f"/api/admin/tenants/{DEMO_TENANT_ID}/subscriptions/{subscription_id}")
    assert gone.status_code == 404


def failed_deliveries(admin: httpx.Client, subscription_id: str) -> list[dict[str, Any]]:
    path = f"/api/admin/tenants/{DEMO_TENANT_ID}/subscriptions/{subscription_id}/failed-deliveries"
    answer = admin.get(path)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["items"])


def test_failed_deliveries_are_replayed_from_the_page_one_and_all_since(
    page: Page, admin, local_stack
) -> None:
    with HttpDestination() as receiver:
        receiver.script(Answer(400))  # a receiver's 4xx: failed at once, never retried
        browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/subscriptions")
        form = page.get_by_role("form", name="New subscription")
        form.get_by_label("Endpoint URL").fill(receiver.url)
        form.get_by_label("Event types").fill("message.received")
        form.get_by_label(DEMO_INTEGRATION_ID, exact=True).check()
        form.get_by_role("button", name="Create subscription").click()
        item = page.locator("li.subscription", has_text=receiver.url)
        expect(item).to_contain_text(DEMO_INTEGRATION_ID)
        subscription_id = str(item.get_attribute("data-subscription-id"))
        page.get_by_role("button", name="Done: hide it").click()

        try:
            for _ in range(2):
                assert receive(local_stack, DEMO_API_KEY).status_code == 202
            failures = wait_for(
                lambda: failed_deliveries(admin, subscription_id),
                "two failed deliveries",
                until=lambda items: len(items) == 2,
                sleep=browser.pumping(page),
            )
            receiver.script(Answer(200))

            item.get_by_role("button", name="Failed deliveries").click()
            first, second = failures[1]["event_id"], failures[0]["event_id"]
            row = item.locator(f'tr[data-event-id="{first}"]')
            expect(row).to_contain_text("http_4xx")
            expect(row).to_contain_text("400")
            row.get_by_role("button", name=f"Replay {first}").click()
            expect(row).to_contain_text("replaying")
            # The same event (the same webhook-id) again; a delivered replay clears the failure.
            wait_for(
                lambda: [r.headers.get("webhook-id") for r in receiver.requests].count(first),
                "the replayed event at the receiver",
                until=lambda count: count == 2,
                sleep=browser.pumping(page),
            )
            wait_for(
                lambda: [f["event_id"] for f in failed_deliveries(admin, subscription_id)],
                "the replayed failure cleared",
                until=lambda failed: failed == [second],
                sleep=browser.pumping(page),
            )

            # The browser's local time, as a datetime-local input takes it.
            since = (datetime.now() - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M")
            item.get_by_label("Failed since").fill(since)
            item.get_by_role("button", name="Replay all since").click()
            browser.confirm(page, "failed since", "Replay all")
            expect(page.locator("#toasts")).to_contain_text("Replaying 1 deliveries")
            wait_for(
                lambda: failed_deliveries(admin, subscription_id),
                "every failure replayed",
                until=lambda failed: failed == [],
                sleep=browser.pumping(page),
            )
            assert [r.headers.get("webhook-id") for r in receiver.requests].count(second) == 2
        finally:
            admin.delete(f"/api/admin/tenants/{DEMO_TENANT_ID}/subscriptions/{subscription_id}")
