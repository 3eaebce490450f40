"""What each Lambda function's code can ask AWS to do, read from the source (no import, no AWS),
and what its role in the SAM-transformed template allows. moto never enforces IAM, so this is
the only check, before a deploy, that a role grants every action its code calls and no other.

The code side is a small call graph over the `hub` package and the function's handler module:

- reachability goes definition by definition (module functions, methods, module constants),
  from everything in the handler module; a name or module attribute that resolves to one of our
  definitions makes it reachable (imports inside functions included: wiring's factories import
  what they build, so a function reaches only the adapters its factories construct);
- a method call is resolved by the receiver's type when it is known (`self`, an attribute set
  from a constructor call or an annotated parameter, an annotated parameter or local, a call's
  return annotation); a Protocol-typed receiver dispatches to the constructed classes that
  implement the protocol; an untyped one by name among the classes reachable code constructs
  (an over-approximation: a method of that name on any of them may run), except builtin
  container and string method names (`mapping.get`). Classes in `TYPED_ONLY` are reached only
  through a known type: by name, any untyped `.put(...)` or `.query(...)` would reach the table
  helper's and count as that DynamoDB call;
- boto3 clients come only from `hub.adapters.aws.client` / `best_effort_client` (or a function
  or method that returns one, like `Table._client`); `<client>.<method>(...)` is an operation,
  mapped to its API name with botocore's service model, and so is a method call on a local name
  assigned a client. `getattr(<client>, param)(...)` (Table._write) takes the constant strings
  reachable callers pass for `param`. A client handed to a library is resolved through
  `LIBRARY_CALLS`; any other use of a client (kept in an attribute, handed to our own code)
  fails the scan, so a new call path cannot be missed silently.

TransactWriteItems is no IAM action: DynamoDB checks each item's own action (Put -> PutItem,
Update -> UpdateItem, Delete -> DeleteItem, ConditionCheck -> ConditionCheckItem). The scan
counts the transaction entry kinds (dict literals keyed "Put", "Update", "Delete",
"ConditionCheck") reachable code builds.
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session
from botocore import xform_name

ROOT = Path(__file__).resolve().parent.parent
HUB = ROOT / "layers" / "hub" / "hub"

#: The client factories of hub.adapters.aws: every boto3 client the hub uses comes from them.
CLIENT_FACTORIES = frozenset({"hub.adapters.aws.client", "hub.adapters.aws.best_effort_client"})

#: boto3 service name -> IAM action prefix (they differ, e.g. cloudwatch signs as "monitoring").
IAM_PREFIX = {
    "dynamodb": "dynamodb",
    "sqs": "sqs",
    "kms": "kms",
    "scheduler": "scheduler",
    "secretsmanager": "secretsmanager",
    "ses": "ses",
    "events": "events",
    "cloudwatch": "cloudwatch",
}

#: A library the hub hands one of its clients to, and the operations it makes with it.
LIBRARY_CALLS = {
    ("aws_lambda_powertools.utilities.parameters.SecretsProvider", "secretsmanager"): ("GetSecretValue",),
}

#: Reached only through a known receiver type (see the module docstring).
TYPED_ONLY = frozenset({"hub.adapters.dynamo.table.Table"})

#: Method names of the builtin containers and strings. A call of one of these on a receiver of
#: unknown type is taken as the builtin's (`mapping.get(...)`), not as any of our classes' method
#: of that name; our objects reach them through typed receivers (annotations, constructors). The
#: dynamic check in the test backs this up.
BUILTIN_METHOD_NAMES = frozenset(
    name
    for kind in (dict, list, set, frozenset, str, bytes, tuple)
    for name in dir(kind)
    if not name.startswith("_")
)

#: TransactWriteItems' entry kinds and the IAM action DynamoDB checks for each.
TRANSACTION_ENTRIES = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}

#: Actions IAM checks besides the one called (the Service Authorization Reference's "dependent
#: actions"): a schedule with a target role passes that role.
DEPENDENT_ACTIONS = {"scheduler:CreateSchedule": ("iam:PassRole",)}


#: API operations IAM authorizes by another action: SQS has no permission of its own for its
#: batch versions (SendMessage allows SendMessageBatch, and so on).
ACTION_ALIASES = {
    "sqs:SendMessageBatch": "sqs:SendMessage",
    "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
}


def iam_action(action: str) -> str:
    """The IAM action that authorizes an API action."""
    return ACTION_ALIASES.get(action, action)


class ScanError(AssertionError):
    """The scanner met code it cannot account for (it never guesses)."""


# --- the source as definitions ------------------------------------------------------------------


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    scope: dict[str, str] = field(default_factory=dict)  # local name -> qualified name


@dataclass
class Definition:
    qualname: str
    module: Module
    node: ast.AST
    owner: ClassInfo | None = None  # the class of a method


@dataclass
class ClassInfo:
    qualname: str
    module: Module
    node: ast.ClassDef
    bases: list[str] = field(default_factory=list)  # qualified names
    methods: dict[str, Definition] = field(default_factory=dict)
    attribute_types: dict[str, set[str]] = field(default_factory=dict)  # self.<attr> -> classes
    protocol: bool = False


def _imports(node: ast.AST, module_name: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                yield alias.name.split(".")[0], alias.name.split(".")[0]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module_name.split(".")[: -node.level]
            base = ".".join([*package, base] if base else package)
        for alias in node.names:
            yield alias.asname or alias.name, f"{base}.{alias.name}"


#: Decorators of a Powertools resolver or Router that register the function as a route.
_ROUTE_DECORATORS = frozenset({"get", "post", "put", "patch", "delete", "head", "route"})


def _registers_a_route(node: ast.FunctionDef) -> bool:
    return any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in _ROUTE_DECORATORS
        for d in node.decorator_list
    )


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


class Program:
    """The hub package plus the functions' handler modules (`handler.<folder>`), as definitions."""

    def __init__(self) -> None:
        self.modules: dict[str, Module] = {}
        self.definitions: dict[str, Definition] = {}
        self.classes: dict[str, ClassInfo] = {}
        self._scopes: dict[int, dict[str, str]] = {}
        self._parameters: dict[int, dict[str, set[str]]] = {}
        for path in sorted(HUB.rglob("*.py")):
            parts = path.relative_to(HUB.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            self._add_module(name, path)
        for path in sorted((ROOT / "functions").glob("*/*.py")):
            self._add_module(f"handler.{path.parent.name}.{path.stem}", path)
        for info in self.classes.values():
            self._class_details(info)

    def _add_module(self, name: str, path: Path) -> Module:
        module = Module(name, path, ast.parse(path.read_text(), filename=str(path)))
        self.modules[name] = module
        for node in module.tree.body:
            if _is_type_checking(node):
                continue  # annotations only
            for local, target in _imports(node, name):
                module.scope[local] = target
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self._define(module, node.name, node)
            elif isinstance(node, ast.ClassDef):
                qualname = f"{name}.{node.name}"
                module.scope[node.name] = qualname
                info = ClassInfo(qualname, module, node)
                self.classes[qualname] = info
                self.definitions[qualname] = Definition(qualname, module, node)
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        method = Definition(f"{qualname}.{item.name}", module, item, info)
                        info.methods[item.name] = method
                        self.definitions[method.qualname] = method
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                assigned = node.targets if isinstance(node, ast.Assign) else [node.target]
                for each in assigned:
                    for name_node in ast.walk(each):
                        if isinstance(name_node, ast.Name):
                            self._define(module, name_node.id, node)
        return module

    def _define(self, module: Module, local: str, node: ast.AST) -> None:
        qualname = f"{module.name}.{local}"
        module.scope[local] = qualname
        self.definitions[qualname] = Definition(qualname, module, node)

    def _class_details(self, info: ClassInfo) -> None:
        for base in info.node.bases:
            resolved = self.resolve_expr(base, info.module, {})
            if resolved:
                info.bases.append(resolved)
            if "Protocol" in ast.unparse(base) or ast.unparse(base) in ("ABC", "abc.ABC"):
                info.protocol = True
        for method in info.methods.values():
            assert isinstance(method.node, ast.FunctionDef | ast.AsyncFunctionDef)
            params = self.parameter_types(method)
            for node in ast.walk(method.node):
                if not isinstance(node, ast.Assign | ast.AnnAssign):
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        types = self.value_types(node.value, method, params) if node.value else set()
                        if isinstance(node, ast.AnnAssign):
                            types |= self.annotation_types(node.annotation, method)
                        if types:
                            info.attribute_types.setdefault(target.attr, set()).update(types)

    # --- names and types --------------------------------------------------------------------

    def function_scope(self, definition: Definition) -> dict[str, str]:
        """Imports inside a function (wiring's factories), its nested ones included."""
        key = id(definition.node)
        if key not in self._scopes:
            scope: dict[str, str] = {}
            for node in ast.walk(definition.node):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    scope.update(_imports(node, definition.module.name))
            self._scopes[key] = scope
        return self._scopes[key]

    def resolve_name(self, name: str, module: Module, local: dict[str, str]) -> str | None:
        return local.get(name) or module.scope.get(name)

    def resolve_expr(self, node: ast.AST, module: Module, local: dict[str, str]) -> str | None:
        """The qualified name a Name or dotted Attribute stands for (ours or a library's)."""
        if isinstance(node, ast.Name):
            return self.resolve_name(node.id, module, local)
        if isinstance(node, ast.Attribute):
            base = self.resolve_expr(node.value, module, local)
            return f"{base}.{node.attr}" if base else None
        return None

    def annotation_types(self, node: ast.AST | None, definition: Definition) -> set[str]:
        if node is None:
            return set()
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node = ast.parse(node.value, mode="eval").body
        if isinstance(node, ast.BinOp):  # X | None
            return self.annotation_types(node.left, definition) | self.annotation_types(
                node.right, definition
            )
        local = self.function_scope(definition) if definition.owner is None else {}
        target = self.resolve_expr(node, definition.module, local) or self._type_checking_name(
            node, definition
        )
        return {target} if target in self.classes else set()

    def _type_checking_name(self, node: ast.AST, definition: Definition) -> str | None:
        """Names imported under `if TYPE_CHECKING:` (annotations only)."""
        if not isinstance(node, ast.Name):
            return None
        for top in definition.module.tree.body:
            if _is_type_checking(top):
                for statement in ast.walk(top):
                    for local, target in _imports(statement, definition.module.name):
                        if local == node.id:
                            return target
        return None

    def parameter_types(self, definition: Definition) -> dict[str, set[str]]:
        key = id(definition.node)
        if key not in self._parameters:
            self._parameters[key] = self._parameter_types(definition)
        return self._parameters[key]

    def _parameter_types(self, definition: Definition) -> dict[str, set[str]]:
        node = definition.node
        assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        types = {a.arg: self.annotation_types(a.annotation, definition) for a in arguments}
        for sub in ast.walk(node):  # annotated locals and locals built from a constructor
            if isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name):
                types.setdefault(sub.target.id, set()).update(
                    self.annotation_types(sub.annotation, definition)
                )
            elif (
                isinstance(sub, ast.Assign)
                and len(sub.targets) == 1
                and isinstance(sub.targets[0], ast.Name)
                and isinstance(sub.value, ast.Call)
            ):
                found = self._returned_types(sub.value, definition, {k: v for k, v in types.items() if v})
                if found:
                    types.setdefault(sub.targets[0].id, set()).update(found)
        return {name: found for name, found in types.items() if found}

    def value_types(self, value: ast.AST, definition: Definition, params: dict[str, set[str]]) -> set[str]:
        return self.expr_types(value, definition, params) or set()

    def expr_types(
        self, node: ast.AST, definition: Definition, params: dict[str, set[str]]
    ) -> set[str] | None:
        """The classes (ours, protocols included) an expression can be; None when unknown."""
        if isinstance(node, ast.Name):
            if node.id == "self" and definition.owner is not None:
                return {definition.owner.qualname}
            return params.get(node.id) or self._constant_types(node, definition)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self" and definition.owner is not None:
                for info in self.mro(definition.owner.qualname):
                    if node.attr in info.attribute_types:
                        return info.attribute_types[node.attr]
            return None
        if isinstance(node, ast.Call):
            return self._returned_types(node, definition, params)
        return None

    def _constant_types(self, node: ast.Name, definition: Definition) -> set[str] | None:
        """The classes a module constant of ours is, by its annotation or the call that made it
        (`INTEGRATION_CONFIG = SealedConfig(...)`); None when unknown."""
        local = self.function_scope(definition) if definition.owner is None else {}
        target = self.resolve_expr(node, definition.module, local)
        constant = self.definitions.get(target) if target and target not in self.classes else None
        if constant is None:
            return None
        if isinstance(constant.node, ast.AnnAssign):
            return self.annotation_types(constant.node.annotation, constant) or None
        if isinstance(constant.node, ast.Assign) and isinstance(constant.node.value, ast.Call):
            return self._returned_types(constant.node.value, constant, {})
        return None

    def _returned_types(
        self, node: ast.Call, definition: Definition, params: dict[str, set[str]]
    ) -> set[str] | None:
        local = self.function_scope(definition) if definition.owner is None else {}
        target = self.resolve_expr(node.func, definition.module, local)
        if target in self.classes:
            return {target}
        callees: list[Definition] = []
        if target in self.definitions:
            callees.append(self.definitions[target])
        elif isinstance(node.func, ast.Attribute):
            for t in self.expr_types(node.func.value, definition, params) or ():
                for info in self.mro(t):
                    if node.func.attr in info.methods:
                        callees.append(info.methods[node.func.attr])
                        break
        types: set[str] = set()
        for callee in callees:
            returns = getattr(callee.node, "returns", None)
            found = self.annotation_types(returns, callee)
            if not found:
                return None
            types |= found
        return types or None

    def mro(self, qualname: str) -> list[ClassInfo]:
        out: list[ClassInfo] = []
        pending = [qualname]
        while pending:
            current = self.classes.get(pending.pop(0))
            if current and current not in out:
                out.append(current)
                pending.extend(current.bases)
        return out

    def implements(self, qualname: str, protocol: str) -> bool:
        """Structurally: the class has every method the protocol declares."""
        wanted = {name for info in self.mro(protocol) if info.protocol for name in info.methods}
        have = {name for info in self.mro(qualname) for name in info.methods}
        return qualname != protocol and not self.classes[qualname].protocol and wanted <= have

    def subclasses(self, qualname: str) -> Iterator[ClassInfo]:
        for info in self.classes.values():
            if any(c.qualname == qualname for c in self.mro(info.qualname)):
                yield info


