"""Parse partner XML (e.g. an SAP IDoc) into a dict, safely.

Safety: any DOCTYPE is refused before its internal subset is read, so no entity is ever
declared (no XXE, no billion laughs), no external DTD or entity is fetched, and nothing touches
the network or the file system. Size and nesting depth are bounded.

Shape rules (close to xmltodict, so JMESPath paths read like the document):

- the result is ``{root_name: content}``;
- names are local names: namespace URIs and prefixes are dropped, ``xmlns`` declarations are
  not kept; children with the same local name from different namespaces share one key;
- an element with neither attributes nor children is its text, verbatim, or None when empty;
- otherwise it is a dict: attributes as ``"@name"``, children by name, a repeated child as a
  list in document order, and non-blank text beside children (or beside attributes) as
  ``"#text"``; whitespace-only text between children is indentation and is dropped;
- all values are strings (or None): XML has no numbers; transforms convert them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

from hub.domain.mapping_errors import MappingError
from hub.domain.strict_json import MAX_NESTING_DEPTH

#: Above the partner API's body limit (256 KiB by default): the limit guards the parser, not the API.
MAX_XML_BYTES = 1024 * 1024
#: The hub's one nesting limit, for XML elements as for JSON objects and arrays.
MAX_XML_DEPTH = MAX_NESTING_DEPTH


@dataclass
class _Element:
    name: str
    attributes: dict[str, str]
    children: dict[str, Any] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)

    def add_child(self, name: str, value: Any) -> None:
        # Element values are never lists, so a list here always means "repeated child".
        if name not in self.children:
            self.children[name] = value
        elif isinstance(self.children[name], list):
            self.children[name].append(value)
        else:
            self.children[name] = [self.children[name], value]

    def value(self) -> Any:
        text = "".join(self.text)
        if not self.attributes and not self.children:
            return text or None
        node: dict[str, Any] = {f"@{k}": v for k, v in self.attributes.items()}
        node.update(self.children)
        if self.children:
            text = text.strip()
        if text.strip():
            node["#text"] = text
        return node


def _local(name: str) -> str:
    # With namespace_separator=" " expat reports "uri local" for qualified names.
    return name.rpartition(" ")[2]


class _Refused(Exception):
    """Raised from inside an expat handler to stop the parse at once."""


class _Builder:
    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.stack: list[_Element] = []
        self.root: dict[str, Any] | None = None

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if len(self.stack) >= self.max_depth:
            raise _Refused(f"XML is nested deeper than {self.max_depth} elements")
        attributes: dict[str, str] = {}
        for qualified, value in attrs.items():
            local = _local(qualified)
            if local in attributes:
                raise _Refused(f"attribute '{local}' appears twice once namespaces are removed")
            attributes[local] = value
        self.stack.append(_Element(_local(name), attributes))

    def end(self, _name: str) -> None:
        element = self.stack.pop()
        if self.stack:
            self.stack[-1].add_child(element.name, element.value())
        else:
            self.root = {element.name: element.value()}

    def text(self, data: str) -> None:
        if self.stack:
            self.stack[-1].text.append(data)


def _refuse_doctype(*_args: object) -> None:
    raise _Refused("XML with a DOCTYPE (DTD) is not accepted")


def _refuse_entity(*_args: object) -> None:
    raise _Refused("XML entity declarations are not accepted")


def _refuse_external(*_args: object) -> int:
    raise _Refused("XML external entities are not accepted")


def parse_xml(
    text: str | bytes, *, max_bytes: int = MAX_XML_BYTES, max_depth: int = MAX_XML_DEPTH
) -> dict[str, Any]:
    """The document as a dict (see the module docstring for the shape).

    Never reads a DTD, declares or expands an entity, or opens a file or socket. Raises
    MappingError (class syntax, no field) for malformed XML, a DOCTYPE, more than `max_bytes`
    or deeper than `max_depth`; messages give a position, never document content.
    """
    size = len(text.encode() if isinstance(text, str) else text)
    if size > max_bytes:
        raise MappingError(f"XML is larger than {max_bytes} bytes")
    builder = _Builder(max_depth)
    parser = expat.ParserCreate(namespace_separator=" ")
    # The DOCTYPE handler alone stops XXE and billion laughs (it fires before the internal
    # subset is read); the others make sure nothing declared or external is ever resolved.
    parser.StartDoctypeDeclHandler = _refuse_doctype
    parser.EntityDeclHandler = _refuse_entity
    parser.UnparsedEntityDeclHandler = _refuse_entity
    parser.ExternalEntityRefHandler = _refuse_external
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.text
    parser.buffer_text = True
    try:
        parser.Parse(text, True)
    except _Refused as refused:
        raise MappingError(str(refused)) from None
    except expat.ExpatError as error:
        reason = expat.errors.messages[error.code] if error.code else "malformed"
        raise MappingError(
            f"XML is not well-formed ({reason}) at line {error.lineno}, column {error.offset}"
        ) from None
    if builder.root is None:
        raise MappingError("XML has no root element")
    return builder.root
