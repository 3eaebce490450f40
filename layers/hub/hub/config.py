"""Runtime settings, parsed once from the environment the template sets.

Nothing here runs at import time: ``settings()`` builds and caches the model on first use,
so tests set the environment and call ``settings.cache_clear()`` instead of reloading modules.
"""

from __future__ import annotations

import os
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hub.errors import ConfigurationError


class Settings(BaseModel):
    """What a hub function needs to know about its stack. Required values have no default:
    a missing table or queue name is a deployment error, never a silent fallback."""

    model_config = ConfigDict(frozen=True)

    table_name: str = Field(min_length=1)
    pipeline_queue_url: str = Field(min_length=1)
    max_body_bytes: int = Field(default=256 * 1024, ge=1024)
    idempotency_retention_hours: int = Field(default=24, ge=1)
    fingerprint_retention_hours: int = Field(default=24, ge=1)
    #: The pipeline queue's RedrivePolicy maxReceiveCount: after that many receives a step
    #: goes to the DLQ.
    pipeline_max_receives: int = Field(default=10, ge=1)
    #: Delayed retries: EventBridge Scheduler group, and the queue + role its schedules target.
    #: Only the pipeline worker has them; it refuses to start without them.
    schedule_group: str | None = None
    pipeline_queue_arn: str | None = None
    scheduler_role_arn: str | None = None
    #: The admin API: the pipeline lane's DLQ (redrive) and the SHA-256 (hex) of the bootstrap
    #: admin token. Empty: the admin API refuses every request.
    pipeline_dlq_url: str | None = None
    admin_token_sha256: str = Field(default="", pattern=r"^([0-9a-f]{64})?$")


_ENV = {
    "table_name": "HUB_TABLE_NAME",
    "pipeline_queue_url": "HUB_PIPELINE_QUEUE_URL",
    "max_body_bytes": "HUB_MAX_BODY_BYTES",
    "idempotency_retention_hours": "HUB_IDEMPOTENCY_RETENTION_HOURS",
    "fingerprint_retention_hours": "HUB_FINGERPRINT_RETENTION_HOURS",
    "pipeline_max_receives": "HUB_PIPELINE_MAX_RECEIVES",
    "schedule_group": "HUB_SCHEDULE_GROUP",
    "pipeline_queue_arn": "HUB_PIPELINE_QUEUE_ARN",
    "scheduler_role_arn": "HUB_SCHEDULER_ROLE_ARN",
    "pipeline_dlq_url": "HUB_PIPELINE_DLQ_URL",
    "admin_token_sha256": "HUB_ADMIN_TOKEN_SHA256",
}


@lru_cache(maxsize=1)
def settings() -> Settings:
    """The settings of this process, validated once. Raises ConfigurationError naming the
    missing or invalid variables."""
    raw = {field: os.environ[var] for field, var in _ENV.items() if var in os.environ}
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        names = sorted({_ENV[str(err["loc"][0])] for err in exc.errors() if err["loc"]})
        raise ConfigurationError(f"invalid or missing settings: {', '.join(names)}") from exc
