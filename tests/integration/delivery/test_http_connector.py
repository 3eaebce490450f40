"""HttpConnector against real servers on 127.0.0.1: auth kinds, OAuth2 token cache, Retry-After,
credential scrubbing, and mTLS (the same test PKI as the SOAP connector)."""

from __future__ import annotations

import base64
import json

import pytest

from hub.delivery.http import HttpConnector, parse_retry_after
from hub.delivery.port import ClientCertificate, DeliveryFailed, OutboundRequest
from hub.domain.failure import ErrorClass
from hub.domain.tenancy import AuthKind, Destination, HttpAuth, Platform
from tests.destinations import Answer, HttpDestination
from tests.egress import LOCAL_EGRESS
from tests.integration.delivery.test_soap_connector import FixedCertificates
from tests.pki import PFX_PASSWORD

REQUEST = OutboundRequest(
    message_id="msg_1",
    idempotency_key="msg_1",
    body=b'{"a":1}',
    content_type="application/json",
    correlation_id="c1",
)


def connector() -> HttpConnector:
    return HttpConnector(FixedCertificates(None), egress=LOCAL_EGRESS)


@pytest.mark.parametrize(
    ("auth", "header", "expected"),
    [
        (HttpAuth(kind=AuthKind.BEARER, token="tok-123"), "authorization", "Bearer tok-123"),
        (
            HttpAuth(kind=AuthKind.BASIC, username="erp", password="s3cret"),
            "authorization",
            "Basic " + base64.b64encode(b"erp:s3cret").decode(),
        ),
        (HttpAuth(kind=AuthKind.API_KEY, header_name="X-Partner-Key", api_key="k-9"), "x-partner-key", "k-9"),
    ],
    ids=["bearer", "basic", "api_key"],
)
def test_auth_kinds_send_their_credentials(destination, auth, header, expected):
    outcome = connector().deliver(Destination(url=destination.url, auth=auth), REQUEST)

    assert outcome.dest_status == "200"
    [seen] = destination.requests
    assert seen.headers[header] == expected
    assert seen.headers["idempotency-key"] == "msg_1"
    assert seen.headers["x-correlation-id"] == "c1"


def test_oauth2_token_is_fetched_once_and_refreshed_after_a_401(destination):
    token_server = HttpDestination()
    with token_server:
        token_server.script(
            Answer(200, json.dumps({"access_token": "t1", "expires_in": 3600})),
            Answer(200, json.dumps({"access_token": "t2", "expires_in": 3600})),
        )
        auth = HttpAuth(
            kind=AuthKind.OAUTH2_CLIENT_CREDENTIALS,
            token_url=token_server.url,
            client_id="hub",
            client_secret="cs-1",
            scope="orders",
        )
        connection = Destination(url=destination.url, auth=auth)
        http = connector()
        destination.script(Answer(200), Answer(200), Answer(401, "{}"), Answer(200))

        http.deliver(connection, REQUEST)
        http.deliver(connection, REQUEST)
        with pytest.raises(DeliveryFailed) as refused:
            http.deliver(connection, REQUEST)
        http.deliver(connection, REQUEST)

    assert refused.value.error_class is ErrorClass.HTTP_401
    assert [r.headers["authorization"] for r in destination.requests] == [
        "Bearer t1",
        "Bearer t1",
        "Bearer t1",
        "Bearer t2",
    ]
    assert len(token_server.requests) == 2
    assert b"grant_type=client_credentials" in token_server.requests[0].body


def test_a_cached_token_is_only_handed_to_the_credentials_that_fetched_it(destination):
    """The token endpoint, client id and scope are shown in admin views: a second connection
    naming them with another secret must fetch (and be refused) its own, never reuse the cache."""
    token_server = HttpDestination()
    with token_server:
        token_server.script(
            Answer(200, json.dumps({"access_token": "the-real-token", "expires_in": 3600})),
            Answer(401, '{"error": "invalid_client"}'),
        )
        shown = {"token_url": token_server.url, "client_id": "hub", "scope": "orders"}
        real = HttpAuth(kind=AuthKind.OAUTH2_CLIENT_CREDENTIALS, client_secret="cs-real", **shown)
        guessed = HttpAuth(kind=AuthKind.OAUTH2_CLIENT_CREDENTIALS, client_secret="x", **shown)
        http = connector()
        destination.script(Answer(200), Answer(200))

        http.deliver(Destination(url=destination.url, auth=real), REQUEST)
        with pytest.raises(DeliveryFailed) as refused:
            http.deliver(Destination(url=destination.url, auth=guessed), REQUEST)

    assert refused.value.error_class is ErrorClass.HTTP_401
    assert [r.headers["authorization"] for r in destination.requests] == ["Bearer the-real-token"]
    assert len(token_server.requests) == 2


