"""The admin API's Idempotency-Key rules (hub.domain.admin_idempotency), its use case over an
in-memory claim store and key service (hub.admin.idempotency), and the OpenAPI amendment that
documents the header on every mutating route (hub.api.openapi.also_answers)."""

from __future__ import annotations

import os
import zlib
from datetime import timedelta
from pathlib import Path

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from pydantic import BaseModel

from devstack.cfn import load_template
from hub.admin.idempotency import MAX_SEALED_BYTES, AdminIdempotency, Answer, Run
from hub.api.openapi import OBJECT, also_answers, answers, documented, documented_parts, error_codes
from hub.certificates.envelope import DataKey
from hub.domain.admin_idempotency import (
    LEASE,
    RETENTION,
    ClaimState,
    StoredClaim,
    Verdict,
    idempotency_key,
    kept,
    key_hash,
    request_fingerprint,
    verdict,
)
from hub.errors import (
    Conflict,
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
    KeyServiceUnavailable,
    SecretUndecryptable,
    StorageUnavailable,
    ValidationFailed,
)
from tests.fakes.admin_idempotency import FakeClaims
from tests.fakes.clock import EPOCH, FakeClock
from tests.fakes.data_keys import FakeDataKeys

REQUEST = request_fingerprint("POST", "/api/admin/tenants", [], b'{"tenant_id":"t1"}')
OTHER = request_fingerprint("POST", "/api/admin/tenants", [], b'{"tenant_id":"t2"}')
ROOT = Path(__file__).resolve().parents[2]
SECRET = "hub_k_live_s3cr3t_shown_once"
CREATED = Answer(201, '{"key_id":"key_1","key":"' + SECRET + '"}', {"Content-Type": "application/json"})


class TestTheHeader:
    @pytest.mark.parametrize("raw", ["a", "x" * 255, "2026-12-02 click #1 ~!", "0f9c2e6e-1b7d-4c3e"])
    def test_one_to_255_printable_ascii_characters_are_a_key(self, raw: str) -> None:
        assert idempotency_key(raw) == raw

    @pytest.mark.parametrize("raw", ["", "x" * 256, "clé", "tab\there", "line\n", "\x7f"])
    def test_anything_else_is_400_validation_error_naming_the_header(self, raw: str) -> None:
        with pytest.raises(ValidationFailed) as refused:
            idempotency_key(raw)
        assert refused.value.http_status == 400
        assert refused.value.code == "validation_error"
        assert refused.value.details[0]["field"] == "Idempotency-Key"
        assert raw not in refused.value.message or raw == ""

    def test_keys_are_stored_by_their_hash(self) -> None:
        assert key_hash("k-1") != key_hash("k-2")
        assert len(key_hash("k-1")) == 64


class TestTheFingerprint:
    def test_the_query_s_order_does_not_matter_its_values_do(self) -> None:
        first = request_fingerprint("POST", "/p", [("a", "1"), ("b", "2")], b"")
        assert first == request_fingerprint("post", "/p", [("b", "2"), ("a", "1")], b"")
        assert first != request_fingerprint("POST", "/p", [("a", "1"), ("b", "3")], b"")

    @pytest.mark.parametrize(
        ("method", "path", "query", "body"),
        [
            ("PUT", "/p", [], b"{}"),
            ("POST", "/q", [], b"{}"),
            ("POST", "/p", [("tenant_id", "t1")], b"{}"),
            ("POST", "/p", [], b"{ }"),  # the bytes as sent, not their meaning
        ],
    )
    def test_any_other_part_is_another_request(self, method, path, query, body) -> None:
        assert request_fingerprint(method, path, query, body) != request_fingerprint("POST", "/p", [], b"{}")

    def test_parts_cannot_run_into_each_other(self) -> None:
        assert request_fingerprint("POST", "/p", [("a", "b")], b"") != request_fingerprint(
            "POST", "/p", [("a", "")], b"b"
        )


def claim(state: ClaimState, *, request: str = REQUEST, lease: timedelta | None = LEASE) -> StoredClaim:
    return StoredClaim(
        request_sha256=request,
        state=state,
        lease_until=EPOCH + lease if lease is not None else None,
        expires_at=EPOCH + RETENTION,
    )


