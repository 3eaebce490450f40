"""E2E tier: the local stack (devstack) of the real template.yaml, over HTTP, on free ports."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from devstack.demo import DEMO_ADMIN_TOKEN, DEMO_API_KEY, parameter_overrides, seed
from devstack.stack import LocalStack
from tests.aws import function_names, local_stack_on_free_ports
from tests.destinations import HttpDestination

ALERT_TO = "ops@example.com"
ALERT_FROM = "alerts@example.com"


@pytest.fixture(scope="module")
def slack() -> Iterator[HttpDestination]:
    """A local receiver standing in for the Slack incoming webhook (the stack's
    SlackAlertsWebhookUrl): it must exist before the stack, whose functions read it at start."""
    with HttpDestination() as receiver:
        yield receiver


# Module scope, not package: tests/e2e is not a package of its own, so a "package" fixture
# would outlive it and run beside other stacks in this process (moto's state is per process).
@pytest.fixture(scope="module")
def local_stack(slack: HttpDestination) -> Iterator[LocalStack]:
    overrides = {
        **parameter_overrides(),
        "SlackAlertsWebhookUrl": slack.url,
        "AlertEmail": ALERT_TO,
        "AlertEmailFrom": ALERT_FROM,
    }
    # These tests rewrite the demo integration between cases: no configuration cache, so each
    # case sees its own at once (the cache itself is tested in the integration tier).
    # Nor the Health view's metrics cache (issue 13): a case polls it for a metric to arrive.
    no_cache = {
        name: {"HUB_CONFIG_CACHE_SECONDS": "0", "HUB_HEALTH_METRICS_CACHE_SECONDS": "0"}
        for name in function_names()
    }
    with local_stack_on_free_ports(
        stack_name="hub-e2e", parameter_overrides=overrides, env_overrides=no_cache
    ) as stack:
        # SES sends only from a verified identity (on moto as on AWS).
        stack.client("ses").verify_email_identity(EmailAddress=ALERT_FROM)
        seed(stack)
        yield stack


@pytest.fixture
def api(local_stack: LocalStack) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {DEMO_API_KEY}"}
    with httpx.Client(base_url=local_stack.api_url, headers=headers, timeout=30, trust_env=False) as client:
        yield client


@pytest.fixture
def admin(local_stack: LocalStack) -> Iterator[httpx.Client]:
    """The admin API (its Function URL) with the demo admin token."""
    headers = {"Authorization": f"Bearer {DEMO_ADMIN_TOKEN}"}
    url = local_stack.function_urls["AdminApiFunction"]
    with httpx.Client(base_url=url, headers=headers, timeout=30, trust_env=False) as client:
        yield client


# --- The operator's page in a real browser (tests/e2e/test_admin_page*.py) -------------------
# Used only by modules that skip first when Chromium or Playwright is missing (tests/browser.py).

#: API refusals a browser test provokes show as failed resources in Chromium's console.
_PROVOKED = re.compile(r"status of (401|403|404|409|412|422)")


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import expect  # noqa: PLC0415 - only where the module did not skip

    from tests import browser  # noqa: PLC0415

    # The local stack shares two cores with the rest of the suite: an answer can take seconds.
    expect.set_options(timeout=15_000)
    with browser.chromium() as launched:
        yield launched
    expect.set_options(timeout=5_000)


@pytest.fixture
def admin_url(local_stack: LocalStack) -> str:
    return str(local_stack.function_urls["AdminApiFunction"]).rstrip("/")


@pytest.fixture
def contexts(chromium: Any, admin_url: str) -> Iterator[Callable[[], Any]]:
    """Opens fresh browser contexts (each its own sessionStorage) on the admin Function URL; at
    the end, no page had a script error, a CSP violation or a console error beyond the refusals
    the test provoked."""
    errors: list[str] = []
    opened: list[Any] = []

    def open_page() -> Any:
        context = chromium.new_context(base_url=admin_url, viewport={"width": 1360, "height": 900})
        opened.append(context)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        return page

    yield open_page
    for context in opened:
        context.close()
    assert [e for e in errors if not _PROVOKED.search(e)] == []


@pytest.fixture
def page(contexts: Callable[[], Any]) -> Any:
    return contexts()
