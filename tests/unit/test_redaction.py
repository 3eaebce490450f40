"""The one redaction helper: sensitive payload fields, personal data in free text, credentials."""

from __future__ import annotations

import logging
import sys

import pytest

from hub.domain.redaction import MASK, redact, redact_credentials, redact_payload, redact_text, redact_xml
from hub.domain.tenancy import Destination, HttpAuth
from hub.logs import RedactingFilter


def test_sensitive_keys_are_masked_at_any_depth_and_the_rest_is_kept():
    document = {"buyer": {"CPF": "123.456.789-09", "name": "Ana"}, "items": [{"email": "a@b.co", "qty": 2}]}

    shown = redact(document, ["cpf", "Email"])

    assert shown == {"buyer": {"CPF": MASK, "name": "Ana"}, "items": [{"email": MASK, "qty": 2}]}
    assert document["buyer"]["CPF"] == "123.456.789-09"  # a copy: the stored payload is intact


def test_xml_elements_and_attributes_are_masked_by_local_name():
    xml = '<NFe><dest CNPJ="12345678000195"><nfe:CPF>12345678909</nfe:CPF><xNome>Ana</xNome></dest></NFe>'

    shown = redact_xml(xml, ["cpf", "cnpj"])

    assert shown == f'<NFe><dest CNPJ="{MASK}"><nfe:CPF>{MASK}</nfe:CPF><xNome>Ana</xNome></dest></NFe>'


@pytest.mark.parametrize(
    "personal",
    [
        "123.456.789-09",
        "12345678909",
        "12.345.678/0001-95",
        "12345678000195",
        "ana.silva@example.com.br",
        "+55 (11) 91234-5678",
        "(11) 1234-5678",
        "+5511912345678",
    ],
)
def test_personal_data_in_free_text_is_masked(personal):
    assert redact_text(f"rejected: {personal} is invalid") == f"rejected: {MASK} is invalid"


@pytest.mark.parametrize(
    "operational",
    [
        "msg_01m8mpdtazq2ck7jhxr7wf058d",
        "2026-11-29T22:22:19.909829Z",
        "timestamp 1614265330",
        "HTTP 503 after 30000 ms",
        "963a915db4f76a27ad67dc4601dafcc472eff200279dd20dfc2854d7bbc6ee3a",
    ],
)
def test_ids_times_and_digests_are_left_alone(operational):
    assert redact_text(operational) == operational


def test_text_payloads_are_masked_by_element_and_by_pattern():
    assert redact_payload("<x><cpf>1</cpf><obs>mail ana@x.io</obs></x>", ["cpf"]) == (
        f"<x><cpf>{MASK}</cpf><obs>mail {MASK}</obs></x>"
    )


def test_credentials_are_masked_and_unset_ones_stay_unset():
    destination = Destination(
        url="https://erp.example/api",
        headers={"Authorization": "Bearer abc", "X-Api-Key": "k1", "Content-Type": "application/json"},
        auth=HttpAuth(kind="oauth2_client_credentials", client_id="hub", client_secret="s3cr3t"),
    )

    shown = redact_credentials(destination.model_dump(mode="json"))

    assert shown["auth"]["client_secret"] == MASK
    assert shown["auth"]["client_id"] == "hub"
    assert shown["auth"]["password"] is None
    assert shown["headers"] == {"Authorization": MASK, "X-Api-Key": MASK, "Content-Type": "application/json"}
    assert "s3cr3t" not in repr(shown)


def test_log_records_leave_with_personal_data_masked():
    record = logging.LogRecord(
        "hub.x", logging.WARNING, __file__, 1, "answer: %s", ("cpf 123.456.789-09",), None
    )
    record.detail = {"text": "mail ana@x.io", "n": 1}

    assert RedactingFilter().filter(record)

    assert record.getMessage() == f"answer: cpf {MASK}"
    assert record.detail == {"text": f"mail {MASK}", "n": 1}


def test_an_exception_logged_with_a_traceback_leaves_redacted():
    try:
        raise ValueError("bad buyer ana@x.io")
    except ValueError:
        args: tuple[object, ...] = ()
        record = logging.LogRecord("hub.x", logging.ERROR, __file__, 1, "failed", args, sys.exc_info())

    RedactingFilter().filter(record)

    assert record.exc_info is None
    assert record.exception_name == "ValueError"
    assert "ana@x.io" not in record.exception
    assert f"ValueError: bad buyer {MASK}" in record.exception
    assert "Traceback" in record.exception
