"""Ingest idempotency rules (seed 000, scenario I): an Idempotency-Key claim, a payload
fingerprint claim, and the race winner. Pure functions; the repository stores the claims."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from enum import StrEnum
from typing import Any

from jmespath.exceptions import JMESPathError

from hub.domain.expression_limits import bounded_search
from hub.domain.mapping_errors import MappingTooLarge
from hub.errors import InvalidIdempotencyKey

_KEY_RE = re.compile(r"[\x20-\x7e]{1,255}")


class DedupKind(StrEnum):
    IDEMPOTENCY_KEY = "idempotency_key"
    FINGERPRINT = "fingerprint"
    RACE_WINNER = "race_winner"


def sanitize_idempotency_key(
    raw: str | None, source: tuple[str, str] = ("header", "Idempotency-Key")
) -> str | None:
    """The key when it is 1-255 printable ASCII characters; None when absent. Raises
    InvalidIdempotencyKey otherwise (never silently trimmed: two clients must not collide on a
    key we rewrote), naming `source`: ("header", name) or ("field", name) it came from."""
    if raw is None:
        return None
    if not _KEY_RE.fullmatch(raw):
        raise InvalidIdempotencyKey(
            f"{source[1]} must be 1 to 255 printable ASCII characters",
            details={source[0]: source[1], "length": len(raw)},
        )
    return raw


def is_idempotency_key(value: str) -> bool:
    """Whether `value` is a key ingest takes (sanitize_idempotency_key): others were never claimed."""
    return _KEY_RE.fullmatch(value) is not None


def canonical_payload(payload: dict[str, Any] | str) -> bytes:
    """Bytes that are equal for equal payloads: JSON objects with sorted keys and no
    insignificant white space; text payloads (XML, CSV...) exactly as received."""
    if isinstance(payload, str):
        return payload.encode("utf-8")
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def duplicate_key_values(payload: dict[str, Any] | str, fields: tuple[str, ...]) -> list[str]:
    """The normalized business-key values found at `fields` (JMESPath) in a JSON payload; none
    when the payload has none of them. Text payloads (XML) yield none: duplicate rules and the
    entity lock then work per message. A path that fails, or builds past the bounds of
    hub.domain.expression_limits, finds no value (the bound keeps one tenant's expression from exhausting a
    shared worker; the save-time check refuses what can never parse)."""
    if isinstance(payload, str) or not fields:
        return []
    found = []
    for path in fields:
        try:
            found.append(bounded_search(path, payload, "duplicate_key_fields"))
        except (JMESPathError, MappingTooLarge):
            found.append(None)
    if all(value is None for value in found):
        return []  # no business key at all: not one shared "null" entity
    return [key_value_text(value) for value in found]


def key_value_text(value: Any) -> str:
    """One business-key value as duplicate rules compare it (and the entity key hashes it):
    compact JSON with sorted keys, so `"PO-1"` (a string) and `1` (a number) differ."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def fingerprint(message_type: str, key_values: list[str], payload_sha256: str) -> str:
    """SHA-256 of (message type, normalized duplicate-key values, canonical payload hash)."""
    material = json.dumps([message_type, key_values, payload_sha256], separators=(",", ":"))
    return sha256_hex(material.encode("utf-8"))


def claim_order(with_key: bool) -> tuple[DedupKind, ...]:
    """The claims a message takes, in the order ingest writes them: its Idempotency-Key's when
    one was sent, then its payload fingerprint's."""
    if with_key:
        return (DedupKind.IDEMPOTENCY_KEY, DedupKind.FINGERPRINT)
    return (DedupKind.FINGERPRINT,)


def idempotency_key_hash(key: str) -> str:
    """Claims are keyed by the key's hash: bounded size, and no partner token in a table key."""
    return sha256_hex(key.encode("utf-8"))


def request_hash(
    message_type: str, payload_sha256: str, external_id: str | None, occurred_at: datetime | None
) -> str:
    """Identifies the whole request an Idempotency-Key was first used with: the same key with
    any other type, payload, external id or occurrence time is a different request (422)."""
    stamp = occurred_at.isoformat() if occurred_at is not None else None
    material = json.dumps([message_type, payload_sha256, external_id, stamp], separators=(",", ":"))
    return sha256_hex(material.encode("utf-8"))
