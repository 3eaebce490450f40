"""The admin API (AdminApiFunction, functions/admin_api): the routers of hub.api.admin - its
guard (tokens, their rate limit, refused-token windows), Idempotency-Key claims, operator
actions and bulk jobs, search and erasure, the Health view, tenants, integrations, connections
(with their certificates, control and test tool), API keys, admin tokens, subscriptions,
callback tokens and the audit log. Operator moves, search and the audit trail are built as the
worker's bulk runner builds them (hub.wiring.common)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from hub.errors import ConfigurationError
from hub.wiring import common
from hub.wiring.common import PipelineRetrySettings
from hub.wiring.registry import once, settings_of

if TYPE_CHECKING:
    from hub.adapters.secrets import SecretValues
    from hub.adapters.webhook_queue import SqsWebhookQueue
    from hub.admin.api_keys import ApiKeyAdmin
    from hub.admin.audit import Audit, AuditLog, AuditTrail
    from hub.admin.bulk import BulkJobs
    from hub.admin.callback_tokens import CallbackTokenAdmin
    from hub.admin.cards import IntegrationCards
    from hub.admin.connection_control import ConnectionControl
    from hub.admin.connections import ConnectionAdmin
    from hub.admin.erasure import Erasure
    from hub.admin.health import Health
    from hub.admin.idempotency import AdminIdempotency
    from hub.admin.integrations import IntegrationAdmin
    from hub.admin.operations import Operations
    from hub.admin.search import MessageSearch
    from hub.admin.subscriptions import SubscriptionAdmin
    from hub.admin.tenants import TenantAdmin
    from hub.admin.token_guard import FailedTokenGuard
    from hub.admin.token_throttle import AdminTokenThrottle
    from hub.admin.tokens import Authenticator, TokenAdmin
    from hub.certificates.service import CertificateService
    from hub.delivery.egress import EgressPolicy
    from hub.delivery.port import Prober
    from hub.delivery.probe import ConnectorTester
    from hub.ports import ConfigRepository


class AdminSettings(PipelineRetrySettings):
    """Besides operator retries (PipelineRetrySettings): the pipeline lane's DLQ (redrive), the
    webhooks lane (replays), and what the Health view reports - the DLQs' depths and where the
    functions' EMF metrics land (Powertools' namespace and service). The bootstrap admin token's
    secret and the KMS key are optional (no bootstrap token; no certificates or Idempotency-Key
    without a key)."""

    pipeline_dlq_url: str = Field(min_length=1)
    webhooks_queue_url: str = Field(min_length=1)
    webhooks_dlq_url: str = Field(min_length=1)
    outbox_dlq_url: str = Field(min_length=1)
    metrics_namespace: str = Field(min_length=1)
    service_name: str = Field(min_length=1)


SETTINGS = AdminSettings
settings = settings_of(SETTINGS, "the admin API")


#: The cold start's check (the handler calls it at import): a missing or malformed variable
#: fails the init, named, instead of the first request.
init = settings


# --- the guard -------------------------------------------------------------------------------------


@once
def failed_token_guard() -> FailedTokenGuard:
    """Refused admin tokens per source address, one window per instance (issue 14)."""
    from hub.admin.token_guard import FailedTokenGuard
    from hub.domain.rate_limit import FailureWindow

    s = settings()
    return FailedTokenGuard(FailureWindow(s.admin_failed_token_limit, s.admin_failed_token_window_seconds))


@once
def admin_token_throttle() -> AdminTokenThrottle:
    """The admin API's per-token buckets, one set per instance (issue 27)."""
    from hub.admin.token_throttle import AdminTokenThrottle
    from hub.domain.rate_limit import Rate

    s = settings()
    return AdminTokenThrottle(Rate(per_second=s.admin_token_rate_per_second, burst=s.admin_token_burst))


def bootstrap_token_sha256() -> str:
    """The bootstrap admin token's SHA-256 from its secret ("" when the stack has none)."""
    import re

    arn = settings().admin_token_secret_arn
    if not arn:
        return ""
    value = secret_values().get(arn).strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", value):
        raise ConfigurationError("the bootstrap admin token secret is not a SHA-256 (64 hex digits)")
    return value


@once
def admin_authenticator() -> Authenticator:
    from hub.adapters.dynamo.admin_tokens import DynamoAdminTokens
    from hub.adapters.dynamo.tenants import DynamoTenants
    from hub.admin.tokens import Authenticator

    table = settings().table_name
    return Authenticator(bootstrap_token_sha256, DynamoAdminTokens(table), DynamoTenants(table))


