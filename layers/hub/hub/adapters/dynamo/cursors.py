"""The opaque cursors of GSI1 listings (admin queue tabs, API keys, tenants): a page's
LastEvaluatedKey as base64url JSON. A cursor coming back is checked to be one the same listing
gives out (its own partition, keys consistent with each other), so it can never open another
tenant's partition nor make DynamoDB refuse the query."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

from hub.errors import ValidationFailed

#: The attributes of a GSI1 LastEvaluatedKey: the table's key and the index's.
CURSOR_KEYS = frozenset({"PK", "SK", "GSI1PK", "GSI1SK"})


def encode_cursor(key: Mapping[str, Any]) -> str:
    raw = json.dumps(dict(key), separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, belongs: Callable[[dict[str, str]], bool]) -> dict[str, str]:
    """The start key `cursor` stands for, when it has a GSI1 key's shape and `belongs` to the
    listing; 400 `validation_error` (field `cursor`) otherwise."""
    invalid = ValidationFailed(
        "cursor is not valid", details=[{"field": "cursor", "problem": "invalid_cursor"}]
    )
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except ValueError as exc:
        raise invalid from exc
    if (
        not isinstance(key, dict)
        or set(key) != CURSOR_KEYS
        or not all(isinstance(v, str) for v in key.values())
        or not belongs(key)
    ):
        raise invalid
    return key
