"""The egress policy: the one door every outbound call of the hub goes through (REST deliveries
and their OAuth2 token requests, SOAP posts and WSDL loading, outbound webhooks, the connection
test, Slack alerts).

Tenants choose the URLs the hub calls, so the hub must never become their way into the network it
runs in. The policy is enforced on the address actually connected to: a client built here
resolves the host once, checks every address it got, and connects to a checked address only (a
second resolution, as in DNS rebinding, never happens). A host with any denied address is
refused as a whole, so a closed allowed address cannot make the client fall back to a denied one.

Denied by default: loopback, link-local (cloud metadata), RFC 1918, CGNAT 100.64/10,
unique-local fc00::/7, site-local, the unspecified address, multicast, broadcast and reserved
ranges, every other address that is not public (documentation, benchmarking, 6to4 / Teredo / NAT64
forms are judged by the IPv4 address they carry), and the Lambda Runtime API. A deployment
allows private ranges with one template parameter (`EgressAllowedCidrs`: a VPC reaching an
on-premises ERP); link-local, unspecified, multicast and broadcast addresses and the Runtime API
stay denied whatever it says. URLs must be http(s) without user-info; redirects are never
followed by any client built here.

`check_url` is the save-time check (a clear 422 for a URL that can never pass); the connect-time
check is the one that matters.
"""

from __future__ import annotations

import http.cookiejar
import ipaddress
import os
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urlsplit

from hub.errors import ConfigurationError, HubError

if TYPE_CHECKING:
    import ssl

    import httpx
    import requests

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
#: host, port -> the addresses it resolves to (socket.gaierror when it resolves to none).
Resolver = Callable[[str, int], Sequence[str]]

SCHEMES = frozenset({"http", "https"})
#: The code of a refusal (a connector's caller maps it: hub.delivery.port).
DESTINATION_NOT_ALLOWED = "destination_not_allowed"
#: The Lambda Runtime (and Extensions) API listens here in every execution environment.
LAMBDA_RUNTIME_PORT = 9001


def _nets(*cidrs: str) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(cidr) for cidr in cidrs)


#: (rule, ranges), first match wins. Each rule's name is what a refusal says.
_RULES: tuple[tuple[str, tuple[IPNetwork, ...]], ...] = (
    ("unspecified address", _nets("0.0.0.0/8", "::/128")),
    ("loopback", _nets("127.0.0.0/8", "::1/128")),
    ("link-local (cloud metadata)", _nets("169.254.0.0/16", "fe80::/10")),
    ("private (RFC 1918)", _nets("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")),
    ("shared address space (CGNAT, RFC 6598)", _nets("100.64.0.0/10")),
    ("unique-local (fc00::/7)", _nets("fc00::/7")),
    ("site-local (fec0::/10)", _nets("fec0::/10")),
    ("multicast", _nets("224.0.0.0/4", "ff00::/8")),
    ("broadcast or reserved", _nets("240.0.0.0/4")),
    # Named here rather than left to `is_global`, whose answer differs across Python releases.
    (
        "not a public address",
        _nets(
            "192.0.0.0/24",
            "192.0.2.0/24",
            "198.18.0.0/15",
            "198.51.100.0/24",
            "203.0.113.0/24",
            "2001::/23",
            "2001:db8::/32",
            # Local-use NAT64 (RFC 8215): whatever the operator's translator maps it to.
            "64:ff9b:1::/48",
        ),
    ),
)
#: Rules an allowed range cannot lift: nothing a tenant should ever reach lives there.
_NEVER_ALLOWED = frozenset(
    {"unspecified address", "link-local (cloud metadata)", "multicast", "broadcast or reserved"}
)
_NOT_PUBLIC = _RULES[-1][0]
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
#: IPv4-translated addresses (RFC 2765, SIIT): ::ffff:0:a.b.c.d.
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")


