"""Test servers run on a thread that stops at once.

``serve_forever`` looks for a shutdown request every ``poll_interval`` (0.5 s by default), so
each ``shutdown()`` of a test server used to cost up to half a second of a test's teardown.
"""

from __future__ import annotations

import threading
from socketserver import BaseServer

#: How often a serving thread looks for a shutdown request.
POLL_SECONDS = 0.05


def serving_thread(server: BaseServer, name: str = "test-server") -> threading.Thread:
    """A daemon thread (not started) that serves ``server`` until ``server.shutdown()``."""
    return threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": POLL_SECONDS}, name=name, daemon=True
    )
