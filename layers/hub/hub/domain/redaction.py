"""The one redaction helper (seed 000, "Privacidade"): what logs and admin views may show.

- Payload fields a message type declares sensitive (`sensitive_fields`, e.g. CPF/CNPJ, e-mail,
  phone) are masked wherever they appear in a JSON document or an XML text, by field name.
- Free text (a destination's answer, an error message) gets CPF, CNPJ, e-mail addresses and
  phone numbers masked by pattern: it may quote the payload back.
- Connection credentials are never shown; only whether they are set.

The stored payload stays intact for delivery: redaction is applied to copies, for display.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Mapping
from typing import Any

MASK = "***"

#: Configuration keys that hold secrets (connections, inbound webhook verification), and header
#: names whose values are credentials.
CREDENTIAL_FIELDS = frozenset(
    {
        "token",
        "password",
        "api_key",
        "client_secret",
        "secret",
        "secrets",
        "signing_secret",
        "credentials",
        "credentials_sha256",
        "keys_sha256",
    }
)
_CREDENTIAL_HEADERS = re.compile(r"authorization|api[-_]?key|token|secret|cookie|password", re.I)

_TEXT_PATTERNS = (
    # e-mail addresses
    re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"),
    # CNPJ (12.345.678/0001-95 or 14 digits) before CPF, which is a shorter run of digits
    re.compile(r"(?<!\d)\d{2}\.?\d{3}\.?\d{3}/?\d{4}-?\d{2}(?!\d)"),
    # CPF (123.456.789-09 or 11 digits)
    re.compile(r"(?<!\d)\d{3}\.?\d{3}\.?\d{3}-?\d{2}(?!\d)"),
    # phone numbers written as phone numbers: +55 (11) 91234-5678, (11) 1234-5678, 11 91234 5678,
    # +5511912345678 (a bare run of digits without + is left alone: ids, timestamps)
    re.compile(
        r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,3}\)[\s.-]?|\d{2,3}[\s.-])\d{4,5}[\s.-]?\d{4}(?!\d)"
    ),
    re.compile(r"(?<![\w+])\+\d{10,14}(?!\d)"),
)


def _names(fields: Collection[str]) -> frozenset[str]:
    return frozenset(name.strip().lower() for name in fields if name.strip())


def redact(document: Any, fields: Collection[str]) -> Any:
    """A copy of a JSON-like `document` with the value of every key named in `fields`
    (case-insensitive, at any depth, also inside lists) replaced by the mask."""
    names = _names(fields)
    if not names:
        return document
    return _redact(document, names)


def _redact(node: Any, names: frozenset[str]) -> Any:
    if isinstance(node, Mapping):
        return {
            key: (MASK if value is not None else None) if str(key).lower() in names else _redact(value, names)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_redact(item, names) for item in node]
    return node


def redact_xml(text: str, fields: Collection[str]) -> str:
    """`text` with the content of every XML element whose local name is in `fields` masked
    (e.g. `<CPF>12345678909</CPF>` -> `<CPF>***</CPF>`), and attributes of those names too."""
    names = _names(fields)
    if not names:
        return text
    alternatives = "|".join(re.escape(name) for name in sorted(names))
    element = re.compile(
        rf"(<(?:[\w.-]+:)?(?:{alternatives})(?:\s[^>]*)?>)[^<]*(</(?:[\w.-]+:)?(?:{alternatives})\s*>)",
        re.I,
    )
    attribute = re.compile(rf"(\s(?:[\w.-]+:)?(?:{alternatives})\s*=\s*)(\"[^\"]*\"|'[^']*')", re.I)
    masked = element.sub(lambda m: f"{m.group(1)}{MASK}{m.group(2)}", text)
    return attribute.sub(lambda m: f'{m.group(1)}"{MASK}"', masked)


def redact_payload(payload: Any, fields: Collection[str]) -> Any:
    """A payload for display: JSON documents by key, XML or other text by element name and then
    by pattern."""
    if isinstance(payload, str):
        return redact_text(redact_xml(payload, fields))
    return redact(payload, fields)


def redact_text(text: str) -> str:
    """Free text with CPF, CNPJ, e-mail addresses and phone numbers masked."""
    for pattern in _TEXT_PATTERNS:
        text = pattern.sub(MASK, text)
    return text


#: Longest text of a destination's answer the hub keeps and shows (dest_status_text).
STATUS_TEXT_LIMIT = 300


def status_text(text: str, limit: int = STATUS_TEXT_LIMIT) -> str:
    """A destination's answer (or an error about it) as the hub keeps and shows it: one line,
    without control or format characters (no terminal escapes, NULs or bidi overrides reach a
    view, a log or a CSV), personal data masked, at most `limit` characters. Idempotent."""
    flat = " ".join("".join(" " if _is_control(c) else c for c in text).split())
    flat = redact_text(flat)
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def _is_control(char: str) -> bool:
    # Cc (C0/C1 controls, DEL) and Cf (bidi overrides, zero-width characters); not Cs/Co/Cn,
    # which cannot steer a display.
    return unicodedata.category(char) in {"Cc", "Cf"}


def redact_credentials(config: Mapping[str, Any]) -> dict[str, Any]:
    """A dumped configuration (an integration, a connection) for display: every secret field at
    any depth and every credential-like header value masked (an unset secret stays None, so a
    view still tells whether one is configured)."""
    shown: dict[str, Any] = redact(config, CREDENTIAL_FIELDS)
    return _mask_headers(shown)


def _mask_headers(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: (
                {h: MASK if _CREDENTIAL_HEADERS.search(h) else v for h, v in value.items()}
                if key == "headers" and isinstance(value, dict)
                else _mask_headers(value)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_mask_headers(item) for item in node]
    return node
