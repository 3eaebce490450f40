"""The daily client-certificate expiry check (CertExpiryFunction, functions/cert_expiry): alerts
to Slack when configured (else only logged). It needs only the settings every function has."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hub.config import Settings
from hub.wiring import common
from hub.wiring.registry import once, settings_of

if TYPE_CHECKING:
    from hub.adapters.secrets import SecretValues
    from hub.certificates.expiry import CertExpiryAlerter
    from hub.delivery.egress import EgressPolicy

SETTINGS = Settings
settings = settings_of(SETTINGS, "the certificate expiry check")


#: The cold start's check (the handler calls it at import): a missing or malformed variable
#: fails the init, named, instead of the first request.
init = settings


@once
def cert_expiry_alerter() -> CertExpiryAlerter:
    """The daily expiry check: alerts to Slack when configured (else only logged)."""
    from hub.adapters.certificates import DynamoCertAlertClaims, DynamoCertificateRepository
    from hub.adapters.metrics import EmfMetrics
    from hub.certificates.expiry import CertExpiryAlerter

    s = settings()
    return CertExpiryAlerter(
        DynamoCertificateRepository(s.table_name),
        DynamoCertAlertClaims(s.table_name),
        common.slack(s, secret_values, egress_policy()),
        EmfMetrics(),
    )


@once
def secret_values() -> SecretValues:
    """Secrets Manager values (the expiry check's Slack URL), kept HUB_SECRETS_CACHE_SECONDS."""
    return common.secret_values(settings())


@once
def egress_policy() -> EgressPolicy:
    """The one egress policy of this process (template EgressAllowedCidrs): Slack's."""
    return common.egress_policy(settings())
