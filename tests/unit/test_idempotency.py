from datetime import UTC, datetime

import pytest

from hub.domain import idempotency as idem
from hub.errors import InvalidIdempotencyKey
from tests.mapping_bomb import BOMB, SMALL_PAYLOAD


@pytest.mark.parametrize("key", ["a", "order-123", "x" * 255, "with space and ~!@#"])
def test_printable_ascii_keys_up_to_255_chars_are_kept_as_sent(key):
    assert idem.sanitize_idempotency_key(key) == key


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9", "tab\tinside", "new\nline", "\x7f"])
def test_other_keys_are_refused_not_rewritten(key):
    with pytest.raises(InvalidIdempotencyKey) as raised:
        idem.sanitize_idempotency_key(key)
    assert raised.value.http_status == 400
    assert raised.value.code == "invalid_idempotency_key"


def test_absent_key_is_none():
    assert idem.sanitize_idempotency_key(None) is None


def test_canonical_payload_ignores_key_order_and_spacing():
    assert idem.canonical_payload({"b": 1, "a": [1, {"y": 2, "x": 1}]}) == idem.canonical_payload(
        {"a": [1, {"x": 1, "y": 2}], "b": 1}
    )


def test_text_payloads_are_taken_byte_for_byte():
    assert idem.canonical_payload("<a> 1</a>") != idem.canonical_payload("<a>1</a>")
    assert idem.canonical_payload("<p>\u00e7</p>") == "<p>\u00e7</p>".encode()


def test_fingerprint_depends_on_type_keys_and_payload():
    base = idem.fingerprint("order", ['"PO-1"'], "h1")
    assert base == idem.fingerprint("order", ['"PO-1"'], "h1")
    assert base != idem.fingerprint("invoice", ['"PO-1"'], "h1")
    assert base != idem.fingerprint("order", ['"PO-2"'], "h1")
    assert base != idem.fingerprint("order", ['"PO-1"'], "h2")


def test_duplicate_key_values_follow_jmespath_paths():
    payload = {"po": {"number": "PO-1"}, "lines": [{"sku": "A"}]}
    assert idem.duplicate_key_values(payload, ("po.number", "lines[0].sku", "missing")) == [
        '"PO-1"',
        '"A"',
        "null",
    ]


def test_text_payloads_have_no_duplicate_key_values_before_mapping():
    assert idem.duplicate_key_values("<po><number>1</number></po>", ("po.number",)) == []


def test_an_invalid_path_counts_as_missing_not_as_a_crash():
    assert idem.duplicate_key_values({"a": 1}, ("a[", "a")) == ["null", "1"]


def test_a_payload_without_any_key_field_has_no_business_key():
    # Otherwise every message missing po_number would share one "null" entity.
    assert idem.duplicate_key_values({"other": 1}, ("po_number", "po.rev")) == []


def test_key_hash_is_stable_and_distinct_per_key():
    digest = idem.idempotency_key_hash("order-key-1")
    assert digest == idem.idempotency_key_hash("order-key-1")
    assert digest != idem.idempotency_key_hash("order-key-2")


def test_request_hash_covers_every_field_of_the_request():
    when = datetime(2026, 11, 29, 12, tzinfo=UTC)
    base = idem.request_hash("order", "h1", "PO-1", when)
    assert base == idem.request_hash("order", "h1", "PO-1", when)
    variants = [
        idem.request_hash("invoice", "h1", "PO-1", when),
        idem.request_hash("order", "h2", "PO-1", when),
        idem.request_hash("order", "h1", "PO-2", when),
        idem.request_hash("order", "h1", None, when),
        idem.request_hash("order", "h1", "PO-1", None),
    ]
    assert base not in variants


def test_a_business_key_path_that_builds_past_the_bounds_finds_no_key():
    """Issue 27: duplicate-key paths run in the bounded engine (the shared ingest and worker
    never build the bomb's 22 MB); a key that cannot be read is no key, as for a failing path."""
    assert idem.duplicate_key_values(SMALL_PAYLOAD, (BOMB,)) == []
    assert idem.duplicate_key_values(SMALL_PAYLOAD, (BOMB, "po_number")) == ["null", '"PO-B"']
