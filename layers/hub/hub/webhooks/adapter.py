"""The per-integration adapter (seed 004, pattern 1): the partner's payload becomes the hub's
internal event — message type, the partner's event id, when it happened, the business data.
Runs only on a verified body."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from jmespath.exceptions import JMESPathError

from hub.domain.clock import within_utc
from hub.domain.expression_limits import MappingLimits, bounded_search
from hub.domain.mapping_errors import MappingError
from hub.domain.strict_json import parse_json
from hub.domain.webhook_config import WebhookAdapter
from hub.errors import MalformedBody, MalformedXml, UnknownEventType, UnprocessableEvent
from hub.mapping.xml_input import parse_xml

_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
_EVENT_ID = re.compile(r"[\x20-\x7e]{1,255}")


@dataclass(frozen=True)
class AdaptedEvent:
    message_type: str
    payload: dict[str, Any] | str
    event_id: str | None
    occurred_at: datetime | None


#: The business data may be most of the body; the other paths select short values.
DATA_LIMITS = MappingLimits()


def _search(field: str, path: str, document: Any) -> Any:
    """The value at `path`, None where it fails; past the bounds of hub.domain.expression_limits,
    MappingTooLarge (422 `mapping_too_large`, naming the adapter's field and path)."""
    try:
        if field == "data":
            return bounded_search(path, document, "inbound_webhook.data_path", DATA_LIMITS)
        return bounded_search(path, document, f"inbound_webhook.{field}_path")
    except JMESPathError:
        return None


def _required(field: str, path: str, document: Any) -> Any:
    value = _search(field, path, document)
    if value is None or value == "":
        raise UnprocessableEvent(
            f"the payload has no {field} at {path!r}", details={"field": field, "path": path}
        )
    return value


def _message_type(adapter: WebhookAdapter, document: Any) -> str:
    if adapter.message_type is not None:
        message_type = adapter.message_type
    else:
        path = adapter.message_type_path or ""
        found = _required("message_type", path, document)
        if not isinstance(found, str) or not _TYPE.fullmatch(found):
            raise UnprocessableEvent(
                "message_type must be 1-128 letters, digits or _.:-",
                details={"field": "message_type", "path": path},
            )
        message_type = found
    if adapter.known_types is not None and message_type not in adapter.known_types:
        raise UnknownEventType(
            "this integration does not take this event type", details={"field": "message_type"}
        )
    return message_type


def _event_id(path: str, document: Any) -> str:
    found = _required("event_id", path, document)
    value = str(found) if isinstance(found, int) and not isinstance(found, bool) else found
    if not isinstance(value, str) or not _EVENT_ID.fullmatch(value):
        raise UnprocessableEvent(
            "event_id must be 1-255 printable ASCII characters", details={"field": "event_id", "path": path}
        )
    return value


def _occurred_at(path: str, document: Any) -> datetime:
    found = _required("occurred_at", path, document)
    problem = UnprocessableEvent(
        "occurred_at must be RFC 3339 with an offset, or Unix seconds",
        details={"field": "occurred_at", "path": path},
    )
    try:
        if isinstance(found, int | float) and not isinstance(found, bool):
            return datetime.fromtimestamp(found, UTC)
        if isinstance(found, str):
            stamp = datetime.fromisoformat(found)
            if stamp.tzinfo is not None:
                return within_utc(stamp)
    except (ValueError, OverflowError, OSError):
        raise problem from None
    raise problem


def adapt(adapter: WebhookAdapter, body: bytes) -> AdaptedEvent:
    """The internal event of a verified body. MalformedBody / MalformedXml (400) when the body
    is not the configured format; UnprocessableEvent (422) naming the field otherwise."""
    if adapter.body_format != "json":
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedBody("request body is not UTF-8 text") from None
        if adapter.body_format == "xml":
            try:
                parse_xml(text)  # well formed, no DOCTYPE: refused here rather than in the pipeline
            except MappingError:
                raise MalformedXml("request body is not well-formed XML (or declares a DOCTYPE)") from None
        return AdaptedEvent(adapter.message_type or "", text, None, None)
    # The rules of receive-message's body (hub.domain.strict_json): MalformedBody (400) naming
    # the problem for text that is not UTF-8 or not JSON, NaN / Infinity, nesting beyond the limit.
    document = parse_json(body)
    message_type = _message_type(adapter, document)
    event_id = _event_id(adapter.event_id_path, document) if adapter.event_id_path else None
    occurred_at = _occurred_at(adapter.occurred_at_path, document) if adapter.occurred_at_path else None
    data = _required("data", adapter.data_path, document) if adapter.data_path else document
    if not isinstance(data, dict):
        raise UnprocessableEvent("the business data must be a JSON object", details={"field": "data"})
    return AdaptedEvent(message_type, data, event_id, occurred_at)
