"""Connections, managed by operators (issue 11): a tenant's destinations as their own items,
which integrations name by `connection_id`.

- Saved with the pipeline's own model (`Destination`): what does not validate is a 400 naming
  the field, and the worker never meets a connection it cannot read.
- Platform `sefaz` forces SOAP (1.2) and mTLS: a connection says it uses the client certificate
  uploaded under its id (`POST /api/admin/connections/{c}/certificate`) with
  `use_client_certificate` (forced for sefaz); saving it without one of this tenant's is 422
  `certificate_required`.
- `trusted_ca_pem`: the only roots trusted for the server's certificate (they replace the
  system trust store); checked when saved (hub.delivery.tls.parse_ca_bundle).
- Credentials (bearer token, basic password, API key, OAuth2 client secret) are write-only: views
  mask them; a save that leaves one out (or sends the mask) keeps the stored one while the auth
  kind is unchanged. They are sealed at rest (hub.sealed_config): reads here show stand-ins;
  only the connection test opens them (`ConnectionStore.with_credentials`).
- Versioned: `If-Match` with a stale version is 412; a save equal to the stored content changes
  nothing (same version, no audit entry). A save clears `connection_gone_at` on the
  integrations using the connection (the operator has looked at the connection the 410 was about).
- Deleting a connection an integration still uses is 409 `connection_in_use`.
- Credentials are bound to where they go (issue 27, point 4; hub.domain.destination_binding): a
  PUT that moves `url`, `auth.token_url` or an http(s) `soap.wsdl` to another scheme, host or
  port must send the kept secret again (and, for mTLS, the client certificate as
  `client_certificate`, uploaded with the save), else 400 `secret_required` naming them.
- The connection test is audited (`connection.tested`): who, which connection, the host only
  and the outcome class; never the URL's path or query, a credential or a response body.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from pydantic import ConfigDict, Field, SecretStr, ValidationError, model_validator

from hub.admin.access import Principal
from hub.admin.audit import MASK, Audit
from hub.admin.versioned import Versioned
from hub.delivery.egress import EgressPolicy
from hub.domain.clock import utcnow
from hub.domain.delivery_limits import DeliveryLimits
from hub.domain.destination_binding import CLIENT_CERTIFICATE, check_resent, origin
from hub.domain.ids import new_id
from hub.domain.model import HubModel
from hub.domain.tenancy import (
    NFELIB_PREFIX,
    AuthKind,
    Connection,
    Destination,
    DestinationProtocol,
    HttpAuth,
    Platform,
    SoapSettings,
)
from hub.errors import Conflict, HubError, NotFound, ValidationFailed
from hub.ports import ConnectionStore
from hub.sealed_config import DESTINATION_PATHS, in_clear, recognize

logger = logging.getLogger(__name__)

#: Connection ids in paths and bodies: no '#' (they are parts of table keys).
CONNECTION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"

#: The auth fields that hold secrets (write-only), per the kind that uses each.
SECRET_FIELDS: dict[str, AuthKind] = {
    "token": AuthKind.BEARER,
    "password": AuthKind.BASIC,
    "api_key": AuthKind.API_KEY,
    "client_secret": AuthKind.OAUTH2_CLIENT_CREDENTIALS,
}
#: What each auth kind needs, secrets included, once stored secrets are kept.
_REQUIRED: dict[AuthKind, tuple[str, ...]] = {
    AuthKind.NONE: (),
    AuthKind.BEARER: ("token",),
    AuthKind.BASIC: ("username", "password"),
    AuthKind.API_KEY: ("header_name", "api_key"),
    AuthKind.OAUTH2_CLIENT_CREDENTIALS: ("token_url", "client_id", "client_secret"),
}


class ConnectionExists(Conflict):
    code = "connection_exists"


class ConnectionInUse(Conflict):
    """An integration still delivers through the connection; `details.integration_ids`."""

    code = "connection_in_use"


class CertificateRequired(HubError):
    """The connection uses mTLS (platform sefaz, or `use_client_certificate`) but no client
    certificate of this tenant is uploaded under its id."""

    code = "certificate_required"
    http_status = 422


class ClientCertificateUpload(HubModel):
    """A client certificate sent with a connection save (the body of the certificate route,
    without the tenant): what a save that moves an mTLS connection must carry."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    #: A PKCS#12 (.pfx/.p12) file, base64.
    pkcs12_base64: str = Field(min_length=4, max_length=200_000, repr=False)
    password: SecretStr = Field(max_length=1024)


