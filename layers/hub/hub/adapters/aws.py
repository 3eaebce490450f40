"""boto3 clients, created once per process and on first use (never at import time).

The endpoint comes from the standard AWS configuration: on AWS the default one; locally and in
tests `AWS_ENDPOINT_URL` points every client at moto. Nothing here knows which.
"""

from __future__ import annotations

import threading
from functools import cache
from typing import Any

import boto3
import botocore.loaders
import botocore.session
from botocore.config import Config
from botocore.exceptions import ClientError

# Fail fast inside a Lambda with a 10 s budget: a few quick retries on throttling and 5xx,
# short timeouts, then the caller answers 503 (safe to resend).
_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3},
    connect_timeout=2,
    read_timeout=5,
    tcp_keepalive=True,
)


#: For best-effort writes on a request's path (an API key's last-used day): one attempt, short
#: timeouts, so a slow or failing DynamoDB costs the request at most about a second, once.
_BEST_EFFORT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 1}, connect_timeout=1, read_timeout=1
)

_SESSION_LOCK = threading.Lock()
_PATHS_LOCK = threading.Lock()


@cache
def _models() -> botocore.loaders.Loader:
    """botocore's reader of its service models and endpoint data (files of the installed SDK):
    one per process, kept when the session is renewed (`reset_clients`), so a new session does
    not read and parse them again (~50 ms a service)."""
    return botocore.loaders.create_loader()


def new_session(**options: Any) -> boto3.session.Session:
    """A boto3 session (``options``: its credentials and region) on the process's one reader of
    the model files; the local stack's clients use it too, so its tests create sessions cheaply."""
    core = botocore.session.Session()
    core.register_component("data_loader", _models())
    with _PATHS_LOCK:
        session = boto3.session.Session(botocore_session=core, **options)
        # boto3 adds its own data folder to the loader's paths, once per session: once is enough.
        paths = _models().search_paths
        paths[:] = list(dict.fromkeys(paths))
    return session


@cache
def _session() -> boto3.session.Session:
    return new_session()


@cache
def client(service: str) -> Any:
    """The shared client for `service` (clients are thread-safe in boto3). All come from one
    session per process: a session loads botocore's endpoint and model data, which a session per
    client would load again for each. Sessions are not thread-safe, hence the lock."""
    with _SESSION_LOCK:
        return _session().client(service, config=_CONFIG)


@cache
def best_effort_client(service: str) -> Any:
    """A client for writes whose failure the caller ignores: no retries, 1 s timeouts."""
    with _SESSION_LOCK:
        return _session().client(service, config=_BEST_EFFORT_CONFIG)


def reset_clients() -> None:
    """Forget cached clients and their session (tests that switch AWS endpoints between cases)."""
    client.cache_clear()
    best_effort_client.cache_clear()
    _session.cache_clear()


def error_code(exc: ClientError) -> str:
    """The AWS error code of a failed call (what adapters decide on, never the message)."""
    return str(exc.response.get("Error", {}).get("Code", ""))
