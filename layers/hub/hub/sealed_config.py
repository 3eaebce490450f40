"""Which configuration fields are secrets, how they are sealed at rest and who opens them
(issue 11): webhook HMAC secrets (`inbound_webhook.verification.secrets`) and destination
credentials (`auth.token|password|api_key|client_secret`, in a connection or in a destination an
integration still embeds) never stay in `config_json`.

- Each field is sealed on its own (hub.sealing: a data key per field and save): the admin API,
  which may seal but never open, can keep one stored secret while replacing another.
- The encryption context is {tenant_id, owner ("integration:<id>" / "connection:<id>"), purpose
  ("webhook-secret" / "destination-credential")}: KMS's context and the GCM associated data; IAM
  lets each function decrypt only its purpose (template.yaml).
- A reader that may not (or need not) open a field gets a *stand-in* there: a random value drawn
  once per process, never stored, never sent (writing it back keeps the stored seal). So a
  model still validates, views still show the secret as set, and "the same content again"
  is recognized without decrypting (`recognize`, scrypt digests).
- An item written before sealing (values in clear in `config_json`) is read as it is, and
  sealed at its next save.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, TypeAdapter

from hub.certificates.envelope import CertificateUndecryptable, DataKeys
from hub.domain.tenancy import Connection, Destination, Integration
from hub.errors import ConfigurationError, SecretUndecryptable
from hub.sealing import SealedFields, open_fields, put_fields, same_values, seal_fields, take_fields

WEBHOOK_SECRET = "webhook-secret"  # noqa: S105 - a purpose name, not a secret
DESTINATION_CREDENTIAL = "destination-credential"
#: Outbound webhook subscriptions' signing secrets (issue 12; hub.adapters.dynamo.subscriptions):
#: sealed one secret per data key, opened only by the webhook sender.
SUBSCRIPTION_SECRET = "subscription-secret"  # noqa: S105 - a purpose name, not a secret
#: The admin API's kept answers to Idempotency-Key requests (issue 28; hub.admin.idempotency):
#: sealed whole, since one may show a secret once (a new API key or admin token); sealed and
#: opened by the admin API only. No configuration field has this purpose.
ADMIN_ANSWER = "admin-answer"
PURPOSES = (WEBHOOK_SECRET, DESTINATION_CREDENTIAL, SUBSCRIPTION_SECRET, ADMIN_ANSWER)

#: The secret fields of a destination (a connection's `config_json`), all destination credentials.
DESTINATION_PATHS: dict[str, str] = {
    f"auth.{name}": DESTINATION_CREDENTIAL for name in ("token", "password", "api_key", "client_secret")
}
#: The secret fields of an integration's `config_json`: its webhook secrets, and the credentials
#: of a destination it embeds (integrations written before connections were their own items).
INTEGRATION_PATHS: dict[str, str] = {
    "inbound_webhook.verification.secrets": WEBHOOK_SECRET,
    **{f"destination.{path}": purpose for path, purpose in DESTINATION_PATHS.items()},
}

#: Drawn once per process; valid for every secret field's rules (a `whsec_` secret of 24 bytes).
STAND_IN = "whsec_" + base64.b64encode(os.urandom(24)).decode()


_JSON_OBJECT: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


def parse_config(raw: str | bytes) -> dict[str, Any]:
    """A stored `config_json` as a dict; what does not parse is a pydantic ValidationError, as
    when the model read it directly."""
    return _JSON_OBJECT.validate_json(raw)


def context(tenant_id: str, owner: str, purpose: str) -> dict[str, str]:
    return {"tenant_id": tenant_id, "owner": owner, "purpose": purpose}


def integration_owner(integration_id: str) -> str:
    return f"integration:{integration_id}"


def connection_owner(connection_id: str) -> str:
    return f"connection:{connection_id}"


def subscription_owner(subscription_id: str) -> str:
    return f"subscription:{subscription_id}"


def _stand_in_for(value: Any) -> Any:
    return [STAND_IN] if isinstance(value, list) else STAND_IN


def is_stand_in(value: Any) -> bool:
    return value in (STAND_IN, [STAND_IN])


def _stand_in_of(path: str) -> Any:
    return [STAND_IN] if path.endswith(".secrets") else STAND_IN


def blobs_from(item: Mapping[str, Any]) -> dict[str, SealedFields]:
    """The sealed fields of a stored item (its `sealed` attribute), by path."""
    return {str(path): SealedFields.from_item(blob) for path, blob in (item.get("sealed") or {}).items()}


def blobs_item(blobs: Mapping[str, SealedFields]) -> dict[str, Any]:
    return {path: blob.to_item() for path, blob in sorted(blobs.items())}


def with_stand_ins(data: Mapping[str, Any], blobs: Mapping[str, SealedFields]) -> dict[str, Any]:
    """`data` (a stored `config_json`, without its sealed values) with a stand-in at each sealed
    path: what a reader that does not open them sees."""
    return put_fields(data, {path: _stand_in_of(path) for path in blobs})


def recognize(
    data: Mapping[str, Any], paths: Collection[str], blobs: Mapping[str, SealedFields]
) -> dict[str, Any]:
    """`data` with each value that equals what is sealed at its path replaced by the stand-in:
    "the same secret again" then compares equal to the stored configuration, without
    decrypting (hub.sealing.same_values)."""
    _, taken = take_fields(data, list(paths))
    same = {
        path: _stand_in_for(value)
        for path, value in taken.items()
        if path in blobs and not is_stand_in(value) and same_values(blobs[path], {path: value})
    }
    return put_fields(data, same) if same else dict(data)


def in_clear(data: Mapping[str, Any], paths: Collection[str]) -> bool:
    """Whether `data` holds a secret value in clear (an item written before sealing, or saved
    without a key): its next save seals it, even when nothing else changes."""
    _, taken = take_fields(data, list(paths))
    return any(not is_stand_in(value) for value in taken.values())


class Sealer:
    """Seals on write and opens on read the secret fields of configuration items, for one
    function: `opens` names the purposes it may decrypt (ingest: webhook-secret; the worker:
    destination-credential; the admin API: none, or destination-credential for the connection
    test). `keys` None: nothing is sealed (a stack without a key; values stay in clear) and
    nothing sealed opens."""

    def __init__(self, keys: DataKeys | None, opens: Collection[str] = ()) -> None:
        unknown = set(opens) - set(PURPOSES)
        if unknown:
            raise ConfigurationError(f"unknown secret purposes: {sorted(unknown)}")
        self._keys = keys
        self._opens = frozenset(opens)

    def seal(
        self,
        data: Mapping[str, Any],
        paths: Mapping[str, str],
        tenant_id: str,
        owner: str,
        previous: Mapping[str, SealedFields],
    ) -> tuple[dict[str, Any], dict[str, SealedFields]]:
        """(`data` without its secret values, the sealed fields by path). A stand-in keeps the
        seal stored at its path; a value equal to the stored one keeps it too (no new data key);
        any other value gets a new seal. Without a key, values stay in `data` (in clear)."""
        rest, taken = take_fields(data, list(paths))
        blobs: dict[str, SealedFields] = {}
        clear: dict[str, Any] = {}
        for path, value in taken.items():
            before = previous.get(path)
            if is_stand_in(value):
                if before is None:
                    # A stand-in is only ever read from a sealed field: never seal it as a secret.
                    raise ConfigurationError(f"no stored secret to keep at {path}")
                blobs[path] = before
            elif before is not None and same_values(before, {path: value}):
                blobs[path] = before
            elif self._keys is None:
                clear[path] = value
            else:
                blobs[path] = seal_fields(self._keys, context(tenant_id, owner, paths[path]), {path: value})
        return (put_fields(rest, clear) if clear else rest), blobs

    def reveal(
        self,
        data: Mapping[str, Any],
        paths: Mapping[str, str],
        tenant_id: str,
        owner: str,
        blobs: Mapping[str, SealedFields],
    ) -> dict[str, Any]:
        """`data` with each sealed field opened when its purpose is one this reader opens, a
        stand-in otherwise. Raises KeyServiceUnavailable (503, retryable) when KMS does not
        answer, SecretUndecryptable when a seal does not open under this item's context."""
        values: dict[str, Any] = {}
        for path, blob in blobs.items():
            purpose = paths.get(path)
            if purpose is None or purpose not in self._opens or self._keys is None:
                values[path] = _stand_in_of(path)
                continue
            try:
                opened = open_fields(self._keys, blob, context(tenant_id, owner, purpose))
            except CertificateUndecryptable:
                raise SecretUndecryptable(
                    "a stored secret does not decrypt: save it again", details={"owner": owner, "field": path}
                ) from None
            if set(opened) != {path}:
                # The sealed content names its own field: a seal moved to another path is refused.
                raise SecretUndecryptable(
                    "a stored secret belongs to another field", details={"owner": owner, "field": path}
                )
            values.update(opened)
        return put_fields(data, values) if values else dict(data)