class DestinationNotAllowed(HubError):
    """The egress policy refuses the URL or the address it resolves to; `details` names the
    field (at save time) and the rule."""

    code = DESTINATION_NOT_ALLOWED
    http_status = 422


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries (mapped, translated, compatible, NAT64, 6to4), if
    any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    in_nat64 = address in _NAT64 or address in _IPV4_TRANSLATED
    if in_nat64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def denied_rule(address: IPAddress) -> str | None:
    """The rule that denies `address` before any allow-list is applied; None for a public one."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            address = ipaddress.IPv6Address(address.compressed.split("%", 1)[0])
        carried = _embedded_ipv4(address)
        if carried is not None:
            return denied_rule(carried)
        if address.teredo is not None:
            return _NOT_PUBLIC
    for rule, ranges in _RULES:
        if any(address in net for net in ranges if net.version == address.version):
            return rule
    return None if address.is_global else _NOT_PUBLIC


def parse_cidrs(text: str) -> tuple[IPNetwork, ...]:
    """`EgressAllowedCidrs`: comma-separated CIDRs (empty: none). ConfigurationError for a bad
    one, or one overlapping a range no deployment may allow."""
    networks: list[IPNetwork] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            network = ipaddress.ip_network(part, strict=False)
        except ValueError:
            raise ConfigurationError(f"HUB_EGRESS_ALLOWED_CIDRS: {part!r} is not a CIDR") from None
        for rule, ranges in _RULES:
            if rule in _NEVER_ALLOWED and any(
                network.overlaps(r) for r in ranges if r.version == network.version
            ):
                raise ConfigurationError(f"HUB_EGRESS_ALLOWED_CIDRS: {part} overlaps {rule}, never allowed")
        networks.append(network)
    return tuple(networks)


def system_resolver(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, in the resolver's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _runtime_api() -> frozenset[tuple[str, int]]:
    """The Lambda Runtime API endpoint of this environment (AWS_LAMBDA_RUNTIME_API)."""
    value = os.environ.get("AWS_LAMBDA_RUNTIME_API", "")
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        return frozenset()
    return frozenset({(host.strip("[]"), int(port))})


@dataclass(frozen=True)
class EgressPolicy:
    """Which addresses outbound calls may reach, and the clients that enforce it."""

    allowed: tuple[IPNetwork, ...] = ()
    resolver: Resolver = field(default=system_resolver, compare=False)
    #: (address, port) pairs never reached, allowed range or not (the Lambda Runtime API).
    denied_endpoints: frozenset[tuple[str, int]] = field(default_factory=_runtime_api)

    @classmethod
    def from_setting(cls, allowed_cidrs: str) -> EgressPolicy:
        return cls(allowed=parse_cidrs(allowed_cidrs))

    # --- the rules ----------------------------------------------------------------------------

    def refusal(self, address: str, port: int) -> str | None:
        """Why `address`:`port` may not be reached, or None when it may."""
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return "not an IP address"
        if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
            ip = ipaddress.IPv6Address(ip.compressed.split("%", 1)[0])
        # An IPv6 form carrying an IPv4 address is that address, for the Runtime API and the
        # allow-list alike (::ffff:127.0.0.1:9001 is the Runtime API too).
        carried = _embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else None
        subject: IPAddress = carried or ip
        endpoints = {(ip.compressed, port), (subject.compressed, port)}
        if endpoints & self.denied_endpoints or (subject.is_loopback and port == LAMBDA_RUNTIME_PORT):
            return "the Lambda Runtime API"
        rule = denied_rule(ip)
        if rule is None:
            return None
        allowed = any(subject in net for net in self.allowed if net.version == subject.version)
        return None if allowed and rule not in _NEVER_ALLOWED else rule

    def allows_address(self, address: str, port: int) -> bool:
        return self.refusal(address, port) is None

    def addresses(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for `host`:`port`, all checked. Raises
        DestinationNotAllowed when any is denied (the address itself is not named: it would
        tell a tenant what an internal name resolves to), socket.gaierror when none resolves."""
        found = list(self.resolver(host, port))
        if not found:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} resolves to no address")
        for address in found:
            rule = self.refusal(address, port)
            if rule is not None:
                raise DestinationNotAllowed(
                    f"the destination {host} resolves to an address this deployment does not allow ({rule})",
                    details={"host": host, "rule": rule},
                )
        return found

    def check_url(self, url: str, field_name: str, *, https_only: bool = False) -> None:
        """The save-time check: DestinationNotAllowed (422, naming the field and the rule) for a
        URL that can never pass (a scheme other than http(s), user-info, an IP literal or
        `localhost` in a denied range). `https_only`: plain http only to an allowed private
        literal. Host names are not resolved here: the connect-time check judges them."""
        parts = self._http_parts(url, field_name)
        scheme = parts.scheme.lower()
        try:
            port = parts.port or (443 if scheme == "https" else 80)
        except ValueError:
            raise self._refused(field_name, "not a valid URL") from None
        if any(ch.isspace() or ord(ch) < 32 or ch == "\\" for ch in url):
            raise self._refused(field_name, "whitespace, control characters or backslashes")
        host = (parts.hostname or "").rstrip(".")
        if not host:
            raise self._refused(field_name, "the URL has no host")
        literal = _literal_address(host)
        if literal is not None:
            rule = self.refusal(literal, port)
            if rule is not None:
                raise self._refused(field_name, f"{host} is {rule}")
        # A literal that passed the check but has a rule is inside an allowed private range.
        private = literal is not None and denied_rule(ipaddress.ip_address(literal)) is not None
        if https_only and scheme != "https" and not private:
            raise self._refused(field_name, "https is required (plain http only to an allowed private range)")

    def check_request_url(self, url: str) -> None:
        """The URL rules again when a request is made (a connection saved before the save-time
        check, or built another way, must still never reach `file:` or carry user-info):
        DestinationNotAllowed, the same refusal a denied address gets."""
        self._http_parts(url, "url")

    def _http_parts(self, url: str, field_name: str) -> SplitResult:
        """`url` split, when it is http(s) without user-info; else the refusal naming the field."""
        try:
            parts = urlsplit(url)
        except ValueError:
            raise self._refused(field_name, "not a valid URL") from None
        if parts.scheme.lower() not in SCHEMES:
            raise self._refused(field_name, "the scheme must be http or https")
        if "@" in parts.netloc:
            raise self._refused(field_name, "user-info in the URL (user:password@) is not allowed")
        return parts

    @staticmethod
    def _refused(field_name: str, rule: str) -> DestinationNotAllowed:
        # Never the URL itself: it may carry a credential in its user-info or query.
        return DestinationNotAllowed(
            f"{field_name}: destination not allowed: {rule}",
            details=[{"field": field_name, "problem": "destination_not_allowed", "message": rule}],
        )

    # --- the clients --------------------------------------------------------------------------

    def http_client(self, *, verify: ssl.SSLContext | bool = True, **options: Any) -> httpx.Client:
        """An httpx client that connects through this policy, never follows redirects and
        ignores proxy and CA environment variables."""
        import httpx  # noqa: PLC0415 - only functions that call out load it

        transport = httpx.HTTPTransport(verify=verify, trust_env=False)
        pool = getattr(transport, "_pool", None)
        if pool is None or not hasattr(pool, "_network_backend"):  # an httpx/httpcore upgrade
            raise ConfigurationError("httpx transport without a network backend to check egress")
        pool._network_backend = _checked_httpcore_backend(self)

        def checked(request: httpx.Request) -> None:
            self.check_request_url(str(request.url))

        return httpx.Client(
            transport=transport,
            trust_env=False,
            follow_redirects=False,
            event_hooks={"request": [checked]},
            # One client serves every tenant's deliveries: a cookie one destination sets must
            # never travel with another's request (nor with the next message).
            cookies=_no_cookies(),
            **options,
        )

    def requests_session(self, ssl_context: ssl.SSLContext | None = None) -> requests.Session:
        """A requests session (zeep's transport) that connects through this policy, with
        `ssl_context` for https, never follows redirects and ignores environment variables."""
        return _checked_requests_session(self, ssl_context)


