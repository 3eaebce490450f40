"""The polling thread shared by the event source mappings (SQS queues, DynamoDB streams)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from devstack.lambda_runtime import InvocationResult

logger = logging.getLogger(__name__)

Invoke = Callable[[dict[str, Any]], InvocationResult]  # one function, synchronously


class Poller:
    """A daemon thread that calls ``poll`` until stopped.

    ``poll`` returns True when it did work (poll again at once) and False when idle (``idle``
    waits one poll interval). An error is logged and retried after a second.
    """

    def __init__(self, name: str, poll_interval: float) -> None:
        self._poll_interval = poll_interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def poll(self) -> bool:
        raise NotImplementedError

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)

    def idle(self) -> None:
        """The last poll found no work: wait one poll interval (``stop`` ends the wait)."""
        self._stop.wait(self._poll_interval)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.poll():
                    self.idle()
            except Exception:
                if self._stop.is_set():
                    return
                logger.exception("%s failed; retrying", self._thread.name)
                self._stop.wait(1.0)
