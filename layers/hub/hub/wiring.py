"""Builds use cases with their AWS adapters, once per process (lazily: nothing at import).

Each factory imports what it builds, so a function loads only the adapters and libraries its
own routes use (the ingest API never imports zeep, cryptography or httpx; the worker imports a
connector's libraries at its first delivery over that protocol). Keep new imports of adapters
and use cases inside the factory that needs them, never at the top of this module;
`tests/unit/test_architecture.py` checks what each handler loads.

The one thing done at import: the SnapStart hooks are registered with the Lambda runtime when it
has them (`register_snapstart_hooks`, end of this module); after a restore everything built here
is forgotten (`after_restore`).
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from hub.config import Settings, settings
from hub.errors import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from hub.adapters.kms import KmsDataKeys
    from hub.adapters.scheduler import EventBridgeRetryScheduler
    from hub.adapters.secrets import SecretValues
    from hub.adapters.webhook_queue import SqsWebhookQueue
    from hub.admin.api_keys import ApiKeyAdmin
    from hub.admin.audit import Audit, AuditLog, AuditTrail
    from hub.admin.bulk import BulkJobs, BulkRunner
    from hub.admin.callback_tokens import CallbackTokenAdmin
    from hub.admin.cards import IntegrationCards
    from hub.admin.connection_control import ConnectionControl
    from hub.admin.connections import ConnectionAdmin
    from hub.admin.erasure import Erasure
    from hub.admin.health import Health
    from hub.admin.idempotency import AdminIdempotency
    from hub.admin.integrations import IntegrationAdmin
    from hub.admin.operations import Lane, Operations
    from hub.admin.search import MessageSearch
    from hub.admin.subscriptions import SubscriptionAdmin
    from hub.admin.tenants import TenantAdmin
    from hub.admin.token_guard import FailedTokenGuard
    from hub.admin.token_throttle import AdminTokenThrottle
    from hub.admin.tokens import Authenticator, TokenAdmin
    from hub.alerts.notifier import AlertNotifier
    from hub.callbacks.receive import StatusCallbacks
    from hub.certificates.expiry import CertExpiryAlerter
    from hub.certificates.service import CertificateService
    from hub.config_cache import CachedConfig
    from hub.delivery.egress import EgressPolicy
    from hub.delivery.gate import ConnectionGate
    from hub.delivery.http import HttpConnector
    from hub.delivery.port import CertificateStore, Connector, Prober
    from hub.delivery.probe import ConnectorTester
    from hub.delivery.release import Releaser
    from hub.delivery.soap import SoapConnector
    from hub.domain.tenancy import DestinationProtocol
    from hub.ingest.receive import Ingestor
    from hub.ingest.throttle import TenantThrottle
    from hub.outbox.ports import EventSink
    from hub.outbox.publisher import Publisher
    from hub.outbox.webhooks import SubscriptionSink, WebhookSender
    from hub.pipeline.batch import WorkerBatch
    from hub.pipeline.worker import PipelineWorker
    from hub.ports import AlertChannel, ConfigRepository
    from hub.webhooks.receive import WebhookReceiver


@lru_cache(maxsize=1)
def ingestor() -> Ingestor:
    from hub.adapters.dynamo.api_keys import DynamoKeyUse
    from hub.adapters.dynamo.integrations import DynamoReceptions
    from hub.adapters.dynamo.messages import DynamoMessageRepository
    from hub.adapters.sqs import SqsStepQueue
    from hub.ingest.key_usage import KeyUsage
    from hub.ingest.receive import Ingestor
    from hub.ingest.receptions import Receptions

    s = settings()
    return Ingestor(
        config_repository(),
        DynamoMessageRepository(s.table_name),
        SqsStepQueue(s.pipeline_queue_url),
        s,
        usage=KeyUsage(DynamoKeyUse(s.table_name)),
        receptions=Receptions(DynamoReceptions(s.table_name)),
        throttle=tenant_throttle(),
    )


@lru_cache(maxsize=1)
def tenant_throttle() -> TenantThrottle:
    """The partner API's per-tenant token buckets, one set per instance (issue 14): receive-
    message, inbound webhooks, message status and status callbacks share them."""
    from hub.domain.rate_limit import Rate
    from hub.ingest.throttle import TenantThrottle

    s = settings()
    return TenantThrottle(Rate(per_second=s.tenant_rate_per_second, burst=s.tenant_burst))


@lru_cache(maxsize=1)
def failed_token_guard() -> FailedTokenGuard:
    """Refused admin tokens per source address, one window per instance (issue 14)."""
    from hub.admin.token_guard import FailedTokenGuard
    from hub.domain.rate_limit import FailureWindow

    s = settings()
    return FailedTokenGuard(FailureWindow(s.admin_failed_token_limit, s.admin_failed_token_window_seconds))


@lru_cache(maxsize=1)
def admin_token_throttle() -> AdminTokenThrottle:
    """The admin API's per-token buckets, one set per instance (issue 27)."""
    from hub.admin.token_throttle import AdminTokenThrottle
    from hub.domain.rate_limit import Rate

    s = settings()
    return AdminTokenThrottle(Rate(per_second=s.admin_token_rate_per_second, burst=s.admin_token_burst))


