"""Sample events from events/ (the same files `sam local invoke -e` uses), loaded and adjusted."""

from __future__ import annotations

import base64
import copy
import json
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

EVENTS = Path(__file__).resolve().parent.parent / "events"


@cache
def _load(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


def load_event(name: str) -> dict[str, Any]:
    """A fresh copy of events/<name>."""
    return copy.deepcopy(_load(name))


def http_event(
    name: str,
    *,
    body: str | bytes | dict[str, Any] | None = None,
    headers: dict[str, str | None] | None = None,
    path_parameters: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An HTTP API v2.0 event from a sample, with another body / headers (None removes one)."""
    event = load_event(name)
    if body is not None:
        if isinstance(body, bytes):
            event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode(), True
        else:
            event["body"] = body if isinstance(body, str) else json.dumps(body)
            event["isBase64Encoded"] = False
    for key, value in (headers or {}).items():
        if value is None:
            event["headers"].pop(key.lower(), None)
        else:
            event["headers"][key.lower()] = value
    if path_parameters is not None:
        event["pathParameters"] = path_parameters
        path = event["routeKey"].split(" ", 1)[1]
        for key, value in path_parameters.items():
            path = path.replace("{" + key + "}", value)
        event["rawPath"] = event["requestContext"]["http"]["path"] = path
    return event


def admin_event(
    method: str,
    path: str,
    *,
    token: str | None,
    body: dict[str, Any] | None = None,
    query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Lambda Function URL event for the admin API, from the sample (no token: no header)."""
    event = load_event("admin_reprocess_message.json")
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["body"] = json.dumps(body) if body is not None else None
    event["queryStringParameters"] = query
    event["rawQueryString"] = urlencode(query or {})
    event["headers"].update(headers or {})
    if token is None:
        event["headers"].pop("authorization")
    else:
        event["headers"]["authorization"] = f"Bearer {token}"
    return event
