"""The integration cards' badges (hub.admin.cards, issue 13): pure, decided at `now`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hub.admin.cards import (
    BadgeKind,
    BadgeLevel,
    CardInput,
    Facts,
    assemble,
    badges,
    card_view,
    certificate_badge,
)
from hub.certificates.model import CertificateMetadata
from hub.delivery.breaker import Circuit, ConnectionState
from hub.domain.tenancy import (
    Connection,
    Destination,
    DestinationProtocol,
    Integration,
    IntegrationMode,
    Platform,
    SoapSettings,
)
from hub.ports import StoredIntegration

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def stored(
    mode: IntegrationMode = IntegrationMode.ORCHESTRATION,
    *,
    connection_id: str | None = "con_a",
    destination: Destination | None = None,
    gone: datetime | None = None,
    tenant_id: str = "t1",
) -> StoredIntegration:
    return StoredIntegration(
        Integration(
            integration_id="int_a",
            tenant_id=tenant_id,
            name="ERP",
            mode=mode,
            connection_id=connection_id,
            destination=destination,
            connection_gone_at=gone,
        ),
        version=3,
    )


def certificate(
    not_after: datetime, connection_id: str = "con_a", tenant_id: str = "t1"
) -> CertificateMetadata:
    return CertificateMetadata(
        tenant_id=tenant_id,
        connection_id=connection_id,
        subject="CN=acme",
        issuer="CN=ca",
        serial="1",
        not_before=not_after - timedelta(days=365),
        not_after=not_after,
    )


def sefaz(connection_id: str = "con_a", tenant_id: str = "t1") -> Connection:
    return Connection(
        connection_id=connection_id,
        tenant_id=tenant_id,
        name="SEFAZ SP",
        destination=Destination(
            connection_id=connection_id,
            protocol=DestinationProtocol.SOAP,
            platform=Platform.SEFAZ,
            url="https://sefaz.example/ws",
            soap=SoapSettings(wsdl="nfe.wsdl", operation="nfeStatusServicoNF", soap_version="1.2"),
            client_certificate_id=connection_id,
        ),
    )


def kinds(card: CardInput) -> list[BadgeKind]:
    return [b.kind for b in badges(card, NOW)]


class TestReadOnly:
    def test_observability_mode_is_a_blue_read_only_badge_with_its_words(self) -> None:
        [badge] = badges(CardInput(stored(IntegrationMode.OBSERVABILITY)), NOW)
        assert (badge.kind, badge.text, badge.level) == (BadgeKind.READ_ONLY, "READ-ONLY", BadgeLevel.INFO)

    def test_orchestration_mode_has_no_badge(self) -> None:
        assert badges(CardInput(stored(IntegrationMode.ORCHESTRATION)), NOW) == []


class TestCertificate:
    @pytest.mark.parametrize(
        ("left", "text", "level"),
        [
            (timedelta(days=31), None, None),  # beyond 30 days: nothing to say
            (timedelta(days=30, hours=23), "Cert expires in 30 d", BadgeLevel.WARNING),
            (timedelta(days=30), "Cert expires in 30 d", BadgeLevel.WARNING),
            (timedelta(days=20), "Cert expires in 20 d", BadgeLevel.WARNING),
            (timedelta(days=8), "Cert expires in 8 d", BadgeLevel.WARNING),
            (timedelta(days=7, hours=23), "Cert expires in 7 d", BadgeLevel.CRITICAL),
            (timedelta(days=7), "Cert expires in 7 d", BadgeLevel.CRITICAL),
            (timedelta(days=5), "Cert expires in 5 d", BadgeLevel.CRITICAL),
            (timedelta(days=1), "Cert expires in 1 d", BadgeLevel.CRITICAL),
            (timedelta(hours=23), "Cert expires today", BadgeLevel.CRITICAL),
            (timedelta(seconds=1), "Cert expires today", BadgeLevel.CRITICAL),
            (timedelta(0), "Cert expired", BadgeLevel.CRITICAL),  # not_after is the last instant
            (-timedelta(days=3), "Cert expired", BadgeLevel.CRITICAL),
        ],
    )
    def test_thresholds_at_30_7_and_0_days(
        self, left: timedelta, text: str | None, level: BadgeLevel | None
    ) -> None:
        badge = certificate_badge(NOW + left, NOW)
        if text is None:
            assert badge is None
        else:
            assert badge is not None
            assert (badge.kind, badge.text, badge.level) == (BadgeKind.CERTIFICATE, text, level)

    def test_every_certificate_badge_says_cert_in_words(self) -> None:
        for days in range(-2, 31):
            badge = certificate_badge(NOW + timedelta(days=days, hours=1), NOW)
            assert badge is not None
            assert badge.text.startswith("Cert ")

    def test_the_card_shows_the_connections_certificate(self) -> None:
        card = CardInput(stored(), sefaz(), certificate(NOW + timedelta(days=5)))
        assert kinds(card) == [BadgeKind.CERTIFICATE]


class TestConnectionState:
    def test_paused(self) -> None:
        [badge] = badges(CardInput(stored(), sefaz(), state=ConnectionState("con_a", "t1", paused=True)), NOW)
        assert (badge.kind, badge.text, badge.level) == (BadgeKind.PAUSED, "Paused", BadgeLevel.WARNING)

    def test_circuit_open(self) -> None:
        state = ConnectionState("con_a", "t1", circuit=Circuit.OPEN, probe_at=NOW + timedelta(minutes=1))
        [badge] = badges(CardInput(stored(), sefaz(), state=state), NOW)
        assert (badge.kind, badge.text, badge.level) == (
            BadgeKind.CIRCUIT_OPEN,
            "Circuit open",
            BadgeLevel.CRITICAL,
        )

    def test_an_open_circuit_with_its_probe_under_way_says_probing(self) -> None:
        state = ConnectionState(
            "con_a",
            "t1",
            circuit=Circuit.OPEN,
            probe_at=NOW - timedelta(seconds=5),
            probe_message="msg_x",
            probe_until=NOW + timedelta(minutes=5),
        )
        [badge] = badges(CardInput(stored(), sefaz(), state=state), NOW)
        assert badge.text == "Circuit open (probing)"

    def test_a_probe_whose_claim_lapsed_is_not_probing(self) -> None:
        state = ConnectionState(
            "con_a", "t1", circuit=Circuit.OPEN, probe_message="msg_x", probe_until=NOW - timedelta(seconds=1)
        )
        assert [b.text for b in badges(CardInput(stored(), sefaz(), state=state), NOW)] == ["Circuit open"]

    def test_a_closed_running_connection_has_no_badge(self) -> None:
        assert badges(CardInput(stored(), sefaz(), state=ConnectionState("con_a", "t1")), NOW) == []


def test_connection_gone_after_a_410() -> None:
    [badge] = badges(CardInput(stored(gone=NOW - timedelta(hours=1)), sefaz()), NOW)
    assert (badge.kind, badge.text, badge.level) == (
        BadgeKind.CONNECTION_GONE,
        "Connection gone",
        BadgeLevel.CRITICAL,
    )


def test_everything_at_once_in_a_fixed_order() -> None:
    card = CardInput(
        stored(IntegrationMode.OBSERVABILITY, gone=NOW),
        sefaz(),
        certificate(NOW + timedelta(days=2)),
        ConnectionState("con_a", "t1", paused=True, circuit=Circuit.OPEN),
    )
    assert kinds(card) == [
        BadgeKind.READ_ONLY,
        BadgeKind.CERTIFICATE,
        BadgeKind.PAUSED,
        BadgeKind.CIRCUIT_OPEN,
        BadgeKind.CONNECTION_GONE,
    ]
    assert all(b.text for b in badges(card, NOW))


class TestAssemble:
    def test_another_tenants_connection_and_certificate_count_as_missing(self) -> None:
        facts = Facts(
            connections={"con_a": sefaz(tenant_id="t2")},
            certificates={"con_a": certificate(NOW + timedelta(days=1), tenant_id="t2")},
            states={"con_a": ConnectionState("con_a", "t2", paused=True)},
        )
        card = assemble(stored(), facts)
        assert (card.connection, card.certificate, card.state) == (None, None, None)
        view = card_view(card, NOW)
        assert view["connection_found"] is False
        assert view["badges"] == []

    def test_a_certificate_the_destination_does_not_present_gives_no_badge(self) -> None:
        plain = sefaz().model_copy(
            update={
                "destination": Destination(connection_id="con_a", url="https://erp.example/in"),
            }
        )
        facts = Facts(
            connections={"con_a": plain}, certificates={"con_a": certificate(NOW + timedelta(days=1))}
        )
        assert assemble(stored(), facts).certificate is None

    def test_an_embedded_destination_gets_only_the_badges_that_apply(self) -> None:
        embedded = Destination(url="https://erp.example/in", client_certificate_id="cert_e")
        facts = Facts(certificates={"cert_e": certificate(NOW + timedelta(days=20), connection_id="cert_e")})
        card = assemble(
            stored(IntegrationMode.OBSERVABILITY, connection_id=None, destination=embedded), facts
        )
        view = card_view(card, NOW)
        assert [b["kind"] for b in view["badges"]] == ["read_only", "certificate"]
        assert view["destination"] == "embedded"
        assert view["connection_state"] is None  # no connection id: no breaker of its own
        assert view["certificate"]["days_left"] == 20

    def test_the_view_carries_the_raw_facts(self) -> None:
        facts = Facts(
            connections={"con_a": sefaz()},
            certificates={"con_a": certificate(NOW + timedelta(days=5, hours=2))},
            states={"con_a": ConnectionState("con_a", "t1", paused=True)},
        )
        view = card_view(assemble(stored(), facts), NOW)
        assert view["platform"] == "sefaz"
        assert view["protocol"] == "soap"
        assert view["connection_name"] == "SEFAZ SP"
        assert view["certificate"] == {
            "connection_id": "con_a",
            "subject": "CN=acme",
            "not_after": "2026-12-06T14:00:00Z",
            "days_left": 5,
            "level": "critical",
        }
        assert view["connection_state"] == {
            "connection_id": "con_a",
            "paused": True,
            "circuit": "closed",
            "probing": False,
            "probe_at": None,
        }
        assert view["badges"] == [
            {"kind": "certificate", "text": "Cert expires in 5 d", "level": "critical"},
            {"kind": "paused", "text": "Paused", "level": "warning"},
        ]
