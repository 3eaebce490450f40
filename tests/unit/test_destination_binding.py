"""The pure rule of issue 27, point 4 (hub.domain.destination_binding): what counts as a
credential's destination moving, per field and auth kind."""

from __future__ import annotations

from typing import Any

import pytest

from hub.domain.destination_binding import (
    CLIENT_CERTIFICATE,
    credentials_to_resend,
    moved,
    origin,
    subscription_moved,
)
from hub.domain.tenancy import Destination

WSDL = "nfelib:nfe/wsdl/v4_0/nfestatusservico4.wsdl"


def dest(url: str = "https://erp.example.com/orders", **fields: Any) -> Destination:
    return Destination.model_validate({"url": url, **fields})


@pytest.mark.parametrize(
    ("before", "after", "same"),
    [
        ("https://erp.example.com/orders", "https://erp.example.com/v2/orders?x=1", True),
        ("https://erp.example.com/orders", "https://ERP.example.com./orders", True),
        ("https://erp.example.com/orders", "https://erp.example.com:443/orders", True),
        ("http://erp.example.com/orders", "http://erp.example.com:80/other", True),
        ("https://erp.example.com/orders", "https://evil.example.com/orders", False),
        ("https://erp.example.com/orders", "http://erp.example.com/orders", False),
        ("https://erp.example.com/orders", "https://erp.example.com:8443/orders", False),
        ("https://erp.example.com/orders", "https://erp.example.com.evil.io/orders", False),
        ("http://127.0.0.1:8080/a", "http://localhost:8080/a", False),
    ],
)
def test_only_scheme_host_and_port_make_the_origin(before: str, after: str, same: bool):
    assert (origin(before) == origin(after)) is same
    assert subscription_moved(before, after) is not same


@pytest.mark.parametrize(
    ("kind", "secret"),
    [
        ({"kind": "bearer", "token": "t"}, "auth.token"),
        ({"kind": "basic", "username": "u", "password": "p"}, "auth.password"),
        ({"kind": "api_key", "api_key": "k"}, "auth.api_key"),
        (
            {
                "kind": "oauth2_client_credentials",
                "token_url": "https://id.example.com/t",
                "client_id": "c",
                "client_secret": "s",
            },
            "auth.client_secret",
        ),
    ],
)
class TestEveryAuthKind:
    def test_a_new_host_without_the_secret_needs_it(self, kind, secret):
        fields, missing = credentials_to_resend(
            dest(auth=kind), dest("https://evil.example.com/orders", auth=kind), sent=set()
        )
        assert (fields, missing) == (["url"], [secret])

    def test_a_new_host_with_the_secret_needs_nothing(self, kind, secret):
        _, missing = credentials_to_resend(
            dest(auth=kind), dest("https://evil.example.com/orders", auth=kind), sent={secret}
        )
        assert missing == []

    def test_a_path_or_query_change_needs_nothing(self, kind, secret):
        assert credentials_to_resend(
            dest(auth=kind), dest("https://erp.example.com/v2?a=b", auth=kind), sent=set()
        ) == ([], [])


def test_the_token_url_moving_needs_the_client_secret():
    auth = {
        "kind": "oauth2_client_credentials",
        "token_url": "https://id.example.com/t",
        "client_id": "c",
        "client_secret": "s",
    }
    moved_auth = {**auth, "token_url": "https://evil.example.com/t"}
    assert credentials_to_resend(dest(auth=auth), dest(auth=moved_auth), sent=set()) == (
        ["auth.token_url"],
        ["auth.client_secret"],
    )
    path_only = {**auth, "token_url": "https://id.example.com/oauth2/token"}
    assert credentials_to_resend(dest(auth=auth), dest(auth=path_only), sent=set()) == ([], [])


def test_a_new_auth_kind_is_not_asked_again_here_its_secret_is_required_anyway():
    before = dest(auth={"kind": "bearer", "token": "t"})
    after = dest("https://evil.example.com/", auth={"kind": "api_key", "api_key": "k"})
    assert credentials_to_resend(before, after, sent=set()) == (["url"], [])


def test_no_credential_no_question():
    assert credentials_to_resend(dest(), dest("https://elsewhere.example.com/"), sent=set()) == (["url"], [])


def soap(url: str, wsdl: str = WSDL, **fields: Any) -> Destination:
    return dest(url, protocol="soap", soap={"wsdl": wsdl, "operation": "op"}, **fields)


class TestClientCertificate:
    def test_the_endpoint_moving_needs_the_certificate_again(self):
        before = soap("https://nfe.fazenda.sp.gov.br/ws", client_certificate_id="c")
        after = soap("https://evil.example.com/ws", client_certificate_id="c")
        assert credentials_to_resend(before, after, sent=set()) == (["url"], [CLIENT_CERTIFICATE])
        assert credentials_to_resend(before, after, sent={CLIENT_CERTIFICATE})[1] == []

    def test_the_wsdl_moving_to_a_fetched_url_needs_it_too(self):
        before = soap("https://nfe.fazenda.sp.gov.br/ws", client_certificate_id="c")
        after = soap(
            "https://nfe.fazenda.sp.gov.br/ws", "https://evil.example.com/s?wsdl", client_certificate_id="c"
        )
        assert credentials_to_resend(before, after, sent=set()) == (["soap.wsdl"], [CLIENT_CERTIFICATE])

    def test_another_path_on_the_same_server_keeps_it(self):
        before = soap("https://nfe.fazenda.sp.gov.br/ws/a.asmx", client_certificate_id="c")
        after = soap("https://nfe.fazenda.sp.gov.br/ws/b.asmx", client_certificate_id="c")
        assert credentials_to_resend(before, after, sent=set()) == ([], [])

    def test_turning_mtls_on_needs_the_certificate_with_the_save(self):
        before = dest()
        after = dest(client_certificate_id="c")
        assert credentials_to_resend(before, after, sent=set()) == (
            ["use_client_certificate"],
            [CLIENT_CERTIFICATE],
        )


def test_moved_lists_every_field_that_changed_origin():
    auth = {
        "kind": "oauth2_client_credentials",
        "token_url": "https://id.example.com/t",
        "client_id": "c",
        "client_secret": "s",
    }
    before = dest(auth=auth)
    after = dest("https://b.example.com/", auth={**auth, "token_url": "https://c.example.com/t"})
    assert moved(before, after) == ["url", "auth.token_url"]


CA_A = "-----BEGIN CERTIFICATE-----\nMIIBowner\n-----END CERTIFICATE-----\n"
CA_B = "-----BEGIN CERTIFICATE-----\nMIIBattacker\n-----END CERTIFICATE-----\n"


@pytest.mark.parametrize(("before", "after"), [(None, CA_B), (CA_A, CA_B), (CA_A, None)])
def test_new_pinned_roots_count_as_a_move(before, after):
    # Roots the attacker holds let whoever is on the path answer for the same host.
    bearer = {"kind": "bearer", "token": "t"}
    was = dest(auth=bearer, trusted_ca_pem=before)
    now = dest(auth=bearer, trusted_ca_pem=after)

    assert moved(was, now) == ["trusted_ca_pem"]
    assert credentials_to_resend(was, now, sent=set()) == (["trusted_ca_pem"], ["auth.token"])
    assert credentials_to_resend(was, dest(auth=bearer, trusted_ca_pem=before), sent=set()) == ([], [])