@once
def admin_idempotency() -> AdminIdempotency:
    """The admin API's Idempotency-Key claims (issue 28): kept answers sealed under the stack's
    key, so a stack without one cannot take the header (nothing is ever kept in clear)."""
    from hub.adapters.dynamo.admin_idempotency import DynamoAdminIdempotency
    from hub.admin.idempotency import AdminIdempotency

    keys = common.data_keys(settings())
    if keys is None:
        raise ConfigurationError("Idempotency-Key on the admin API needs HUB_CERTIFICATE_KEY_ID")
    return AdminIdempotency(DynamoAdminIdempotency(settings().table_name), keys)


# --- messages: operator actions, bulk jobs, search, erasure, health ---------------------------------


@once
def operations() -> Operations:
    from hub.admin.operations import Lane

    s = settings()
    lanes = {"pipeline": Lane(work_queue_url=s.pipeline_queue_url, dead_letter_queue_url=s.pipeline_dlq_url)}
    return common.operations(s, lanes, current_config(), audit_trail())


@once
def bulk_jobs() -> BulkJobs:
    """The admin API's bulk jobs (issue 28): create, show, list, cancel."""
    from hub.adapters.dynamo.bulk_jobs import DynamoBulkJobs
    from hub.adapters.sqs import SqsStepQueue
    from hub.admin.bulk import BulkJobs

    s = settings()
    return BulkJobs(DynamoBulkJobs(s.table_name), SqsStepQueue(s.pipeline_queue_url), audit=_audit())


@once
def erasure() -> Erasure:
    """Erasure (issue 29): the message table's deletes, the search to find a tenant's messages by
    value, the configuration as stored (the tenant exists), the audit log."""
    from hub.adapters.dynamo.erasure import DynamoErasure
    from hub.admin.erasure import Erasure

    return Erasure(DynamoErasure(settings().table_name), message_search(), current_config(), _audit())


@once
def health() -> Health:
    """The admin Health view: the pipeline and webhooks lanes, the outbox publisher's DLQ,
    CloudWatch metrics and GSI1's status partitions."""
    from datetime import timedelta

    from hub.adapters.cloudwatch import CloudWatchMetricReader
    from hub.adapters.dynamo.status_index import DynamoStatusIndex
    from hub.adapters.sqs import SqsQueueGauges
    from hub.admin.health import Health, HealthLane, MetricNames

    s = settings()
    return Health(
        gauges=SqsQueueGauges(),
        metrics=CloudWatchMetricReader(),
        statuses=DynamoStatusIndex(s.table_name),
        names=MetricNames(namespace=s.metrics_namespace, service=s.service_name),
        lanes=(
            HealthLane("pipeline", s.pipeline_queue_url, s.pipeline_dlq_url),
            HealthLane("webhooks", s.webhooks_queue_url, s.webhooks_dlq_url),
        ),
        # The lanes Operations redrives (operations, above).
        redrivable=frozenset({"pipeline"}),
        outbox_dlq_url=s.outbox_dlq_url,
        webhooks_queue_url=s.webhooks_queue_url,
        metrics_cache=timedelta(seconds=s.health_metrics_cache_seconds),
    )


# --- configuration: tenants, integrations, connections, keys, tokens, subscriptions ---------------------


@once
def tenant_admin() -> TenantAdmin:
    from hub.adapters.dynamo.tenants import DynamoTenants
    from hub.admin.tenants import TenantAdmin

    s = settings()
    return TenantAdmin(DynamoTenants(s.table_name), audit=_audit(), retention=s.retention)


@once
def integration_admin() -> IntegrationAdmin:
    from hub.adapters.dynamo.integrations import DynamoIntegrations
    from hub.admin.integrations import IntegrationAdmin

    s = settings()
    return IntegrationAdmin(DynamoIntegrations(s.table_name, common.data_keys(s)), _audit())


@once
def integration_cards() -> IntegrationCards:
    """The integration cards of the operator's page (issue 13): batch reads only."""
    from hub.adapters.dynamo.cards import DynamoCardFacts
    from hub.adapters.dynamo.integrations import DynamoIntegrations
    from hub.admin.cards import IntegrationCards

    s = settings()
    return IntegrationCards(DynamoIntegrations(s.table_name), DynamoCardFacts(s.table_name))


@once
def connection_admin() -> ConnectionAdmin:
    """Connections (admin API), and their test tool over the worker's connectors (httpx, zeep
    and the certificate store load at the first test of their kind)."""
    from hub.adapters.dynamo.connections import DynamoConnections
    from hub.admin.connections import ConnectionAdmin

    s = settings()
    return ConnectionAdmin(
        DynamoConnections(s.table_name, common.data_keys(s)),
        _audit(),
        tester=_connection_tester,
        egress=egress_policy(),
        # Built at the first save that carries a certificate (KMS and cryptography only then).
        certificates=certificate_service,
    )


