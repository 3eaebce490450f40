"""What more than one function builds the same way: the stored configuration and its cached
views, envelope encryption's data keys, the egress policy, Secrets Manager values and the Slack
channel, the delivery connectors and their certificate store, the retry scheduler of the
pipeline queue, and the operator's side the admin API and the worker's bulk runner share
(operations, search, the audit trail).

Builders here read the process-wide `hub.config.settings()` (what every function has), or take
the narrower settings of the function that calls them (`PipelineRetrySettings`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from hub.config import Settings, settings
from hub.wiring.registry import once

if TYPE_CHECKING:
    from collections.abc import Mapping

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


@once
def current_config() -> ConfigRepository:
    """The configuration as stored now, with no cache: what the admin API's views and operator
    actions read (an operator's own save must show at once; admin reads are few). Sealed secrets
    are not opened."""
    return config_store(())


def cached_config(opens: tuple[str, ...]) -> CachedConfig:
    """The stored configuration, remembered for HUB_CONFIG_CACHE_SECONDS."""
    from hub.config_cache import CachedConfig

    return CachedConfig(config_store(opens), settings().config_cache_seconds)


def config_store(opens: tuple[str, ...]) -> ConfigRepository:
    """The stored configuration, opening the sealed secrets of the purposes `opens` names."""
    from hub.adapters.dynamo.tenancy import DynamoConfigRepository
    from hub.sealed_config import Sealer

    return DynamoConfigRepository(settings().table_name, Sealer(data_keys(), opens))


def data_keys() -> KmsDataKeys | None:
    """Envelope encryption under the stack's key (HUB_CERTIFICATE_KEY_ID): client certificates,
    webhook secrets and destination credentials; None when the function has no key."""
    from hub.adapters.kms import KmsDataKeys

    key_id = settings().certificate_key_id
    return KmsDataKeys(key_id) if key_id else None


# --- outbound: egress, secrets, Slack --------------------------------------------------------------


@once
def egress_policy() -> EgressPolicy:
    """The one egress policy of this process (template EgressAllowedCidrs): every outbound
    client is built from it, and the admin API checks URLs against it when they are saved."""
    from hub.delivery.egress import EgressPolicy

    return EgressPolicy.from_setting(settings().egress_allowed_cidrs)


@once
def secret_values() -> SecretValues:
    from hub.adapters.secrets import SecretValues

    return SecretValues(settings().secrets_cache_seconds)


def slack(s: Settings) -> list[AlertChannel]:
    """The Slack channel when a webhook URL secret is configured (httpx loads only then). The URL
    is read from Secrets Manager at the first alert, and again once its cache age has passed."""
    arn = s.slack_webhook_secret_arn
    if not arn:
        return []
    from pydantic import SecretStr

    from hub.adapters.slack import SlackWebhook

    return [SlackWebhook(lambda: SecretStr(secret_values().get(arn).strip()), egress_policy())]


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


def http_connector(certificates: CertificateStore) -> HttpConnector:
    from hub.delivery.http import HttpConnector

    return HttpConnector(certificates, egress=egress_policy())


def soap_connector(certificates: CertificateStore) -> SoapConnector:
    from hub.delivery.soap import SoapConnector

    return SoapConnector(certificates, egress=egress_policy())


# --- retries and the operator's moves ----------------------------------------------------------------


def retry_scheduler(s: PipelineRetrySettings) -> EventBridgeRetryScheduler:
    """Retries of pipeline steps: schedules in the stack's group, sending to the pipeline queue."""
    from hub.adapters.scheduler import EventBridgeRetryScheduler

    return EventBridgeRetryScheduler(
        s.schedule_group, s.pipeline_queue_arn, s.scheduler_role_arn, dead_letter_arn=s.schedules_dlq_arn
    )


def operations(s: PipelineRetrySettings, lanes: Mapping[str, Lane]) -> Operations:
    """The operator's moves on messages: the admin API's (with the lanes it redrives) and the
    worker's bulk runner's (none: the worker redrives nothing)."""
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
        config=current_config(),
        scheduler=retry_scheduler(s),
        mover=SqsDeadLetterMover(),
        lanes=lanes,
        audit=audit(),
        callbacks=DynamoStatusCallbacks(s.table_name),
        held=DynamoConnectionStates(s.table_name),
    )


@once
def message_search() -> MessageSearch:
    """Search (issue 28): the message table's keys and GSI3; the tenant's integrations as stored
    (their ids and duplicate-key fields name the claims and business keys; no secret opened)."""
    from hub.adapters.dynamo.integrations import DynamoIntegrations
    from hub.adapters.dynamo.search import DynamoMessageSearch
    from hub.admin.search import MessageSearch

    s = settings()
    return MessageSearch(DynamoMessageSearch(s.table_name), DynamoIntegrations(s.table_name))


@once
def audit_trail() -> AuditTrail:
    from hub.adapters.dynamo.audit import DynamoAuditTrail

    return DynamoAuditTrail(settings().table_name)


def audit() -> Audit:
    from hub.admin.audit import Audit

    return Audit(audit_trail())