# --- the call graph -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One AWS operation a function's code can make."""

    service: str  # boto3 name
    operation: str  # API name, e.g. PutItem

    @property
    def action(self) -> str:
        return f"{IAM_PREFIX[self.service]}:{self.operation}"


@dataclass
class Usage:
    calls: set[Call] = field(default_factory=set)
    #: where each operation is called (definitions), for failure messages
    callers: dict[Call, set[str]] = field(default_factory=dict)
    #: definition -> the definition whose code reached it first
    reached_from: dict[str, str] = field(default_factory=dict)
    transaction_entries: set[str] = field(default_factory=set)
    reachable: set[str] = field(default_factory=set)

    def chain(self, qualname: str) -> list[str]:
        """How the handler reaches `qualname` (first path found)."""
        path = [qualname]
        while path[-1] in self.reached_from and len(path) < 40:
            path.append(self.reached_from[path[-1]])
        return path[::-1]

    def actions(self) -> set[str]:
        """IAM actions: the operations (a transaction as its entries' actions) and the actions
        IAM checks along with them."""
        actions: set[str] = set()
        for call in self.calls:
            if call.service == "dynamodb" and call.operation == "TransactWriteItems":
                if not self.transaction_entries:
                    raise ScanError("TransactWriteItems with no entry built in reachable code")
                actions |= {TRANSACTION_ENTRIES[kind] for kind in self.transaction_entries}
            else:
                actions.add(iam_action(call.action))
        for action in list(actions):
            actions.update(DEPENDENT_ACTIONS.get(action, ()))
        return actions


