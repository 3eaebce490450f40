"""Write a mapped dict as XML (e.g. the body of a SOAP request).

The inverse of `hub.mapping.xml_input`'s shape: keys are element names in insertion order
(XSD sequences are ordered, so the spec's order is kept, never sorted), a list makes repeated
elements, ``"@name"`` keys are attributes, ``"#text"`` is text, None is an empty element.
Output is compact UTF-8 without an XML declaration (a SOAP body is embedded in an envelope),
and the same input always gives the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from hub.domain.mapping_errors import MappingError
from hub.domain.mapping_transforms import kind_of

_NAME = re.compile(r"[^\W\d][\w.-]*")
# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
_ATTR_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\r": "&#13;", "\n": "&#10;", "\t": "&#9;"}
)


def _scalar_text(value: Any, field: str) -> str:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, Decimal):
        text = format(value, "f")
    elif isinstance(value, int | float | str):
        text = str(value)
    else:
        raise MappingError(f"an XML attribute or text needs a scalar, found {kind_of(value)}", field=field)
    if _NOT_XML.search(text):
        raise MappingError("contains a character XML cannot carry", field=field)
    return text


def _checked_name(name: str, field: str) -> str:
    if not _NAME.fullmatch(name):
        raise MappingError("is not a valid XML name", field=field)
    return name


def _element(name: str, value: Any, field: str, out: list[str], extra_attrs: str = "") -> None:
    if isinstance(value, list):
        raise MappingError("a list inside a list cannot be written as XML", field=field)
    if not isinstance(value, Mapping):
        if value is None:
            out.append(f"<{name}{extra_attrs}/>")
        else:
            out.append(f"<{name}{extra_attrs}>{_scalar_text(value, field).translate(_TEXT_ESCAPES)}</{name}>")
        return
    attrs = [extra_attrs]
    body: list[str] = []
    for key, child in value.items():
        path = f"{field}.{key}" if field else key
        if key.startswith("@"):
            attr = _checked_name(key[1:], path)
            if child is not None:
                attrs.append(f' {attr}="{_scalar_text(child, path).translate(_ATTR_ESCAPES)}"')
        elif key == "#text":
            if child is not None:
                body.append(_scalar_text(child, path).translate(_TEXT_ESCAPES))
        else:
            _checked_name(key, path)
            for index, item in enumerate(child if isinstance(child, list) else [child]):
                _element(key, item, f"{path}[{index}]" if isinstance(child, list) else path, body)
    opening = f"<{name}{''.join(attrs)}"
    out.append(f"{opening}>{''.join(body)}</{name}>" if body else f"{opening}/>")


def to_xml(data: Mapping[str, Any], root: str, namespace: str | None = None) -> bytes:
    """`data` as the content of a `root` element, UTF-8, deterministic.

    `namespace` becomes the default namespace on the root (``xmlns="..."``), inherited by
    every child. Raises MappingError naming the field for names XML cannot have, nested lists,
    objects where text is needed and characters XML cannot carry.
    """
    extra = "" if namespace is None else f' xmlns="{namespace.translate(_ATTR_ESCAPES)}"'
    out: list[str] = []
    # Field paths are relative to the root, like the spec's output template.
    _element(_checked_name(root, "(xml_root)"), data, "", out, extra)
    return "".join(out).encode()
