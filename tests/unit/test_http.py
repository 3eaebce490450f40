import json

import pytest
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from hub.api.http import api_key, correlation_id, error_response, etag, if_match, parse_body
from hub.domain.message import InboundMessage
from hub.errors import MalformedBody, ServiceUnavailable, ValidationFailed
from tests.events import http_event


def event(**kwargs) -> APIGatewayProxyEventV2:
    return APIGatewayProxyEventV2(http_event("receive_message.json", **kwargs))


def test_sample_event_parses_into_an_inbound_message():
    inbound = parse_body(event(), InboundMessage)
    assert inbound.integration_id == "int_demo_erp"
    assert inbound.occurred_at is not None
    assert inbound.occurred_at.utcoffset() is not None


def test_base64_bodies_are_decoded_before_parsing():
    body = {"integration_id": "i1", "message_type": "order", "payload": "<a/>"}
    inbound = parse_body(event(body=json.dumps(body).encode()), InboundMessage)
    assert inbound.payload == "<a/>"


@pytest.mark.parametrize("body", ["{not json", "", "\u00ff\u00fe"])
def test_malformed_json_is_a_400_malformed_json(body):
    with pytest.raises(MalformedBody) as raised:
        parse_body(event(body=body), InboundMessage)
    assert (raised.value.http_status, raised.value.code) == (400, "malformed_json")


def test_a_json_array_is_a_validation_error():
    with pytest.raises(ValidationFailed):
        parse_body(event(body="[1, 2]"), InboundMessage)


def test_validation_names_each_field_and_never_echoes_values():
    secret = "cpf-123.456.789-00"
    body = {"integration_id": secret + " bad id", "payload": {"cpf": secret}, "occurred_at": "yesterday"}
    with pytest.raises(ValidationFailed) as raised:
        parse_body(event(body=body), InboundMessage)
    fields = {d["field"] for d in raised.value.details}
    assert {"integration_id", "message_type", "occurred_at"} <= fields
    assert secret not in json.dumps(raised.value.details)


def test_naive_occurred_at_is_refused():
    body = {"integration_id": "i1", "message_type": "t", "payload": {}, "occurred_at": "2026-11-29T10:00:00"}
    with pytest.raises(ValidationFailed) as raised:
        parse_body(event(body=body), InboundMessage)
    assert raised.value.details[0]["field"] == "occurred_at"


def test_unknown_fields_are_refused():
    body = {"integration_id": "i1", "message_type": "t", "payload": {}, "tenant_id": "someone-else"}
    with pytest.raises(ValidationFailed) as raised:
        parse_body(event(body=body), InboundMessage)
    assert raised.value.details[0]["field"] == "tenant_id"


def test_api_key_from_bearer_or_x_api_key():
    assert api_key(event(headers={"authorization": "Bearer k1"})) == "k1"
    assert api_key(event(headers={"authorization": None, "x-api-key": "k2"})) == "k2"
    assert api_key(event(headers={"authorization": "Basic abc"})) is None
    assert api_key(event(headers={"authorization": None})) is None


def test_correlation_id_is_taken_only_when_well_formed():
    assert correlation_id(event(), "fallback") == "erp-batch-2026-11-29-001"
    assert correlation_id(event(headers={"x-correlation-id": "bad id\n"}), "fallback") == "fallback"


def test_one_error_shape_with_retry_after_on_503():
    response = error_response(ServiceUnavailable("busy", details={"operation": "PutItem"}))
    assert response.status_code == 503
    assert response.headers["Retry-After"].isdigit()
    assert json.loads(response.body) == {
        "error": {"code": "service_unavailable", "message": "busy", "details": {"operation": "PutItem"}}
    }


def test_body_limit_counts_decoded_base64_bytes_exactly():
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver  # noqa: PLC0415

    from hub.api.http import body_limit, json_response  # noqa: PLC0415

    app = APIGatewayHttpResolver()
    app.use([body_limit(lambda: 1024)])

    @app.post("/api/edi-hub/receive-message")
    def accept():
        return json_response(202, {})

    for size, status in ((1024, 202), (1025, 413), (1022, 202), (1023, 202)):
        event = http_event("receive_message.json", body=b"x" * size)
        assert app.resolve(event, None)["statusCode"] == status, size


# --- issue 10: hostile bodies are 400 malformed_json, never an uncaught exception ----------


def _receive_body(payload: object = None, **fields: object) -> dict:
    return {"integration_id": "i1", "message_type": "order", "payload": payload or {"a": 1}, **fields}


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [63, 600, 990, 1_000])
def test_deep_nesting_is_malformed_json_not_a_recursion_error(depth):
    # The body and its payload are two levels more: 63 arrays make 65, one over the limit.
    text = json.dumps(_receive_body({"deep": _nested(1)})).replace("[1]", "[" * depth + "1" + "]" * depth)
    with pytest.raises(MalformedBody) as raised:
        parse_body(event(body=text), InboundMessage)
    assert raised.value.details["problem"] == "depth"


@pytest.mark.parametrize(
    "body",
    [
        _receive_body({"name": "\ud800"}),
        _receive_body({"\udc00": "key"}),
        _receive_body("<a>\udbff</a>"),
        _receive_body(external_id="evt-\ud800"),
    ],
    ids=["in-payload", "in-a-key", "string-payload", "external-id"],
)
def test_lone_surrogate_escapes_are_malformed_json(body):
    text = json.dumps(body)  # ensure_ascii: the surrogate travels as a "\ud800" escape
    assert "\\ud" in text or "\\udc" in text
    with pytest.raises(MalformedBody) as raised:
        parse_body(event(body=text), InboundMessage)
    assert raised.value.details == {"problem": "encoding"}


def test_a_lone_surrogate_in_the_events_own_text_is_malformed_json_too():
    with pytest.raises(MalformedBody):
        parse_body(
            event(body='{"integration_id": "i1", "message_type": "t", "payload": "\ud800"}'), InboundMessage
        )


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_numbers_json_cannot_carry_are_malformed_json(number):
    text = '{"integration_id": "i1", "message_type": "t", "payload": {"amount": NUMBER}}'.replace(
        "NUMBER", number
    )
    with pytest.raises(MalformedBody) as raised:
        parse_body(event(body=text), InboundMessage)
    assert raised.value.details == {"problem": "number"}


def test_if_match_reads_the_version_of_an_etag() -> None:
    def event(value: str | None) -> APIGatewayProxyEventV2:
        headers = {"if-match": value} if value is not None else {}
        return APIGatewayProxyEventV2({"headers": headers, "requestContext": {}})

    assert etag(7) == {"ETag": '"7"'}
    assert if_match(event('"7"')) == 7
    assert if_match(event('W/"7"')) == 7
    assert if_match(event(None)) is None
    assert if_match(event("*")) is None
    with pytest.raises(ValidationFailed):
        if_match(event('"seven"'))
