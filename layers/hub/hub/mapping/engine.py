"""Apply a mapping spec to a message payload: pure, no I/O.

`apply_mapping` reads the payload (a JSON object, or text: XML when it starts with "<", else
JSON), fills the spec's output template and serializes it as JSON or XML, within the limits of
`hub.domain.expression_limits` (the admin preview and the worker both run it). `passthrough` is what a
message type without a spec sends. Every failure is a MappingError (class syntax).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from jmespath.exceptions import JMESPathError, JMESPathTypeError

from hub.domain.expression_limits import DEFAULT_LIMITS, Budget, MappingLimits
from hub.domain.mapping_errors import MappingError
from hub.domain.mapping_spec import ConstRule, EachRule, MappingSpec, PathRule, compiled
from hub.domain.mapping_transforms import TransformFailed, kind_of
from hub.domain.strict_json import parse_json
from hub.errors import MalformedBody
from hub.mapping.xml_input import parse_xml
from hub.mapping.xml_output import to_xml

JSON = "application/json"
XML = "application/xml"
TEXT_XML = "text/xml; charset=utf-8"
TEXT_PLAIN = "text/plain; charset=utf-8"

#: Marks an optional field that found nothing: it is left out of the output.
_OMIT: Any = object()


@dataclass(frozen=True)
class MappedOutput:
    """The body to send and its content type; `data` is the mapped document (None for text
    passed through as is)."""

    body: bytes
    content_type: str
    data: Any


def _looks_like_xml(text: str) -> bool:
    return text.lstrip("\ufeff \t\r\n").startswith("<")


def looks_like_xml(text: str) -> bool:
    """True for text the hub treats as XML (first non-blank character is "<")."""
    return _looks_like_xml(text)


def read_payload(payload: Mapping[str, Any] | str) -> Any:
    """The payload as a document JMESPath can search: a dict as given, XML text via
    `parse_xml`, other text as JSON under the rules of the partner API's bodies
    (`hub.domain.strict_json`: no NaN or Infinity, no unpaired surrogates, bounded depth)."""
    if not isinstance(payload, str):
        return payload
    if _looks_like_xml(payload):
        return parse_xml(payload)
    try:
        return parse_json(payload, what="payload")
    except MalformedBody as refused:
        # Says what kind of problem it is and where, never the payload's text.
        raise MappingError(refused.message) from None


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def _search(expression: str, document: Any, field: str, budget: Budget) -> Any:
    try:
        return budget.search(compiled(expression), expression, document, field)
    except JMESPathTypeError as error:
        # str(error) quotes the offending value; keep only names and types.
        raise MappingError(
            f"path {expression!r}: {error.function_name}() got {error.actual_type}, "
            f"expected {' or '.join(error.expected_types)}",
            field=field,
        ) from None
    except JMESPathError:
        raise MappingError(f"path {expression!r} cannot be evaluated on this input", field=field) from None


def _path_value(rule: PathRule, document: Any, field: str, budget: Budget) -> Any:
    value = _search(rule.path, document, field, budget)
    if value is None and rule.has_default:
        return rule.default
    for transform in rule.transforms:
        try:
            value = transform.apply(value)
        except TransformFailed as failed:
            raise MappingError(f"{transform.name}: {failed}", field=field) from None
    if value is None:
        if rule.required:
            raise MappingError(f"required value is missing (path {rule.path!r})", field=field)
        return _OMIT
    return value


def _each_value(rule: EachRule, document: Any, field: str, budget: Budget) -> Any:
    items = _search(rule.each, document, field, budget)
    if items is None:
        if rule.required:
            raise MappingError(f"required list is missing (path {rule.each!r})", field=field)
        return []
    if isinstance(items, dict):
        items = [items]  # a line item that occurs once in XML
    if not isinstance(items, list):
        raise MappingError(f"path {rule.each!r} should give a list, found {kind_of(items)}", field=field)
    rendered = (_render(rule.template, item, f"{field}[{index}]", budget) for index, item in enumerate(items))
    return [value for value in rendered if value is not _OMIT]


def _leaf(value: Any, field: str, budget: Budget) -> Any:
    if value is not _OMIT:
        budget.add_to_body(value, field)
    return value


def _render(node: Any, document: Any, field: str, budget: Budget) -> Any:
    budget.tick(field)
    if isinstance(node, PathRule):
        return _leaf(_path_value(node, document, field, budget), field, budget)
    if isinstance(node, ConstRule):
        return _leaf(node.const, field, budget)
    if isinstance(node, EachRule):
        return _each_value(node, document, field, budget)
    if isinstance(node, list):
        items = (_render(child, document, f"{field}[{index}]", budget) for index, child in enumerate(node))
        return [value for value in items if value is not _OMIT]
    rendered = {}
    for key, child in node.items():
        value = _render(child, document, _join(field, key), budget)
        if value is not _OMIT:
            budget.add_bytes(len(key) + 4, field)  # the key, its quotes, a colon and a comma
            rendered[key] = value
    return rendered


def _json_text(value: Any) -> str:
    # json cannot write a Decimal as a number; written by hand it keeps its exact places.
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dict):
        return "{" + ",".join(f"{_json_text(str(k))}:{_json_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json_text(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def to_json(data: Any) -> bytes:
    """Compact UTF-8 JSON, keys in template order, Decimals exact (12.50 stays 12.50)."""
    return _json_text(data).encode()


def apply_mapping(
    spec: MappingSpec,
    payload: Mapping[str, Any] | str,
    *,
    limits: MappingLimits = DEFAULT_LIMITS,
    timer: Callable[[], float] = time.monotonic,
) -> MappedOutput:
    """The payload mapped by `spec`, within `limits` (the body bound lowered to the spec's own
    `max_body_bytes`). Deterministic; raises MappingError (class syntax) naming the output
    field, never quoting payload values: MappingTooLarge, naming the expression too, when a
    value built on the way, the body or the run time goes over its limit."""
    budget = Budget(limits.lowered_to(spec.max_body_bytes), timer)
    document = read_payload(payload)
    data = _render(spec.output, document, "", budget)
    if spec.output_format == "xml":
        assert spec.xml_root is not None  # guaranteed by MappingSpec's validation
        output = MappedOutput(to_xml(data, spec.xml_root, spec.xml_namespace), XML, data)
    else:
        output = MappedOutput(to_json(data), JSON, data)
    budget.check_body(output.body)
    return output


def passthrough(payload: Mapping[str, Any] | str) -> MappedOutput:
    """What a message type without a mapping sends: a JSON object as compact JSON (keys as
    received), text byte for byte in UTF-8 as text/xml when it looks like XML, else text/plain."""
    if isinstance(payload, str):
        return MappedOutput(payload.encode(), TEXT_XML if _looks_like_xml(payload) else TEXT_PLAIN, None)
    return MappedOutput(to_json(payload), JSON, payload)
