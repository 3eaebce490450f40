"""The threaded HTTP server behind every local front door (HTTP API, Function URLs, echo).

A ``BackgroundHttpServer`` binds at construction (port 0 picks a free port, readable from
``base_url``) and serves from a daemon thread between ``start`` and ``stop``. Its handler
class reaches it as ``self.app`` and answers every method in ``serve``, over HTTP/1.1
keep-alive.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, TypeVar

logger = logging.getLogger(__name__)

AppT = TypeVar("AppT", bound="BackgroundHttpServer")


class _BoundServer(ThreadingHTTPServer, Generic[AppT]):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], app: AppT) -> None:
        self.app = app
        super().__init__(address, handler)


class AppHandler(BaseHTTPRequestHandler, Generic[AppT]):
    """Sends every HTTP method to ``serve``; request logs go to debug."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small responses on keep-alive connections
    server: _BoundServer[AppT]

    @property
    def app(self) -> AppT:
        return self.server.app

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.app.name, *args)

    def serve(self) -> None:
        raise NotImplementedError

    def _dispatch(self) -> None:
        self.serve()

    # http.server dispatches on these names.
    do_GET = do_POST = do_PUT = do_PATCH = _dispatch  # noqa: N815
    do_DELETE = do_HEAD = do_OPTIONS = _dispatch  # noqa: N815


class BackgroundHttpServer:
    """An HTTP server bound to ``host:port`` now and served by a daemon thread once started."""

    def __init__(self, name: str, host: str, port: int, handler: type[AppHandler[Any]]) -> None:
        self.name = name
        self._server = _BoundServer((host, port), handler, self)
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host = str(self._server.server_address[0])
        return f"http://{host}:{self._server.server_port}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=self.name,
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and free the port (also when never started). Idempotent."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()
