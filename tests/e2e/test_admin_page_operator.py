"""The operator's page as an operator's daily tool (issue 28, point 4), in Debian's Chromium driven
by Playwright against the local stack, with real destinations on 127.0.0.1: counts on the queue
tabs, auto-refresh that polls only the visible tab and only while the browser tab is visible,
Reprocess / Cancel on the message view (each user action one request with its own
Idempotency-Key, a double click one action), the compact timeline, no stale error class on a sent
message, Health's labels, the queue at 390 px, the sign-in hint; the search box and bulk jobs.
Skipped with the reason printed when Chromium or Playwright is missing."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from devstack.demo import DEMO_ADMIN_TOKEN, DEMO_INTEGRATION_ID, DEMO_TENANT_ID
from tests import browser
from tests.destinations import Answer, HttpDestination
from tests.pipeline import AUTO, integration, post, wait_for_status
from tests.waiting import wait_for

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page, Request

pytestmark = pytest.mark.e2e

WHY_NOT = browser.unavailable()
if WHY_NOT:
    pytest.skip(f"browser tests skipped: {WHY_NOT}", allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402 - only once the skip above did not happen

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
#: Retries far in the future: the message stays waiting.
SLOW = AUTO.model_copy(update={"ladder_seconds": (600,)})
#: One failed attempt, then dead-letter.
DEAD = AUTO.model_copy(update={"retry_max": 0, "retry_dead_letter": True})


@pytest.fixture
def destination() -> Iterator[HttpDestination]:
    with HttpDestination() as server:
        yield server


@dataclass
class Calls:
    """The admin API requests a page makes (method, path with query, headers, post body)."""

    seen: list[Request] = field(default_factory=list)

    def to(self, method: str, path: str) -> list[Request]:
        return [r for r in self.seen if r.method == method and r.url.split("?")[0].endswith(path)]

    def api(self) -> list[Request]:
        return [r for r in self.seen if "/api/" in r.url]


def watch(page: Page) -> Calls:
    calls = Calls()
    # A function of ours: Playwright cannot take a builtin method as a handler.
    page.on("request", lambda request: calls.seen.append(request))  # noqa: PLW0108
    return calls


def row(page: Page, message_id: str) -> Locator:
    return page.locator(f'tr[data-message-id="{message_id}"]')


def count_of(page: Page, tab: str) -> Locator:
    return page.locator(f'[role=tab] [data-count="{tab}"]')


# --- counts and auto-refresh ----------------------------------------------------------------


def test_the_tabs_show_their_counts_and_auto_refresh_polls_only_while_the_page_is_visible(
    page: Page, api: httpx.Client, local_stack: Any, destination: HttpDestination
) -> None:
    destination.script(Answer(503))
    integration_id = integration(local_stack, destination.url, SLOW)
    first = [post(api, integration_id) for _ in range(2)]
    for message_id in first:
        wait_for_status(api, message_id, "retry_pending")

    # The page's timers run on a clock the test moves on: a period passes at once, not in 10 s.
    page.clock.install()
    browser.sign_in(page, DEMO_ADMIN_TOKEN, f"/admin/queue?tab=waiting&integration_id={integration_id}")
    calls = watch(page)

    expect(count_of(page, "waiting")).to_have_text("2")
    expect(count_of(page, "dead_letter")).to_have_text("0")
    expect(count_of(page, "error")).to_have_text("0")
    expect(page.get_by_role("tab", name="Waiting 2")).to_have_attribute("aria-selected", "true")
    assert page.locator('[role=tab] [data-count="all"]').count() == 0  # `all` has no count
    expect(page.locator("#auto-refresh")).not_to_be_checked()  # off by default
    for message_id in first:
        expect(row(page, message_id)).to_be_visible()
    calls.seen.clear()

    # Off: a new message shows only when asked for.
    third = post(api, integration_id)
    wait_for_status(api, third, "retry_pending", sleep=browser.pumping(page))
    page.clock.run_for(60_000)  # a minute of the page's time: no timer asks the API
    page.wait_for_timeout(500)  # time-based on purpose: a request would have shown by now
    assert calls.to("GET", "/api/admin/queue") == []
    expect(row(page, third)).to_have_count(0)

    page.get_by_label("Auto-refresh period").select_option("10")
    page.get_by_label("Auto-refresh", exact=True).check()
    expect(row(page, third)).to_be_visible()  # the first tick, at once
    expect(count_of(page, "waiting")).to_have_text("3")
    status = page.locator("#refresh-status")
    expect(status).to_contain_text("every 10 s")

    # One tick: the visible tab's page and the counts, nothing else.
    expect(status).to_contain_text("refreshed")
    before = status.inner_text()
    calls.seen.clear()
    page.clock.run_for(10_000)  # one period of the page's own timer
    expect(status).not_to_have_text(before)
    wait_for(
        lambda: len(calls.api()),
        "the tick's two requests",
        until=lambda n: n >= 2,
        sleep=browser.pumping(page),
    )
    assert sorted(r.url.split("?")[0].rsplit("/api/admin/", 1)[1] for r in calls.api()) == [
        "queue",
        "queue/counts",
    ]
    assert "tab=waiting" in calls.to("GET", "/api/admin/queue")[0].url

    # Hidden: no request at all, however long.
    page.evaluate(
        """() => {
            Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'hidden'});
            document.dispatchEvent(new Event('visibilitychange'));
        }"""
    )
    expect(status).to_have_text("Paused while this browser tab is hidden.")
    calls.seen.clear()
    page.clock.run_for(60_000)  # six periods of the page's time: a tick would have come
    page.wait_for_timeout(500)  # time-based on purpose: a request would have shown by now
    assert calls.api() == []

    # Visible again: it refreshes at once and goes on.
    page.evaluate(
        """() => {
            Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'visible'});
            document.dispatchEvent(new Event('visibilitychange'));
        }"""
    )
    expect(status).to_contain_text("refreshed")
    assert len(calls.to("GET", "/api/admin/queue/counts")) >= 1


# --- reprocess / cancel, one request per action, each with its own key ----------------------


def test_a_double_click_on_reprocess_is_one_request_with_an_idempotency_key(
    page: Page, api: httpx.Client, local_stack: Any, destination: HttpDestination
) -> None:
    destination.script(Answer(503))
    message_id = post(api, integration(local_stack, destination.url, DEAD))
    wait_for_status(api, message_id, "dead_letter")
    destination.script(Answer(200))

    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/queue?tab=dead_letter")
    calls = watch(page)
    dead = row(page, message_id)
    dead.get_by_role("button", name="Reprocess").dblclick()
    browser.confirm(page, message_id, "Reprocess")

    wait_for_status(
        api, message_id, "sent", sleep=browser.pumping(page)
    )  # the hub first, as long as it works; then the page
    expect(dead).to_contain_text("sent")
    [reprocess] = calls.to("POST", "/api/edi-hub/reprocess-message")
    assert UUID.match(reprocess.headers["idempotency-key"])
    assert reprocess.post_data_json == {"message_id": message_id}
    assert len(destination.requests) == 2  # the failed attempt, and one more: not two


def test_the_message_view_reprocesses_and_cancels_each_action_one_request(
    page: Page, api: httpx.Client, local_stack: Any, destination: HttpDestination
) -> None:
    destination.script(Answer(503))
    failed = post(api, integration(local_stack, destination.url, DEAD))
    waiting = post(api, integration(local_stack, destination.url, SLOW))
    wait_for_status(api, failed, "dead_letter")
    wait_for_status(api, waiting, "retry_pending")
    destination.script(Answer(200))

    browser.sign_in(page, DEMO_ADMIN_TOKEN, f"/admin/messages/{failed}")
    calls = watch(page)
    actions = page.get_by_role("main").locator(".message-actions")
    # Dead-lettered: Reprocess and Cancel, and Erase (GDPR), which every message offers an operator.
    expect(actions.get_by_role("button")).to_have_count(3)
    expect(actions.get_by_role("button", name="Erase (GDPR)")).to_have_count(1)
    actions.get_by_role("button", name="Reprocess").dblclick()
    browser.confirm(page, failed, "Reprocess")

    expect(page.get_by_role("status")).to_contain_text(f"Reprocessing {failed}")  # a toast for 5 s
    wait_for_status(
        api, failed, "sent", sleep=browser.pumping(page)
    )  # the hub first, as long as it works; then the page
    expect(page.locator(".facts")).to_contain_text("sent")
    # Sent: no error class as current, Reprocess still offered (it would ask twice), no Cancel.
    expect(
        page.locator(".facts dt", has_text="Failing with").locator("xpath=following-sibling::dd[1]")
    ).to_have_text("—")
    expect(actions.get_by_role("button", name="Cancel")).to_have_count(0)
    keys = [r.headers["idempotency-key"] for r in calls.to("POST", "/api/edi-hub/reprocess-message")]
    assert len(keys) == 1
    assert UUID.match(keys[0])

    page.goto(f"/admin/messages/{waiting}")
    actions = page.get_by_role("main").locator(".message-actions")
    expect(actions.get_by_role("button", name="Reprocess")).to_have_count(0)  # an execution waits
    actions.get_by_role("button", name="Cancel").click()
    browser.confirm(page, waiting, "Cancel message")

    expect(page.locator(".facts")).to_contain_text("cancelled")
    cancels = calls.to("POST", f"/api/admin/messages/{waiting}/cancel-retry")
    assert len(cancels) == 1
    assert UUID.match(cancels[0].headers["idempotency-key"])
    assert cancels[0].headers["idempotency-key"] not in keys  # a new action, a new key
    assert wait_for_status(api, waiting, "cancelled", sleep=browser.pumping(page))["next_retry_at"] is None


@pytest.fixture
def lossy_page(chromium: Any, admin_url: str) -> Iterator[tuple[Page, list[str]]]:
    """A page whose console may show the connection resets a test provokes (the `page` fixture
    fails on any console error but the API's refusals): every other error is still a failure."""
    errors: list[str] = []
    context = chromium.new_context(base_url=admin_url, viewport={"width": 1360, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    yield page, errors
    context.close()
    assert [e for e in errors if "ERR_CONNECTION_RESET" not in e] == []


def test_a_call_lost_on_the_network_is_resent_once_with_the_same_key(
    lossy_page: tuple[Page, list[str]], api: httpx.Client, local_stack: Any, destination: HttpDestination
) -> None:
    """The page retries an action only when it cannot know whether it ran, and then with the
    same Idempotency-Key (the API answers the first result again instead of acting twice)."""
    page, errors = lossy_page
    destination.script(Answer(503))
    message_id = post(api, integration(local_stack, destination.url, DEAD))
    wait_for_status(api, message_id, "dead_letter")
    destination.script(Answer(200))
    browser.sign_in(page, DEMO_ADMIN_TOKEN, f"/admin/messages/{message_id}")
    calls = watch(page)
    dropped: list[str] = []

    def drop_the_first(route: Any) -> None:
        if not dropped:
            dropped.append(route.request.headers["idempotency-key"])
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/api/edi-hub/reprocess-message", drop_the_first)
    page.get_by_role("main").locator(".message-actions").get_by_role("button", name="Reprocess").click()
    browser.confirm(page, message_id, "Reprocess")

    wait_for_status(
        api, message_id, "sent", sleep=browser.pumping(page)
    )  # the hub first, as long as it works; then the page
    expect(page.locator(".facts")).to_contain_text("sent")
    sent = calls.to("POST", "/api/edi-hub/reprocess-message")
    assert [r.headers["idempotency-key"] for r in sent] == dropped * 2
    assert len(destination.requests) == 2
    assert [e for e in errors if "ERR_CONNECTION_RESET" in e] != []  # the loss did happen


def test_reprocessing_a_sent_message_asks_again_then_sends_with_force(
    page: Page, api: httpx.Client, local_stack: Any, destination: HttpDestination
) -> None:
    destination.script(Answer(200))
    message_id = post(api, integration(local_stack, destination.url, AUTO))
    wait_for_status(api, message_id, "sent")

    browser.sign_in(page, DEMO_ADMIN_TOKEN, f"/admin/messages/{message_id}")
    calls = watch(page)
    reprocess = page.get_by_role("main").locator(".message-actions").get_by_role("button", name="Reprocess")

    # First time: the operator keeps it at the second question. Nothing is sent again.
    reprocess.click()
    browser.confirm(page, message_id, "Reprocess", then="The destination already accepted")
    browser.confirm(page, "Send it again anyway?", "Keep it")
    assert len(destination.requests) == 1

    # Second time: sent again, with force, as a new request with its own key.
    reprocess.click()
    browser.confirm(page, message_id, "Reprocess", then="already accepted")
    browser.confirm(page, "already accepted", "Send it again")

    expect(page.get_by_role("status")).to_contain_text(f"Reprocessing {message_id}")
    wait_for_status(api, message_id, "sent", sleep=browser.pumping(page))
    posts = calls.to("POST", "/api/edi-hub/reprocess-message")
    assert [p.post_data_json for p in posts] == [
        {"message_id": message_id},
        {"message_id": message_id},
        {"message_id": message_id, "force": True},
    ]
    assert len({p.headers["idempotency-key"] for p in posts}) == 3
    wait_for(
        lambda: len(destination.requests),
        "the forced send",
        until=lambda count: count >= 2,
        sleep=browser.pumping(page),
    )
    assert len(destination.requests) == 2


# --- the compact timeline, no stale error class ---------------------------------------------


def test_the_timeline_is_one_expandable_line_per_attempt_and_a_sent_message_shows_no_error_class(
    page: Page, api: httpx.Client, local_stack: Any, destination: HttpDestination
) -> None:
    destination.script(Answer(503), Answer(502), Answer(500, "down for maintenance"), Answer(200))
    integration_id = integration(local_stack, destination.url, AUTO.model_copy(update={"retry_max": 5}))
    message_id = post(api, integration_id)
    sent = wait_for_status(api, message_id, "sent")
    assert sent["last_retry_error_class"] == "http_5xx"  # the item keeps the last failure's class

    browser.sign_in(page, DEMO_ADMIN_TOKEN, f"/admin/messages/{message_id}")

    timeline = page.locator("ol.timeline")
    attempts = timeline.locator("li[data-kind=attempt]")
    expect(attempts).to_have_count(4)
    # received, process, 4 attempts; each status event is folded into the attempt that made it.
    expect(timeline.locator(":scope > li")).to_have_count(6)
    expect(attempts.nth(0).locator("summary")).to_contain_text("Delivery attempt 1")
    expect(attempts.nth(0).locator("summary")).to_contain_text("http_5xx")
    expect(attempts.nth(0).locator("summary")).to_contain_text("503")
    expect(attempts.nth(0).locator("summary")).to_contain_text("retry pending")
    expect(attempts.nth(3).locator("summary")).to_contain_text("accepted")
    expect(attempts.nth(3).locator("summary")).to_contain_text("200")
    expect(attempts.nth(3).locator("summary")).to_contain_text("sent")
    # Collapsed: the details are there but not shown.
    expect(attempts.nth(2).get_by_text("down for maintenance")).to_be_hidden()
    attempts.nth(2).locator("summary").click()
    expanded = attempts.nth(2)
    expect(expanded.get_by_text("down for maintenance")).to_be_visible()
    for text in (
        "Answer class",
        "http_5xx",
        "Status code",
        "500",
        "Duration",
        " ms",
        "Idempotency-Key",
        message_id,
        "POST to 127.0.0.1",
    ):
        expect(expanded.locator("dl")).to_contain_text(text)
    # Sent: no error class presented as current; the attempts keep theirs.
    expect(
        page.locator(".facts dt", has_text="Failing with").locator("xpath=following-sibling::dd[1]")
    ).to_have_text("—")
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 2_000, height  # was 3,900 px of cards for four attempts
    browser.screenshot(page, "message-timeline")

    page.goto(f"/admin/queue?tab=all&integration_id={integration_id}")
    cells = row(page, message_id).locator("td")
    expect(cells.nth(3)).to_contain_text("sent")
    expect(cells.nth(6)).to_have_text("—")  # Error class


# --- health, 390 px, sign-in ----------------------------------------------------------------


def test_health_says_the_table_counts_states_now_and_the_chart_events(page: Page, api: httpx.Client) -> None:
    post(api, DEMO_INTEGRATION_ID)  # something to count this hour

    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/health")

    table = page.get_by_role("heading", name=re.compile(f"Integrations of {DEMO_TENANT_ID}"))
    expect(table).to_have_text(f"Integrations of {DEMO_TENANT_ID}: messages in each state now")
    expect(page.locator("#integrations-meaning")).to_contain_text(
        "Each message counts once, in the state it is in now"
    )
    expect(page.locator("#integrations-meaning")).to_contain_text("counts events instead")
    chart = page.get_by_role("heading", name=re.compile("Events per hour"))
    expect(chart).to_have_text("Events per hour, whole platform (all tenants), last 24 h")
    expect(page.locator("#hourly-meaning")).to_contain_text("Counts what happened, not what is")
    expect(page.locator("ul.legend")).to_contain_text("in 24 h")
    expect(page.locator("svg.chart")).to_have_attribute("aria-label", re.compile("Events per hour"))


def test_the_queue_fits_390_px_with_its_table_scrolling_in_its_own_box(
    page: Page, api: httpx.Client, local_stack: Any, destination: HttpDestination
) -> None:
    destination.script(Answer(503))
    integration_id = integration(local_stack, destination.url, SLOW)
    message_id = post(api, integration_id)
    wait_for_status(api, message_id, "retry_pending")
    page.set_viewport_size({"width": 390, "height": 844})

    browser.sign_in(page, DEMO_ADMIN_TOKEN, f"/admin/queue?tab=waiting&integration_id={integration_id}")
    expect(row(page, message_id)).to_be_visible()

    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert overflowing(page) == []  # nothing but the scroll box's content reaches past the viewport
    box = page.locator(".scroller")
    assert box.evaluate("(el) => el.scrollWidth > el.clientWidth")  # the table scrolls inside it
    assert box.evaluate("(el) => el.getBoundingClientRect().right") <= 390
    browser.screenshot(page, "queue-390")

    page.goto(f"/admin/messages/{message_id}")
    expect(page.get_by_role("heading", name=re.compile(message_id))).to_be_visible()
    assert overflowing(page) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def overflowing(page: Page, width: int = 390) -> list[str]:
    """Elements of the page reaching past `width` px, outside a scroll box of their own."""
    return list(
        page.evaluate(
            """(width) => [...document.querySelectorAll('body *')]
                .filter((el) => !el.closest('.scroller, pre, dialog:not([open])')
                    && el.getBoundingClientRect().width > 0
                    && el.getBoundingClientRect().right > width + 0.5)
                .map((el) => `${el.tagName}.${el.className}: ${(el.textContent || '').slice(0, 40)}`)""",
            width,
        )
    )


def test_the_sign_in_hint_names_every_kind_of_token_and_each_signs_in(
    contexts: Any, admin: httpx.Client
) -> None:
    page = contexts()
    page.goto("/admin")
    hint = page.locator(".signin .hint")
    expect(hint).to_contain_text("starts with hub_adm_")
    expect(hint).to_contain_text("bootstrap token")
    expect(hint).to_contain_text("hub_admin_demo_")
    expect(hint).not_to_contain_text("Starts with hub_admin_.")

    issued = browser.admin_token(admin, "viewer", DEMO_TENANT_ID)
    assert issued.startswith("hub_adm_")
    browser.sign_in(page, issued, "/admin/queue")
    expect(page.locator("#who")).to_contain_text(f"viewer · {DEMO_TENANT_ID}")

    bootstrap = contexts()
    browser.sign_in(bootstrap, DEMO_ADMIN_TOKEN, "/admin/queue")
    expect(bootstrap.locator("#who")).to_contain_text("admin · platform")


# --- search and bulk jobs (the API built beside this page) ----------------------------------


def test_a_tab_s_late_answer_never_shows_under_a_search_asked_for_after_it(
    page: Page, api: httpx.Client, local_stack: Any, destination: HttpDestination
) -> None:
    """The tab the page opens on is still loading when the operator searches: the tab's answer,
    arriving last, is dropped instead of being drawn as the search's results."""
    destination.script(Answer(503))
    integration_id = integration(local_stack, destination.url, SLOW)
    waiting = post(api, integration_id)
    wait_for_status(api, waiting, "retry_pending")
    destination.script(Answer(200))
    wanted = f"PO-{uuid.uuid4().hex[:8].upper()}"
    found = post(api, integration(local_stack, destination.url, AUTO), external_id=wanted)
    wait_for_status(api, found, "sent")

    held: list[Any] = []

    def tab_page(url: str) -> bool:
        return "/api/admin/queue?" in url

    page.route(tab_page, lambda route: held.append(route))  # noqa: PLW0108 - answered later
    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/queue?tab=waiting")
    wait_for(lambda: len(held), "the tab's request", sleep=browser.pumping(page))
    search = page.get_by_role("search", name="Find a message")
    search.get_by_label("Find").fill(wanted)
    search.get_by_role("button", name="Search", exact=True).click()
    expect(row(page, found)).to_contain_text("sent")

    for route in held:
        route.continue_()
    page.unroute(tab_page)
    page.wait_for_timeout(1_000)  # time-based on purpose: the late answer has come and gone

    expect(row(page, found)).to_contain_text("sent")
    expect(row(page, waiting)).to_have_count(0)
    expect(page.locator("#queue-results")).to_contain_text(f"found for “{wanted}”")


def test_the_search_box_finds_a_message_by_its_external_id_and_shows_it_as_a_queue_row(
    page: Page, api: httpx.Client, local_stack: Any, destination: HttpDestination
) -> None:
    destination.script(Answer(200))
    integration_id = integration(local_stack, destination.url, AUTO)
    wanted = f"PO-{uuid.uuid4().hex[:8].upper()}"
    message_id = post(api, integration_id, external_id=wanted)
    other = post(api, integration_id, external_id=f"PO-{uuid.uuid4().hex[:8].upper()}")
    wait_for_status(api, message_id, "sent")

    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/queue")
    search = page.get_by_role("search", name="Find a message")
    search.get_by_label("Find").fill(wanted)
    search.get_by_role("button", name="Search", exact=True).click()

    expect(page.locator("#queue-results")).to_contain_text(f"found for “{wanted}”")
    expect(row(page, message_id)).to_contain_text("sent")
    expect(row(page, message_id)).to_contain_text("external_id")  # matched by
    expect(row(page, other)).to_have_count(0)
    assert f"q={wanted}" in page.url
    search.get_by_label("Find").fill("PO-NOTHING-LIKE-IT")
    search.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#queue-results")).to_contain_text("No message matches.")
    search.get_by_role("button", name="Clear search").click()
    expect(page.get_by_role("tab", name=re.compile("Waiting"))).to_have_attribute("aria-selected", "true")


def wait_for_job(admin: httpx.Client, job_id: str, page: Page) -> dict[str, Any]:
    """Polls the admin API until bulk job `job_id` has ended (its view then), while it or the
    stack moves (tests/waiting.py), the `page` open meanwhile."""
    job: dict[str, Any] = wait_for(
        lambda: admin.get(f"/api/admin/bulk-jobs/{job_id}", params={"tenant_id": DEMO_TENANT_ID}).json(),
        f"bulk job {job_id} to end",
        until=lambda view: view.get("state") not in ("running", "cancelling"),
        sleep=browser.pumping(page),
    )
    return job


def test_reprocess_all_matching_runs_a_bulk_job_the_panel_follows(
    page: Page, api: httpx.Client, admin: httpx.Client, local_stack: Any, destination: HttpDestination
) -> None:
    destination.script(Answer(503))
    integration_id = integration(local_stack, destination.url, DEAD)
    dead = [post(api, integration_id) for _ in range(3)]
    for message_id in dead:
        wait_for_status(api, message_id, "dead_letter")
    destination.script(Answer(200))

    browser.sign_in(page, DEMO_ADMIN_TOKEN, f"/admin/queue?tab=dead_letter&integration_id={integration_id}")
    calls = watch(page)
    expect(count_of(page, "dead_letter")).to_have_text("3")
    page.get_by_role("button", name="Reprocess all matching…").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("the Dead-letter tab")
    expect(dialog).to_contain_text(f"integration {integration_id}")
    expect(dialog).to_contain_text("(3 now)")
    dialog.get_by_role("button", name="Start reprocessing").click()

    job = page.locator("section.jobs li.job").first
    expect(job).to_contain_text("Reprocess")
    wait_for_job(admin, str(job.get_attribute("data-job-id")), page)  # the hub first; then the page
    expect(job).to_have_attribute("data-state", "completed")
    expect(job).to_contain_text("matched 3 · done 3 · skipped 0 · failed 0")
    [created] = calls.to("POST", "/api/admin/bulk-jobs")
    assert created.post_data_json == {
        "tenant_id": DEMO_TENANT_ID,
        "action": "reprocess",
        "filter": {"tab": "dead_letter", "integration_id": integration_id},
    }
    assert UUID.match(created.headers["idempotency-key"])
    for message_id in dead:
        wait_for_status(api, message_id, "sent", sleep=browser.pumping(page))
    assert len(destination.requests) == 6  # each message: its failed attempt and one delivery


def test_cancel_all_matching_on_the_waiting_tab_and_a_job_can_be_stopped(
    page: Page, api: httpx.Client, admin: httpx.Client, local_stack: Any, destination: HttpDestination
) -> None:
    destination.script(Answer(503))
    integration_id = integration(local_stack, destination.url, SLOW)
    waiting = [post(api, integration_id) for _ in range(2)]
    for message_id in waiting:
        wait_for_status(api, message_id, "retry_pending")

    browser.sign_in(page, DEMO_ADMIN_TOKEN, f"/admin/queue?tab=waiting&integration_id={integration_id}")
    expect(page.get_by_role("button", name="Reprocess all matching…")).to_have_count(
        0
    )  # waiting: cancel only
    page.get_by_role("button", name="Cancel all matching…").click()
    browser.confirm(page, f"the Waiting tab, integration {integration_id}", "Start cancelling")

    job = page.locator("section.jobs li.job").first
    wait_for_job(admin, str(job.get_attribute("data-job-id")), page)  # the hub first; then the page
    expect(job).to_have_attribute("data-state", "completed")
    expect(job).to_contain_text("done 2")
    for message_id in waiting:
        wait_for_status(api, message_id, "cancelled", sleep=browser.pumping(page))
    expect(job.get_by_role("button", name="Cancel job")).to_have_count(0)  # a finished job has none
