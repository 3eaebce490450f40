"""Identifiers: time-ordered, URL-safe, prefixed by kind (``msg_``, ``exe_``...)."""

from __future__ import annotations

import os
import re
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case


def _b32(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, rem = divmod(value, 32)
        chars.append(_ALPHABET[rem])
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """A ULID-style id: 48-bit millisecond time + 80 random bits. Sorts by creation time,
    which keeps DynamoDB keys spread and makes ids readable in logs."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    return f"{prefix}_{_b32(millis, 10)}{_b32(rand, 16)}"


_MESSAGE_ID = re.compile(r"msg_[0-9a-hjkmnp-tv-z]{26}")


def is_message_id(value: str) -> bool:
    """True for ids `new_id("msg")` can produce; anything else cannot name a message."""
    return _MESSAGE_ID.fullmatch(value) is not None
