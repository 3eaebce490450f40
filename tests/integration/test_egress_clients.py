"""The egress policy on every outbound client, with real clients and real local servers.

Denied targets are reached only through names a DNS the test controls resolves (tests.egress),
and every test of one asserts that no socket connected anywhere but loopback: the policy refuses
before connecting. Through the real handlers too: the admin API's save-time 422s, the
connection test tool, and the worker delivering to a name that resolves to a denied address."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import SecretStr

from devstack.cfn import load_template
from hub import wiring
from hub.adapters.slack import SlackWebhook
from hub.alerts.model import Alert, AlertGroup, AlertKind
from hub.delivery.egress import DestinationNotAllowed, EgressPolicy
from hub.delivery.http import HttpConnector
from hub.delivery.port import DeliveryFailed, OutboundRequest
from hub.delivery.soap import SoapConnector
from hub.delivery.webhook import HttpWebhookPoster
from hub.domain.failure import ErrorClass
from hub.domain.tenancy import AuthKind, Destination, DestinationProtocol, HttpAuth, SoapSettings
from hub.errors import AlertChannelUnavailable, HubError
from tests.aws import TEMPLATE
from tests.destinations import Answer
from tests.egress import LOCAL_EGRESS, FakeDns, fake_dns, non_loopback, recorded_connects
from tests.integration.delivery.test_soap_connector import CONS_STAT_SERV, WSDL, FixedCertificates
from tests.integration.test_connections import api, path, put_integration_item, rest, tenants
from tests.pipeline import configure, send, status
from tests.serving import serving_thread

__all__ = ["api", "fake_dns", "tenants"]  # fixtures used by name

REQUEST = OutboundRequest("msg-1", "msg-1", b'{"po": 1}', "application/json", "corr-1", "t1")
DENIED = {
    "metadata.test": ["169.254.169.254"],
    "rfc1918.test": ["10.0.0.5"],
    "cgnat.test": ["100.64.0.7"],
    "mapped.test": ["::ffff:169.254.169.254"],
    "ula.test": ["fd00:ec2::254"],
    "loopback.test": ["127.0.0.1"],  # denied by a policy that does not allow loopback
    "mixed.test": ["127.0.0.1", "10.0.0.5"],  # an allowed address first, a denied one second
}


def http(policy: EgressPolicy = LOCAL_EGRESS) -> HttpConnector:
    return HttpConnector(FixedCertificates(None), egress=policy)


@pytest.fixture
def dns(fake_dns: FakeDns) -> FakeDns:
    for name, addresses in DENIED.items():
        fake_dns.add(name, addresses)
    return fake_dns


class TestEveryClientRefusesBeforeConnecting:
    @pytest.mark.parametrize("name", sorted(set(DENIED) - {"loopback.test"}))
    def test_rest_delivery_to_a_name_resolving_to_a_denied_address(self, dns, name):
        with recorded_connects() as connects, pytest.raises(DestinationNotAllowed) as refused:
            http().deliver(Destination(url=f"http://{name}:8080/orders"), REQUEST)

        assert connects == []
        assert refused.value.details["host"] == name

    def test_a_stack_without_loopback_allowed_refuses_127_0_0_1(self, dns, destination):
        with recorded_connects() as connects, pytest.raises(DestinationNotAllowed):
            http(EgressPolicy()).deliver(Destination(url=destination.url), REQUEST)
        with pytest.raises(DestinationNotAllowed):
            http(EgressPolicy()).deliver(
                Destination(url=destination.url.replace("127.0.0.1", "loopback.test")), REQUEST
            )

        assert connects == []
        assert destination.requests == []

    def test_the_allowed_range_is_reached_and_its_neighbour_is_not(self, dns, destination):
        only_one = EgressPolicy.from_setting("127.0.0.1/32")
        neighbour = destination.url.replace("127.0.0.1", "127.0.0.2")

        assert http(only_one).deliver(Destination(url=destination.url), REQUEST).dest_status == "200"
        with recorded_connects() as connects, pytest.raises(DestinationNotAllowed):
            http(only_one).deliver(Destination(url=neighbour), REQUEST)

        assert connects == []
        assert len(destination.requests) == 1

    def test_dns_rebinding_cannot_move_a_checked_connection(self, fake_dns, destination):
        """The name answers loopback (allowed) once, then a denied address: the client resolves
        once per connection and connects to the address it checked."""
        fake_dns.add("rebind.test", ["127.0.0.1"], ["10.0.0.5"])
        url = destination.url.replace("127.0.0.1", "rebind.test")

        with recorded_connects() as connects:
            outcome = http().deliver(Destination(url=url), REQUEST)

        assert outcome.dest_status == "200"
        assert fake_dns.lookups["rebind.test"] == 1
        assert non_loopback(connects) == []
        assert destination.requests[0].headers["host"].startswith("rebind.test")

    def test_oauth_token_requests_go_through_the_policy(self, dns, destination):
        auth = HttpAuth(
            kind=AuthKind.OAUTH2_CLIENT_CREDENTIALS,
            token_url="http://metadata.test/latest/api/token",
            client_id="c",
            client_secret="client-SECRET",
        )
        with recorded_connects() as connects, pytest.raises(DestinationNotAllowed):
            http().deliver(Destination(url=destination.url, auth=auth), REQUEST)

        assert connects == []
        assert destination.requests == []

    def test_outbound_webhooks_to_a_denied_address_are_a_network_failure(self, dns):
        with recorded_connects() as connects, pytest.raises(DeliveryFailed) as failed:
            HttpWebhookPoster(LOCAL_EGRESS).post("https://metadata.test/hook", b"{}", {})

        assert failed.value.error_class is ErrorClass.NETWORK
        assert "does not allow" in failed.value.dest_status_text
        assert connects == []

    def test_slack_alerts_go_through_the_policy(self, dns):
        alert = Alert(group=AlertGroup(AlertKind.ALARM, "a", "2024-05-01T13"), title="t", lines=("l",))

        with recorded_connects() as connects, pytest.raises(AlertChannelUnavailable):
            SlackWebhook(SecretStr("https://rfc1918.test/services/T/B/x"), LOCAL_EGRESS).send(alert)

        assert connects == []

    def test_soap_posts_and_wsdl_loads_go_through_the_policy(self, dns):
        settings = SoapSettings(wsdl=WSDL, operation="nfeStatusServicoNF", soap_version="1.2")
        soap = SoapConnector(FixedCertificates(None), egress=LOCAL_EGRESS)
        body = OutboundRequest("m", "m", CONS_STAT_SERV, "application/soap+xml", "c", "t1")
        remote = settings.model_copy(update={"wsdl": "http://metadata.test/service?wsdl"})

        with recorded_connects() as connects:
            with pytest.raises(DestinationNotAllowed):
                soap.deliver(
                    Destination(protocol=DestinationProtocol.SOAP, url="https://ula.test/ws", soap=settings),
                    body,
                )
            with pytest.raises(DestinationNotAllowed):
                soap.deliver(
                    Destination(protocol=DestinationProtocol.SOAP, url="https://ula.test/ws", soap=remote),
                    body,
                )

        assert connects == []

    @pytest.mark.parametrize("wsdl", ["/etc/hostname", "file:///etc/hostname", "/proc/self/environ"])
    def test_a_wsdl_never_loads_from_a_local_file_outside_nfelib(self, wsdl):
        settings = SoapSettings(wsdl=wsdl, operation="nfeStatusServicoNF", soap_version="1.2")
        destination = Destination(
            protocol=DestinationProtocol.SOAP, url="https://sefaz.example.com/ws", soap=settings
        )

        with pytest.raises(DestinationNotAllowed):
            SoapConnector(FixedCertificates(None), egress=LOCAL_EGRESS).deliver(
                destination, OutboundRequest("m", "m", CONS_STAT_SERV, "application/soap+xml", "c", "t1")
            )


class TestTheUrlRulesHoldWhenConnecting:
    """A connection stored before the save-time check (or built another way) still never reaches
    a local file nor sends user-info."""

    @pytest.mark.parametrize("url", ["file:///etc/hostname", "file:///proc/self/environ"])
    def test_the_soap_session_never_reads_a_local_file(self, url):
        session = LOCAL_EGRESS.requests_session()

        assert sorted(session.adapters) == ["http://", "https://"]  # zeep's file:// mount ignored
        with pytest.raises(DestinationNotAllowed):
            session.get(url)
        settings = SoapSettings(wsdl=WSDL, operation="nfeStatusServicoNF", soap_version="1.2")
        with pytest.raises(DestinationNotAllowed):  # the test tool answers it as `network`
            SoapConnector(FixedCertificates(None), egress=LOCAL_EGRESS).probe(
                Destination(protocol=DestinationProtocol.SOAP, url=url, soap=settings), "t1"
            )

    def test_user_info_is_refused_before_anything_is_sent(self, destination):
        with_user = destination.url.replace("http://", "http://ops:pw@")

        with pytest.raises(DestinationNotAllowed, match="user-info"):
            http().deliver(Destination(url=with_user), REQUEST)
        with pytest.raises(DestinationNotAllowed, match="user-info"):
            LOCAL_EGRESS.requests_session().post(with_user, data=b"<x/>")

        assert destination.requests == []

    def test_the_runtime_api_is_refused_in_its_ipv6_forms_too(self, monkeypatch, destination):
        port = int(destination.url.rsplit(":", 1)[1].split("/", 1)[0])
        monkeypatch.setenv("AWS_LAMBDA_RUNTIME_API", f"127.0.0.1:{port}")
        policy = EgressPolicy.from_setting("127.0.0.0/8,::1/128")  # the local stack's allow-list

        for host in ("127.0.0.1", "[::ffff:127.0.0.1]", "[::127.0.0.1]"):
            with pytest.raises(DestinationNotAllowed, match="Runtime API"):
                http(policy).deliver(Destination(url=f"http://{host}:{port}/2018-06-01/runtime"), REQUEST)

        assert destination.requests == []


class Redirecting:
    """Answers every request with 307 to `target` (a second server that must see nothing)."""

    def __init__(self, target: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _redirect(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self.send_response(307)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _redirect  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        serving_thread(self.server).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/ws"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def redirect(destination):
    server = Redirecting(destination.url)
    yield server
    server.close()


class TestRedirectsAreNeverFollowed:
    def test_rest(self, redirect, destination):
        with pytest.raises(DeliveryFailed) as failed:
            http().deliver(
                Destination(url=redirect.url, auth=HttpAuth(kind=AuthKind.BEARER, token="tok-SECRET")),
                REQUEST,
            )

        assert (failed.value.error_class, failed.value.dest_status) == (ErrorClass.HTTP_4XX, "307")
        assert "redirects are never followed" in failed.value.dest_status_text
        assert destination.requests == []

    def test_soap_post(self, redirect, destination):
        settings = SoapSettings(wsdl=WSDL, operation="nfeStatusServicoNF", soap_version="1.2")
        soap = SoapConnector(FixedCertificates(None), egress=LOCAL_EGRESS)
        with pytest.raises(DeliveryFailed) as failed:
            soap.deliver(
                Destination(protocol=DestinationProtocol.SOAP, url=redirect.url, soap=settings),
                OutboundRequest("m", "m", CONS_STAT_SERV, "application/soap+xml", "c", "t1"),
            )

        assert (failed.value.error_class, failed.value.dest_status) == (ErrorClass.HTTP_4XX, "307")
        assert "redirects are never followed" in failed.value.dest_status_text
        assert destination.requests == []

    def test_wsdl_load(self, redirect, destination):
        settings = SoapSettings(
            wsdl=redirect.url + "?wsdl", operation="nfeStatusServicoNF", soap_version="1.2"
        )
        soap = SoapConnector(FixedCertificates(None), egress=LOCAL_EGRESS)
        with pytest.raises(HubError, match="redirects are never followed"):
            soap.deliver(
                Destination(protocol=DestinationProtocol.SOAP, url=destination.url, soap=settings),
                OutboundRequest("m", "m", CONS_STAT_SERV, "application/soap+xml", "c", "t1"),
            )

        assert destination.requests == []

    def test_oauth_token_endpoint(self, redirect, destination):
        auth = HttpAuth(
            kind=AuthKind.OAUTH2_CLIENT_CREDENTIALS, token_url=redirect.url, client_id="c", client_secret="s"
        )
        with pytest.raises(DeliveryFailed) as failed:
            http().deliver(Destination(url=destination.url, auth=auth), REQUEST)

        assert (failed.value.error_class, failed.value.dest_status) == (ErrorClass.HTTP_4XX, "307")
        assert "redirects are never followed" in failed.value.dest_status_text
        assert destination.requests == []

    def test_the_connection_test_tool(self, redirect, destination):
        probe = http().probe(Destination(url=redirect.url), "t1")

        assert (probe.ok, probe.error_class, probe.dest_status) == (False, ErrorClass.HTTP_4XX, "307")
        assert "redirects are never followed" in probe.detail
        assert destination.requests == []

    def test_slack_alerts(self, redirect, destination):
        alert = Alert(group=AlertGroup(AlertKind.ALARM, "a", "2024-05-01T13"), title="t", lines=("l",))
        with pytest.raises(AlertChannelUnavailable):
            SlackWebhook(SecretStr(redirect.url), LOCAL_EGRESS).send(alert)

        assert destination.requests == []

    def test_outbound_webhook(self, redirect, destination):
        with pytest.raises(DeliveryFailed) as failed:
            HttpWebhookPoster(LOCAL_EGRESS).post(redirect.url, b"{}", {})

        assert failed.value.error_class is ErrorClass.HTTP_4XX
        assert destination.requests == []


class TestThroughTheRealHandlers:
    @pytest.mark.parametrize(
        ("body", "field"),
        [
            (rest(url="http://169.254.169.254/latest/meta-data/"), "url"),
            (rest(url="http://[::ffff:169.254.169.254]/"), "url"),
            (rest(url="http://10.0.0.5/"), "url"),
            (rest(url="http://127.0.0.1:9001/2018-06-01/runtime/invocation/next"), "url"),
            (rest(url="file:///proc/self/environ"), "url"),
            (rest(url="https://user:pw@erp.example.com/"), "url"),
            (
                rest(
                    auth={
                        "kind": "oauth2_client_credentials",
                        "token_url": "http://169.254.169.254/token",
                        "client_id": "c",
                        "client_secret": "s",
                    }
                ),
                "auth.token_url",
            ),
            (
                rest(protocol="soap", soap={"wsdl": "/proc/self/environ", "operation": "nfeStatusServicoNF"}),
                "soap.wsdl",
            ),
            (
                rest(
                    protocol="soap",
                    soap={"wsdl": "http://10.0.0.5/x?wsdl", "operation": "nfeStatusServicoNF"},
                ),
                "soap.wsdl",
            ),
        ],
    )
    def test_a_connection_that_can_never_pass_is_422_naming_field_and_rule(
        self, stack, tenants, api, body, field
    ):
        answer = api("POST", path(), body=body)

        assert answer.status == 422, answer.body
        assert answer.code == "destination_not_allowed"
        assert answer.body["error"]["details"][0]["field"] == field

    @pytest.mark.parametrize(
        "url", ["http://hooks.example.com/x", "https://169.254.169.254/x", "https://[fd00:ec2::254]/x"]
    )
    def test_a_subscription_url_that_can_never_pass_is_422(self, stack, tenants, api, url):
        body = {"url": url, "event_types": ["message.*"]}
        answer = api("POST", "/api/admin/tenants/t1/subscriptions", body=body)

        assert answer.status == 422, answer.body
        assert answer.code == "destination_not_allowed"

    def test_the_test_tool_cannot_probe_an_internal_address(self, stack, tenants, api, dns):
        assert (
            api("POST", path(), body=rest(connection_id="probe", url="http://metadata.test/latest/")).status
            == 201
        )

        with recorded_connects() as connects:
            answer = api("POST", path("t1", "probe", "test"))

        assert answer.status == 200
        assert (answer.body["ok"], answer.body["error_class"]) == (False, "network")
        assert "does not allow" in answer.body["detail"]
        assert non_loopback(connects) == []

    def test_the_worker_ends_a_message_to_a_denied_address_in_error(
        self, stack, tenancy, api, ingest_api, worker, dns
    ):
        assert (
            api("POST", path(), body=rest(connection_id="inner", url="http://rfc1918.test/orders")).status
            == 201
        )
        put_integration_item(stack, tenancy.integration_id, "t1", "inner")
        message_id = send(ingest_api, tenancy, {"po_number": "PO-SSRF"})

        with recorded_connects() as connects:
            worker()

        final = status(stack, message_id)
        assert (final["pipeline_status"], final["last_retry_error_class"]) == ("error", "network")
        assert "does not allow" in final["dest_status_text"]
        assert non_loopback(connects) == []

    def test_a_stack_with_the_templates_default_refuses_127_0_0_1_through_the_worker(
        self, stack, tenancy, api, ingest_api, worker, destination, monkeypatch
    ):
        # What a deployment without the parameter gets: the template's default, through Globals.
        template = load_template(TEMPLATE)
        allowed = template["Parameters"]["EgressAllowedCidrs"]["Default"]
        variables = template["Globals"]["Function"]["Environment"]["Variables"]
        assert (allowed, variables["HUB_EGRESS_ALLOWED_CIDRS"]) == ("", {"Ref": "EgressAllowedCidrs"})
        monkeypatch.setenv("HUB_EGRESS_ALLOWED_CIDRS", allowed)
        wiring.reset()
        # Refused at save; a destination written without the check is refused when connecting.
        assert api("POST", path(), body=rest(connection_id="local", url=destination.url)).status == 422
        configure(stack, tenancy, destination)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-LOCAL"})

        with recorded_connects() as connects:
            worker()

        final = status(stack, message_id)
        assert (final["pipeline_status"], final["last_retry_error_class"]) == ("error", "network")
        assert "loopback" in final["dest_status_text"]
        assert connects == []
        assert destination.requests == []

    def test_the_local_stacks_allow_list_is_the_templates_parameter(self, stack):
        assert stack.env["HUB_EGRESS_ALLOWED_CIDRS"] == "127.0.0.0/8,::1/128"
        assert json.dumps(stack.env).count("HUB_EGRESS_ALLOWED_CIDRS") == 1


def test_an_answer_is_reached_only_on_loopback(destination):
    """The harness itself: a loopback delivery is recorded as a loopback connect."""
    destination.script(Answer(200))
    with recorded_connects() as connects:
        http().deliver(Destination(url=destination.url), REQUEST)
    assert connects
    assert non_loopback(connects) == []
