"""E2E tier: the local stack (devstack) of the real template.yaml, over HTTP, on free ports."""

from __future__ import annotations

from collections.abc import Iterator

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
