"""Credentials are bound to where they go (issue 27, point 4). Pure: which saves move a stored
credential to another destination, so the admin API can ask for the credential again.

A credential goes to an *origin*: the scheme, host and port of a URL (RFC 6454). A connection
holds up to three URLs it calls with its credentials: `url` (the REST endpoint or the SOAP
service address), `auth.token_url` (where OAuth2 client credentials are sent) and an http(s)
`soap.wsdl` (fetched over the connection's TLS session, client certificate included). When any
of their origins changes, every credential the connection keeps must be sent again in the same
save; a change of path or query on the same origin keeps them (the same server, the same owner).
One rule for every field keeps it simple to state and to check: a WSDL or token URL that moves is
a new party to trust, whichever credential it would see today.

A subscription's signing secret is bound to the receiver's URL origin the same way.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

from hub.domain.tenancy import NFELIB_PREFIX, AuthKind, Destination
from hub.errors import SecretRequired

#: The secret field of each auth kind (write-only, kept by a save that leaves it out).
AUTH_SECRET: dict[AuthKind, str] = {
    AuthKind.BEARER: "token",
    AuthKind.BASIC: "password",
    AuthKind.API_KEY: "api_key",
    AuthKind.OAUTH2_CLIENT_CREDENTIALS: "client_secret",
}
#: The field of a connection save that carries its client certificate again (PKCS#12).
CLIENT_CERTIFICATE = "client_certificate"


class Origin(NamedTuple):
    scheme: str
    host: str
    port: int | None


_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str | None) -> Origin | None:
    """The origin of `url`: lower-case scheme and host (no trailing dot), the port with the
    scheme's default filled in. None for no URL; a `nfelib:` WSDL (a file shipped in the
    package, never fetched) is its own origin. A URL that does not parse is its own origin
    (its text), so any change to it counts as a move."""
    if url is None:
        return None
    if url.startswith(NFELIB_PREFIX):
        return Origin(NFELIB_PREFIX, "", None)
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        port = parts.port or _DEFAULT_PORTS.get(scheme)
        host = (parts.hostname or "").rstrip(".")
    except ValueError:
        return Origin("", url, None)
    return Origin(scheme, host, port)


def endpoints(destination: Destination) -> dict[str, Origin | None]:
    """The origins a connection's credentials may be sent to, by field path."""
    return {
        "url": origin(destination.url),
        "auth.token_url": origin(destination.auth.token_url),
        "soap.wsdl": origin(destination.soap.wsdl) if destination.soap is not None else None,
    }


def moved(before: Destination, after: Destination) -> list[str]:
    """The fields (of `url`, `auth.token_url`, `soap.wsdl`) whose origin differs between the
    stored destination and the saved one, and `trusted_ca_pem` when the pinned roots change
    (new roots let whoever holds them answer for the same host, credentials and all); empty when
    every credential stays where it went."""
    was, now = endpoints(before), endpoints(after)
    fields = [field for field in now if was[field] != now[field]]
    if before.trusted_ca_pem != after.trusted_ca_pem:
        fields.append("trusted_ca_pem")
    return fields


def credentials_to_resend(
    before: Destination,
    after: Destination,
    *,
    sent: set[str],
) -> tuple[list[str], list[str]]:
    """(the fields that moved, the credentials the save must carry again but does not).

    `sent` names what the request itself carries: `auth.<secret>` fields it sends with a value
    (not left out, not the mask) and `client_certificate` when it uploads the certificate.
    A secret is asked for only when it would be kept from the stored connection (same auth
    kind): a new kind's secret is required anyway. The client certificate is asked for when
    the saved connection presents it (`client_certificate_id`) and a URL moved, or when the
    save turns mTLS on (the certificate under the id was uploaded for an earlier destination).
    """
    fields = moved(before, after)
    # Turning mTLS on presents a certificate uploaded for whatever the connection was then.
    presents_anew = after.client_certificate_id is not None and before.client_certificate_id is None
    if not fields and not presents_anew:
        return [], []
    required: list[str] = []
    secret = AUTH_SECRET.get(after.auth.kind)
    if fields and secret is not None and before.auth.kind is after.auth.kind:
        required.append(f"auth.{secret}")
    if after.client_certificate_id is not None:
        required.append(CLIENT_CERTIFICATE)
    return fields or ["use_client_certificate"], [name for name in required if name not in sent]


def check_resent(
    before: Destination,
    after: Destination,
    *,
    sent: set[str],
    owner: str,
    prefix: str = "",
    certificate_hint: str,
) -> None:
    """SecretRequired (400) when a save moves a kept credential (`credentials_to_resend`) without
    carrying it: one `details` entry per credential to send, named `prefix` + its field path, with
    the fields that moved. `owner` names what is saved (the message's subject), and
    `certificate_hint` says how the client certificate comes with the save."""
    fields, missing = credentials_to_resend(before, after, sent=sent)
    if not missing:
        return
    moved_fields = [f"{prefix}{field}" for field in fields]
    raise SecretRequired(
        f"{', '.join(moved_fields)} changes where {owner} credentials go: send them again in the "
        "same request",
        details=[
            {
                "field": f"{prefix}{name}",
                "problem": "secret_required",
                "message": (
                    certificate_hint
                    if name == CLIENT_CERTIFICATE
                    else "send the secret again (it is kept only while the destination stays)"
                ),
                "moved": moved_fields,
            }
            for name in missing
        ],
    )


def subscription_moved(before_url: str, after_url: str) -> bool:
    """Whether a subscription's receiver moves to another origin (a new signing secret needed)."""
    return origin(before_url) != origin(after_url)