# --- the two sealed configurations: an integration's, a connection's destination ---------------

#: A stored configuration (its secret fields taken out, or stand-ins there).
Config = Mapping[str, Any]
#: Its sealed fields, by path.
Blobs = Mapping[str, SealedFields]
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class SealedConfig(Generic[M]):
    """One kind of sealed configuration: its model, its secret fields (by purpose) and the owner
    its seals name (the encryption context)."""

    model: type[M]
    paths: Mapping[str, str]
    owner: Callable[[str], str]

    def seal(
        self, sealer: Sealer, data: Config, tenant_id: str, resource_id: str, kept: Blobs | None = None
    ) -> tuple[dict[str, Any], dict[str, SealedFields]]:
        """(`data` as stored, its sealed fields by path): see `Sealer.seal` (a stand-in keeps
        what `kept` holds at its field)."""
        return sealer.seal(data, self.paths, tenant_id, self.owner(resource_id), kept or {})

    def open(self, sealer: Sealer, data: Config, tenant_id: str, resource_id: str, blobs: Blobs) -> M:
        """The stored `data` as the model, each sealed field opened where `sealer` opens its
        purpose (a stand-in elsewhere); one saved before sealing holds its secrets in clear."""
        opened = sealer.reveal(data, self.paths, tenant_id, self.owner(resource_id), blobs)
        return self.model.model_validate_json(json.dumps(opened))


