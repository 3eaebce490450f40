"""CloudFormation template reading: YAML short-form tags and intrinsic function resolution.

The loader turns every short-form tag (``!Ref X``, ``!GetAtt A.B``, ``!Sub ...``) into the
long form CloudFormation itself uses (``{"Ref": "X"}``, ``{"Fn::GetAtt": ["A", "B"]}``), so
the resolver only has to understand one shape and JSON templates work the same way.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

ACCOUNT_ID = "123456789012"  # moto's default account
PARTITION = "aws"
URL_SUFFIX = "amazonaws.com"

_SUB_VARIABLE = re.compile(r"\$\{([^}]+)\}")


class TemplateError(ValueError):
    """The template uses something this local runtime cannot resolve or provision."""


class UnresolvedReference(TemplateError):
    """A Ref/GetAtt points at a name that has no value (yet)."""


class _NoValue:
    """Marker for ``AWS::NoValue``: the property it stands in is removed."""

    def __repr__(self) -> str:
        return "AWS::NoValue"


NO_VALUE = _NoValue()


# --- loading -------------------------------------------------------------------------


class _TemplateLoader(yaml.SafeLoader):
    """SafeLoader that also understands the CloudFormation short-form tags."""


def _tag_constructor(function: str) -> Callable[[yaml.SafeLoader, yaml.Node], Any]:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
        value: Any
        if isinstance(node, yaml.ScalarNode):
            value = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
        if function == "Fn::GetAtt" and isinstance(value, str):
            logical_id, _, attribute = value.partition(".")
            value = [logical_id, attribute]
        return {function: value}

    return construct


for _tag, _function in {
    "!Ref": "Ref",
    "!Condition": "Condition",
    **{
        f"!{name}": f"Fn::{name}"
        for name in (
            "GetAtt",
            "Sub",
            "Join",
            "Select",
            "Split",
            "FindInMap",
            "If",
            "Equals",
            "Not",
            "And",
            "Or",
            "Base64",
            "GetAZs",
            "ImportValue",
            "Cidr",
            "Length",
            "ToJsonString",
            "Transform",
        )
    },
}.items():
    _TemplateLoader.add_constructor(_tag, _tag_constructor(_function))


#: Parsed templates by (path, modification time, size): parsing template.yaml takes a few
#: hundred milliseconds of pure-Python YAML, and the integration tests provision a stack per test.
_PARSED: dict[tuple[Path, int, int], dict[str, Any]] = {}


def load_template(path: Path) -> dict[str, Any]:
    """Read a SAM/CloudFormation template (YAML or JSON) into plain long-form dicts: a fresh
    copy per call (callers may change it), parsed once per version of the file."""
    stat = path.stat()
    key = (path.resolve(), stat.st_mtime_ns, stat.st_size)
    document = _PARSED.get(key)
    if document is None:
        with path.open(encoding="utf-8") as handle:
            document = yaml.load(handle, Loader=_TemplateLoader)  # noqa: S506 - SafeLoader subclass
        if not isinstance(document, dict) or "Resources" not in document:
            raise TemplateError(f"{path} is not a CloudFormation template (no Resources)")
        _PARSED[key] = document
    return copy.deepcopy(document)


# --- dependency discovery --------------------------------------------------------------


def referenced_names(node: Any) -> set[str]:
    """Every name a node refers to through Ref, GetAtt or Sub (parameters included).

    Used to order resource creation; callers intersect it with the resource ids.
    """
    found: set[str] = set()
    if isinstance(node, list):
        for item in node:
            found |= referenced_names(item)
    elif isinstance(node, dict):
        if len(node) == 1:
            ((key, value),) = node.items()
            if key == "Ref" and isinstance(value, str):
                return {value}
            if key == "Fn::GetAtt" and isinstance(value, list) and value:
                return {str(value[0])}
            if key == "Fn::Sub":
                template, variables = (value, {}) if isinstance(value, str) else value
                for match in _SUB_VARIABLE.finditer(template):
                    name = match.group(1)
                    if not name.startswith("!"):
                        found.add(name.split(".", 1)[0])
                found -= set(variables)
                return found | referenced_names(variables)
        for value in node.values():
            found |= referenced_names(value)
    return found


# --- resolution ------------------------------------------------------------------------


def to_string(value: Any) -> str:
    """CloudFormation's string form of a scalar (used by Sub, Join and env variables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ",".join(to_string(item) for item in value)
    return str(value)


