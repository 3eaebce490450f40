"""boto3 clients, created once per process and on first use (never at import time).

The endpoint comes from the standard AWS configuration: on AWS the default one; locally and in
tests `AWS_ENDPOINT_URL` points every client at moto. Nothing here knows which.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
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


@cache
def client(service: str) -> Any:
    """The shared client for `service` (thread-safe in boto3)."""
    return boto3.session.Session().client(service, config=_CONFIG)


def reset_clients() -> None:
    """Forget cached clients (tests that switch AWS endpoints between cases)."""
    client.cache_clear()


def error_code(exc: ClientError) -> str:
    """The AWS error code of a failed call (what adapters decide on, never the message)."""
    return str(exc.response.get("Error", {}).get("Code", ""))