def _connection_tester() -> ConnectorTester:
    from hub.delivery.lazy import LazyCertificateStore
    from hub.delivery.probe import ConnectorTester
    from hub.domain.tenancy import DestinationProtocol

    s = settings()
    certificates = LazyCertificateStore(lambda: common.certificate_store(s))

    def http() -> Prober:
        return common.http_connector(certificates, egress_policy())

    def soap() -> Prober:
        return common.soap_connector(certificates, egress_policy())

    return ConnectorTester({DestinationProtocol.HTTP: http, DestinationProtocol.SOAP: soap})


@once
def certificate_service() -> CertificateService:
    from hub.adapters.certificates import DynamoCertificateRepository
    from hub.adapters.kms import KmsDataKeys
    from hub.certificates.service import CertificateService

    s = settings()
    if not s.certificate_key_id:
        raise ConfigurationError("client certificates need HUB_CERTIFICATE_KEY_ID")
    return CertificateService(
        DynamoCertificateRepository(s.table_name), KmsDataKeys(s.certificate_key_id), audit=_audit()
    )


@once
def connection_control() -> ConnectionControl:
    """Pause and resume a connection (issue 12)."""
    from hub.adapters.dynamo.connection_state import DynamoConnectionStates
    from hub.adapters.dynamo.connections import DynamoConnections
    from hub.adapters.sqs import SqsStepQueue
    from hub.admin.connection_control import ConnectionControl

    s = settings()
    return ConnectionControl(
        DynamoConnections(s.table_name),
        DynamoConnectionStates(s.table_name),
        SqsStepQueue(s.pipeline_queue_url),
        _audit(),
    )


@once
def callback_token_admin() -> CallbackTokenAdmin:
    from hub.adapters.dynamo.callbacks import DynamoStatusCallbacks
    from hub.adapters.dynamo.connections import DynamoConnections
    from hub.admin.callback_tokens import CallbackTokenAdmin

    table = settings().table_name
    return CallbackTokenAdmin(DynamoConnections(table), DynamoStatusCallbacks(table), _audit())


@once
def api_key_admin() -> ApiKeyAdmin:
    from hub.adapters.dynamo.api_keys import DynamoApiKeys
    from hub.admin.api_keys import ApiKeyAdmin

    return ApiKeyAdmin(DynamoApiKeys(settings().table_name), audit=_audit())


@once
def token_admin() -> TokenAdmin:
    from hub.adapters.dynamo.admin_tokens import DynamoAdminTokens
    from hub.adapters.dynamo.tenants import DynamoTenants
    from hub.admin.tokens import TokenAdmin

    table = settings().table_name
    return TokenAdmin(DynamoAdminTokens(table), DynamoTenants(table), _audit())


@once
def subscription_admin() -> SubscriptionAdmin:
    from hub.adapters.dynamo.subscriptions import DynamoSubscriptions, DynamoWebhookFailures
    from hub.admin.subscriptions import SubscriptionAdmin

    s = settings()

    def queue() -> SqsWebhookQueue:
        from hub.adapters.webhook_queue import SqsWebhookQueue

        return SqsWebhookQueue(s.webhooks_queue_url)

    return SubscriptionAdmin(
        DynamoSubscriptions(s.table_name, common.data_keys(s)),
        DynamoWebhookFailures(s.table_name),
        queue,
        _audit(),
        egress=egress_policy(),
    )


@once
def audit_log() -> AuditLog:
    from hub.adapters.dynamo.tenants import DynamoTenants
    from hub.admin.audit import AuditLog

    return AuditLog(audit_trail(), DynamoTenants(settings().table_name))


# --- kept once, built as other functions build them (hub.wiring.common) -------------------------------


@once
def current_config() -> ConfigRepository:
    """The configuration as stored now, with no cache: what the admin API's views and operator
    actions read (an operator's own save must show at once; admin reads are few). Sealed secrets
    are not opened."""
    return common.config_store(settings(), ())


@once
def message_search() -> MessageSearch:
    """Search (issue 28), the search route's and erasure's."""
    return common.message_search(settings())


@once
def audit_trail() -> AuditTrail:
    return common.audit_trail(settings())


def _audit() -> Audit:
    return common.audit(audit_trail())


@once
def egress_policy() -> EgressPolicy:
    """The one egress policy of this process (template EgressAllowedCidrs): URLs are checked
    against it when they are saved, and a connection's test tool reaches out under it."""
    return common.egress_policy(settings())


@once
def secret_values() -> SecretValues:
    """The bootstrap admin token's secret, kept HUB_SECRETS_CACHE_SECONDS."""
    return common.secret_values(settings())
