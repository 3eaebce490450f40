"""Properties of ingest's payload fingerprint (hub.domain.idempotency): it is a function of the
JSON value, not of how the partner wrote it, and every business-key value counts."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hub.domain.idempotency import canonical_payload, duplicate_key_values, fingerprint, sha256_hex

# JSON as a partner can send it: string keys, no NaN/Infinity (strict_json refuses them), no
# unpaired surrogates (the default alphabet has none).
_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
json_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=6)

FIELDS = ("order.id", "customer")


def _reordered(value: Any, rng: random.Random) -> Any:
    """The same JSON value with every object's keys in another order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: _reordered(child, rng) for key, child in items}
    if isinstance(value, list):
        return [_reordered(child, rng) for child in value]
    return value


def _fp(payload: dict[str, Any] | str, message_type: str = "order") -> str:
    return fingerprint(
        message_type, duplicate_key_values(payload, FIELDS), sha256_hex(canonical_payload(payload))
    )


@settings(derandomize=True, deadline=None, max_examples=80)
@given(payload=json_objects, seed=st.integers(0, 2**32 - 1))
def test_key_order_does_not_change_the_fingerprint(payload: dict[str, Any], seed: int) -> None:
    shuffled = _reordered(payload, random.Random(seed))
    assert canonical_payload(shuffled) == canonical_payload(payload)
    assert _fp(shuffled) == _fp(payload)


@settings(derandomize=True, deadline=None, max_examples=80)
@given(
    payload=json_objects,
    indent=st.none() | st.integers(0, 4),
    separators=st.sampled_from([(",", ":"), (", ", ": "), (" ,", " : "), (",\n", ":\t")]),
    ascii_only=st.booleans(),
)
def test_white_space_and_escapes_of_the_text_do_not_change_the_fingerprint(
    payload: dict[str, Any], indent: int | None, separators: tuple[str, str], ascii_only: bool
) -> None:
    # What the partner API does with a body: parse it; the fingerprint sees the parsed value.
    written = json.dumps(payload, indent=indent, separators=separators, ensure_ascii=ascii_only)
    parsed = json.loads(written)
    assert canonical_payload(parsed) == canonical_payload(payload)
    assert _fp(parsed) == _fp(payload)
    # The canonical bytes are themselves JSON of the same value.
    assert json.loads(canonical_payload(payload)) == parsed


@settings(derandomize=True, deadline=None, max_examples=80)
@given(rest=json_objects, first=json_values, second=json_values, customer=json_values)
def test_a_changed_business_key_value_changes_the_fingerprint(
    rest: dict[str, Any], first: Any, second: Any, customer: Any
) -> None:
    # Different JSON values (1 and 1.0 and true are different JSON; Python calls them equal).
    assume(json.dumps(first, sort_keys=True) != json.dumps(second, sort_keys=True))
    before = {**rest, "order": {"id": first}, "customer": customer}
    after = {**rest, "order": {"id": second}, "customer": customer}
    assert duplicate_key_values(before, FIELDS) != duplicate_key_values(after, FIELDS)
    assert _fp(before) != _fp(after)


@settings(derandomize=True, deadline=None, max_examples=50)
@given(payload=json_objects, first=st.text(min_size=1, max_size=10), second=st.text(min_size=1, max_size=10))
def test_the_message_type_is_part_of_the_fingerprint(
    payload: dict[str, Any], first: str, second: str
) -> None:
    assume(first != second)
    assert _fp(payload, first) != _fp(payload, second)


@settings(derandomize=True, deadline=None, max_examples=100)
@given(text=st.text())
def test_a_text_payload_is_fingerprinted_byte_for_byte(text: str) -> None:
    assert canonical_payload(text) == text.encode("utf-8")
    assert duplicate_key_values(text, FIELDS) == []
    assert _fp(text) != _fp(text + " ")  # text (XML, CSV) is not normalised