@lru_cache(maxsize=1)
def webhook_receiver() -> WebhookReceiver:
    from hub.webhooks.receive import WebhookReceiver

    return WebhookReceiver(webhook_config(), ingestor())


@lru_cache(maxsize=1)
def pipeline_worker() -> PipelineWorker:
    return build_pipeline_worker()


def worker_batch(remaining_ms: Callable[[], int]) -> WorkerBatch:
    """One invocation's batch of the pipeline worker, under a time guard that reads
    `remaining_ms` (the Lambda context's). The worker, the releaser and the bulk runner are
    the process's own, each built at its first use (the bulk runner loads the admin side)."""
    from hub.adapters.metrics import EmfMetrics
    from hub.adapters.sqs import SqsRedelivery
    from hub.pipeline.batch import WorkerBatch
    from hub.pipeline.time_guard import TimeGuard

    s = settings()
    return WorkerBatch(
        TimeGuard(remaining_ms),
        worker=pipeline_worker,
        jobs=releaser,
        pages=bulk_runner,
        redelivery=SqsRedelivery(s.pipeline_queue_url),
        max_receives=s.pipeline_max_receives,
        metrics=EmfMetrics(),
    )


def retry_scheduler() -> EventBridgeRetryScheduler:
    from hub.adapters.scheduler import EventBridgeRetryScheduler

    s = settings()
    if not (s.schedule_group and s.pipeline_queue_arn and s.scheduler_role_arn and s.schedules_dlq_arn):
        raise ConfigurationError(
            "retries need HUB_SCHEDULE_GROUP, HUB_PIPELINE_QUEUE_ARN, HUB_SCHEDULER_ROLE_ARN"
            " and HUB_SCHEDULES_DLQ_ARN"
        )
    return EventBridgeRetryScheduler(
        s.schedule_group, s.pipeline_queue_arn, s.scheduler_role_arn, dead_letter_arn=s.schedules_dlq_arn
    )


def build_pipeline_worker() -> PipelineWorker:
    """A new worker with its own connectors (one per Lambda instance). Each connector, and the
    certificate store, is built at its first use (hub.delivery.lazy)."""
    from hub.adapters.dynamo.executions import DynamoExecutions
    from hub.adapters.metrics import EmfMetrics
    from hub.adapters.sqs import SqsStepQueue
    from hub.delivery.lazy import LazyCertificateStore
    from hub.pipeline.retries import RetryOrchestrator
    from hub.pipeline.worker import PipelineWorker

    s = settings()
    scheduler = retry_scheduler()
    return PipelineWorker(
        delivery_config(),
        DynamoExecutions(s.table_name),
        SqsStepQueue(s.pipeline_queue_url),
        delivery_connectors(LazyCertificateStore(lambda: _certificate_store(s))),
        retries=RetryOrchestrator(scheduler),
        metrics=EmfMetrics(),
        gate=connection_gate(scheduler),
    )


