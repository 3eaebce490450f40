"""Settings: parsed once from the environment the template sets; alert settings are optional."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hub.config import settings
from hub.errors import ConfigurationError

WEBHOOK = "https://hooks.slack.com/services/T000/B000/very-secret-token"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HUB_TABLE_NAME", "table")
    monkeypatch.setenv("HUB_PIPELINE_QUEUE_URL", "https://sqs/queue")
    for name in ("SLACK_ALERTS_WEBHOOK_URL", "HUB_ALERT_EMAIL", "HUB_ALERT_EMAIL_FROM", "HUB_STAGE"):
        monkeypatch.delenv(name, raising=False)
    settings.cache_clear()
    yield
    settings.cache_clear()


def test_alerts_are_off_when_the_template_parameters_are_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SLACK_ALERTS_WEBHOOK_URL", "HUB_ALERT_EMAIL", "HUB_ALERT_EMAIL_FROM"):
        monkeypatch.setenv(name, "")

    s = settings()

    assert (s.slack_alerts_webhook_url, s.alert_email_to, s.alert_email_from) == (None, None, None)


def test_the_webhook_url_is_kept_as_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_ALERTS_WEBHOOK_URL", WEBHOOK)
    monkeypatch.setenv("HUB_STAGE", "prod")

    s = settings()

    assert s.slack_alerts_webhook_url is not None
    assert s.slack_alerts_webhook_url.get_secret_value() == WEBHOOK
    assert "very-secret-token" not in repr(s)
    assert "very-secret-token" not in str(s)
    assert s.stage == "prod"


@pytest.mark.parametrize("given", ["HUB_ALERT_EMAIL", "HUB_ALERT_EMAIL_FROM"])
def test_half_an_email_configuration_is_refused_without_echoing_the_environment(
    monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    monkeypatch.setenv(given, "ops@example.com")
    monkeypatch.setenv("SLACK_ALERTS_WEBHOOK_URL", WEBHOOK)

    with pytest.raises(ConfigurationError) as caught:
        settings()

    assert "HUB_ALERT_EMAIL_FROM" in caught.value.message
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    assert "very-secret-token" not in str(caught.value)


def test_a_missing_table_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUB_TABLE_NAME")

    with pytest.raises(ConfigurationError, match="HUB_TABLE_NAME"):
        settings()