@cache
def operation_names(service: str) -> dict[str, str]:
    """boto3 method name -> API operation name."""
    model = botocore.session.get_session().get_service_model(service)
    return {xform_name(name): name for name in model.operation_names}


class _Scanner:
    def __init__(self, program: Program, handler: str) -> None:
        self.p = program
        self.handler = program.modules[handler]
        self.reachable: set[str] = set()
        self.constructed: set[str] = set()  # classes reachable code names
        self.called_names: set[str] = set()  # methods called on receivers of unknown type
        self.protocol_calls: set[tuple[str, str]] = set()  # (protocol, method) on a port
        self.usage = Usage()
        # def -> (service, parameter name) for getattr(<client>, parameter)(...)
        self.dynamic_ops: dict[str, tuple[str, str]] = {}
        # (def, parameter) -> constant string passed -> the definitions passing it
        self.constant_args: dict[tuple[str, str], dict[str, set[str]]] = {}
        self._queue: list[str] = []
        self._current = self.handler.name
        self._imported: set[str] = set()  # modules whose top-level statements were walked
        self._returns_client: dict[str, str | None] = {}  # definition -> service of the client it returns

    def run(self) -> Usage:
        handler = self.handler
        for node in handler.tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom) or _is_type_checking(node):
                continue
            self._scan_top_level(node, handler)
        while True:
            while self._queue:
                self._current = self._queue.pop()
                self._visit(self.p.definitions[self._current])
            self._current = "(dispatch: a method of a class reachable code constructs)"
            if not self._dispatch() and not self._queue:
                break
        self._dynamic_operations()
        self.usage.reachable = set(self.reachable)
        return self.usage

    def _dispatch(self) -> bool:
        """Methods of constructed classes called by name or through a protocol; True when any
        became reachable."""
        grew = False
        for qualname in list(self.constructed):
            for info in self.p.mro(qualname):
                for name, method in info.methods.items():
                    if name.startswith("__") or name in self.called_names:
                        grew = self._reach(method.qualname) or grew
            for protocol, name in list(self.protocol_calls):
                if self.p.implements(qualname, protocol):
                    for info in self.p.mro(qualname):
                        if name in info.methods:
                            grew = self._reach(info.methods[name].qualname) or grew
                            break
        return grew

    def _dynamic_operations(self) -> None:
        """`getattr(<client>, parameter)(...)`: the constants reachable callers pass."""
        for qualname, (service, parameter) in self.dynamic_ops.items():
            values = self.constant_args.get((qualname, parameter), {})
            if not values and qualname in self.reachable:
                raise ScanError(f"{qualname}: getattr on a {service} client with no constant method name")
            for method, sites in values.items():
                for site in sites:
                    self._operation(service, method, site)

    def _reach(self, qualname: str) -> bool:
        if qualname in self.reachable or qualname not in self.p.definitions:
            return False
        self.reachable.add(qualname)
        self.usage.reached_from[qualname] = self._current
        self._queue.append(qualname)
        return True

    def _scan_top_level(self, node: ast.AST, module: Module) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            self._reach(f"{module.name}.{node.name}")
        else:
            definition = Definition(f"{module.name}.<module>", module, node)
            self._walk(definition, node)

    def _visit(self, definition: Definition) -> None:
        qualname = definition.qualname
        if qualname in self.p.classes:
            info = self.p.classes[qualname]
            if qualname not in TYPED_ONLY:
                self.constructed.add(qualname)
            for base in info.bases:
                self._reach(base)
            for item in info.node.body:
                if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    self._walk(Definition(f"{qualname}.<body>", info.module, item, info), item)
            for decorator in info.node.decorator_list:
                self._walk(definition, decorator)
            return
        if definition.owner is None and not definition.module.name.startswith("handler."):
            # a module's own top-level statements run when it is imported
            self._module_body(definition.module)
        self._walk(definition, definition.node)

    def _module_body(self, module: Module) -> None:
        if module.name in self._imported:
            return
        self._imported.add(module.name)
        # Importing a module runs its packages' own first (hub.wiring registers the SnapStart
        # hooks when a handler imports hub.wiring.<function>).
        package = module.name.rpartition(".")[0]
        if package in self.p.modules:
            self._module_body(self.p.modules[package])
        for node in module.tree.body:
            if isinstance(node, ast.Expr | ast.If | ast.Try | ast.With) and not _is_type_checking(node):
                self._walk(Definition(f"{module.name}.<module>", module, node), node)
            elif isinstance(node, ast.FunctionDef) and _registers_a_route(node):
                # `@router.get(...)`: importing the module registers it (hub.api.admin's routers)
                self._reach(f"{module.name}.{node.name}")

    # --- one definition's code ----------------------------------------------------------------

    def _walk(self, definition: Definition, root: ast.AST) -> None:
        module = definition.module
        local = (
            self.p.function_scope(definition)
            if isinstance(root, ast.FunctionDef | ast.AsyncFunctionDef)
            else {}
        )
        params = (
            self.p.parameter_types(definition)
            if isinstance(definition.node, ast.FunctionDef | ast.AsyncFunctionDef)
            else {}
        )
        client_vars = self._client_variables(definition, root, local)
        parameters = self._parameter_names(definition)
        self._clients_only_where_understood(definition, root, local)
        for node in _code_nodes(root):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                target = self.p.resolve_name(node.id, module, local)
                if target:
                    self._reach_target(target)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                self._attribute(node, definition, local, params)
            elif isinstance(node, ast.Dict):
                for key in node.keys:
                    if isinstance(key, ast.Constant) and key.value in TRANSACTION_ENTRIES:
                        self.usage.transaction_entries.add(str(key.value))
            if isinstance(node, ast.Call):
                self._call(node, definition, local, params, client_vars, parameters)

    def _parameter_names(self, definition: Definition) -> list[str]:
        node = definition.node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return []
        return [a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]]

    def _reach_target(self, target: str) -> None:
        """A definition becomes reachable; a module object is not (its attributes resolve one
        by one where they are used)."""
        if target in self.p.definitions:
            self._reach(target)

    def _receiver_types(
        self, node: ast.AST, definition: Definition, params: dict[str, set[str]]
    ) -> set[str] | None:
        """The classes an expression can be, None when unknown."""
        return self.p.expr_types(node, definition, params)

    def _attribute(
        self, node: ast.Attribute, definition: Definition, local: dict[str, str], params: dict[str, set[str]]
    ) -> None:
        target = self.p.resolve_expr(node, definition.module, local)
        if target and (target in self.p.definitions or target in self.p.modules):
            self._reach_target(target)
            return
        if target:  # a library's attribute, a class attribute of ours, or a constant's method
            owner, _, attr = target.rpartition(".")
            if owner in self.p.classes:
                self._methods_named(owner, attr)
            elif owner in self.p.definitions and isinstance(node.value, ast.Name):
                for t in self._receiver_types(node.value, definition, params) or ():
                    self._methods_named(t, attr)
            return
        types = self._receiver_types(node.value, definition, params)
        if types is None:
            if node.attr not in BUILTIN_METHOD_NAMES:
                self.called_names.add(node.attr)
            return
        for t in types:
            if self.p.classes[t].protocol:
                self.protocol_calls.add((t, node.attr))
            else:
                self._methods_named(t, node.attr)

    def _methods_named(self, qualname: str, name: str) -> None:
        for info in [*self.p.mro(qualname), *self.p.subclasses(qualname)]:
            method = info.methods.get(name)
            if method:
                self._reach(method.qualname)
                if info.qualname not in TYPED_ONLY:
                    self.constructed.add(info.qualname)

    # --- clients and their calls --------------------------------------------------------------

    def _client_service(self, node: ast.AST, definition: Definition, local: dict[str, str]) -> str | None:
        """The service when `node` is an expression yielding one of our boto3 clients."""
        if not isinstance(node, ast.Call):
            return None
        func = self.p.resolve_expr(node.func, definition.module, local)
        if func in CLIENT_FACTORIES:
            if not (
                node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
            ):
                raise ScanError(f"{definition.qualname}: a client of a service not named by a constant")
            service = node.args[0].value
            if service not in IAM_PREFIX:
                raise ScanError(f"{definition.qualname}: client({service!r}) has no IAM prefix in IAM_PREFIX")
            return service
        # a function of ours returning a client
        if func in self.p.definitions and func not in self.p.classes:
            return self._returned_service(self.p.definitions[func])
        # self._client(): a method returning a client
        if (
            isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"
            and definition.owner is not None
        ):
            for info in self.p.mro(definition.owner.qualname):
                method = info.methods.get(node.func.attr)
                if method:
                    return self._returned_service(method)
        return None

    def _returned_service(self, method: Definition) -> str | None:
        """The service of the client `method` returns (`x if c else y` too), None if none."""
        if method.qualname not in self._returns_client:
            self._returns_client[method.qualname] = None  # recursion guard
            local = self.p.function_scope(method)
            values = [n.value for n in ast.walk(method.node) if isinstance(n, ast.Return) and n.value]
            while any(isinstance(v, ast.IfExp) for v in values):
                values = [
                    w for v in values for w in ((v.body, v.orelse) if isinstance(v, ast.IfExp) else (v,))
                ]
            services = {self._client_service(value, method, local) for value in values} - {None}
            if len(services) > 1:
                raise ScanError(f"{method.qualname} returns clients of several services")
            self._returns_client[method.qualname] = next(iter(services), None)
        return self._returns_client[method.qualname]

    def _clients_only_where_understood(
        self, definition: Definition, root: ast.AST, local: dict[str, str]
    ) -> None:
        """A client expression must be called on (`client("sqs").send_message`), be getattr's or a
        call's argument (checked where the call is), be assigned to a local name (whose method
        calls count) or be returned (its callers count). Anything else, e.g. a client kept in an
        attribute, would hide its calls: the scan refuses it."""
        parents = {id(child): parent for parent in ast.walk(root) for child in ast.iter_child_nodes(parent)}
        for node in ast.walk(root):
            if not isinstance(node, ast.Call) or not self._client_service(node, definition, local):
                continue
            parent = parents.get(id(node))
            while isinstance(parent, ast.IfExp):  # `best_effort_client(...) if ... else client(...)`
                parent = parents.get(id(parent))
            understood = (
                (isinstance(parent, ast.Attribute) and isinstance(parents.get(id(parent)), ast.Call))
                or isinstance(parent, ast.Call | ast.Return | ast.keyword)
                or (isinstance(parent, ast.Assign) and all(isinstance(t, ast.Name) for t in parent.targets))
            )
            if not understood:
                raise ScanError(f"{definition.qualname}: a client used where the scan cannot follow it")

    def _client_variables(
        self, definition: Definition, root: ast.AST, local: dict[str, str]
    ) -> dict[str, str]:
        found: dict[str, str] = {}
        for node in ast.walk(root):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                service = self._client_service(node.value, definition, local)
                if service:
                    found[node.targets[0].id] = service
        return found

    def _call(
        self,
        node: ast.Call,
        definition: Definition,
        local: dict[str, str],
        params: dict[str, set[str]],
        client_vars: dict[str, str],
        parameters: list[str],
    ) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr":
            return  # getattr(<client>, name) is handled as the callee of the call around it
        if self._client_call(func, definition, local, client_vars, parameters):
            return
        for argument in [*node.args, *(k.value for k in node.keywords)]:
            service = self._client_service(argument, definition, local) or (
                client_vars.get(argument.id) if isinstance(argument, ast.Name) else None
            )
            if service:
                self._handed_client(func, service, definition, local)
        for target in self._callees(func, definition, params):
            self._constant_arguments(node, target, definition)

    def _client_call(
        self,
        func: ast.AST,
        definition: Definition,
        local: dict[str, str],
        client_vars: dict[str, str],
        parameters: list[str],
    ) -> bool:
        """`<client>.<method>(...)` or `getattr(<client>, name)(...)`: an operation."""
        if isinstance(func, ast.Attribute):
            service = self._client_service(func.value, definition, local)
            if service is None and isinstance(func.value, ast.Name):
                service = client_vars.get(func.value.id)
            if service:
                self._operation(service, func.attr, definition.qualname)
                return True
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr":
            service = self._client_service(func.args[0], definition, local)
            if service:
                name = func.args[1]
                if isinstance(name, ast.Constant):
                    self._operation(service, str(name.value), definition.qualname)
                elif isinstance(name, ast.Name) and name.id in parameters:
                    self.dynamic_ops[definition.qualname] = (service, name.id)
                else:
                    raise ScanError(f"{definition.qualname}: getattr on a client with a computed name")
                return True
        return False

    def _handed_client(
        self, func: ast.AST, service: str, definition: Definition, local: dict[str, str]
    ) -> None:
        """A client passed as an argument: only to a library whose calls LIBRARY_CALLS lists."""
        callee = self.p.resolve_expr(func, definition.module, local) or ast.unparse(func)
        operations = LIBRARY_CALLS.get((callee, service))
        if operations is None:
            raise ScanError(f"{definition.qualname}: a {service} client handed to {callee}")
        for operation in operations:
            call = Call(service, operation)
            self.usage.calls.add(call)
            self.usage.callers.setdefault(call, set()).add(definition.qualname)

    def _constant_arguments(self, node: ast.Call, target: str, definition: Definition) -> None:
        """Constant strings passed to one of our methods (for `getattr(<client>, parameter)`)."""
        callee = self.p.definitions[target]
        names = self._parameter_names(callee)
        if names and names[0] == "self" and callee.owner is not None:
            names = names[1:]
        passed = [(names[i], a) for i, a in enumerate(node.args) if i < len(names)]
        passed += [(k.arg, k.value) for k in node.keywords if k.arg]
        for name, argument in passed:
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                sites = self.constant_args.setdefault((target, name), {})
                sites.setdefault(argument.value, set()).add(definition.qualname)

    def _callees(self, func: ast.AST, definition: Definition, params: dict[str, set[str]]) -> Iterator[str]:
        if isinstance(func, ast.Attribute):
            types = self._receiver_types(func.value, definition, params)
            for t in types or ():
                for info in self.p.mro(t):
                    if func.attr in info.methods:
                        yield info.methods[func.attr].qualname
                        break

    def _operation(self, service: str, method: str, where: str) -> None:
        operations = operation_names(service)
        if method not in operations:
            raise ScanError(f"{where}: {service}.{method} is not an operation of {service}")
        call = Call(service, operations[method])
        self.usage.calls.add(call)
        self.usage.callers.setdefault(call, set()).add(where)


