"""Builds use cases with their AWS adapters, once per process (lazily: nothing at import)."""

from __future__ import annotations

from functools import lru_cache

from hub.adapters.dynamodb import DynamoConfigRepository, DynamoMessageRepository
from hub.adapters.sqs import SqsStepQueue
from hub.config import settings
from hub.ingest.receive import Ingestor


@lru_cache(maxsize=1)
def ingestor() -> Ingestor:
    s = settings()
    return Ingestor(
        config_repository(), DynamoMessageRepository(s.table_name), SqsStepQueue(s.pipeline_queue_url), s
    )


@lru_cache(maxsize=1)
def config_repository() -> DynamoConfigRepository:
    return DynamoConfigRepository(settings().table_name)


def reset() -> None:
    """Forget everything built (tests switch environments between cases)."""
    ingestor.cache_clear()
    config_repository.cache_clear()
    settings.cache_clear()
