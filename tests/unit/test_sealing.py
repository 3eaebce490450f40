"""Sealed configuration secrets (hub.sealing)."""

from __future__ import annotations

import pytest

from hub.certificates.envelope import CertificateUndecryptable
from hub.sealing import SealedFields, open_fields, put_fields, same_values, seal_fields, take_fields
from tests.fakes.data_keys import FakeDataKeys

CONTEXT = {"tenant_id": "t1", "owner": "connection:con_1"}
CONNECTION = {
    "url": "https://erp.example/orders",
    "auth": {"kind": "basic", "username": "hub", "password": "pa55word", "token": None},
}


def test_secret_fields_are_taken_out_and_put_back() -> None:
    rest, values = take_fields(CONNECTION, ["auth.password", "auth.token", "auth.client_secret"])
    assert values == {"auth.password": "pa55word"}
    assert rest == {
        "url": "https://erp.example/orders",
        "auth": {"kind": "basic", "username": "hub", "token": None},
    }
    assert CONNECTION["auth"]["password"] == "pa55word"  # type: ignore[index]
    assert put_fields(rest, values)["auth"] == {
        "kind": "basic",
        "username": "hub",
        "token": None,
        "password": "pa55word",
    }


def test_a_sealed_item_keeps_no_value_in_clear_and_opens_under_its_context() -> None:
    keys = FakeDataKeys()
    sealed = seal_fields(keys, CONTEXT, {"auth.password": "pa55word"})
    stored = SealedFields.from_item(sealed.to_item())
    assert b"pa55word" not in repr(stored.to_item()).encode()
    assert stored.paths == ("auth.password",)
    assert open_fields(keys, stored, CONTEXT) == {"auth.password": "pa55word"}


def test_sealed_values_do_not_open_for_another_owner() -> None:
    keys = FakeDataKeys()
    sealed = seal_fields(keys, CONTEXT, {"auth.password": "pa55word"})
    with pytest.raises(CertificateUndecryptable):
        open_fields(keys, sealed, {"tenant_id": "t2", "owner": "connection:con_1"})


def test_a_tampered_ciphertext_does_not_open() -> None:
    keys = FakeDataKeys()
    sealed = seal_fields(keys, CONTEXT, {"auth.password": "pa55word"})
    flipped = bytes([sealed.ciphertext[0] ^ 1]) + sealed.ciphertext[1:]
    item = {**sealed.to_item(), "ciphertext": flipped}
    with pytest.raises(CertificateUndecryptable):
        open_fields(keys, SealedFields.from_item(item), CONTEXT)


def test_the_same_values_are_recognised_without_decrypting() -> None:
    keys = FakeDataKeys()
    sealed = seal_fields(keys, CONTEXT, {"auth.password": "pa55word"})
    assert same_values(sealed, {"auth.password": "pa55word"})
    assert not same_values(sealed, {"auth.password": "pa55word!"})
    assert not same_values(sealed, {"auth.password": "pa55word", "auth.token": "x"})
    assert keys.decrypts == 0
