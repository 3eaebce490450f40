"""Browser tests' harness: Playwright for Python driving Debian's Chromium (`apt-get install
chromium`, which `.ci/run` does). Playwright's own browser download cannot work on these
machines, so the tests launch the system browser by path; without it (or without the
playwright package) they are skipped with the reason printed in pytest's summary."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx
    from playwright.sync_api import Browser, Page

#: The system Chromium (Debian's package); HUB_CHROMIUM points elsewhere.
CHROMIUM = os.environ.get("HUB_CHROMIUM", "/usr/bin/chromium")
#: Flags for a root, offline, headless Chromium: no sandbox (root in a container), and nothing
#: that phones home (this machine's network is closed; those connections fail by the dozen).
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
#: Where tests keep the screenshots shown in docs/operator-page.md (`make screenshots`); unset: none kept.
SCREENSHOTS = os.environ.get("HUB_SCREENSHOTS")


def unavailable() -> str | None:
    """Why browser tests cannot run here, or None."""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run installs it)"
    try:
        import playwright.sync_api  # noqa: F401, PLC0415
    except ImportError:
        return "the playwright package is not installed (make install)"
    return None


@contextmanager
def chromium() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_ARGS)
        )
        try:
            yield browser
        finally:
            browser.close()


def pumping(page: Page) -> Callable[[float], None]:
    """A `sleep` for tests/waiting.py's waits while a page is open: Playwright's sync API runs
    the page's route handlers and event listeners only inside its own calls, so a plain
    time.sleep would hold back a request the page makes meanwhile."""
    return lambda seconds: page.wait_for_timeout(seconds * 1000)


def screenshot(page: Page, name: str) -> None:
    """Keeps a full-page screenshot as docs material when HUB_SCREENSHOTS names a folder."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=True)


def sign_in(page: Page, token: str, path: str) -> None:
    """Opens `path` of the page and signs in with `token` (the page then shows who it is)."""
    from playwright.sync_api import expect  # noqa: PLC0415

    page.goto(path)
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#who")).to_be_visible()


def confirm(page: Page, expected: str, button: str, *, then: str | None = None) -> None:
    """Answers the page's open question (it shows `expected`) with `button`; the dialog closes,
    or asks `then` next (it may close and open again faster than a loaded machine looks, so the
    next question is awaited, not the closing)."""
    from playwright.sync_api import expect  # noqa: PLC0415

    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(expected)
    dialog.get_by_role("button", name=button).click()
    if then is None:
        expect(dialog).to_be_hidden()
    else:
        expect(dialog).to_contain_text(then)


def admin_token(admin: httpx.Client, role: str, tenant_id: str) -> str:
    """A new admin token of `tenant_id` with `role`, minted over the admin API."""
    import uuid  # noqa: PLC0415

    answer = admin.post(
        "/api/admin/tokens",
        json={"label": f"page-{role}-{uuid.uuid4().hex[:6]}", "role": role, "tenant_id": tenant_id},
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["token"])
