"""The alert notifier (AlertNotifierFunction, functions/alert_notifier): dead letters and
CloudWatch alarm notifications to Slack and email, each optional (an empty template parameter
turns it off). It needs only the settings every function has."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hub.config import Settings
from hub.wiring import common
from hub.wiring.registry import once, settings_of

if TYPE_CHECKING:
    from hub.adapters.secrets import SecretValues
    from hub.alerts.notifier import AlertNotifier
    from hub.delivery.egress import EgressPolicy
    from hub.ports import AlertChannel

SETTINGS = Settings
settings = settings_of(SETTINGS, "the alert notifier")


#: The cold start's check (the handler calls it at import): a missing or malformed variable
#: fails the init, named, instead of the first request.
init = settings


@once
def alert_notifier() -> AlertNotifier:
    """Slack and email as configured (either may be off). Alarm notifications go to Slack only:
    the alert topic's own email subscription already mails them, and keeps doing so when this
    function is the thing that is broken."""
    from hub.adapters.alert_claims import DynamoAlertClaimStore
    from hub.alerts.notifier import AlertNotifier

    s = settings()
    slack = common.slack(s, secret_values, egress_policy())
    email: list[AlertChannel] = []
    if s.alert_email_to and s.alert_email_from:
        from hub.adapters.ses import SesEmailChannel

        email.append(SesEmailChannel(s.alert_email_from, s.alert_email_to))
    return AlertNotifier(
        DynamoAlertClaimStore(s.table_name),
        dead_letter_channels=[*slack, *email],
        alarm_channels=slack,
        stage=s.stage,
    )


@once
def secret_values() -> SecretValues:
    """Secrets Manager values (the alert notifier's Slack URL), kept HUB_SECRETS_CACHE_SECONDS."""
    return common.secret_values(settings())


@once
def egress_policy() -> EgressPolicy:
    """The one egress policy of this process (template EgressAllowedCidrs): Slack's."""
    return common.egress_policy(settings())
