"""Declarative payload mapping: a JSON-stored spec of JMESPath rules, constants and named
transforms turns a partner's JSON or XML into the body a destination expects (JSON or XML).
Pure domain code: no I/O."""

from hub.domain.mapping_errors import MappingError, MappingTooLarge
from hub.domain.mapping_spec import MappingSpec
from hub.mapping.engine import MappedOutput, apply_mapping, passthrough
from hub.mapping.xml_input import parse_xml
from hub.mapping.xml_output import to_xml

__all__ = [
    "MappedOutput",
    "MappingError",
    "MappingSpec",
    "MappingTooLarge",
    "apply_mapping",
    "parse_xml",
    "passthrough",
    "to_xml",
]