#: Methods of a functools cache that run none of the cached function's code: `f.cache_clear()`
#: (wiring.reset, hub.adapters.aws.reset_clients) does not reach `f`.
CACHE_METHODS = frozenset({"cache_clear", "cache_info"})


def _code_nodes(root: ast.AST) -> Iterator[ast.AST]:
    """Every node of `root` that runs: annotations and `if TYPE_CHECKING:` blocks left out, and
    the function behind `<function>.cache_clear` (CACHE_METHODS)."""
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        for name, value in ast.iter_fields(node):
            if name in ("annotation", "returns", "type_comment"):
                continue
            if name == "value" and isinstance(node, ast.Attribute) and node.attr in CACHE_METHODS:
                continue
            children = value if isinstance(value, list) else [value]
            for child in children:
                if isinstance(child, ast.AST) and not _is_type_checking(child):
                    pending.append(child)


@cache
def program() -> Program:
    return Program()


def function_usage(code_uri: str, handler: str) -> Usage:
    """What the function with this template CodeUri (functions/<folder>/) and Handler
    (module.function) can ask AWS to do."""
    folder = Path(code_uri).name
    module = handler.rpartition(".")[0]
    return _Scanner(program(), f"handler.{folder}.{module}").run()


# --- the template side --------------------------------------------------------------------------