def connection_gate(scheduler: EventBridgeRetryScheduler | None = None) -> ConnectionGate:
    """Pause and circuit breaker in front of each delivery (issue 12), one per worker instance."""
    from datetime import timedelta

    from hub.adapters.dynamo.connection_limits import DynamoConnectionLimits
    from hub.adapters.dynamo.connection_state import DynamoConnectionStates
    from hub.adapters.sqs import SqsStepQueue
    from hub.delivery.breaker import BreakerPolicy
    from hub.delivery.gate import ConnectionGate

    s = settings()
    return ConnectionGate(
        DynamoConnectionStates(s.table_name),
        SqsStepQueue(s.pipeline_queue_url),
        scheduler or retry_scheduler(),
        policy=BreakerPolicy(cooldown=timedelta(seconds=s.breaker_cooldown_seconds)),
        breaker=s.circuit_breaker,
        cache_seconds=s.connection_state_cache_seconds,
        limits=DynamoConnectionLimits(s.table_name),
        # A delivery that frees a slot while held messages wait runs the drain's kick itself.
        run_job=lambda job: releaser().run(job),
    )


@lru_cache(maxsize=1)
def releaser() -> Releaser:
    """The connection jobs of the pipeline queue: release held messages, send the probe."""
    import time

    from hub.adapters.dynamo.connection_limits import DynamoConnectionLimits
    from hub.adapters.dynamo.connection_state import DynamoConnectionStates
    from hub.adapters.dynamo.connections import DynamoConnections
    from hub.adapters.sqs import SqsStepQueue
    from hub.delivery.drain import Drainer
    from hub.delivery.release import Releaser

    s = settings()
    held = DynamoConnectionStates(s.table_name)
    queue = SqsStepQueue(s.pipeline_queue_url)
    drainer = Drainer(
        held,
        DynamoConnectionLimits(s.table_name),
        DynamoConnections(s.table_name),
        queue,
        clock_ms=lambda: int(time.time() * 1000),
    )
    return Releaser(held, queue, rate_per_second=s.release_rate_per_second, drainer=drainer)


@lru_cache(maxsize=1)
def egress_policy() -> EgressPolicy:
    """The one egress policy of this process (template EgressAllowedCidrs): every outbound
    client is built from it, and the admin API checks URLs against it when they are saved."""
    from hub.delivery.egress import EgressPolicy

    return EgressPolicy.from_setting(settings().egress_allowed_cidrs)


def delivery_connectors(certificates: CertificateStore) -> Mapping[DestinationProtocol, Connector]:
    """A connector per protocol, each built at its first delivery: httpx loads with the first
    REST delivery, zeep and lxml with the first SOAP one."""
    from hub.delivery.lazy import LazyConnectors
    from hub.domain.tenancy import DestinationProtocol

    return LazyConnectors(
        {
            DestinationProtocol.HTTP: lambda: _http_connector(certificates),
            DestinationProtocol.SOAP: lambda: _soap_connector(certificates),
        }
    )


def _certificate_store(s: Settings) -> CertificateStore:
    """Client certificates sealed under the stack's KMS key; none when it has no key."""
    from hub.adapters.certificates import (
        DynamoCertificateRepository,
        KmsCertificateStore,
        NoCertificateStore,
    )
    from hub.adapters.kms import KmsDataKeys

    if not s.certificate_key_id:
        return NoCertificateStore()
    return KmsCertificateStore(DynamoCertificateRepository(s.table_name), KmsDataKeys(s.certificate_key_id))


def _http_connector(certificates: CertificateStore) -> HttpConnector:
    from hub.delivery.http import HttpConnector

    return HttpConnector(certificates, egress=egress_policy())


def _soap_connector(certificates: CertificateStore) -> SoapConnector:
    from hub.delivery.soap import SoapConnector

    return SoapConnector(certificates, egress=egress_policy())


@lru_cache(maxsize=1)
def operations() -> Operations:
    from hub.admin.operations import Lane

    s = settings()
    if not s.pipeline_dlq_url:
        raise ConfigurationError("the admin API needs HUB_PIPELINE_DLQ_URL")
    return _operations(
        lanes={
            "pipeline": Lane(work_queue_url=s.pipeline_queue_url, dead_letter_queue_url=s.pipeline_dlq_url)
        }
    )