class TestTheVerdict:
    def test_no_claim_or_an_expired_one_is_claimed(self) -> None:
        assert verdict(None, REQUEST, EPOCH) is Verdict.CLAIM
        assert verdict(claim(ClaimState.KEPT), OTHER, EPOCH + RETENTION) is Verdict.CLAIM

    def test_the_same_request_after_a_kept_answer_replays_it(self) -> None:
        assert verdict(claim(ClaimState.KEPT, lease=None), REQUEST, EPOCH) is Verdict.REPLAY

    @pytest.mark.parametrize("state", list(ClaimState))
    def test_another_request_with_the_key_is_422(self, state: ClaimState) -> None:
        with pytest.raises(IdempotencyKeyReused) as refused:
            verdict(claim(state), OTHER, EPOCH)
        assert (refused.value.http_status, refused.value.code) == (422, "idempotency_key_reused")

    def test_the_same_request_while_the_first_runs_is_409_with_retry_after(self) -> None:
        with pytest.raises(IdempotencyKeyInUse) as refused:
            verdict(claim(ClaimState.RUNNING), REQUEST, EPOCH + LEASE - timedelta(seconds=1))
        assert (refused.value.http_status, refused.value.code) == (409, "idempotency_key_in_use")
        assert isinstance(refused.value, Conflict)
        assert refused.value.headers() == {"Retry-After": "1"}

    def test_a_running_claim_past_its_lease_was_abandoned_and_is_claimed(self) -> None:
        assert verdict(claim(ClaimState.RUNNING), REQUEST, EPOCH + LEASE) is Verdict.CLAIM

    def test_the_lease_outlives_the_admin_function_s_timeout(self) -> None:
        admin = load_template(ROOT / "template.yaml")["Resources"]["AdminApiFunction"]["Properties"]
        assert timedelta(seconds=admin["Timeout"]) < LEASE
        assert timedelta(hours=24) == RETENTION

    @pytest.mark.parametrize(
        ("status", "is_kept"),
        [
            (200, True),
            (201, True),
            (204, True),
            (404, True),
            (409, True),
            (499, True),
            (500, False),
            (503, False),
        ],
    )
    def test_2xx_and_4xx_are_kept_5xx_are_not(self, status: int, is_kept: bool) -> None:
        assert kept(status) is is_kept


class FailingKeys(FakeDataKeys):
    def generate(self, context: dict[str, str]) -> DataKey:
        raise KeyServiceUnavailable("the key service is temporarily unavailable")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def claims() -> FakeClaims:
    return FakeClaims()


@pytest.fixture
def keys() -> FakeDataKeys:
    return FakeDataKeys()


@pytest.fixture
def idem(claims: FakeClaims, keys: FakeDataKeys, clock: FakeClock) -> AdminIdempotency:
    return AdminIdempotency(claims, keys, clock=clock)


def started(
    idem: AdminIdempotency,
    token: str = "tok_a",  # noqa: S107 - a token id, not a secret
    key: str = "k-1",
    request: str = REQUEST,
) -> Run:
    begun = idem.begin(token, key, request)
    assert isinstance(begun, Run)
    return begun