class ConnectionSpec(HubModel):
    """A connection as the admin API takes it (create and PUT)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    #: Create only (absent: generated, `con_` + 26 characters); on PUT, absent or the path's.
    connection_id: str | None = Field(default=None, pattern=CONNECTION_ID_PATTERN)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    #: Default `http`; `soap` for platform sefaz.
    protocol: DestinationProtocol = DestinationProtocol.HTTP
    platform: Platform = Platform.GENERIC
    url: str = Field(min_length=1, max_length=2048)
    method: str = Field(default="POST", pattern=r"^(GET|POST|PUT|PATCH|DELETE)$")
    headers: dict[str, str] = Field(default_factory=dict, max_length=50)
    auth: HttpAuth = Field(default_factory=HttpAuth)
    connect_timeout_seconds: float = Field(default=10.0, gt=0, le=60)
    read_timeout_seconds: float = Field(default=30.0, gt=0, le=300)
    soap: SoapSettings | None = None
    idempotent_retries: bool = False
    trusted_ca_pem: str | None = Field(default=None, min_length=1, max_length=64 * 1024)
    #: Present the client certificate uploaded under this connection's id (mTLS). Default false;
    #: platform sefaz forces it.
    use_client_certificate: bool = False
    #: The client certificate again, uploaded with this save (under the connection's id): needed
    #: when a save moves an mTLS connection to another origin or turns mTLS on.
    client_certificate: ClientCertificateUpload | None = Field(default=None, repr=False)
    #: What the destination can take (issue 30): `max_concurrency` deliveries in flight,
    #: `rate_per_second` (with `burst`). Absent or null: unlimited.
    limits: DeliveryLimits | None = None

    @model_validator(mode="before")
    @classmethod
    def _sefaz_defaults(cls, data: Any) -> Any:
        """Platform sefaz means SOAP 1.2 with mTLS: what the operator leaves out is filled in;
        a contradiction is refused by the Destination rules (400 naming the field)."""
        if not isinstance(data, dict) or data.get("platform") != Platform.SEFAZ.value:
            return data
        data = {**data}
        data.setdefault("protocol", DestinationProtocol.SOAP.value)
        data.setdefault("use_client_certificate", True)
        if isinstance(data.get("soap"), dict):
            data["soap"] = {"soap_version": "1.2", **data["soap"]}
        return data


class CertificateUploader(Protocol):
    def upload(
        self, tenant_id: str, connection_id: str, pfx: bytes, password: bytes, actor: Principal
    ) -> dict[str, Any]:
        """Checks, seals and stores the certificate (hub.certificates.service); a
        CertificateRejected subtype when it is unusable."""
        ...


class ConnectionTester(Protocol):
    def probe(self, destination: Destination, tenant_id: str) -> dict[str, Any]:
        """One harmless call: {"ok", "error_class", "cause", "host", "dest_status", "detail"}
        (hub.delivery.probe)."""
        ...


def masked_auth(auth: HttpAuth) -> dict[str, Any]:
    view = auth.model_dump(mode="json")
    for name in SECRET_FIELDS:
        view[name] = MASK if view.get(name) else None
    return view


def connection_view(connection: Connection) -> dict[str, Any]:
    """A connection as the admin API shows it: credentials masked."""
    d = connection.destination
    return {
        "connection_id": connection.connection_id,
        "tenant_id": connection.tenant_id,
        "name": connection.name,
        "version": connection.version,
        "protocol": d.protocol.value,
        "platform": d.platform.value,
        "url": d.url,
        "method": d.method,
        "headers": dict(d.headers),
        "auth": masked_auth(d.auth),
        "connect_timeout_seconds": d.connect_timeout_seconds,
        "read_timeout_seconds": d.read_timeout_seconds,
        "soap": d.soap.model_dump(mode="json") if d.soap else None,
        "idempotent_retries": d.idempotent_retries,
        "limits": d.limits.model_dump(mode="json") if d.limits is not None else None,
        "use_client_certificate": d.client_certificate_id is not None,
        "trusted_ca_pem": d.trusted_ca_pem,
        "created_at": _iso(connection.created_at),
        "updated_at": _iso(connection.updated_at),
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _invalid(field: str, message: str, problem: str = "value_error") -> ValidationFailed:
    return ValidationFailed(
        "connection failed validation", details=[{"field": field, "problem": problem, "message": message}]
    )


def kept_secrets(new: HttpAuth, stored: HttpAuth | None) -> HttpAuth:
    """`new` with each secret it leaves out (None, or the mask) taken from `stored` when the
    auth kind is unchanged; a secret the new kind does not use is dropped."""
    changes: dict[str, Any] = {}
    for name, kind in SECRET_FIELDS.items():
        value = getattr(new, name)
        if new.kind is not kind:
            changes[name] = None
        elif value in (None, MASK):
            same_kind = stored is not None and stored.kind is new.kind
            changes[name] = getattr(stored, name) if same_kind else None
    return new.model_copy(update=changes)


def _check_auth(auth: HttpAuth) -> None:
    missing = [name for name in _REQUIRED[auth.kind] if not getattr(auth, name)]
    if missing:
        raise ValidationFailed(
            "connection failed validation",
            details=[
                {
                    "field": f"auth.{name}",
                    "problem": "missing",
                    "message": f"auth kind {auth.kind.value} needs it",
                }
                for name in missing
            ],
        )


class ConnectionAdmin:
    """The connection use cases of the admin API. The handler authorizes (role and the path's
    tenant); every use case also checks that the stored connection is the path tenant's."""

    def __init__(
        self,
        store: ConnectionStore,
        audit: Audit,
        tester: Callable[[], ConnectionTester] | None = None,
        clock: Callable[[], datetime] = utcnow,
        *,
        egress: EgressPolicy | None = None,
        certificates: Callable[[], CertificateUploader] | None = None,
    ) -> None:
        self._store = store
        self._audit = audit
        self._versions = Versioned("connection", audit, logger)
        self._tester = tester
        self._clock = clock
        self._certificates = certificates
        #: The URL rules of the deployment (absent: public addresses only).
        self._egress = egress or EgressPolicy()

    # --- reads --------------------------------------------------------------------------------

    def get(self, tenant_id: str, connection_id: str) -> dict[str, Any]:
        return connection_view(self._stored(tenant_id, connection_id))

    def list_connections(self, tenant_id: str, limit: int, cursor: str | None) -> dict[str, Any]:
        page = self._store.list_connections(tenant_id, limit, cursor)
        return {"items": [connection_view(c) for c in page.connections], "next_cursor": page.next_cursor}

    # --- writes -------------------------------------------------------------------------------

    def create(self, principal: Principal, tenant_id: str, spec: ConnectionSpec) -> dict[str, Any]:
        """A new connection (version 1); ConnectionExists (409) when the id is taken."""
        if not self._store.tenant_exists(tenant_id):
            raise NotFound("tenant not found", details={"tenant_id": tenant_id})
        connection_id = spec.connection_id or new_id("con")
        now = self._clock()
        destination = self._destination(tenant_id, connection_id, spec, None)
        self._upload_certificate(principal, tenant_id, connection_id, spec)
        connection = Connection(
            connection_id=connection_id,
            tenant_id=tenant_id,
            name=spec.name,
            version=1,
            destination=destination,
            created_at=now,
            updated_at=now,
        )
        try:
            self._store.create(connection)
        except Conflict as taken:
            raise ConnectionExists(
                "a connection with this id exists", details={"connection_id": connection_id}
            ) from taken
        view = connection_view(connection)
        self._versions.record(principal, "connection.created", tenant_id, connection_id, now, after=view)
        return view

    def update(
        self,
        principal: Principal,
        tenant_id: str,
        connection_id: str,
        spec: ConnectionSpec,
        if_match: int | None,
    ) -> dict[str, Any]:
        """Replaces the connection's content (secrets left out are kept). Stale `if_match` →
        412; equal content → the stored view, unchanged. A kept credential whose destination
        moves (another scheme, host or port) must be sent again: SecretRequired (400)."""
        if spec.connection_id not in (None, connection_id):
            raise _invalid("connection_id", "differs from the connection in the path")
        stored = self._stored(tenant_id, connection_id)
        self._versions.check(connection_id, stored.version, if_match)
        destination = _recognized(
            self._destination(tenant_id, connection_id, spec, stored.destination), stored
        )
        _check_bound(stored.destination, destination, spec)
        self._upload_certificate(principal, tenant_id, connection_id, spec)
        before = connection_view(stored)
        if (
            destination == stored.destination
            and spec.name == stored.name
            # Credentials in clear (a connection saved before sealing) are sealed by any save.
            and not in_clear(stored.destination.model_dump(mode="json"), DESTINATION_PATHS)
        ):
            return before
        now = self._clock()
        changed = stored.model_copy(
            update={
                "name": spec.name,
                "destination": destination,
                "version": stored.version + 1,
                "updated_at": now,
            }
        )
        with self._versions.writing(connection_id):
            self._store.replace(changed, stored.version)
        using = self._store.integrations_using(tenant_id, connection_id)
        self._store.clear_connection_gone(tenant_id, using, connection_id)
        after = connection_view(changed)
        self._versions.record(
            principal, "connection.updated", tenant_id, connection_id, now, before=before, after=after
        )
        return after

    def delete(self, principal: Principal, tenant_id: str, connection_id: str, if_match: int | None) -> None:
        """Deletes an unused connection; ConnectionInUse (409) while an integration names it.
        Its client certificate and callback credential go with it: a connection created again
        under the same id needs the certificate uploaded again (it was bound to the old one's
        destination)."""
        stored = self._stored(tenant_id, connection_id)
        self._versions.check(connection_id, stored.version, if_match)
        using = self._store.integrations_using(tenant_id, connection_id)
        if using:
            raise ConnectionInUse(
                "integrations deliver through this connection: point them elsewhere first",
                details={"integration_ids": using},
            )
        with self._versions.writing(connection_id):
            self._store.delete(tenant_id, connection_id, stored.version)
        self._versions.record(
            principal,
            "connection.deleted",
            tenant_id,
            connection_id,
            self._clock(),
            before=connection_view(stored),
        )

    # --- the test tool ------------------------------------------------------------------------

    def test(self, principal: Principal, tenant_id: str, connection_id: str) -> dict[str, Any]:
        """One harmless call to the connection (no message, no writes): what a delivery would
        get, as {"ok", "error_class", "cause", "host", "dest_status", "detail"}: the error class of
        a delivery, and beside it the cause (dns, refused, timeout, tls, http_status...) and the
        `host:port` called. Audited as `connection.tested`
        (who, which connection, the host and the outcome class), whatever the outcome."""
        stored = self._stored(tenant_id, connection_id)
        if self._tester is None:
            raise HubError("the connection test is not configured")
        try:
            # The one place the admin API opens a secret: the test authenticates as a delivery does.
            result = self._tester().probe(self._store.with_credentials(stored), tenant_id)
        except HubError as failed:
            # Our storage or KMS did not answer (503): the attempt is still on the record.
            self._record_test(principal, stored, {"ok": False, "error_class": failed.code})
            raise
        self._record_test(principal, stored, result)
        logger.info(
            "connection tested",
            extra={
                "tenant_id": tenant_id,
                "connection_id": connection_id,
                "actor": principal.token_id,
                "outcome": outcome_class(result),
            },
        )
        return result

    # --- helpers ------------------------------------------------------------------------------

    def _stored(self, tenant_id: str, connection_id: str) -> Connection:
        found = self._store.get(tenant_id, connection_id)
        return self._versions.owned(found, lambda c: c.tenant_id, tenant_id, connection_id)

    def _destination(
        self, tenant_id: str, connection_id: str, spec: ConnectionSpec, stored: Destination | None
    ) -> Destination:
        """The pipeline's model of the connection, or the 400/422 that says why not."""
        self._check_destination(spec)
        auth = kept_secrets(spec.auth, stored.auth if stored else None)
        _check_auth(auth)
        if spec.platform is Platform.SEFAZ and not spec.use_client_certificate:
            raise _invalid("use_client_certificate", "platform sefaz requires mTLS with a client certificate")
        if (
            spec.use_client_certificate
            and spec.client_certificate is None
            and not self._store.has_certificate(tenant_id, connection_id)
        ):
            raise CertificateRequired(
                "upload the connection's client certificate first "
                "(POST /api/admin/connections/{connection_id}/certificate)",
                details={"connection_id": connection_id},
            )
        if spec.trusted_ca_pem is not None:
            self._check_bundle(spec.trusted_ca_pem)
        data: Mapping[str, Any] = {
            "connection_id": connection_id,
            "protocol": spec.protocol,
            "platform": spec.platform,
            "url": spec.url,
            "method": spec.method,
            "headers": spec.headers,
            "auth": auth,
            "connect_timeout_seconds": spec.connect_timeout_seconds,
            "read_timeout_seconds": spec.read_timeout_seconds,
            "soap": spec.soap,
            "idempotent_retries": spec.idempotent_retries,
            "trusted_ca_pem": spec.trusted_ca_pem,
            "client_certificate_id": connection_id if spec.use_client_certificate else None,
            "limits": spec.limits if spec.limits is not None and spec.limits.limited else None,
        }
        try:
            return Destination.model_validate(data)
        except ValidationError as exc:
            details = [
                {
                    "field": ".".join(str(p) for p in err["loc"]) or "connection",
                    "problem": err["type"],
                    "message": err["msg"],
                }
                for err in exc.errors(include_input=False, include_url=False)
            ]
            raise ValidationFailed("connection failed validation", details=details) from None

    def _record_test(self, principal: Principal, stored: Connection, result: Mapping[str, Any]) -> None:
        self._audit.record(
            principal,
            stored.tenant_id,
            "connection.tested",
            {"connection_id": stored.connection_id},
            self._clock(),
            after=probe_record(stored.destination, result),
        )

    def _upload_certificate(
        self, principal: Principal, tenant_id: str, connection_id: str, spec: ConnectionSpec
    ) -> None:
        """Stores the certificate the save carries (after the save validated, before it is
        written: a refused save uploads nothing)."""
        upload = spec.client_certificate
        if upload is None:
            return
        if self._certificates is None:
            raise HubError("client certificates are not configured")
        from hub.certificates.model import decode_pkcs12_base64  # noqa: PLC0415 - cryptography

        self._certificates().upload(
            tenant_id,
            connection_id,
            decode_pkcs12_base64(upload.pkcs12_base64),
            upload.password.get_secret_value().encode("utf-8"),
            principal,
        )

    def _check_destination(self, spec: ConnectionSpec) -> None:
        """422 `destination_not_allowed` (naming the field and the rule) for a URL the egress
        policy can never let through; delivery still checks the address it connects to."""
        self._egress.check_url(spec.url, "url")
        if spec.auth.token_url:
            self._egress.check_url(spec.auth.token_url, "auth.token_url")
        if spec.soap is not None and not spec.soap.wsdl.startswith(NFELIB_PREFIX):
            self._egress.check_url(spec.soap.wsdl, "soap.wsdl")

    def _check_bundle(self, pem: str) -> None:
        from hub.delivery.tls import parse_ca_bundle  # noqa: PLC0415 - cryptography only when given

        try:
            parse_ca_bundle(pem, self._clock())
        except ValueError as bad:
            raise _invalid("trusted_ca_pem", str(bad), "ca_bundle") from None


