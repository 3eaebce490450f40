"""What `hubctl apply` would do with one resource: pure functions from the current view (None
when the hub has none) and the file's spec to an action and the diff shown before it.

Secrets are write-only: the hub's views mask them (`"***"`, or a `<name>_set: true` flag), so
their values cannot be compared. The desired spec is masked with the hub's own redaction
helper before the comparison, so a secret compares by whether it is set: a secret that changed
value only is "unchanged" (re-send it with `apply --resend-secrets`), a secret that is added or
removed is a change. Only the fields the file names are compared (recursively in objects; lists
and scalars as a whole); what the file leaves out is the hub's (defaults, versions, dates,
status counts) — and takes the hub's default when the resource is replaced by a PUT.

A file may write a value more briefly than the hub shows it (a transform `trim` that the hub
shows as `{"name": "trim"}`, a message type `{}` shown with its defaults, a set of known types in
another order): before comparing, each named field of the file is read by the same model the
admin API saves it with (`normalized`), so a file applied twice is unchanged the second time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hub.domain.redaction import MASK, redact_credentials
from hubctl.manifest import Kind


class Action(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Change:
    path: str
    #: ABSENT when the field is not in the current view (or not in the file, for a removal).
    before: Any
    after: Any


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class Plan:
    action: Action
    changes: list[Change] = field(default_factory=list)
    #: The resource's version the update is conditioned on (If-Match).
    version: int | None = None


#: A connection's client certificate sent with its save (a PKCS#12 file and its password, base64):
#: write-only, never in a view, so never compared, and shown as a mask.
CLIENT_CERTIFICATE = "client_certificate"


def masked(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as a view shows it: secrets (and credential-like headers) masked, a client
    certificate as a whole."""
    shown = redact_credentials(spec)
    if shown.get(CLIENT_CERTIFICATE) is not None:
        shown[CLIENT_CERTIFICATE] = MASK
    return shown


def normalized(kind: Kind, spec: dict[str, Any]) -> dict[str, Any]:
    """The spec's fields as the hub will store and show them: each field the file names, read by
    the model the admin API validates it with (defaults of nested objects filled in, short forms
    expanded, sets in the hub's order). A spec the model refuses is returned as given: the API
    will say why, naming the field."""
    from pydantic import ValidationError  # noqa: PLC0415 - only apply needs the hub's models

    try:
        if kind is Kind.INTEGRATION:
            # The pipeline's model, which the API validates a save with (pure: no AWS imports).
            from hub.domain.tenancy import Integration  # noqa: PLC0415

            ids = {"integration_id": "hubctl-plan", "tenant_id": "hubctl-plan"}
            dumped = Integration.model_validate({**spec, **ids}).model_dump(mode="json")
        elif kind is Kind.CONNECTION:
            from hub.admin.connections import ConnectionSpec  # noqa: PLC0415

            # The client certificate a file carries is uploaded with a create or an update, never
            # shown back: not compared (renew it with `hubctl certificates upload`).
            spec = {key: value for key, value in spec.items() if key != CLIENT_CERTIFICATE}
            dumped = ConnectionSpec.model_validate(spec).model_dump(mode="json")
        elif kind is Kind.SUBSCRIPTION:
            from hub.outbox.subscriptions import SubscriptionSpec  # noqa: PLC0415

            # A subscription's secret is set when it is created and changed by rotation only:
            # never compared (views list secrets masked), never sent by an update.
            spec = {key: value for key, value in spec.items() if key != "secret"}
            dumped = SubscriptionSpec.model_validate(spec).model_dump(mode="json")
        else:
            return spec
    except ValidationError:
        return spec
    return {key: dumped.get(key, value) for key, value in spec.items()}


def unflagged(view: Any) -> Any:
    """A view with `<name>_set: bool` flags read as `<name>: "***"` (set) or None, so both ways
    the API may show a write-only field compare alike."""
    if isinstance(view, dict):
        shown: dict[str, Any] = {}
        for key, value in view.items():
            if isinstance(key, str) and key.endswith("_set") and isinstance(value, bool):
                name = key.removesuffix("_set")
                if name not in view:
                    shown[name] = MASK if value else None
                continue
            shown[key] = unflagged(value)
        return shown
    if isinstance(view, list):
        return [unflagged(item) for item in view]
    return view


def _walk(desired: Any, current: Any, path: str, changes: list[Change]) -> None:
    if isinstance(desired, dict) and desired and isinstance(current, dict):
        for key, value in desired.items():
            _walk(value, current.get(key, ABSENT), f"{path}.{key}" if path else str(key), changes)
        return
    if isinstance(desired, dict) and desired and current is ABSENT:
        for key, value in desired.items():
            _walk(value, ABSENT, f"{path}.{key}" if path else str(key), changes)
        return
    if not _same(desired, current):
        changes.append(Change(path or "(spec)", current, desired))


def _same(a: Any, b: Any) -> bool:
    if a is ABSENT or b is ABSENT:
        return a is b or (a is None or b is None)  # an unset optional field reads as absent
    # 1 and 1.0 are the same number; True is not 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def plan(
    current: dict[str, Any] | None,
    spec: dict[str, Any],
    version: int | None = None,
    *,
    compared: dict[str, Any] | None = None,
) -> Plan:
    """Create when there is no current view (the diff lists the file's fields as written); else
    the fields of `compared` (the spec as the hub reads it, `normalized`; default: the spec)
    whose values differ from the view's (secrets compared as set / not set): none → unchanged,
    some → update."""
    if current is None:
        changes: list[Change] = []
        _walk(masked(spec), ABSENT, "", changes)
        return Plan(Action.CREATE, changes)
    changes = []
    _walk(masked(compared if compared is not None else spec), unflagged(current), "", changes)
    return Plan(Action.UPDATE if changes else Action.UNCHANGED, changes, version)


def _shown(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def diff_text(name: str, result: Plan) -> str:
    """The plan as people read it::

    + Connection tnt_acme/conn_erp (create)
        url: "https://erp.example.com/orders"
    ~ Integration tnt_acme/int_erp (update, version 3)
        retry_policy.retry_max: 5 -> 3
    = Tenant tnt_acme (unchanged)
    """
    if result.action is Action.UNCHANGED:
        return f"= {name} (unchanged)"
    if result.action is Action.CREATE:
        lines = [f"+ {name} (create)"]
        lines += [f"    {c.path}: {_shown(c.after)}" for c in result.changes]
        return "\n".join(lines)
    version = f", version {result.version}" if result.version is not None else ""
    lines = [f"~ {name} (update{version})"]
    lines += [f"    {c.path}: {_shown(c.before)} -> {_shown(c.after)}" for c in result.changes]
    return "\n".join(lines)
