from decimal import Decimal

import pytest

from hub.mapping import MappingError, parse_xml, to_xml

NFE = "http://www.portalfiscal.inf.br/nfe"


def test_nfe_status_request_body():
    body = to_xml({"@versao": "4.00", "tpAmb": 2, "cUF": "35", "xServ": "STATUS"}, "consStatServ", NFE)
    assert body == (
        b'<consStatServ xmlns="http://www.portalfiscal.inf.br/nfe" versao="4.00">'
        b"<tpAmb>2</tpAmb><cUF>35</cUF><xServ>STATUS</xServ></consStatServ>"
    )


def test_lists_repeat_elements_and_order_is_the_dicts_not_sorted():
    body = to_xml({"z": "1", "item": [{"n": "1"}, {"n": "2"}], "a": None}, "r")
    assert body == b"<r><z>1</z><item><n>1</n></item><item><n>2</n></item><a/></r>"


def test_text_and_attributes_are_escaped_and_read_back_unchanged():
    data = {"@note": 'a "q" <b> & c\n\td', "v": "x < y && z > w\r", "n": {"@k": "v", "#text": "t&"}}
    assert parse_xml(to_xml(data, "r")) == {"r": data}


def test_scalars_are_written_as_text():
    body = to_xml({"d": Decimal("12.50"), "b": True, "i": 7, "f": 1.5, "s": "S\u00e3o"}, "r")
    assert body == "<r><d>12.50</d><b>true</b><i>7</i><f>1.5</f><s>S\u00e3o</s></r>".encode()


def test_output_is_deterministic():
    data = {"b": ["1", "2"], "@a": "x", "c": {"d": Decimal("1.0")}}
    assert to_xml(data, "r", NFE) == to_xml(dict(data), "r", NFE)


@pytest.mark.parametrize(
    ("data", "field", "problem"),
    [
        ({"bad name": "x"}, "bad name", "not a valid XML name"),
        ({"a": {"@1x": "v"}}, "a.@1x", "not a valid XML name"),
        ({"a": [["nested"]]}, "a[0]", "list inside a list"),
        ({"@a": {"x": "1"}}, "@a", "needs a scalar"),
        ({"a": [{"b": "ok\x00"}]}, "a[0].b", "character XML cannot carry"),
    ],
)
def test_unwritable_data_is_a_mapping_error_naming_the_field(data, field, problem):
    with pytest.raises(MappingError) as raised:
        to_xml(data, "r")
    assert raised.value.field == field
    assert problem in raised.value.message
