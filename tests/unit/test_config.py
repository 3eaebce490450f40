"""Settings: parsed once from the environment the template sets; alert settings are optional."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hub.config import settings
from hub.errors import ConfigurationError

SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:slack-AbCdEf"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HUB_TABLE_NAME", "table")
    monkeypatch.setenv("HUB_PIPELINE_QUEUE_URL", "https://sqs/queue")
    for name in (
        "HUB_SLACK_WEBHOOK_SECRET_ARN",
        "HUB_ADMIN_TOKEN_SECRET_ARN",
        "HUB_ALERT_EMAIL",
        "HUB_ALERT_EMAIL_FROM",
        "HUB_STAGE",
    ):
        monkeypatch.delenv(name, raising=False)
    settings.cache_clear()
    yield
    settings.cache_clear()


def test_alerts_are_off_when_the_template_parameters_are_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "HUB_SLACK_WEBHOOK_SECRET_ARN",
        "HUB_ADMIN_TOKEN_SECRET_ARN",
        "HUB_ALERT_EMAIL",
        "HUB_ALERT_EMAIL_FROM",
    ):
        monkeypatch.setenv(name, "")

    s = settings()

    assert (s.slack_webhook_secret_arn, s.alert_email_to, s.alert_email_from) == (None, None, None)
    assert s.admin_token_secret_arn is None


def test_secrets_are_named_by_their_arn_never_given_in_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HUB_SLACK_WEBHOOK_SECRET_ARN", SECRET_ARN)
    monkeypatch.setenv("HUB_STAGE", "prod")

    s = settings()

    assert s.slack_webhook_secret_arn == SECRET_ARN
    assert s.secrets_cache_seconds == 300
    assert s.stage == "prod"


@pytest.mark.parametrize("given", ["HUB_ALERT_EMAIL", "HUB_ALERT_EMAIL_FROM"])
def test_half_an_email_configuration_is_refused_without_echoing_the_environment(
    monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    monkeypatch.setenv(given, "ops@example.com")
    monkeypatch.setenv("HUB_SLACK_WEBHOOK_SECRET_ARN", SECRET_ARN)

    with pytest.raises(ConfigurationError) as caught:
        settings()

    assert "HUB_ALERT_EMAIL_FROM" in caught.value.message
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    assert "ops@example.com" not in str(caught.value)


def test_a_missing_table_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUB_TABLE_NAME")

    with pytest.raises(ConfigurationError, match="HUB_TABLE_NAME"):
        settings()


def test_retention_defaults_are_a_week_of_payload_and_a_month_of_message() -> None:
    s = settings()

    assert (s.payload_retention_days, s.message_retention_days) == (7, 30)
    assert (s.retention.payload_days, s.retention.message_days) == (7, 30)


@pytest.mark.parametrize(
    ("payload", "message", "named"),
    [
        ("31", "30", "HUB_PAYLOAD_RETENTION_DAYS at most HUB_MESSAGE_RETENTION_DAYS"),
        ("0", "30", "HUB_PAYLOAD_RETENTION_DAYS"),
        ("7", "3651", "HUB_MESSAGE_RETENTION_DAYS"),
    ],
)
def test_a_payload_kept_longer_than_its_message_or_out_of_bounds_is_refused(
    monkeypatch: pytest.MonkeyPatch, payload: str, message: str, named: str
) -> None:
    monkeypatch.setenv("HUB_PAYLOAD_RETENTION_DAYS", payload)
    monkeypatch.setenv("HUB_MESSAGE_RETENTION_DAYS", message)

    with pytest.raises(ConfigurationError) as caught:
        settings()

    assert named in caught.value.message
