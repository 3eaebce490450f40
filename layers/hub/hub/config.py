"""Runtime settings, parsed once from the environment the template sets.

Nothing here runs at import time: ``settings()`` builds and caches the model on first use,
so tests set the environment and call ``settings.cache_clear()`` instead of reloading modules.

``Settings`` is what every function takes (its required values come from the template's
Globals). A function that needs more (a queue, a schedule group) narrows it in its own wiring
module (``hub.wiring.<function>``) and validates that model at its cold start with
``load_settings``: a missing or malformed variable fails the init, named, not the first request.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import TypeVar

from pydantic import (
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from hub.domain.model import HubModel
from hub.domain.retention import MAX_RETENTION_DAYS, MIN_RETENTION_DAYS, Retention
from hub.errors import ConfigurationError

_EMAIL_PAIR = "alert_email_pair"
_RETENTION_ORDER = "retention_order"


class Settings(HubModel):
    """What a hub function needs to know about its stack. Required values have no default:
    a missing table or queue name is a deployment error, never a silent fallback."""

    model_config = ConfigDict(frozen=True)

    table_name: str = Field(min_length=1)
    pipeline_queue_url: str = Field(min_length=1)
    max_body_bytes: int = Field(default=256 * 1024, ge=1024)
    idempotency_retention_hours: int = Field(default=24, ge=1)
    fingerprint_retention_hours: int = Field(default=24, ge=1)
    #: Retention (issue 29), the platform's defaults (template PayloadRetentionDays and
    #: MessageRetentionDays; a tenant may have its own, hub.domain.retention): how long a
    #: message's payload is kept (on its fingerprint claim), and the message with its satellites.
    #: Both are TTLs; the payload never outlives its message.
    payload_retention_days: int = Field(default=7, ge=MIN_RETENTION_DAYS, le=MAX_RETENTION_DAYS)
    message_retention_days: int = Field(default=30, ge=MIN_RETENTION_DAYS, le=MAX_RETENTION_DAYS)
    #: The pipeline queue's RedrivePolicy maxReceiveCount: after that many receives a step
    #: goes to the DLQ.
    pipeline_max_receives: int = Field(default=10, ge=1)
    #: Delayed retries: EventBridge Scheduler group, and the queue + role its schedules target.
    #: Only the pipeline worker has them; it refuses to start without them.
    schedule_group: str | None = None
    pipeline_queue_arn: str | None = None
    scheduler_role_arn: str | None = None
    #: Where EventBridge Scheduler puts a retry it could not deliver (SchedulesDLQ, issue 14).
    schedules_dlq_arn: str | None = None
    #: The admin API: the pipeline lane's DLQ (redrive) and the Secrets Manager secret holding
    #: the SHA-256 (hex) of the bootstrap admin token. None: no bootstrap token (only stored
    #: admin tokens are taken).
    pipeline_dlq_url: str | None = None
    admin_token_secret_arn: str | None = None
    #: The deployment stage (Globals), named in alerts.
    stage: str | None = None
    #: Alerts (the notifier only). An empty template parameter arrives as "" and means "off".
    #: The Secrets Manager secret holding the Slack incoming-webhook URL (read at run time).
    slack_webhook_secret_arn: str | None = None
    #: How long a warm instance keeps a value read from Secrets Manager (seconds): a rotated
    #: secret takes effect within this time.
    secrets_cache_seconds: int = Field(default=300, ge=0, le=86400)
    #: Where alert emails go and who sends them (an SES-verified identity): both or neither.
    alert_email_to: str | None = None
    alert_email_from: str | None = None
    #: The KMS key of client certificates' envelope encryption (admin API, worker, expiry check).
    certificate_key_id: str | None = None
    #: How long a warm instance keeps an API key or an integration it read (seconds; 0: never).
    #: A revoked key or a changed integration takes effect within this time.
    config_cache_seconds: int = Field(default=30, ge=0, le=3600)
    #: The outbox publisher: the EventBridge bus it puts events on, and which event types go
    #: there (comma-separated shell patterns, e.g. `message.*`; empty: none). Each event put
    #: costs US$1 per million, so the default is the rare ones (template OutboxBusEventTypes).
    event_bus_name: str | None = None
    bus_event_types: str = ""
    #: The webhooks lane (issue 12): its queue (the sink and operator replays send to it) and,
    #: for the sender's retries, its ARN (the target of the retry schedules).
    webhooks_queue_url: str | None = None
    webhooks_queue_arn: str | None = None
    #: The admin Health view (issue 13): the DLQs it reports the depth of (the pipeline's is
    #: `pipeline_dlq_url`), and where the functions' EMF metrics land (Powertools' namespace and
    #: `service` dimension, from the template's Globals).
    webhooks_dlq_url: str | None = None
    outbox_dlq_url: str | None = None
    metrics_namespace: str | None = None
    service_name: str | None = None
    #: How long an admin API instance reuses the Health view's CloudWatch read (seconds).
    health_metrics_cache_seconds: int = Field(default=60, ge=0, le=3600)
    #: Pause and circuit breaker (issue 12). The breaker is on unless this is false (a paused
    #: connection holds deliveries either way).
    circuit_breaker: bool = True
    #: The open breaker's first cool-down before its probe (seconds; doubles after each failed
    #: probe, up to 15 minutes).
    breaker_cooldown_seconds: int = Field(default=60, ge=1, le=900)
    #: How many held messages per second a resume (or the breaker closing) releases.
    release_rate_per_second: int = Field(default=10, ge=1, le=1000)
    #: How long a worker instance trusts a connection state it read (seconds): a pause or an
    #: open breaker reaches every instance within this time.
    connection_state_cache_seconds: int = Field(default=5, ge=0, le=300)
    #: The partner API's rate limit per tenant and per instance (issue 14; a tenant's own
    #: `rate_limit` wins): requests per second, and how many may come at once.
    tenant_rate_per_second: float = Field(default=50, gt=0, le=100_000)
    tenant_burst: int = Field(default=100, ge=1, le=1_000_000)
    #: The admin API: refused tokens from one source address within the window (seconds) after
    #: which it answers 429 without looking at tokens, per instance, until the window passes.
    admin_failed_token_limit: int = Field(default=10, ge=1, le=10_000)
    admin_failed_token_window_seconds: int = Field(default=60, ge=1, le=3600)
    #: The admin API (issue 27): the largest request body it reads (413 above), and each admin
    #: token's rate limit per instance (429 with Retry-After above): requests per second, and
    #: how many may come at once.
    admin_max_body_bytes: int = Field(default=1024 * 1024, ge=1024, le=6 * 1024 * 1024)
    admin_token_rate_per_second: float = Field(default=50, gt=0, le=100_000)
    admin_token_burst: int = Field(default=200, ge=1, le=1_000_000)
    #: The egress policy's allowed private ranges (template EgressAllowedCidrs, comma-separated
    #: CIDRs; empty: only public addresses are reached). hub.delivery.egress.
    egress_allowed_cidrs: str = ""

    @field_validator(
        "stage",
        "admin_token_secret_arn",
        "slack_webhook_secret_arn",
        "alert_email_to",
        "alert_email_from",
        "certificate_key_id",
        "event_bus_name",
        "webhooks_queue_url",
        "webhooks_queue_arn",
        "webhooks_dlq_url",
        "outbox_dlq_url",
        "metrics_namespace",
        "service_name",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _email_needs_both_ends(self) -> Settings:
        if (self.alert_email_to is None) != (self.alert_email_from is None):
            # Half a configuration would silently drop every alert email.
            raise PydanticCustomError(_EMAIL_PAIR, "alert email needs both a recipient and a sender")
        return self

    @model_validator(mode="after")
    def _payload_within_message(self) -> Settings:
        if self.payload_retention_days > self.message_retention_days:
            raise PydanticCustomError(_RETENTION_ORDER, "a payload cannot be kept longer than its message")
        return self

    @property
    def retention(self) -> Retention:
        """The platform's default retention (a tenant's own overrides it)."""
        return Retention(payload_days=self.payload_retention_days, message_days=self.message_retention_days)


_ENV = {
    "table_name": "HUB_TABLE_NAME",
    "pipeline_queue_url": "HUB_PIPELINE_QUEUE_URL",
    "max_body_bytes": "HUB_MAX_BODY_BYTES",
    "idempotency_retention_hours": "HUB_IDEMPOTENCY_RETENTION_HOURS",
    "fingerprint_retention_hours": "HUB_FINGERPRINT_RETENTION_HOURS",
    "payload_retention_days": "HUB_PAYLOAD_RETENTION_DAYS",
    "message_retention_days": "HUB_MESSAGE_RETENTION_DAYS",
    "pipeline_max_receives": "HUB_PIPELINE_MAX_RECEIVES",
    "schedule_group": "HUB_SCHEDULE_GROUP",
    "pipeline_queue_arn": "HUB_PIPELINE_QUEUE_ARN",
    "scheduler_role_arn": "HUB_SCHEDULER_ROLE_ARN",
    "schedules_dlq_arn": "HUB_SCHEDULES_DLQ_ARN",
    "pipeline_dlq_url": "HUB_PIPELINE_DLQ_URL",
    "admin_token_secret_arn": "HUB_ADMIN_TOKEN_SECRET_ARN",
    "stage": "HUB_STAGE",
    "slack_webhook_secret_arn": "HUB_SLACK_WEBHOOK_SECRET_ARN",
    "secrets_cache_seconds": "HUB_SECRETS_CACHE_SECONDS",
    "alert_email_to": "HUB_ALERT_EMAIL",
    "alert_email_from": "HUB_ALERT_EMAIL_FROM",
    "certificate_key_id": "HUB_CERTIFICATE_KEY_ID",
    "config_cache_seconds": "HUB_CONFIG_CACHE_SECONDS",
    "event_bus_name": "HUB_EVENT_BUS_NAME",
    "bus_event_types": "HUB_BUS_EVENT_TYPES",
    "webhooks_queue_url": "HUB_WEBHOOKS_QUEUE_URL",
    "webhooks_queue_arn": "HUB_WEBHOOKS_QUEUE_ARN",
    "webhooks_dlq_url": "HUB_WEBHOOKS_DLQ_URL",
    "outbox_dlq_url": "HUB_OUTBOX_DLQ_URL",
    "metrics_namespace": "POWERTOOLS_METRICS_NAMESPACE",
    "service_name": "POWERTOOLS_SERVICE_NAME",
    "health_metrics_cache_seconds": "HUB_HEALTH_METRICS_CACHE_SECONDS",
    "circuit_breaker": "HUB_CIRCUIT_BREAKER",
    "breaker_cooldown_seconds": "HUB_BREAKER_COOLDOWN_SECONDS",
    "release_rate_per_second": "HUB_RELEASE_RATE_PER_SECOND",
    "connection_state_cache_seconds": "HUB_CONNECTION_STATE_CACHE_SECONDS",
    "tenant_rate_per_second": "HUB_TENANT_RATE_PER_SECOND",
    "tenant_burst": "HUB_TENANT_BURST",
    "admin_failed_token_limit": "HUB_ADMIN_FAILED_TOKEN_LIMIT",
    "admin_failed_token_window_seconds": "HUB_ADMIN_FAILED_TOKEN_WINDOW_SECONDS",
    "admin_max_body_bytes": "HUB_ADMIN_MAX_BODY_BYTES",
    "admin_token_rate_per_second": "HUB_ADMIN_TOKEN_RATE_PER_SECOND",
    "admin_token_burst": "HUB_ADMIN_TOKEN_BURST",
    "egress_allowed_cidrs": "HUB_EGRESS_ALLOWED_CIDRS",
}

#: The checks across settings, by their error type: what a refusal names instead of one variable.
_CROSS_FIELD = {
    _EMAIL_PAIR: "HUB_ALERT_EMAIL with HUB_ALERT_EMAIL_FROM (both or neither)",
    _RETENTION_ORDER: "HUB_PAYLOAD_RETENTION_DAYS at most HUB_MESSAGE_RETENTION_DAYS",
}


S = TypeVar("S", bound=Settings)


@lru_cache(maxsize=1)
def settings() -> Settings:
    """The settings of this process, validated once. Raises ConfigurationError naming the
    missing or invalid variables."""
    return load_settings(Settings)


def load_settings(model: type[S], of: str = "") -> S:
    """`model` (Settings or a function's narrower one) validated from the environment. Raises
    ConfigurationError naming the missing or invalid variables (and `of`, whose settings they
    are), never their values."""
    raw = {field: os.environ[var] for field, var in _ENV.items() if var in os.environ}
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        names = [
            _ENV[str(err["loc"][0])] if err["loc"] else _CROSS_FIELD.get(err["type"], "settings")
            for err in exc.errors()
        ]
        whose = f" of {of}" if of else ""
        # Not chained: pydantic's error repeats the input.
        raise ConfigurationError(
            f"invalid or missing settings{whose}: {', '.join(sorted(set(names)))}"
        ) from None


def variable(field: str) -> str:
    """The environment variable a settings field is read from (e.g. HUB_TABLE_NAME)."""
    return _ENV[field]
