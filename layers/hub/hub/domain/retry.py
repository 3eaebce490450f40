"""Retry by failure type (seed 000, scenarios B-E; seed 004, pattern 6): which failures are
worth another attempt, and when the next one happens. Pure: the retry issue's scheduler acts on
the `RetryDecision` this returns.

| class        | retryable                                                      |
|--------------|----------------------------------------------------------------|
| http_5xx     | yes                                                            |
| http_429     | yes, never earlier than its Retry-After                        |
| http_401     | yes (a token may have been renewed)                            |
| http_4xx     | no: a payload problem, whatever the policy                     |
| http_410     | no, and the connection is flagged as gone                      |
| network      | yes: nothing reached the destination                           |
| timeout      | uncertain: only if the connection honours our Idempotency-Key  |
| tls          | no                                                             |
| soap_fault   | Receiver/Server: yes; Sender/Client: no                        |
| syntax       | no                                                             |
| internal     | no: SQS already redelivered it up to its last receive          |
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from itertools import pairwise
from types import MappingProxyType

from pydantic import ConfigDict, Field, field_validator

from hub.domain.failure import ErrorClass
from hub.domain.model import HubModel


class Retryable(StrEnum):
    YES = "yes"
    NO = "no"
    #: The destination may have applied it: retry only where that is harmless.
    UNCERTAIN = "uncertain"
    #: Decided by the SOAP fault code.
    BY_FAULT_CODE = "by_fault_code"


CLASSIFICATION: MappingProxyType[ErrorClass, Retryable] = MappingProxyType(
    {
        ErrorClass.HTTP_5XX: Retryable.YES,
        ErrorClass.HTTP_429: Retryable.YES,
        ErrorClass.HTTP_401: Retryable.YES,
        ErrorClass.HTTP_4XX: Retryable.NO,
        ErrorClass.HTTP_410: Retryable.NO,
        ErrorClass.NETWORK: Retryable.YES,
        ErrorClass.TIMEOUT: Retryable.UNCERTAIN,
        ErrorClass.TLS: Retryable.NO,
        ErrorClass.SOAP_FAULT: Retryable.BY_FAULT_CODE,
        ErrorClass.SYNTAX: Retryable.NO,
        ErrorClass.INTERNAL: Retryable.NO,
        ErrorClass.PAYLOAD_PURGED: Retryable.NO,
    }
)

_TRANSIENT_FAULT_CODES = frozenset({"Receiver", "Server"})


def is_retryable(
    error_class: ErrorClass,
    *,
    fault_code: str | None = None,
    uncertain: bool = False,
    idempotent_retries: bool = False,
) -> bool:
    """Whether a failure of `error_class` may be retried. An uncertain outcome (a timeout after
    sending) is retried only when the connection declares that it drops repeated
    Idempotency-Keys; otherwise an operator reconciles it."""
    kind = CLASSIFICATION[error_class]
    if kind is Retryable.BY_FAULT_CODE:
        return fault_code in _TRANSIENT_FAULT_CODES
    if kind is Retryable.UNCERTAIN or (uncertain and kind is Retryable.YES):
        return idempotent_retries
    return kind is Retryable.YES


class RetryPolicy(HubModel):
    """Per integration. Auto retry is off by default: the product default (a failed message waits
    in `error` for the user)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    retry_auto_enabled: bool = False
    retry_max: int = Field(default=5, ge=0, le=100)
    backoff_base_seconds: float = Field(default=30.0, gt=0)
    backoff_factor: float = Field(default=2.0, ge=1)
    backoff_cap_seconds: float = Field(default=3600.0, gt=0)
    #: No retry ever happens later than this after the message was received.
    retry_max_age_seconds: float = Field(default=24 * 3600.0, gt=0)
    retry_dead_letter: bool = True
    #: Optional fixed ladder of delays (seed 002, 6.1); the last one repeats. Replaces backoff.
    ladder_seconds: tuple[float, ...] | None = None

    @field_validator("ladder_seconds")
    @classmethod
    def _increasing(cls, ladder: tuple[float, ...] | None) -> tuple[float, ...] | None:
        """A ladder waits longer at each step: each delay positive and greater than the one
        before (a constant delay is a one-entry ladder, since the last entry repeats)."""
        if ladder is None:
            return None
        if not ladder:
            raise ValueError("give at least one delay, or null for exponential backoff")
        if ladder[0] <= 0 or any(later <= earlier for earlier, later in pairwise(ladder)):
            raise ValueError("the ladder's delays must be positive and increasing")
        return ladder


class RetryOutcome(StrEnum):
    SCHEDULE = "schedule"
    NOT_RETRYABLE = "not_retryable"
    AUTO_RETRY_OFF = "auto_retry_off"
    EXHAUSTED_DEAD_LETTER = "exhausted_dead_letter"
    EXHAUSTED_ERROR = "exhausted_error"


@dataclass(frozen=True)
class RetryDecision:
    outcome: RetryOutcome
    next_retry_at: datetime | None = None
    retry_count: int = 0


def backoff_seconds(policy: RetryPolicy, retry_number: int, rand: Callable[[], float]) -> float:
    """Delay before retry number `retry_number` (0 = the first retry): the ladder entry, or
    exponential backoff capped and fully jittered (AWS "full jitter")."""
    if policy.ladder_seconds:
        return policy.ladder_seconds[min(retry_number, len(policy.ladder_seconds) - 1)]
    try:
        grown = policy.backoff_base_seconds * policy.backoff_factor**retry_number
    except OverflowError:  # a large factor far down the retries: the cap holds anyway
        grown = math.inf
    return rand() * min(policy.backoff_cap_seconds, grown)


def decide(
    policy: RetryPolicy,
    *,
    retryable: bool,
    retry_count: int,
    received_at: datetime,
    now: datetime,
    retry_after_seconds: float | None = None,
    rand: Callable[[], float] = random.random,
) -> RetryDecision:
    """What happens after a failed attempt. `retry_count` is the retries already scheduled."""
    if not retryable:
        return RetryDecision(RetryOutcome.NOT_RETRYABLE, retry_count=retry_count)
    if not policy.retry_auto_enabled:
        return RetryDecision(RetryOutcome.AUTO_RETRY_OFF, retry_count=retry_count)
    exhausted = (
        RetryOutcome.EXHAUSTED_DEAD_LETTER if policy.retry_dead_letter else RetryOutcome.EXHAUSTED_ERROR
    )
    if retry_count >= policy.retry_max:
        return RetryDecision(exhausted, retry_count=retry_count)
    delay = backoff_seconds(policy, retry_count, rand)
    if retry_after_seconds is not None:
        delay = max(delay, retry_after_seconds)
    # Compared as seconds first: a destination's Retry-After can exceed what a datetime holds.
    deadline = received_at + timedelta(seconds=policy.retry_max_age_seconds)
    if delay > (deadline - now).total_seconds():
        return RetryDecision(exhausted, retry_count=retry_count)
    at = now + timedelta(seconds=delay)
    return RetryDecision(RetryOutcome.SCHEDULE, next_retry_at=at, retry_count=retry_count + 1)
