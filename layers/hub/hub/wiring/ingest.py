"""The ingest API (IngestApiFunction, functions/ingest_api): receive-message, inbound webhooks,
message status and delivery-status callbacks. It needs only the settings every function has
(table, pipeline queue); its KMS key is optional (without one nothing is sealed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hub.config import Settings
from hub.wiring import common
from hub.wiring.registry import once, settings_of

if TYPE_CHECKING:
    from hub.callbacks.receive import StatusCallbacks
    from hub.config_cache import CachedConfig
    from hub.ingest.receive import Ingestor
    from hub.ingest.throttle import TenantThrottle
    from hub.webhooks.receive import WebhookReceiver

SETTINGS = Settings
settings = settings_of(SETTINGS, "the ingest API")


#: The cold start's check (the handler calls it at import): a missing or malformed variable
#: fails the init, named, instead of the first request.
init = settings


@once
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


@once
def tenant_throttle() -> TenantThrottle:
    """The partner API's per-tenant token buckets, one set per instance (issue 14): receive-
    message, inbound webhooks, message status and status callbacks share them."""
    from hub.domain.rate_limit import Rate
    from hub.ingest.throttle import TenantThrottle

    s = settings()
    return TenantThrottle(Rate(per_second=s.tenant_rate_per_second, burst=s.tenant_burst))


@once
def webhook_receiver() -> WebhookReceiver:
    from hub.webhooks.receive import WebhookReceiver

    return WebhookReceiver(webhook_config(), ingestor())


@once
def status_callbacks() -> StatusCallbacks:
    """The partner API's status callbacks: integrations from the configuration cache (no secret
    opened), the message, the connection's token hash and the callback records from the table."""
    from hub.adapters.dynamo.callbacks import DynamoStatusCallbacks
    from hub.callbacks.receive import StatusCallbacks

    return StatusCallbacks(
        config_repository(), DynamoStatusCallbacks(settings().table_name), throttle=tenant_throttle()
    )


@once
def config_repository() -> CachedConfig:
    """Tenants, integrations and API keys, remembered for HUB_CONFIG_CACHE_SECONDS; sealed
    secrets are not opened (stand-ins: receive-message and the admin API need none)."""
    return common.cached_config(settings(), ())


@once
def webhook_config() -> CachedConfig:
    """The configuration as inbound webhooks read it: webhook secrets opened (one KMS Decrypt
    per integration and cache period, then kept in memory as long as the configuration)."""
    from hub.sealed_config import WEBHOOK_SECRET

    return common.cached_config(settings(), (WEBHOOK_SECRET,))