def _operations(lanes: Mapping[str, Lane]) -> Operations:
    from hub.adapters.dynamo.callbacks import DynamoStatusCallbacks
    from hub.adapters.dynamo.connection_state import DynamoConnectionStates
    from hub.adapters.dynamo.executions import DynamoExecutions
    from hub.adapters.dynamo.messages import DynamoMessageRepository
    from hub.adapters.dynamo.status_index import DynamoStatusIndex
    from hub.adapters.sqs import SqsDeadLetterMover, SqsStepQueue
    from hub.admin.operations import Operations

    s = settings()
    return Operations(
        DynamoMessageRepository(s.table_name),
        DynamoStatusIndex(s.table_name),
        DynamoExecutions(s.table_name),
        SqsStepQueue(s.pipeline_queue_url),
        config=current_config(),
        scheduler=retry_scheduler(),
        mover=SqsDeadLetterMover(),
        lanes=lanes,
        audit=_audit(),
        callbacks=DynamoStatusCallbacks(s.table_name),
        held=DynamoConnectionStates(s.table_name),
    )


@lru_cache(maxsize=1)
def bulk_jobs() -> BulkJobs:
    """The admin API's bulk jobs (issue 28): create, show, list, cancel."""
    from hub.adapters.dynamo.bulk_jobs import DynamoBulkJobs
    from hub.adapters.sqs import SqsStepQueue
    from hub.admin.bulk import BulkJobs

    s = settings()
    return BulkJobs(DynamoBulkJobs(s.table_name), SqsStepQueue(s.pipeline_queue_url), audit=_audit())


@lru_cache(maxsize=1)
def bulk_runner() -> BulkRunner:
    """The pipeline worker's side of bulk jobs: one page per queue message, acting through the
    operator's moves (no lanes: the worker redrives nothing)."""
    from hub.adapters.dynamo.bulk_jobs import DynamoBulkJobs
    from hub.adapters.sqs import SqsStepQueue
    from hub.admin.bulk import BulkRunner

    s = settings()
    return BulkRunner(
        DynamoBulkJobs(s.table_name),
        _operations(lanes={}),
        SqsStepQueue(s.pipeline_queue_url),
        finder=message_search(),
        rate_per_second=s.release_rate_per_second,
    )


@lru_cache(maxsize=1)
def message_search() -> MessageSearch:
    """Search (issue 28): the message table's keys and GSI3; the tenant's integrations as stored
    (their ids and duplicate-key fields name the claims and business keys; no secret opened)."""
    from hub.adapters.dynamo.integrations import DynamoIntegrations
    from hub.adapters.dynamo.search import DynamoMessageSearch
    from hub.admin.search import MessageSearch

    s = settings()
    return MessageSearch(DynamoMessageSearch(s.table_name), DynamoIntegrations(s.table_name))


@lru_cache(maxsize=1)
def erasure() -> Erasure:
    """Erasure (issue 29): the message table's deletes, the search to find a tenant's messages by
    value, the configuration as stored (the tenant exists), the audit log."""
    from hub.adapters.dynamo.erasure import DynamoErasure
    from hub.admin.erasure import Erasure

    return Erasure(DynamoErasure(settings().table_name), message_search(), current_config(), _audit())


@lru_cache(maxsize=1)
def health() -> Health:
    """The admin Health view: the pipeline and webhooks lanes, the outbox publisher's DLQ,
    CloudWatch metrics and GSI1's status partitions."""
    from datetime import timedelta

    from hub.adapters.cloudwatch import CloudWatchMetricReader
    from hub.adapters.dynamo.status_index import DynamoStatusIndex
    from hub.adapters.sqs import SqsQueueGauges
    from hub.admin.health import Health, HealthLane, MetricNames

    s = settings()
    pipeline_dlq, webhooks_queue, webhooks_dlq, outbox_dlq, namespace, service = needed = (
        s.pipeline_dlq_url,
        s.webhooks_queue_url,
        s.webhooks_dlq_url,
        s.outbox_dlq_url,
        s.metrics_namespace,
        s.service_name,
    )
    if not all(needed):
        raise ConfigurationError(
            "the health view needs HUB_PIPELINE_DLQ_URL, HUB_WEBHOOKS_QUEUE_URL, HUB_WEBHOOKS_DLQ_URL, "
            "HUB_OUTBOX_DLQ_URL, POWERTOOLS_METRICS_NAMESPACE and POWERTOOLS_SERVICE_NAME"
        )
    return Health(
        gauges=SqsQueueGauges(),
        metrics=CloudWatchMetricReader(),
        statuses=DynamoStatusIndex(s.table_name),
        names=MetricNames(namespace=str(namespace), service=str(service)),
        lanes=(
            HealthLane("pipeline", s.pipeline_queue_url, str(pipeline_dlq)),
            HealthLane("webhooks", str(webhooks_queue), str(webhooks_dlq)),
        ),
        # The lanes Operations redrives (wiring.operations).
        redrivable=frozenset({"pipeline"}),
        outbox_dlq_url=str(outbox_dlq),
        webhooks_queue_url=str(webhooks_queue),
        metrics_cache=timedelta(seconds=s.health_metrics_cache_seconds),
    )


