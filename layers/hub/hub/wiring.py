"""Builds use cases with their AWS adapters, once per process (lazily: nothing at import)."""

from __future__ import annotations

from functools import lru_cache

from hub.adapters.alert_claims import DynamoAlertClaimStore
from hub.adapters.certificates import (
    DynamoCertAlertClaims,
    DynamoCertificateRepository,
    KmsCertificateStore,
    NoCertificateStore,
)
from hub.adapters.dynamo.executions import DynamoExecutions
from hub.adapters.dynamo.messages import DynamoMessageRepository
from hub.adapters.dynamo.status_index import DynamoStatusIndex
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.adapters.kms import KmsDataKeys
from hub.adapters.metrics import EmfMetrics
from hub.adapters.scheduler import EventBridgeRetryScheduler
from hub.adapters.ses import SesEmailChannel
from hub.adapters.slack import SlackWebhook
from hub.adapters.sqs import SqsDeadLetterMover, SqsStepQueue
from hub.admin.operations import Lane, Operations
from hub.alerts.notifier import AlertNotifier
from hub.certificates.expiry import CertExpiryAlerter
from hub.certificates.service import CertificateService
from hub.config import settings
from hub.config_cache import CachedConfig
from hub.delivery.http import HttpConnector
from hub.delivery.port import CertificateStore
from hub.delivery.soap import SoapConnector
from hub.domain.tenancy import DestinationProtocol
from hub.errors import ConfigurationError
from hub.ingest.receive import Ingestor
from hub.pipeline.retries import RetryOrchestrator
from hub.pipeline.worker import PipelineWorker
from hub.ports import AlertChannel
from hub.webhooks.receive import WebhookReceiver


@lru_cache(maxsize=1)
def ingestor() -> Ingestor:
    s = settings()
    return Ingestor(
        config_repository(), DynamoMessageRepository(s.table_name), SqsStepQueue(s.pipeline_queue_url), s
    )


@lru_cache(maxsize=1)
def webhook_receiver() -> WebhookReceiver:
    return WebhookReceiver(config_repository(), ingestor())


@lru_cache(maxsize=1)
def pipeline_worker() -> PipelineWorker:
    return build_pipeline_worker()


def retry_scheduler() -> EventBridgeRetryScheduler:
    s = settings()
    if not (s.schedule_group and s.pipeline_queue_arn and s.scheduler_role_arn):
        raise ConfigurationError(
            "retries need HUB_SCHEDULE_GROUP, HUB_PIPELINE_QUEUE_ARN and HUB_SCHEDULER_ROLE_ARN"
        )
    return EventBridgeRetryScheduler(s.schedule_group, s.pipeline_queue_arn, s.scheduler_role_arn)


def build_pipeline_worker() -> PipelineWorker:
    """A new worker with its own connectors (one per Lambda instance)."""
    s = settings()
    certificates: CertificateStore = NoCertificateStore()
    if s.certificate_key_id:
        certificates = KmsCertificateStore(
            DynamoCertificateRepository(s.table_name), KmsDataKeys(s.certificate_key_id)
        )
    return PipelineWorker(
        config_repository(),
        DynamoExecutions(s.table_name),
        SqsStepQueue(s.pipeline_queue_url),
        {
            DestinationProtocol.HTTP: HttpConnector(certificates),
            DestinationProtocol.SOAP: SoapConnector(certificates),
        },
        retries=RetryOrchestrator(retry_scheduler()),
        metrics=EmfMetrics(),
    )


@lru_cache(maxsize=1)
def operations() -> Operations:
    s = settings()
    if not s.pipeline_dlq_url:
        raise ConfigurationError("the admin API needs HUB_PIPELINE_DLQ_URL")
    return Operations(
        DynamoMessageRepository(s.table_name),
        DynamoStatusIndex(s.table_name),
        DynamoExecutions(s.table_name),
        SqsStepQueue(s.pipeline_queue_url),
        config=config_repository(),
        scheduler=retry_scheduler(),
        mover=SqsDeadLetterMover(),
        lanes={
            "pipeline": Lane(work_queue_url=s.pipeline_queue_url, dead_letter_queue_url=s.pipeline_dlq_url)
        },
    )


@lru_cache(maxsize=1)
def alert_notifier() -> AlertNotifier:
    """Slack and email as configured (either may be off). Alarm notifications go to Slack only:
    the alert topic's own email subscription already mails them, and keeps doing so when this
    function is the thing that is broken."""
    s = settings()
    slack: list[AlertChannel] = (
        [SlackWebhook(s.slack_alerts_webhook_url)] if s.slack_alerts_webhook_url else []
    )
    email: list[AlertChannel] = []
    if s.alert_email_to and s.alert_email_from:
        email.append(SesEmailChannel(s.alert_email_from, s.alert_email_to))
    return AlertNotifier(
        DynamoAlertClaimStore(s.table_name),
        dead_letter_channels=[*slack, *email],
        alarm_channels=slack,
        stage=s.stage,
    )


@lru_cache(maxsize=1)
def certificate_service() -> CertificateService:
    s = settings()
    if not s.certificate_key_id:
        raise ConfigurationError("client certificates need HUB_CERTIFICATE_KEY_ID")
    return CertificateService(DynamoCertificateRepository(s.table_name), KmsDataKeys(s.certificate_key_id))


@lru_cache(maxsize=1)
def cert_expiry_alerter() -> CertExpiryAlerter:
    """The daily expiry check: alerts to Slack when configured (else only logged)."""
    s = settings()
    slack: list[AlertChannel] = (
        [SlackWebhook(s.slack_alerts_webhook_url)] if s.slack_alerts_webhook_url else []
    )
    return CertExpiryAlerter(
        DynamoCertificateRepository(s.table_name),
        DynamoCertAlertClaims(s.table_name),
        slack,
        EmfMetrics(),
    )


@lru_cache(maxsize=1)
def config_repository() -> CachedConfig:
    """Tenants, integrations and API keys, remembered for HUB_CONFIG_CACHE_SECONDS."""
    s = settings()
    return CachedConfig(DynamoConfigRepository(s.table_name), s.config_cache_seconds)


def reset() -> None:
    """Forget everything built (tests switch environments between cases)."""
    ingestor.cache_clear()
    webhook_receiver.cache_clear()
    pipeline_worker.cache_clear()
    operations.cache_clear()
    alert_notifier.cache_clear()
    certificate_service.cache_clear()
    cert_expiry_alerter.cache_clear()
    config_repository.cache_clear()
    settings.cache_clear()