def test_a_cookie_one_destination_sets_never_travels_with_a_later_delivery(destination):
    """One client serves every tenant's deliveries: it keeps no cookie jar."""
    http = connector()
    destination.script(
        Answer(200, headers={"Set-Cookie": "sid=tenant-a-session; Path=/"}),
        Answer(200),
    )

    http.deliver(Destination(url=destination.url), REQUEST)
    http.deliver(Destination(url=destination.url + "/other-tenant"), REQUEST)

    assert [r.headers.get("cookie") for r in destination.requests] == [None, None]


def test_credentials_echoed_by_the_destination_are_scrubbed(destination):
    destination.script(Answer(400, '{"error": "bad token tok-SECRET"}'))
    with pytest.raises(DeliveryFailed) as failed:
        connector().deliver(
            Destination(url=destination.url, auth=HttpAuth(kind=AuthKind.BEARER, token="tok-SECRET")), REQUEST
        )
    assert "tok-SECRET" not in failed.value.dest_status_text
    assert failed.value.error_class is ErrorClass.HTTP_4XX


def test_retry_after_is_read_in_seconds_and_as_a_date(destination):
    destination.script(Answer(429, "{}", {"Retry-After": "17"}))
    with pytest.raises(DeliveryFailed) as throttled:
        connector().deliver(Destination(url=destination.url), REQUEST)
    assert throttled.value.retry_after_seconds == 17
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("soon") is None


def test_mtls_with_a_pkcs12_client_certificate(pki, mtls_server):
    certificates = FixedCertificates(ClientCertificate(pfx=pki.client_pfx, password=PFX_PASSWORD))
    http = HttpConnector(certificates, ca_pem=pki.ca.cert_pem, egress=LOCAL_EGRESS)

    outcome = http.deliver(Destination(url=mtls_server.url, client_certificate_id="cert_1"), REQUEST)

    assert outcome.dest_status == "200"
    assert mtls_server.requests[0].client_subject is not None


def test_mtls_without_a_client_certificate_is_tls(pki, mtls_server):
    http = HttpConnector(FixedCertificates(None), ca_pem=pki.ca.cert_pem, egress=LOCAL_EGRESS)
    with pytest.raises(DeliveryFailed) as refused:
        http.deliver(Destination(url=mtls_server.url), REQUEST)
    assert refused.value.error_class is ErrorClass.TLS


def test_sefaz_connections_refuse_to_be_saved_without_a_certificate():
    with pytest.raises(ValueError, match="mTLS"):
        Destination.model_validate(
            {
                "protocol": "soap",
                "platform": Platform.SEFAZ,
                "url": "https://nfe.example/ws",
                "soap": {"wsdl": "nfelib:x.wsdl", "operation": "op", "soap_version": "1.2"},
            }
        )


def test_an_attempt_with_a_capped_read_timeout_gives_up_then(destination):
    """The worker's time guard (issue 30) caps an attempt's read timeout below the connection's,
    so that the attempt ends before the invocation: a capped timeout that fires is an ordinary
    `timeout`, uncertain, and names the timeout the attempt used."""
    destination.script(Answer(delay_seconds=3))
    capped = OutboundRequest(
        message_id="msg_1",
        idempotency_key="msg_1",
        body=b'{"a":1}',
        content_type="application/json",
        correlation_id="c1",
        read_timeout_seconds=0.5,
    )

    with pytest.raises(DeliveryFailed) as caught:
        connector().deliver(Destination(url=destination.url, read_timeout_seconds=30), capped)

    failed = caught.value
    assert (failed.error_class, failed.uncertain) == (ErrorClass.TIMEOUT, True)
    assert "within 0.5 s" in failed.dest_status_text
    assert 500 <= failed.duration_ms < 3000