def _slack(s: Settings) -> list[AlertChannel]:
    """The Slack channel when a webhook URL secret is configured (httpx loads only then). The URL
    is read from Secrets Manager at the first alert, and again once its cache age has passed."""
    arn = s.slack_webhook_secret_arn
    if not arn:
        return []
    from pydantic import SecretStr

    from hub.adapters.slack import SlackWebhook

    return [SlackWebhook(lambda: SecretStr(secret_values().get(arn).strip()), egress_policy())]


@lru_cache(maxsize=1)
def secret_values() -> SecretValues:
    from hub.adapters.secrets import SecretValues

    return SecretValues(settings().secrets_cache_seconds)


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


@lru_cache(maxsize=1)
def admin_idempotency() -> AdminIdempotency:
    """The admin API's Idempotency-Key claims (issue 28): kept answers sealed under the stack's
    key, so a stack without one cannot take the header (nothing is ever kept in clear)."""
    from hub.adapters.dynamo.admin_idempotency import DynamoAdminIdempotency
    from hub.admin.idempotency import AdminIdempotency

    keys = _data_keys()
    if keys is None:
        raise ConfigurationError("Idempotency-Key on the admin API needs HUB_CERTIFICATE_KEY_ID")
    return AdminIdempotency(DynamoAdminIdempotency(settings().table_name), keys)


@lru_cache(maxsize=1)
def admin_authenticator() -> Authenticator:
    from hub.adapters.dynamo.admin_tokens import DynamoAdminTokens
    from hub.adapters.dynamo.tenants import DynamoTenants
    from hub.admin.tokens import Authenticator

    table = settings().table_name
    return Authenticator(bootstrap_token_sha256, DynamoAdminTokens(table), DynamoTenants(table))


@lru_cache(maxsize=1)
def token_admin() -> TokenAdmin:
    from hub.adapters.dynamo.admin_tokens import DynamoAdminTokens
    from hub.adapters.dynamo.tenants import DynamoTenants
    from hub.admin.tokens import TokenAdmin

    table = settings().table_name
    return TokenAdmin(DynamoAdminTokens(table), DynamoTenants(table), _audit())


@lru_cache(maxsize=1)
def audit_log() -> AuditLog:
    from hub.adapters.dynamo.tenants import DynamoTenants
    from hub.admin.audit import AuditLog

    return AuditLog(audit_trail(), DynamoTenants(settings().table_name))


def _audit() -> Audit:
    from hub.admin.audit import Audit

    return Audit(audit_trail())


@lru_cache(maxsize=1)
def alert_notifier() -> AlertNotifier:
    """Slack and email as configured (either may be off). Alarm notifications go to Slack only:
    the alert topic's own email subscription already mails them, and keeps doing so when this
    function is the thing that is broken."""
    from hub.adapters.alert_claims import DynamoAlertClaimStore
    from hub.alerts.notifier import AlertNotifier

    s = settings()
    slack = _slack(s)
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


@lru_cache(maxsize=1)
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


@lru_cache(maxsize=1)
def api_key_admin() -> ApiKeyAdmin:
    from hub.adapters.dynamo.api_keys import DynamoApiKeys
    from hub.admin.api_keys import ApiKeyAdmin

    return ApiKeyAdmin(DynamoApiKeys(settings().table_name), audit=_audit())


@lru_cache(maxsize=1)
def tenant_admin() -> TenantAdmin:
    from hub.adapters.dynamo.tenants import DynamoTenants
    from hub.admin.tenants import TenantAdmin

    s = settings()
    return TenantAdmin(DynamoTenants(s.table_name), audit=_audit(), retention=s.retention)