@dataclass(frozen=True)
class Grant:
    actions: frozenset[str]
    resource: Any
    condition: Any
    policy: str


def _branches(value: Any) -> Iterator[Any]:
    """A policy entry; both branches of a Fn::If (a grant counts when its condition holds)."""
    if isinstance(value, dict) and "Fn::If" in value:
        for branch in value["Fn::If"][1:]:
            yield from _branches(branch)
    elif isinstance(value, dict) and value == {"Ref": "AWS::NoValue"}:
        return
    else:
        yield value


def role_grants(transformed: dict[str, Any], role_logical_id: str) -> list[Grant]:
    """The Allow statements of a role's inline policies, actions as written (wildcards kept)."""
    role = transformed["Resources"][role_logical_id]["Properties"]
    grants: list[Grant] = []
    for entry in role.get("Policies", []):
        for policy in _branches(entry):
            for statement in policy["PolicyDocument"]["Statement"]:
                if statement.get("Effect") != "Allow":
                    continue
                actions = statement["Action"]
                grants.append(
                    Grant(
                        frozenset([actions] if isinstance(actions, str) else actions),
                        statement.get("Resource"),
                        statement.get("Condition"),
                        policy["PolicyName"],
                    )
                )
    return grants


@cache
def _service_for_prefix(prefix: str) -> str | None:
    return next((service for service, p in IAM_PREFIX.items() if p == prefix), None)


def expand(action: str) -> set[str]:
    """A granted action with its wildcards expanded against the service's operations."""
    prefix, _, name = action.partition(":")
    if not any(c in name for c in "*?"):
        return {action}
    service = _service_for_prefix(prefix)
    if service is None:
        raise ScanError(f"cannot expand {action}: no botocore model for IAM prefix {prefix}")
    return {f"{prefix}:{op}" for op in operation_names(service).values() if fnmatch.fnmatchcase(op, name)}


def granted_actions(grants: Iterable[Grant]) -> set[str]:
    return {expanded for grant in grants for action in grant.actions for expanded in expand(action)}
