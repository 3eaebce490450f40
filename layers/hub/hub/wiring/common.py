"""How more than one function builds the same things: the stored configuration and its cached
views, envelope encryption's data keys, the egress policy, Secrets Manager values and the Slack
channel, the delivery connectors and their certificate store, the retry scheduler of the
pipeline queue, and the operator's side the admin API and the worker's bulk runner share
(operations, search, the audit trail).

Nothing here is kept: each builder takes the settings of the function that calls it (and what
else it needs), and that function's module keeps what must be one per process (`@once`). So a
function's graph - what it keeps, from which settings - reads in its own module, and a process
validates one settings model, its function's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from hub.config import Settings

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from hub.adapters.kms import KmsDataKeys
    from hub.adapters.scheduler import EventBridgeRetryScheduler
    from hub.adapters.secrets import SecretValues
    from hub.admin.audit import Audit, AuditTrail
    from hub.admin.operations import Lane, Operations
    from hub.admin.search import MessageSearch
    from hub.config_cache import CachedConfig
    from hub.delivery.egress import EgressPolicy
    from hub.delivery.http import HttpConnector
    from hub.delivery.port import CertificateStore
    from hub.delivery.soap import SoapConnector
    from hub.ports import AlertChannel, ConfigRepository


class PipelineRetrySettings(Settings):
    """Delayed retries of pipeline steps on EventBridge Scheduler (the worker's, and the admin
    API's operator retries): the group, the queue and role its schedules target, and where
    Scheduler puts a retry it could not deliver (a retry that could fail silently is a
    deployment error, not a default)."""

    schedule_group: str = Field(min_length=1)
    pipeline_queue_arn: str = Field(min_length=1)
    scheduler_role_arn: str = Field(min_length=1)
    schedules_dlq_arn: str = Field(min_length=1)


# --- the configuration ---------------------------------------------------------------------------


def cached_config(s: Settings, opens: tuple[str, ...]) -> CachedConfig:
    """The stored configuration, remembered for HUB_CONFIG_CACHE_SECONDS."""
    from hub.config_cache import CachedConfig

    return CachedConfig(config_store(s, opens), s.config_cache_seconds)


def config_store(s: Settings, opens: tuple[str, ...]) -> ConfigRepository:
    """The stored configuration, opening the sealed secrets of the purposes `opens` names."""
    from hub.adapters.dynamo.tenancy import DynamoConfigRepository
    from hub.sealed_config import Sealer

    return DynamoConfigRepository(s.table_name, Sealer(data_keys(s), opens))


def data_keys(s: Settings) -> KmsDataKeys | None:
    """Envelope encryption under the stack's key (HUB_CERTIFICATE_KEY_ID): client certificates,
    webhook secrets and destination credentials; None when the function has no key."""
    from hub.adapters.kms import KmsDataKeys

    return KmsDataKeys(s.certificate_key_id) if s.certificate_key_id else None


# --- outbound: egress, secrets, Slack --------------------------------------------------------------


def egress_policy(s: Settings) -> EgressPolicy:
    """The egress policy (template EgressAllowedCidrs): every outbound client is built from it,
    and the admin API checks URLs against it when they are saved. One per process: a function
    keeps it (`@once`)."""
    from hub.delivery.egress import EgressPolicy

    return EgressPolicy.from_setting(s.egress_allowed_cidrs)


def secret_values(s: Settings) -> SecretValues:
    """Values read from Secrets Manager, each kept HUB_SECRETS_CACHE_SECONDS. One per process: a
    function keeps it (`@once`)."""
    from hub.adapters.secrets import SecretValues

    return SecretValues(s.secrets_cache_seconds)


def slack(s: Settings, secrets: Callable[[], SecretValues], egress: EgressPolicy) -> list[AlertChannel]:
    """The Slack channel when a webhook URL secret is configured (httpx loads only then). The URL
    is read from Secrets Manager (`secrets`, the function's) at the first alert, and again once
    its cache age has passed."""
    arn = s.slack_webhook_secret_arn
    if not arn:
        return []
    from pydantic import SecretStr

    from hub.adapters.slack import SlackWebhook

    def url() -> SecretStr:
        values: SecretValues = secrets()  # typed: the IAM scan follows `.get` to Secrets Manager
        return SecretStr(values.get(arn).strip())

    return [SlackWebhook(url, egress)]


# --- delivery connectors ---------------------------------------------------------------------------


def certificate_store(s: Settings) -> CertificateStore:
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


def http_connector(certificates: CertificateStore, egress: EgressPolicy) -> HttpConnector:
    from hub.delivery.http import HttpConnector

    return HttpConnector(certificates, egress=egress)


def soap_connector(certificates: CertificateStore, egress: EgressPolicy) -> SoapConnector:
    from hub.delivery.soap import SoapConnector

    return SoapConnector(certificates, egress=egress)


# --- retries and the operator's moves ----------------------------------------------------------------


def retry_scheduler(s: PipelineRetrySettings) -> EventBridgeRetryScheduler:
    """Retries of pipeline steps: schedules in the stack's group, sending to the pipeline queue."""
    from hub.adapters.scheduler import EventBridgeRetryScheduler

    return EventBridgeRetryScheduler(
        s.schedule_group, s.pipeline_queue_arn, s.scheduler_role_arn, dead_letter_arn=s.schedules_dlq_arn
    )


def operations(
    s: PipelineRetrySettings, lanes: Mapping[str, Lane], config: ConfigRepository, trail: AuditTrail
) -> Operations:
    """The operator's moves on messages: the admin API's (with the lanes it redrives) and the
    worker's bulk runner's (none: the worker redrives nothing). `config` is the configuration
    as stored now (`config_store` opening nothing), `trail` the function's audit trail."""
    from hub.adapters.dynamo.callbacks import DynamoStatusCallbacks
    from hub.adapters.dynamo.connection_state import DynamoConnectionStates
    from hub.adapters.dynamo.executions import DynamoExecutions
    from hub.adapters.dynamo.messages import DynamoMessageRepository
    from hub.adapters.dynamo.status_index import DynamoStatusIndex
    from hub.adapters.sqs import SqsDeadLetterMover, SqsStepQueue
    from hub.admin.operations import Operations

    return Operations(
        DynamoMessageRepository(s.table_name),
        DynamoStatusIndex(s.table_name),
        DynamoExecutions(s.table_name),
        SqsStepQueue(s.pipeline_queue_url),
        config=config,
        scheduler=retry_scheduler(s),
        mover=SqsDeadLetterMover(),
        lanes=lanes,
        audit=audit(trail),
        callbacks=DynamoStatusCallbacks(s.table_name),
        held=DynamoConnectionStates(s.table_name),
    )


def message_search(s: Settings) -> MessageSearch:
    """Search (issue 28): the message table's keys and GSI3; the tenant's integrations as stored
    (their ids and duplicate-key fields name the claims and business keys; no secret opened)."""
    from hub.adapters.dynamo.integrations import DynamoIntegrations
    from hub.adapters.dynamo.search import DynamoMessageSearch
    from hub.admin.search import MessageSearch

    return MessageSearch(DynamoMessageSearch(s.table_name), DynamoIntegrations(s.table_name))


def audit_trail(s: Settings) -> AuditTrail:
    from hub.adapters.dynamo.audit import DynamoAuditTrail

    return DynamoAuditTrail(s.table_name)


def audit(trail: AuditTrail) -> Audit:
    from hub.admin.audit import Audit

    return Audit(trail)