@lru_cache(maxsize=1)
def integration_admin() -> IntegrationAdmin:
    from hub.adapters.dynamo.integrations import DynamoIntegrations
    from hub.admin.integrations import IntegrationAdmin

    return IntegrationAdmin(DynamoIntegrations(settings().table_name, _data_keys()), _audit())


@lru_cache(maxsize=1)
def integration_cards() -> IntegrationCards:
    """The integration cards of the operator's page (issue 13): batch reads only."""
    from hub.adapters.dynamo.cards import DynamoCardFacts
    from hub.adapters.dynamo.integrations import DynamoIntegrations
    from hub.admin.cards import IntegrationCards

    s = settings()
    return IntegrationCards(DynamoIntegrations(s.table_name), DynamoCardFacts(s.table_name))


@lru_cache(maxsize=1)
def cert_expiry_alerter() -> CertExpiryAlerter:
    """The daily expiry check: alerts to Slack when configured (else only logged)."""
    from hub.adapters.certificates import DynamoCertAlertClaims, DynamoCertificateRepository
    from hub.adapters.metrics import EmfMetrics
    from hub.certificates.expiry import CertExpiryAlerter

    s = settings()
    return CertExpiryAlerter(
        DynamoCertificateRepository(s.table_name),
        DynamoCertAlertClaims(s.table_name),
        _slack(s),
        EmfMetrics(),
    )


@lru_cache(maxsize=1)
def config_repository() -> CachedConfig:
    """Tenants, integrations and API keys, remembered for HUB_CONFIG_CACHE_SECONDS; sealed
    secrets are not opened (stand-ins: receive-message and the admin API need none)."""
    return _cached_config(())


@lru_cache(maxsize=1)
def current_config() -> ConfigRepository:
    """The configuration as stored now, with no cache: what the admin API's views and operator
    actions read (an operator's own save must show at once; admin reads are few). Sealed secrets
    are not opened."""
    return _config_store(())


@lru_cache(maxsize=1)
def webhook_config() -> CachedConfig:
    """The configuration as inbound webhooks read it: webhook secrets opened (one KMS Decrypt
    per integration and cache period, then kept in memory as long as the configuration)."""
    from hub.sealed_config import WEBHOOK_SECRET

    return _cached_config((WEBHOOK_SECRET,))


@lru_cache(maxsize=1)
def delivery_config() -> CachedConfig:
    """The configuration as the worker reads it: destination credentials opened (cached as
    `webhook_config`)."""
    from hub.sealed_config import DESTINATION_CREDENTIAL

    return _cached_config((DESTINATION_CREDENTIAL,))


def _cached_config(opens: tuple[str, ...]) -> CachedConfig:
    from hub.config_cache import CachedConfig

    return CachedConfig(_config_store(opens), settings().config_cache_seconds)


def _config_store(opens: tuple[str, ...]) -> ConfigRepository:
    """The stored configuration, opening the sealed secrets of the purposes `opens` names."""
    from hub.adapters.dynamo.tenancy import DynamoConfigRepository
    from hub.sealed_config import Sealer

    return DynamoConfigRepository(settings().table_name, Sealer(_data_keys(), opens))


def _data_keys() -> KmsDataKeys | None:
    """Envelope encryption under the stack's key (HUB_CERTIFICATE_KEY_ID): client certificates,
    webhook secrets and destination credentials; None when the function has no key."""
    from hub.adapters.kms import KmsDataKeys

    key_id = settings().certificate_key_id
    return KmsDataKeys(key_id) if key_id else None