def _sent(spec: ConnectionSpec) -> set[str]:
    """The credentials the request itself carries (a secret left out or masked is not sent)."""
    sent = {f"auth.{name}" for name in SECRET_FIELDS if getattr(spec.auth, name) not in (None, MASK)}
    if spec.client_certificate is not None:
        sent.add(CLIENT_CERTIFICATE)
    return sent


def _check_bound(stored: Destination, saved: Destination, spec: ConnectionSpec) -> None:
    """SecretRequired when the save moves a kept credential to another origin."""
    check_resent(
        stored,
        saved,
        sent=_sent(spec),
        owner="the connection's",
        certificate_hint="upload the client certificate with the save (client_certificate: "
        "{pkcs12_base64, password})",
    )


#: The outcome classes of the connection test's audit entry.
OUTCOME_OK = "ok"


def outcome_class(result: Mapping[str, Any]) -> str:
    """`ok`, or the delivery error class the test met (`http_4xx`, `network`, `tls`,
    `destination_not_allowed`...): never a detail text (it may quote the server)."""
    if result.get("ok"):
        return OUTCOME_OK
    return str(result.get("error_class") or "unknown")


def probe_record(destination: Destination, result: Mapping[str, Any]) -> dict[str, Any]:
    """What the audit log keeps of a connection test: the host called (no scheme, path, query
    or user-info), the outcome class and the destination's status code."""
    where = origin(destination.url)
    return {
        "host": where.host if where is not None else None,
        "outcome": outcome_class(result),
        "dest_status": result.get("dest_status"),
    }


def _recognized(destination: Destination, stored: Connection) -> Destination:
    """`destination` with each credential equal to the sealed one stored at its field replaced
    by the stand-in (the same credential sent again is no change, and keeps its seal)."""
    if not stored.sealed:
        return destination
    data = recognize(destination.model_dump(mode="json"), DESTINATION_PATHS, stored.sealed)
    return Destination.model_validate(data)