def _refuse_every_cookie() -> http.cookiejar.DefaultCookiePolicy:
    """No domain may set or read a cookie."""
    return http.cookiejar.DefaultCookiePolicy(allowed_domains=[])


def _no_cookies() -> http.cookiejar.CookieJar:
    """A cookie jar that stores nothing."""
    return http.cookiejar.CookieJar(policy=_refuse_every_cookie())


def _literal_address(host: str) -> str | None:
    """The address a URL host names literally: an IP (also the shorthand forms inet_aton takes,
    such as 2130706433 or 0x7f.1), or loopback for localhost names (RFC 6761)."""
    lowered = host.lower()
    if lowered == "localhost" or lowered.endswith(".localhost"):
        return "127.0.0.1"
    try:
        return ipaddress.ip_address(lowered).compressed
    except ValueError:
        pass
    if lowered and all(ch in "0123456789abcdefx." for ch in lowered) and lowered[0].isdigit():
        try:
            return socket.inet_ntoa(socket.inet_aton(lowered))
        except OSError:
            return None
    return None


def _checked_httpcore_backend(policy: EgressPolicy) -> Any:
    import httpcore  # noqa: PLC0415

    class CheckedBackend(httpcore.SyncBackend):
        """Resolves once, checks, connects to the checked addresses only."""

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> Any:
            try:
                addresses = policy.addresses(host, port)
            except OSError as exc:
                raise httpcore.ConnectError(f"{host} does not resolve") from exc
            last: Exception | None = None
            for address in addresses:
                try:
                    return super().connect_tcp(address, port, timeout, local_address, socket_options)
                except httpcore.ConnectError as exc:
                    last = exc
            assert last is not None
            raise last

    return CheckedBackend()