#: An integration's `config_json`: its webhook secrets, and an embedded destination's credentials.
INTEGRATION_CONFIG = SealedConfig(Integration, INTEGRATION_PATHS, integration_owner)
#: A connection's destination: its credentials.
DESTINATION_CONFIG = SealedConfig(Destination, DESTINATION_PATHS, connection_owner)


def seal_integration(
    sealer: Sealer, integration: Integration, kept: Blobs | None = None
) -> tuple[dict[str, Any], dict[str, SealedFields]]:
    """The integration's configuration as stored (without the hub's own `connection_gone_at`,
    kept beside it), its secrets sealed."""
    data = integration.model_dump(mode="json", exclude={"connection_gone_at"})
    return INTEGRATION_CONFIG.seal(sealer, data, integration.tenant_id, integration.integration_id, kept)


def seal_connection(sealer: Sealer, connection: Connection) -> tuple[dict[str, Any], dict[str, SealedFields]]:
    """The connection's destination as stored, its credentials sealed (a stand-in keeps what
    `connection.sealed` holds)."""
    data = connection.destination.model_dump(mode="json")
    return DESTINATION_CONFIG.seal(
        sealer, data, connection.tenant_id, connection.connection_id, connection.sealed
    )


def opened_destination(connection: Connection, sealer: Sealer) -> Destination:
    """`connection`'s destination with its sealed credentials opened by `sealer` (the connection
    test and the worker call the destination as a delivery does)."""
    data = connection.destination.model_dump(mode="json")
    return DESTINATION_CONFIG.open(
        sealer, data, connection.tenant_id, connection.connection_id, connection.sealed
    )
