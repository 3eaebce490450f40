"""A declarative mapping spec: stored as JSON in an integration's config, validated when saved.

The output is a template: nested objects and lists whose leaves are rules.

- ``{"path": "<jmespath>", "transforms": [...], "required": true, "default": <scalar>}`` —
  a value from the input. Missing (null) → `default` as is, if given; else the transforms run
  (None passes through all but `default_if_empty`); still missing → an error when `required`
  (the default), the field left out when not.
- ``{"const": <scalar>}`` — a constant.
- ``{"each": "<jmespath to a list>", "template": <node>}`` — one output item per input item,
  the template's paths relative to the item. A single object counts as a one-item list
  (XML has no lists: a line item that occurs once is an object).

A dict is a rule when it has a "path" or "each" key holding text, or a "const" key holding
a scalar; any other dict is a nested object. Template values are never text or scalars, so an
output field may itself be called "path", "const" or "each".

Transforms are ``"name"`` or ``{"name": ..., <args>}``: see `hub.domain.mapping_transforms`.
Every JMESPath expression is compiled and its function names checked at construction, and must
stay within MAX_EXPRESSION_LENGTH and MAX_EXPRESSION_NESTING (issue 27); what an expression may
build while it runs is bounded by the engine (`hub.domain.expression_limits`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

import jmespath
from jmespath.exceptions import JMESPathError
from jmespath.functions import Functions
from jmespath.parser import ParsedResult
from pydantic import (
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError
from typing_extensions import TypeAliasType

from hub.domain.mapping_transforms import JsonScalar, Transform
from hub.domain.model import HubModel

#: The longest JMESPath expression a spec (or a business key, or a webhook path) may hold.
#: Real ones are under 100 characters; the bound keeps parsing and each evaluation small.
MAX_EXPRESSION_LENGTH = 1000
#: How deep an expression's parse tree may nest (every bracket, function call, operator and
#: pipe stage is a level). Real ones nest under 6; the bound keeps the recursive parser and
#: interpreter far from Python's recursion limit.
MAX_EXPRESSION_NESTING = 32
#: The largest mapped body, and the largest value any expression may build on the way: the
#: 256 KiB an SQS message (and the hub's default `MaxBodyBytes`) can carry.
MAX_BODY_BYTES = 256 * 1024
#: The error type (pydantic's `details[].problem`) of an expression over a limit.
TOO_LARGE = "mapping_too_large"

_XML_NAME = re.compile(r"[^\W\d][\w.-]*")
_SCALARS = (str, int, float, bool, type(None))


class _Frozen(HubModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


@lru_cache(maxsize=2048)
def compiled(expression: str) -> ParsedResult:
    """The compiled JMESPath expression (cached: specs are evaluated once per message)."""
    return jmespath.compile(expression)


def _function_problems(node: Any) -> list[str]:
    """Unknown functions and wrong argument counts, which jmespath only reports at search time."""
    problems: list[str] = []
    if isinstance(node, dict):
        if node.get("type") == "function_expression":
            name, given = node["value"], len(node["children"])
            signature = Functions.FUNCTION_TABLE.get(name, {}).get("signature")
            if signature is None:
                problems.append(f"unknown JMESPath function {name!r}")
            elif given < len(signature) or (given > len(signature) and not signature[-1].get("variadic")):
                problems.append(f"JMESPath function {name!r} takes {len(signature)} argument(s), got {given}")
        for child in node.get("children", ()):
            problems += _function_problems(child)
    return problems


def _nests_deeper_than(tree: dict[str, Any], limit: int) -> bool:
    """True when the parse tree has more than `limit` levels (level by level, no recursion)."""
    level, depth = [tree], 0
    while level:
        depth += 1
        if depth > limit:
            return True
        level = [child for node in level for child in node.get("children", ()) if isinstance(child, dict)]
    return False


def _too_large(expression: str, problem: str) -> PydanticCustomError:
    # The expression's first characters only: the message must stay readable.
    shown = expression if len(expression) <= 60 else f"{expression[:60]}..."
    # The text goes in through the context: an expression's braces are no template fields.
    return PydanticCustomError(
        TOO_LARGE, "{message}", {"message": f"JMESPath expression {shown!r} {problem}"}
    )


def _check_expression(expression: str) -> str:
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise _too_large(expression, f"is longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        parsed = compiled(expression)
    except JMESPathError as error:
        raise ValueError(f"invalid JMESPath expression {expression!r}: {error}") from None
    except RecursionError:  # jmespath parses prefix operators ("!!!...") recursively
        raise _too_large(expression, f"nests deeper than {MAX_EXPRESSION_NESTING} levels") from None
    if _nests_deeper_than(parsed.parsed, MAX_EXPRESSION_NESTING):
        raise _too_large(expression, f"nests deeper than {MAX_EXPRESSION_NESTING} levels")
    problems = _function_problems(parsed.parsed)
    if problems:
        raise ValueError(f"{problems[0]} in {expression!r}")
    return expression


def check_expression(expression: str) -> str:
    """`expression` when it is a valid JMESPath expression within MAX_EXPRESSION_LENGTH and
    MAX_EXPRESSION_NESTING; else ValueError naming the problem, or (over a limit) a pydantic
    error of type TOO_LARGE. Meant for validators."""
    return _check_expression(expression)


def _expand_shorthand(transforms: Any) -> Any:
    # "trim" is short for {"name": "trim"}.
    if isinstance(transforms, list | tuple):
        return [{"name": t} if isinstance(t, str) else t for t in transforms]
    return transforms


class PathRule(_Frozen):
    path: str
    transforms: Annotated[tuple[Transform, ...], BeforeValidator(_expand_shorthand)] = ()
    required: bool = True
    #: Only when given (even as null) does it replace a missing value; see `has_default`.
    default: JsonScalar = None

    _path_compiles = field_validator("path")(_check_expression)

    @property
    def has_default(self) -> bool:
        return "default" in self.model_fields_set

    @model_serializer(mode="wrap")
    def _omit_unset_default(self, handler: SerializerFunctionWrapHandler) -> Any:
        # An unset default must stay unset through a JSON round trip, or a missing required
        # field would silently become null after the spec is saved and loaded again.
        data = handler(self)
        if not self.has_default:
            data.pop("default", None)
        return data


class ConstRule(_Frozen):
    const: JsonScalar


class EachRule(_Frozen):
    each: str
    template: Node
    #: A missing list is an error when required, else an empty list.
    required: bool = True

    _each_compiles = field_validator("each")(_check_expression)


def _node_kind(value: Any) -> str | None:
    if isinstance(value, PathRule | ConstRule | EachRule):
        return {PathRule: "path", ConstRule: "const", EachRule: "each"}[type(value)]
    if isinstance(value, dict):
        for key in ("path", "each"):
            if key in value and not isinstance(value[key], dict | list):
                return key
        if "const" in value and isinstance(value["const"], _SCALARS):
            return "const"
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return None


# mypy cannot resolve a recursive TypeAliasType whose members refer back to it, so it sees the
# plain recursive union; pydantic needs TypeAliasType (on 3.11) to validate a recursive alias.
if TYPE_CHECKING:
    Node: TypeAlias = "PathRule | ConstRule | EachRule | dict[str, Node] | list[Node]"
else:
    # What pydantic validates: the same union, told apart by `_node_kind`.
    Node = TypeAliasType(
        "Node",
        Annotated[
            Annotated[PathRule, Tag("path")]
            | Annotated[ConstRule, Tag("const")]
            | Annotated[EachRule, Tag("each")]
            | Annotated[dict[str, "Node"], Tag("object")]
            | Annotated[list["Node"], Tag("array")],
            Discriminator(
                _node_kind,
                custom_error_type="invalid_template_node",
                custom_error_message=(
                    "expected a rule ({'path': ...}, {'const': <scalar>}, {'each': ..., 'template': ...})"
                    " or a nested object or list"
                ),
            ),
        ],
    )
EachRule.model_rebuild()


class MappingSpec(_Frozen):
    """How to turn one message type's payload into the body sent to the destination."""

    output: dict[str, Node]
    output_format: Literal["json", "xml"] = "json"
    #: The XML root element (required for xml output), e.g. "consStatServ".
    xml_root: str | None = None
    #: The default namespace declared on the root; children inherit it.
    xml_namespace: str | None = None
    #: A smaller bound than MAX_BODY_BYTES for this type's mapped body (a destination that takes
    #: less); also bounds every value its expressions build.
    max_body_bytes: int | None = Field(default=None, ge=1, le=MAX_BODY_BYTES)

    @model_serializer(mode="wrap")
    def _omit_unset_maximum(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Specs saved before the field existed read and dump as they did.
        data = handler(self)
        if self.max_body_bytes is None:
            data.pop("max_body_bytes", None)
        return data

    @model_validator(mode="after")
    def _xml_settings(self) -> MappingSpec:
        if self.output_format == "json":
            if self.xml_root is not None or self.xml_namespace is not None:
                raise ValueError("xml_root and xml_namespace apply only to output_format 'xml'")
            return self
        if self.xml_root is None or not _XML_NAME.fullmatch(self.xml_root):
            raise ValueError("output_format 'xml' needs xml_root, a valid XML element name")
        if self.xml_namespace is not None and not self.xml_namespace.strip():
            raise ValueError("xml_namespace must not be blank")
        _check_xml_names(self.output, "")
        return self


def _check_xml_names(node: Any, where: str) -> None:
    """Output keys must become element names ("@name" attributes, "#text" text) in xml output."""
    if isinstance(node, EachRule):
        _check_xml_names(node.template, where)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            _check_xml_names(item, f"{where}[{index}]")
    elif isinstance(node, dict):
        for key, child in node.items():
            field = f"{where}.{key}" if where else key
            name = key[1:] if key.startswith("@") else key
            if key != "#text" and not _XML_NAME.fullmatch(name):
                raise ValueError(f"output field {field!r} is not a valid XML name")
            if key.startswith("@") or key == "#text":
                if not isinstance(child, PathRule | ConstRule):
                    raise ValueError(
                        f"output field {field!r} (attribute or text) must be a path or const rule"
                    )
            else:
                _check_xml_names(child, field)
