"""What a destination declares it can take (issue 30): at most `max_concurrency` deliveries in
flight at once and `rate_per_second` requests (with a `burst`), per connection. Both optional;
none set (the default) is unlimited, as before.

The rules that enforce them are hub.delivery.limits; a delivery over a limit waits without an
attempt (`retry_pending` / `held_reason` `rate_limited` or `concurrency_limited`).
"""

from __future__ import annotations

import math

from pydantic import ConfigDict, Field, model_validator

from hub.domain.model import HubModel

#: Bounds: a destination limited to fewer than one request per 100 s is paused, not limited;
#: more than 1,000 at once or per second is no limit the hub can keep (its pool is 250).
MIN_RATE_PER_SECOND = 0.01
MAX_RATE_PER_SECOND = 1000.0
MAX_CONCURRENCY = 1000
MAX_BURST = 1000


class DeliveryLimits(HubModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Deliveries to this connection in flight at once, at most.
    max_concurrency: int | None = Field(default=None, ge=1, le=MAX_CONCURRENCY)
    #: Requests per second, at most, on average.
    rate_per_second: float | None = Field(default=None, ge=MIN_RATE_PER_SECOND, le=MAX_RATE_PER_SECOND)
    #: Requests that may go at once after a quiet spell (default: the rate rounded up, at least 1).
    burst: int | None = Field(default=None, ge=1, le=MAX_BURST)

    @model_validator(mode="after")
    def _burst_needs_a_rate(self) -> DeliveryLimits:
        if self.burst is not None and self.rate_per_second is None:
            raise ValueError("burst applies to rate_per_second: set the rate too")
        return self

    @property
    def limited(self) -> bool:
        return self.max_concurrency is not None or self.rate_per_second is not None

    @property
    def effective_burst(self) -> int:
        if self.burst is not None:
            return self.burst
        return max(1, math.ceil(self.rate_per_second or 1))


#: What the page and `hubctl` propose for a SEFAZ connection: SEFAZ answers "consumo indevido"
#: (and blocks the emitter for a while) to a client that calls too often, so one request at a
#: time and at most one a second.
SEFAZ_PRESET = DeliveryLimits(max_concurrency=1, rate_per_second=1.0, burst=1)
