"""The egress policy's rules (hub.delivery.egress), without a network: which addresses may be
reached, what a deployment's allow-list lifts, the save-time URL check, and resolution (every
address checked, a host with any denied address refused as a whole)."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from hub.delivery.egress import (
    DestinationNotAllowed,
    EgressPolicy,
    denied_rule,
    parse_cidrs,
)
from hub.errors import ConfigurationError

STRICT = EgressPolicy(denied_endpoints=frozenset())


@pytest.mark.parametrize(
    ("address", "rule"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("169.254.169.254", "link-local (cloud metadata)"),
        ("fe80::1", "link-local (cloud metadata)"),
        ("10.0.0.5", "private (RFC 1918)"),
        ("172.16.3.4", "private (RFC 1918)"),
        ("172.31.255.255", "private (RFC 1918)"),
        ("192.168.1.1", "private (RFC 1918)"),
        ("100.64.0.1", "shared address space (CGNAT, RFC 6598)"),
        ("100.127.255.254", "shared address space (CGNAT, RFC 6598)"),
        ("fd00:ec2::254", "unique-local (fc00::/7)"),
        ("fc00::1", "unique-local (fc00::/7)"),
        ("fec0::1", "site-local (fec0::/10)"),
        ("0.0.0.0", "unspecified address"),
        ("0.1.2.3", "unspecified address"),
        ("::", "unspecified address"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("ff02::1", "multicast"),
        ("255.255.255.255", "broadcast or reserved"),
        ("240.0.0.1", "broadcast or reserved"),
        # IPv6 forms that carry an IPv4 address are judged by it.
        ("::ffff:169.254.169.254", "link-local (cloud metadata)"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.5", "private (RFC 1918)"),
        ("::169.254.169.254", "link-local (cloud metadata)"),
        ("64:ff9b::a9fe:a9fe", "link-local (cloud metadata)"),
        ("2002:a9fe:a9fe::1", "link-local (cloud metadata)"),
        ("2002:0a00:0005::1", "private (RFC 1918)"),
        # IPv4-translated (SIIT) and local-use NAT64 forms, which `is_global` misses on 3.12.
        ("::ffff:0:a9fe:a9fe", "link-local (cloud metadata)"),
        ("::ffff:0:a00:5", "private (RFC 1918)"),
        ("64:ff9b:1::a9fe:a9fe", "not a public address"),
        # Not public for other reasons (documentation, benchmarking, IETF, Teredo).
        ("192.0.2.1", "not a public address"),
        ("198.18.0.1", "not a public address"),
        ("192.0.0.8", "not a public address"),
        ("2001:db8::1", "not a public address"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "not a public address"),
    ],
)
def test_each_denied_range_names_its_rule(address: str, rule: str) -> None:
    assert denied_rule(ipaddress.ip_address(address)) == rule
    assert STRICT.refusal(address, 443) == rule


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "100.128.0.1", "172.32.0.1"]
)
def test_public_addresses_pass(address: str) -> None:
    assert denied_rule(ipaddress.ip_address(address)) is None
    assert STRICT.allows_address(address, 443)


def test_an_allowed_range_is_reached_and_its_neighbours_are_not() -> None:
    policy = EgressPolicy.from_setting("10.20.0.0/16, fd12:3456::/32")

    assert policy.allows_address("10.20.0.1", 443)
    assert policy.allows_address("10.20.255.254", 8443)
    assert policy.allows_address("fd12:3456::9", 443)
    assert policy.refusal("10.21.0.1", 443) == "private (RFC 1918)"
    assert policy.refusal("10.19.255.255", 443) == "private (RFC 1918)"
    assert policy.refusal("fd12:3457::9", 443) == "unique-local (fc00::/7)"
    # The mapped form of an allowed address is that address.
    assert policy.allows_address("::ffff:10.20.0.1", 443)


def test_no_allow_list_lifts_metadata_multicast_or_the_runtime_api() -> None:
    loopback = EgressPolicy.from_setting("127.0.0.0/8")

    assert loopback.allows_address("127.0.0.1", 8080)
    assert loopback.refusal("127.0.0.1", 9001) == "the Lambda Runtime API"
    runtime = EgressPolicy(
        allowed=parse_cidrs("127.0.0.0/8"), denied_endpoints=frozenset({("127.0.0.1", 9321)})
    )
    assert runtime.refusal("127.0.0.1", 9321) == "the Lambda Runtime API"
    # Every IPv6 form of the Runtime API's address is the Runtime API.
    for form in ("::ffff:127.0.0.1", "::127.0.0.1", "::ffff:0:7f00:1"):
        assert loopback.refusal(form, 9001) == "the Lambda Runtime API"
        assert runtime.refusal(form, 9321) == "the Lambda Runtime API"
    for never in ("169.254.0.0/16", "169.254.169.254/32", "224.0.0.0/8", "0.0.0.0/0", "fe80::/64", "::/0"):
        with pytest.raises(ConfigurationError, match="never allowed"):
            parse_cidrs(never)


def test_the_runtime_api_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9555")
    policy = EgressPolicy.from_setting("127.0.0.0/8")

    assert policy.refusal("127.0.0.1", 9555) == "the Lambda Runtime API"
    assert policy.refusal("::ffff:127.0.0.1", 9555) == "the Lambda Runtime API"
    assert policy.allows_address("127.0.0.1", 9556)


@pytest.mark.parametrize("bad", ["10.0.0.0/33", "not-a-cidr", "10.0.0.0/8;rm"])
def test_a_bad_allow_list_fails_the_cold_start_naming_the_variable(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="HUB_EGRESS_ALLOWED_CIDRS"):
        parse_cidrs(bad)


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("file:///proc/self/environ", "the scheme must be http or https"),
        ("gopher://example.com/", "the scheme must be http or https"),
        ("/etc/passwd", "the scheme must be http or https"),
        ("https://user:pw@example.com/", "user-info"),
        ("https://example.com@169.254.169.254/", "user-info"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[::ffff:169.254.169.254]/", "link-local"),
        ("http://[::ffff:a9fe:a9fe]/", "link-local"),
        ("http://10.0.0.5/", "private (RFC 1918)"),
        ("http://127.0.0.1:9001/2018-06-01/runtime/invocation/next", "Lambda Runtime API"),
        ("http://localhost:8080/", "loopback"),
        ("http://LOCALHOST./", "loopback"),
        ("http://api.localhost/", "loopback"),
        ("http://2130706433/", "loopback"),
        ("http://0x7f.1/", "loopback"),
        ("http://127.1/", "loopback"),
        ("http://0/", "unspecified"),
        ("http://[fd00:ec2::254]/", "unique-local"),
        ("http://100.64.1.1/", "CGNAT"),
        ("https:///no-host", "no host"),
        ("http://exa mple.com/", "whitespace"),
        ("http://example.com\\@10.0.0.5/", "user-info"),
        ("http://example.com:99999/", "not a valid URL"),
    ],
)
def test_urls_that_can_never_pass_are_refused_at_save_naming_field_and_rule(url: str, rule: str) -> None:
    with pytest.raises(DestinationNotAllowed) as refused:
        STRICT.check_url(url, "auth.token_url")

    assert refused.value.http_status == 422
    [detail] = refused.value.details
    assert detail["field"] == "auth.token_url"
    assert detail["problem"] == "destination_not_allowed"
    assert rule in detail["message"]
    assert url not in refused.value.message  # a URL may carry a credential


@pytest.mark.parametrize(
    "url",
    ["https://erp.example.com/orders", "http://erp.example.com:8080/x?y=1", "https://[2606:4700::1111]/"],
)
def test_public_urls_and_host_names_pass_the_save_check(url: str) -> None:
    STRICT.check_url(url, "url")


def test_subscriptions_need_https_but_an_allowed_private_literal() -> None:
    loopback = EgressPolicy.from_setting("127.0.0.0/8")

    STRICT.check_url("https://hooks.example.com/x", "url", https_only=True)
    loopback.check_url("http://127.0.0.1:8080/hook", "url", https_only=True)
    loopback.check_url("http://localhost/hook", "url", https_only=True)
    with pytest.raises(DestinationNotAllowed, match="https is required"):
        loopback.check_url("http://hooks.example.com/x", "url", https_only=True)
    with pytest.raises(DestinationNotAllowed, match="loopback"):
        STRICT.check_url("http://127.0.0.1:8080/hook", "url", https_only=True)


def resolving(*answers: str) -> EgressPolicy:
    return EgressPolicy(resolver=lambda host, port: list(answers), denied_endpoints=frozenset())


def test_every_resolved_address_is_checked_and_any_denied_one_refuses_the_host() -> None:
    assert resolving("93.184.216.34").addresses("erp.example.com", 443) == ["93.184.216.34"]
    with pytest.raises(DestinationNotAllowed) as refused:
        resolving("93.184.216.34", "169.254.169.254").addresses("erp.example.com", 443)

    assert refused.value.details == {"host": "erp.example.com", "rule": "link-local (cloud metadata)"}
    assert "169.254" not in refused.value.message  # what an internal name resolves to is not told


def test_a_name_that_resolves_to_nothing_is_a_resolution_error() -> None:
    with pytest.raises(socket.gaierror):
        resolving().addresses("nowhere.example.com", 443)