class TestTheUseCase:
    def test_a_repeat_answers_the_kept_answer_and_runs_nothing(
        self, idem: AdminIdempotency, keys: FakeDataKeys
    ) -> None:
        idem.finish(started(idem), CREATED)

        assert idem.begin("tok_a", "k-1", REQUEST) == CREATED
        assert keys.decrypts == 1  # opened for the repeat

    def test_the_kept_answer_is_sealed_never_in_clear(
        self, idem: AdminIdempotency, claims: FakeClaims
    ) -> None:
        idem.finish(started(idem), CREATED)

        [held] = claims.held.values()
        assert held.status == 201
        assert held.answer is not None
        stored = repr(held.answer.to_item()).encode()
        assert SECRET.encode() not in stored
        with pytest.raises(zlib.error):  # not merely compressed
            zlib.decompress(held.answer.ciphertext)

    def test_a_sealed_answer_opens_only_for_its_token_and_key(
        self, idem: AdminIdempotency, claims: FakeClaims
    ) -> None:
        idem.finish(started(idem, token="tok_a"), CREATED)
        [held] = claims.held.values()
        # The same sealed answer filed under another token's claim does not open there.
        claims.held[("tok_b", key_hash("k-1"))] = held
        with pytest.raises(SecretUndecryptable):
            idem.begin("tok_b", "k-1", REQUEST)

    def test_a_key_is_the_token_s_own(self, idem: AdminIdempotency) -> None:
        idem.finish(started(idem, token="tok_a"), CREATED)

        assert isinstance(idem.begin("tok_b", "k-1", OTHER), Run)

    def test_another_request_with_a_kept_key_is_422(self, idem: AdminIdempotency) -> None:
        idem.finish(started(idem), CREATED)
        with pytest.raises(IdempotencyKeyReused):
            idem.begin("tok_a", "k-1", OTHER)

    def test_a_repeat_while_the_first_runs_is_409(self, idem: AdminIdempotency) -> None:
        started(idem)
        with pytest.raises(IdempotencyKeyInUse):
            idem.begin("tok_a", "k-1", REQUEST)

    @pytest.mark.parametrize("status", [500, 503])
    def test_a_5xx_frees_the_key(self, idem: AdminIdempotency, claims: FakeClaims, status: int) -> None:
        idem.finish(started(idem), Answer(status, '{"error":{}}'))

        assert claims.held == {}
        assert isinstance(idem.begin("tok_a", "k-1", OTHER), Run)  # even for another request

    def test_an_abandoned_run_frees_the_key(self, idem: AdminIdempotency, claims: FakeClaims) -> None:
        idem.abandon(started(idem))
        assert claims.held == {}

    def test_a_claim_left_running_by_a_dead_run_is_taken_over_after_its_lease(
        self, idem: AdminIdempotency, claims: FakeClaims, clock: FakeClock
    ) -> None:
        dead = started(idem)  # its Lambda died: neither finish nor abandon
        clock.advance(LEASE)

        taker = started(idem)
        idem.finish(taker, CREATED)
        idem.finish(dead, Answer(200, "{}"))  # a late finish of the dead run changes nothing

        assert idem.begin("tok_a", "k-1", REQUEST) == CREATED

    def test_an_abandoned_claim_is_not_taken_by_another_request(
        self, idem: AdminIdempotency, clock: FakeClock
    ) -> None:
        started(idem)
        clock.advance(LEASE)
        with pytest.raises(IdempotencyKeyReused):
            idem.begin("tok_a", "k-1", OTHER)

    def test_a_key_is_forgotten_after_24_hours(self, idem: AdminIdempotency, clock: FakeClock) -> None:
        idem.finish(started(idem), CREATED)
        clock.advance(RETENTION)
        assert isinstance(idem.begin("tok_a", "k-1", OTHER), Run)

    def test_a_key_service_down_refuses_before_anything_runs_and_frees_the_key(
        self, claims: FakeClaims, clock: FakeClock
    ) -> None:
        idem = AdminIdempotency(claims, FailingKeys(), clock=clock)
        with pytest.raises(KeyServiceUnavailable):
            idem.begin("tok_a", "k-1", REQUEST)
        assert claims.held == {}

    def test_an_answer_too_large_to_keep_frees_the_key(
        self, idem: AdminIdempotency, claims: FakeClaims
    ) -> None:
        incompressible = os.urandom(MAX_SEALED_BYTES).hex()  # random: zlib cannot shrink it below
        idem.finish(started(idem), Answer(200, incompressible))
        assert claims.held == {}

    def test_a_store_failure_while_keeping_never_hides_the_answer(
        self, idem: AdminIdempotency, claims: FakeClaims, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        run = started(idem)

        def unavailable(*_: object, **__: object) -> bool:
            raise StorageUnavailable("idempotency storage is temporarily unavailable")

        monkeypatch.setattr(claims, "keep", unavailable)
        idem.finish(run, CREATED)  # does not raise: the action is done, its answer goes out

    def test_answers_round_trip(self) -> None:
        answer = Answer(204, "", {"ETag": '"3"'})
        assert Answer.from_bytes(answer.to_bytes()) == answer


class Header(BaseModel):
    idempotency_key: str | None = None


def _route_with(errors: tuple[type, ...]):
    app = APIGatewayHttpResolver()

    @app.post("/things", **answers("Make a thing", ok={201: OBJECT}, errors=errors, tags=["t"]))
    @documented()
    def make() -> None: ...

    return app, app._static_routes[0]


class TestTheDocument:
    def test_errors_merge_into_the_statuses_a_route_already_answers(self) -> None:
        _, route = _route_with((Conflict, ValidationFailed))

        also_answers(
            route,
            (IdempotencyKeyInUse, IdempotencyKeyReused),
            request_headers=Header,
            success_headers={"Idempotent-Replayed": "on a repeat"},
        )

        assert error_codes(route.responses[409]) == ["conflict", "idempotency_key_in_use"]
        assert error_codes(route.responses[422]) == ["idempotency_key_reused"]
        assert error_codes(route.responses[400]) == ["validation_error"]
        assert "- `conflict`: A conditional write lost" in route.responses[409]["description"]
        assert "Idempotent-Replayed" in route.responses[201]["headers"]
        assert documented_parts(route.func).middleware_headers == (Header,)

    def test_amending_twice_amends_once(self) -> None:
        _, route = _route_with((Conflict,))
        for _ in range(2):
            also_answers(route, (IdempotencyKeyInUse,), request_headers=Header)
        assert error_codes(route.responses[409]) == ["conflict", "idempotency_key_in_use"]
        assert route.responses[409]["description"].count("idempotency_key_in_use") == 1
        assert documented_parts(route.func).middleware_headers == (Header,)