@lru_cache(maxsize=1)
def connection_admin() -> ConnectionAdmin:
    """Connections (admin API), and their test tool over the worker's connectors (httpx, zeep
    and the certificate store load at the first test of their kind)."""
    from hub.adapters.dynamo.connections import DynamoConnections
    from hub.admin.connections import ConnectionAdmin

    return ConnectionAdmin(
        DynamoConnections(settings().table_name, _data_keys()),
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
    certificates = LazyCertificateStore(lambda: _certificate_store(s))

    def http() -> Prober:
        return _http_connector(certificates)

    def soap() -> Prober:
        return _soap_connector(certificates)

    return ConnectorTester({DestinationProtocol.HTTP: http, DestinationProtocol.SOAP: soap})


@lru_cache(maxsize=1)
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


def reset() -> None:
    """Forget everything built (tests switch environments between cases)."""
    ingestor.cache_clear()
    tenant_throttle.cache_clear()
    failed_token_guard.cache_clear()
    admin_token_throttle.cache_clear()
    admin_idempotency.cache_clear()
    webhook_receiver.cache_clear()
    pipeline_worker.cache_clear()
    releaser.cache_clear()
    operations.cache_clear()
    bulk_jobs.cache_clear()
    bulk_runner.cache_clear()
    message_search.cache_clear()
    erasure.cache_clear()
    alert_notifier.cache_clear()
    certificate_service.cache_clear()
    api_key_admin.cache_clear()
    tenant_admin.cache_clear()
    integration_admin.cache_clear()
    integration_cards.cache_clear()
    cert_expiry_alerter.cache_clear()
    config_repository.cache_clear()
    current_config.cache_clear()
    webhook_config.cache_clear()
    delivery_config.cache_clear()
    secret_values.cache_clear()
    admin_authenticator.cache_clear()
    token_admin.cache_clear()
    audit_log.cache_clear()
    connection_admin.cache_clear()
    subscription_sink.cache_clear()
    webhook_sender.cache_clear()
    subscription_admin.cache_clear()
    connection_control.cache_clear()
    audit_trail.cache_clear()
    outbox_publisher.cache_clear()
    status_callbacks.cache_clear()
    callback_token_admin.cache_clear()
    health.cache_clear()
    egress_policy.cache_clear()
    settings.cache_clear()


@lru_cache(maxsize=1)
def audit_trail() -> AuditTrail:
    from hub.adapters.dynamo.audit import DynamoAuditTrail

    return DynamoAuditTrail(settings().table_name)


@lru_cache(maxsize=1)
def outbox_publisher() -> Publisher:
    from hub.outbox.publisher import Publisher

    return Publisher(outbox_sinks())


def outbox_sinks() -> list[EventSink]:
    """Where the publisher hands events: outbound webhook subscriptions, then the EventBridge
    bus (when the stack has one)."""
    s = settings()
    sinks: list[EventSink] = [subscription_sink()]
    if s.event_bus_name:
        from hub.adapters.event_bus import EventBridgeSink

        sinks.append(EventBridgeSink(s.event_bus_name, s.bus_event_types.split(",")))
    return sinks


# --- issue 12: outbound webhooks ---------------------------------------------------------------


def _webhooks_queue_url() -> str:
    url = settings().webhooks_queue_url
    if not url:
        raise ConfigurationError("outbound webhooks need HUB_WEBHOOKS_QUEUE_URL")
    return url


@lru_cache(maxsize=1)
def subscription_sink() -> SubscriptionSink:
    """Events to webhook jobs: a tenant's subscriptions remembered for the config cache time."""
    from hub.adapters.dynamo.subscriptions import DynamoSubscriptions
    from hub.adapters.webhook_queue import SqsWebhookQueue
    from hub.outbox.webhooks import SubscriptionSink

    s = settings()
    return SubscriptionSink(
        DynamoSubscriptions(s.table_name), SqsWebhookQueue(_webhooks_queue_url()), s.config_cache_seconds
    )


@lru_cache(maxsize=1)
def webhook_sender() -> WebhookSender:
    """The webhooks lane's consumer: subscriptions with their secrets opened (cached), httpx,
    retries on EventBridge Scheduler back to the webhooks queue."""
    from hub.adapters.dynamo.subscriptions import DynamoSubscriptions, DynamoWebhookFailures
    from hub.adapters.scheduler import EventBridgeRetryScheduler
    from hub.delivery.webhook import HttpWebhookPoster
    from hub.outbox.webhooks import CachedSubscriptions, WebhookSender

    s = settings()
    if not (s.schedule_group and s.webhooks_queue_arn and s.scheduler_role_arn and s.schedules_dlq_arn):
        raise ConfigurationError(
            "the webhook sender needs HUB_SCHEDULE_GROUP, HUB_WEBHOOKS_QUEUE_ARN, HUB_SCHEDULER_ROLE_ARN"
            " and HUB_SCHEDULES_DLQ_ARN"
        )
    source = DynamoSubscriptions(s.table_name, _data_keys(), opens=True)
    return WebhookSender(
        CachedSubscriptions(source, s.config_cache_seconds),
        HttpWebhookPoster(egress_policy()),
        EventBridgeRetryScheduler(
            s.schedule_group, s.webhooks_queue_arn, s.scheduler_role_arn, dead_letter_arn=s.schedules_dlq_arn
        ),
        DynamoWebhookFailures(s.table_name),
    )


@lru_cache(maxsize=1)
def subscription_admin() -> SubscriptionAdmin:
    from hub.adapters.dynamo.subscriptions import DynamoSubscriptions, DynamoWebhookFailures
    from hub.admin.subscriptions import SubscriptionAdmin

    def queue() -> SqsWebhookQueue:
        from hub.adapters.webhook_queue import SqsWebhookQueue

        return SqsWebhookQueue(_webhooks_queue_url())

    table = settings().table_name
    return SubscriptionAdmin(
        DynamoSubscriptions(table, _data_keys()),
        DynamoWebhookFailures(table),
        queue,
        _audit(),
        egress=egress_policy(),
    )


# --- issue 12: delivery-status callbacks ---------------------------------------------------------


@lru_cache(maxsize=1)
def status_callbacks() -> StatusCallbacks:
    """The partner API's status callbacks: integrations from the configuration cache (no secret
    opened), the message, the connection's token hash and the callback records from the table."""
    from hub.adapters.dynamo.callbacks import DynamoStatusCallbacks
    from hub.callbacks.receive import StatusCallbacks

    return StatusCallbacks(
        config_repository(), DynamoStatusCallbacks(settings().table_name), throttle=tenant_throttle()
    )


@lru_cache(maxsize=1)
def callback_token_admin() -> CallbackTokenAdmin:
    from hub.adapters.dynamo.callbacks import DynamoStatusCallbacks
    from hub.adapters.dynamo.connections import DynamoConnections
    from hub.admin.callback_tokens import CallbackTokenAdmin

    table = settings().table_name
    return CallbackTokenAdmin(DynamoConnections(table), DynamoStatusCallbacks(table), _audit())


# --- issue 29: SnapStart ---------------------------------------------------------------------------


def before_snapshot() -> None:
    """Run by the Lambda runtime before it snapshots an initialized environment (SnapStart on):
    loads boto3 and botocore, so an environment resumed from the snapshot does not import them
    again at its first invocation. Modules only: no session, client, credential or connection."""
    import hub.adapters.aws  # noqa: F401


def after_restore() -> None:
    """Run by the Lambda runtime after it resumes an environment from a SnapStart snapshot.
    Every environment resumed from one snapshot starts with the same memory, so what must differ
    per environment, or is stale by now, is dropped; the first invocation builds what it uses, as
    on a cold start:

    - `random`'s generator is re-seeded from the OS (retry and lock-wait jitter would otherwise be
      the same sequence in every environment: retries in step). Ids and tokens come from
      `os.urandom` and `secrets`, which the restored kernel already makes unique;
    - every use case built so far (`reset`), with the caches they hold - configuration, secrets,
      connection states, rate-limit buckets - whose ages count on a clock the snapshot froze,
      and the settings;
    - boto3's session, its clients with their connection pools (cut at the snapshot) and the
      credentials it resolved (possibly expired by the restore)."""
    from hub.adapters.aws import reset_clients

    random.seed()
    reset()
    reset_clients()


def register_snapstart_hooks(runtime: Any = None) -> bool:
    """Registers `before_snapshot` and `after_restore` with the Lambda runtime's SnapStart hooks
    (`snapshot_restore_py`, present in Lambda's Python runtimes only; `runtime` stands in for it
    in tests). Called when this module loads, which every handler's import does; the hooks run
    only on a function with SnapStart on. Returns whether they were registered."""
    hooks = runtime if runtime is not None else _snapstart_runtime()
    if hooks is None:
        return False
    hooks.register_before_snapshot(before_snapshot)
    hooks.register_after_restore(after_restore)
    return True


def _snapstart_runtime() -> Any:
    try:
        import snapshot_restore_py
    except ImportError:  # not in Lambda: no snapshots
        return None
    return snapshot_restore_py


register_snapstart_hooks()
