"""Content-Type rules (issue 10, item 7): receive-message takes application/json only; a webhook
takes what its adapter declares; the body is always read as UTF-8."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hub.domain import media_type
from hub.domain.media_type import JSON_ONLY, MediaType, parse, require
from hub.domain.webhook_config import WebhookAdapter
from hub.errors import UnsupportedMediaType


@pytest.mark.parametrize(
    "header",
    [
        "application/json",
        "Application/JSON",
        "application/json; charset=utf-8",
        "application/json;charset=UTF-8",
        'application/json; charset="utf-8"',
        "application/json; charset=us-ascii",
        "application/json;",
        "application/json; foo=bar; charset=utf-8",
        "  application/json  ",
    ],
)
def test_receive_message_takes_application_json_with_or_without_a_utf8_charset(header):
    assert require(header, JSON_ONLY).essence == "application/json"


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "text/plain",
        "application/xml",
        "multipart/form-data; boundary=x",
        "application/x-www-form-urlencoded",
        "application/problem+json",
        "application/jsonx",
        "application/json; charset=iso-8859-1",
        "application/json; charset=utf-16",
        "application/json, text/plain",  # two Content-Type headers joined by the gateway
        "application/json; charset",
        "application",
        "application/json/x",
    ],
)
def test_anything_else_is_415_naming_the_accepted_types(header):
    with pytest.raises(UnsupportedMediaType) as refused:
        require(header, JSON_ONLY)
    assert (refused.value.http_status, refused.value.code) == (415, "unsupported_media_type")
    assert refused.value.details == {"accepted": ["application/json"]}


def test_the_refusal_never_echoes_the_header():
    with pytest.raises(UnsupportedMediaType) as refused:
        require("text/secret-cpf-123", JSON_ONLY)
    assert "secret" not in refused.value.message


def test_parse_lowercases_names_and_unquotes_values():
    assert parse('Text/XML; Charset="utf\\-8"; q=1') == MediaType(
        "text", "xml", (("charset", "utf-8"), ("q", "1"))
    )
    assert parse("no-slash") is None


@pytest.mark.parametrize(
    ("media", "media_range", "expected"),
    [
        ("application/json", "application/json", True),
        ("application/cloudevents+json", "application/*+json", True),
        ("application/+json", "application/*+json", False),
        ("application/json", "application/*+json", False),
        ("text/csv", "text/*", True),
        ("application/csv", "text/*", False),
        ("application/xml", "application/json", False),
    ],
)
def test_media_ranges(media, media_range, expected):
    parsed = parse(media)
    assert parsed is not None
    assert media_type.matches(parsed, media_range) is expected


class TestWebhookContentTypes:
    def test_defaults_follow_the_body_format(self):
        json_adapter = WebhookAdapter(message_type="t")
        xml_adapter = WebhookAdapter(body_format="xml", message_type="t")
        text_adapter = WebhookAdapter(body_format="text", message_type="t")

        assert require("application/cloudevents+json", json_adapter.accepted_content_types())
        assert require("text/xml; charset=utf-8", xml_adapter.accepted_content_types())
        assert require("text/csv", text_adapter.accepted_content_types())
        with pytest.raises(UnsupportedMediaType):
            require("application/xml", json_adapter.accepted_content_types())
        with pytest.raises(UnsupportedMediaType):
            require("application/json", xml_adapter.accepted_content_types())

    def test_an_integration_may_name_its_own(self):
        adapter = WebhookAdapter(message_type="t", content_types=("Text/Plain", "application/*+json"))

        assert adapter.content_types == ("text/plain", "application/*+json")
        assert require("text/plain", adapter.accepted_content_types())
        with pytest.raises(UnsupportedMediaType):
            require("application/json", adapter.accepted_content_types())

    @pytest.mark.parametrize("bad", [(), ("json",), ("*/*",), ("application/json; charset=utf-8",)])
    def test_malformed_lists_are_refused_when_saved(self, bad):
        with pytest.raises(ValidationError):
            WebhookAdapter(message_type="t", content_types=bad)
