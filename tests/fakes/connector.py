"""A scripted delivery connector (`hub.delivery.port.Connector`): answers in order (the last
one repeats), each a DeliveryOutcome or a DeliveryFailed to raise; records every request."""

from __future__ import annotations

import threading
from collections.abc import Callable

from hub.delivery.port import DeliveryOutcome, OutboundRequest
from hub.domain.tenancy import Destination

Answer = DeliveryOutcome | Exception
OK = DeliveryOutcome(dest_status="200", duration_ms=3)


class FakeConnector:
    def __init__(self, *answers: Answer) -> None:
        self.answers: list[Answer] = list(answers) or [OK]
        self.requests: list[OutboundRequest] = []
        #: Runs inside `deliver`, before answering (e.g. to let a lease expire mid-delivery).
        self.during: Callable[[OutboundRequest], None] | None = None
        self._lock = threading.Lock()

    def script(self, *answers: Answer) -> None:
        self.answers = list(answers)

    def deliver(self, destination: Destination, request: OutboundRequest) -> DeliveryOutcome:
        with self._lock:
            self.requests.append(request)
            answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if self.during is not None:
            self.during(request)
        if isinstance(answer, Exception):
            raise answer
        return answer