class Resolver:
    """Resolves intrinsic functions against known parameter, resource and attribute values.

    ``refs`` and ``attributes`` are read at call time, so a provisioner can keep filling
    them while it walks resources in dependency order.
    """

    def __init__(
        self,
        *,
        region: str,
        stack_name: str,
        parameters: Mapping[str, Any],
        refs: Mapping[str, Any],
        attributes: Mapping[tuple[str, str], Any],
        mappings: Mapping[str, Any] | None = None,
        conditions: Mapping[str, Any] | None = None,
        account_id: str = ACCOUNT_ID,
    ) -> None:
        self.region = region
        self.stack_name = stack_name
        self.account_id = account_id
        self.parameters = parameters
        self.refs = refs
        self.attributes = attributes
        self.mappings = mappings or {}
        self._condition_definitions = conditions or {}
        self._condition_values: dict[str, bool] = {}

    @property
    def pseudo_parameters(self) -> dict[str, Any]:
        return {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account_id,
            "AWS::StackName": self.stack_name,
            "AWS::StackId": (
                f"arn:{PARTITION}:cloudformation:{self.region}:{self.account_id}:"
                f"stack/{self.stack_name}/00000000-0000-0000-0000-000000000000"
            ),
            "AWS::Partition": PARTITION,
            "AWS::URLSuffix": URL_SUFFIX,
            "AWS::NotificationARNs": [],
            "AWS::NoValue": NO_VALUE,
        }

    def condition(self, name: str) -> bool:
        """Value of a named condition from the template's Conditions section (cached)."""
        if name not in self._condition_values:
            if name not in self._condition_definitions:
                raise TemplateError(f"unknown condition {name!r}")
            self._condition_values[name] = bool(self.resolve(self._condition_definitions[name]))
        return self._condition_values[name]

    def ref(self, name: str) -> Any:
        pseudo = self.pseudo_parameters
        if name in pseudo:
            return pseudo[name]
        if name in self.parameters:
            return self.parameters[name]
        try:  # a mapping may supply placeholders for ignored resources via __missing__
            return self.refs[name]
        except KeyError:
            raise UnresolvedReference(f"Ref {name!r} has no value") from None

    def get_att(self, logical_id: str, attribute: str) -> Any:
        try:
            return self.attributes[(logical_id, attribute)]
        except KeyError:
            raise UnresolvedReference(f"GetAtt {logical_id}.{attribute} has no value") from None

    def resolve(self, node: Any) -> Any:
        """Return ``node`` with every intrinsic function replaced by its value.

        ``AWS::NoValue`` entries are dropped from the enclosing dict or list.
        """
        if isinstance(node, list):
            resolved = (self.resolve(item) for item in node)
            return [item for item in resolved if item is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, value),) = node.items()
            if key == "Ref":
                return self.ref(str(value))
            if key == "Condition" and isinstance(value, str):
                return self.condition(value)
            if key.startswith("Fn::"):
                return self._function(key[4:], value)
        result = {}
        for key, value in node.items():
            resolved = self.resolve(value)
            if resolved is not NO_VALUE:
                result[key] = resolved
        return result

    def _function(self, name: str, argument: Any) -> Any:
        handler = getattr(self, f"_fn_{name.lower()}", None)
        if handler is None:
            raise TemplateError(f"Fn::{name} is not supported by the local stack")
        return handler(argument)

    def _fn_getatt(self, argument: Any) -> Any:
        logical_id, attribute = self.resolve(argument)
        return self.get_att(str(logical_id), str(attribute))

    def _fn_sub(self, argument: Any) -> str:
        if isinstance(argument, str):
            template, variables = argument, {}
        else:
            template, raw_variables = argument
            variables = self.resolve(raw_variables)

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):  # ${!Literal} renders as ${Literal}
                return "${" + name[1:] + "}"
            if name in variables:
                return to_string(variables[name])
            if "." in name:
                logical_id, attribute = name.split(".", 1)
                if logical_id not in self.pseudo_parameters:
                    return to_string(self.get_att(logical_id, attribute))
            return to_string(self.ref(name))

        return _SUB_VARIABLE.sub(substitute, template)

    def _fn_join(self, argument: Any) -> str:
        delimiter, items = argument
        values = self.resolve(items)
        return str(delimiter).join(to_string(value) for value in values)

    def _fn_select(self, argument: Any) -> Any:
        index, items = self.resolve(argument)
        return items[int(index)]

    def _fn_split(self, argument: Any) -> list[str]:
        delimiter, source = self.resolve(argument)
        return str(source).split(str(delimiter))

    def _fn_findinmap(self, argument: Any) -> Any:
        map_name, top_key, second_key = (to_string(part) for part in self.resolve(argument)[:3])
        try:
            return self.mappings[map_name][top_key][second_key]
        except KeyError as exc:
            raise TemplateError(f"FindInMap {map_name}/{top_key}/{second_key} missing") from exc

    def _fn_if(self, argument: Any) -> Any:
        condition_name, when_true, when_false = argument
        return self.resolve(when_true if self.condition(condition_name) else when_false)

    def _fn_equals(self, argument: Any) -> bool:
        left, right = self.resolve(argument)
        return to_string(left) == to_string(right)

    def _fn_not(self, argument: Any) -> bool:
        (value,) = argument
        return not self.resolve(value)

    def _fn_and(self, argument: Any) -> bool:
        return all(self.resolve(value) for value in argument)

    def _fn_or(self, argument: Any) -> bool:
        return any(self.resolve(value) for value in argument)

    def _fn_base64(self, argument: Any) -> str:
        return base64.b64encode(to_string(self.resolve(argument)).encode()).decode()

    def _fn_getazs(self, argument: Any) -> list[str]:
        region = to_string(self.resolve(argument)) or self.region
        return [f"{region}{zone}" for zone in "abc"]

    def _fn_length(self, argument: Any) -> int:
        return len(self.resolve(argument))

    def _fn_tojsonstring(self, argument: Any) -> str:
        return json.dumps(self.resolve(argument), separators=(",", ":"))