def _checked_requests_session(policy: EgressPolicy, ssl_context: ssl.SSLContext | None) -> requests.Session:
    import requests  # noqa: PLC0415
    from requests.adapters import HTTPAdapter  # noqa: PLC0415
    from urllib3.connection import HTTPConnection, HTTPSConnection  # noqa: PLC0415
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool  # noqa: PLC0415
    from urllib3.exceptions import NameResolutionError, NewConnectionError  # noqa: PLC0415

    class Checked:
        """Mixed into urllib3's connections: `_new_conn` connects to checked addresses only."""

        host: str
        port: int
        _dns_host: str

        def _new_conn(self) -> socket.socket:
            try:
                addresses = policy.addresses(self._dns_host, self.port)
            except socket.gaierror as exc:
                raise NameResolutionError(self.host, self, exc) from exc  # type: ignore[arg-type]
            last: Exception | None = None
            for address in addresses:
                self._dns_host = address
                try:
                    return super()._new_conn()  # type: ignore[misc]
                except NewConnectionError as exc:
                    last = exc
            assert last is not None
            raise last

    class CheckedHTTPConnection(Checked, HTTPConnection):
        pass

    class CheckedHTTPSConnection(Checked, HTTPSConnection):
        pass

    class CheckedHTTPPool(HTTPConnectionPool):
        ConnectionCls = CheckedHTTPConnection

    class CheckedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = CheckedHTTPSConnection

    class CheckedAdapter(HTTPAdapter):
        def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **kw: Any) -> None:
            if ssl_context is not None:
                kw["ssl_context"] = ssl_context
            super().init_poolmanager(connections, maxsize, block, **kw)
            self.poolmanager.pool_classes_by_scheme = {"http": CheckedHTTPPool, "https": CheckedHTTPSPool}

        def cert_verify(self, conn: Any, url: str, verify: Any, cert: Any) -> None:
            if ssl_context is None:
                super().cert_verify(conn, url, verify, cert)
                return
            # requests would point every connection at certifi's bundle, and urllib3 would then
            # load it into our shared context: verification is the context's job alone.
            conn.cert_reqs = "CERT_REQUIRED"
            conn.ca_certs = None
            conn.ca_cert_dir = None

    class NoRedirectSession(requests.Session):
        """Never follows a redirect; speaks http(s) only (zeep's Transport mounts a `file://`
        adapter on the session it is given: that mount is ignored)."""

        def request(self, method: Any, url: Any, *args: Any, **kwargs: Any) -> requests.Response:
            policy.check_request_url(url.decode() if isinstance(url, bytes) else str(url))
            kwargs["allow_redirects"] = False
            return super().request(method, url, *args, **kwargs)

        def mount(self, prefix: str | bytes, adapter: Any) -> None:
            text = prefix.decode() if isinstance(prefix, bytes) else prefix
            if text.lower().startswith(("http://", "https://")):
                super().mount(text, adapter)

    session = NoRedirectSession()
    session.trust_env = False  # REQUESTS_CA_BUNDLE and proxy variables must not change trust
    session.cookies.set_policy(_refuse_every_cookie())  # shared across tenants: keep no cookie
    adapter = CheckedAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
