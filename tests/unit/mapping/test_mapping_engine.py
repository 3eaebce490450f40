import json
import re
from decimal import Decimal

import pytest

from hub.domain.failure import ErrorClass
from hub.mapping import MappingError, MappingSpec, apply_mapping, passthrough

IDOC_ORDERS05 = """<?xml version="1.0" encoding="UTF-8"?>
<ORDERS05>
  <IDOC BEGIN="1">
    <EDI_DC40 SEGMENT="1">
      <DOCNUM>0000000000123456</DOCNUM>
      <MESTYP>ORDERS</MESTYP>
      <SNDPRN>SAPCLNT100</SNDPRN>
    </EDI_DC40>
    <E1EDK01 SEGMENT="1">
      <CURCY>brl</CURCY>
      <BELNR>4500001234  </BELNR>
    </E1EDK01>
    <E1EDK03 SEGMENT="1"><IDDAT>012</IDDAT><DATUM>20240125</DATUM></E1EDK03>
    <E1EDK03 SEGMENT="1"><IDDAT>002</IDDAT><DATUM>20240131</DATUM></E1EDK03>
    <E1EDKA1 SEGMENT="1"><PARVW>AG</PARVW><PARTN>0000100200</PARTN></E1EDKA1>
    <E1EDP01 SEGMENT="1">
      <POSEX>000010</POSEX>
      <MENGE>10.000</MENGE>
      <VPREI>1234.5</VPREI>
      <E1EDP19 SEGMENT="1"><QUALF>002</QUALF><IDTNR>MAT-001</IDTNR></E1EDP19>
    </E1EDP01>
    <E1EDP01 SEGMENT="1">
      <POSEX>000020</POSEX>
      <MENGE>2.500</MENGE>
      <VPREI>99.99</VPREI>
      <E1EDP19 SEGMENT="1"><QUALF>002</QUALF><IDTNR>MAT-002</IDTNR></E1EDP19>
    </E1EDP01>
  </IDOC>
</ORDERS05>
"""

ORDER_SPEC = MappingSpec.model_validate(
    {
        "output": {
            "order": {
                "number": {"path": "ORDERS05.IDOC.E1EDK01.BELNR", "transforms": ["trim"]},
                "idoc": {"path": "ORDERS05.IDOC.EDI_DC40.DOCNUM", "transforms": ["to_int"]},
                "currency": {"path": "ORDERS05.IDOC.E1EDK01.CURCY", "transforms": ["upper"]},
                "delivery_date": {
                    "path": "ORDERS05.IDOC.E1EDK03[?IDDAT=='002'] | [0].DATUM",
                    "transforms": [{"name": "date_format", "from": "%Y%m%d", "to": "%Y-%m-%d"}],
                },
                "customer": {"path": "ORDERS05.IDOC.E1EDKA1.PARTN"},
                "source": {"const": "sap"},
                "lines": {
                    "each": "ORDERS05.IDOC.E1EDP01",
                    "template": {
                        "line": {"path": "POSEX", "transforms": ["to_int"]},
                        "sku": {"path": "E1EDP19.IDTNR"},
                        "qty": {"path": "MENGE", "transforms": [{"name": "to_decimal", "places": 3}]},
                        "price": {"path": "VPREI", "transforms": [{"name": "to_decimal", "places": 2}]},
                        "note": {"path": "NOTE", "required": False},
                    },
                },
            }
        }
    }
)


def test_sap_idoc_orders05_maps_to_a_json_order():
    result = apply_mapping(ORDER_SPEC, IDOC_ORDERS05)

    assert result.content_type == "application/json"
    assert result.body == (
        b'{"order":{"number":"4500001234","idoc":123456,"currency":"BRL","delivery_date":"2024-01-31",'
        b'"customer":"0000100200","source":"sap","lines":['
        b'{"line":10,"sku":"MAT-001","qty":10.000,"price":1234.50},'
        b'{"line":20,"sku":"MAT-002","qty":2.500,"price":99.99}]}}'
    )
    assert json.loads(result.body, parse_float=Decimal) == result.data
    assert result.data["order"]["lines"][1]["qty"] == Decimal("2.500")


def test_a_line_item_that_occurs_once_in_xml_is_still_a_list():
    text = re.sub(r"<E1EDP01[^>]*>\s*<POSEX>000020.*?</E1EDP01>", "", IDOC_ORDERS05, flags=re.DOTALL)
    assert text.count("<E1EDP01") == 1

    lines = apply_mapping(ORDER_SPEC, text).data["order"]["lines"]

    assert [line["sku"] for line in lines] == ["MAT-001"]


def test_a_required_field_missing_names_the_output_field():
    without_qty = IDOC_ORDERS05.replace("<MENGE>2.500</MENGE>", "")
    with pytest.raises(MappingError) as raised:
        apply_mapping(ORDER_SPEC, without_qty)
    error = raised.value
    assert error.field == "order.lines[1].qty"
    assert error.error_class is ErrorClass.SYNTAX
    assert (error.code, error.http_status) == ("mapping_failed", 422)
    assert error.message == "field 'order.lines[1].qty': required value is missing (path 'MENGE')"
    assert error.details == {"field": "order.lines[1].qty"}


NFE = "http://www.portalfiscal.inf.br/nfe"
STATUS_SPEC = MappingSpec.model_validate(
    {
        "output_format": "xml",
        "xml_root": "consStatServ",
        "xml_namespace": NFE,
        "output": {
            "@versao": {"const": "4.00"},
            "tpAmb": {"path": "environment == 'production' && '1' || '2'"},
            "cUF": {"path": "state_code", "transforms": ["to_string"]},
            "xServ": {"const": "STATUS"},
        },
    }
)


def test_json_maps_to_a_soap_body_in_xml():
    result = apply_mapping(STATUS_SPEC, {"environment": "homologation", "state_code": 35})

    assert result.content_type == "application/xml"
    assert result.body == (
        b'<consStatServ xmlns="http://www.portalfiscal.inf.br/nfe" versao="4.00">'
        b"<tpAmb>2</tpAmb><cUF>35</cUF><xServ>STATUS</xServ></consStatServ>"
    )


def test_json_text_payloads_are_parsed():
    assert apply_mapping(STATUS_SPEC, ' {"environment": "production", "state_code": 35}').data == {
        "@versao": "4.00",
        "tpAmb": "1",
        "cUF": "35",
        "xServ": "STATUS",
    }


def _spec(output: dict) -> MappingSpec:
    return MappingSpec.model_validate({"output": output})


def test_optional_fields_are_left_out_and_defaults_are_used_as_given():
    spec = _spec(
        {
            "a": {"path": "missing", "required": False},
            "b": {"path": "missing", "default": "n/a", "transforms": ["to_int"]},
            "c": {"path": "blank", "transforms": ["trim", {"name": "default_if_empty", "value": "-"}]},
            "d": {"path": "missing", "transforms": [{"name": "default_if_empty", "value": 0}]},
            "e": {"each": "missing", "required": False, "template": {"x": {"const": 1}}},
            "f": {"path": "whole"},
        }
    )
    assert apply_mapping(spec, {"blank": "   ", "whole": {"k": [1]}}).data == {
        "b": "n/a",
        "c": "-",
        "d": 0,
        "e": [],
        "f": {"k": [1]},
    }


def test_each_can_build_a_list_of_scalars():
    spec = _spec({"skus": {"each": "items", "template": {"path": "sku", "transforms": ["upper"]}}})
    assert apply_mapping(spec, {"items": [{"sku": "a"}, {"sku": "b"}]}).body == b'{"skus":["A","B"]}'


CPF, EMAIL = "123.456.789-09", "maria.silva@example.com.br"


@pytest.mark.parametrize(
    ("output", "payload", "field", "problem"),
    [
        (
            {"customer": {"cpf": {"path": "cpf", "transforms": ["to_int"]}}},
            {"cpf": CPF},
            "customer.cpf",
            "to_int",
        ),
        (
            {"email": {"path": "contact", "transforms": ["upper"]}},
            {"contact": {"e": EMAIL}},
            "email",
            "object",
        ),
        ({"n": {"path": "length(email)"}}, {"email": 12345678909}, "n", "length() got number"),
        ({"l": {"each": "email", "template": {"x": {"const": 1}}}}, {"email": EMAIL}, "l", "found text"),
        (
            {"l": {"each": "rows", "template": {"x": {"path": "x"}}}},
            {"rows": [{"x": EMAIL}, {}]},
            "l[1].x",
            "missing",
        ),
    ],
)
def test_failures_name_the_field_and_never_quote_the_payload(output, payload, field, problem):
    with pytest.raises(MappingError) as raised:
        apply_mapping(_spec(output), payload)
    error = raised.value
    assert error.field == field
    assert problem in error.message
    for secret in (CPF, EMAIL, "12345678909"):
        assert secret not in str(error)
        assert secret not in json.dumps(error.details)


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ('<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>', "DOCTYPE"),
        ("<order><id>1</order>", "not well-formed"),
        ('{"id": 1,}', "not valid JSON (line 1, column 10)"),
        ('{"id": NaN}', "not valid JSON"),
        ("not json at all", "not valid JSON"),
    ],
)
def test_unreadable_payloads_are_syntax_errors_without_a_field(payload, problem):
    with pytest.raises(MappingError) as raised:
        apply_mapping(_spec({"id": {"path": "id"}}), payload)
    assert raised.value.field is None
    assert raised.value.error_class is ErrorClass.SYNTAX
    assert problem in raised.value.message


def test_mapping_is_deterministic():
    assert apply_mapping(ORDER_SPEC, IDOC_ORDERS05) == apply_mapping(ORDER_SPEC, IDOC_ORDERS05)


def test_passthrough_sends_json_objects_compact_in_received_order():
    result = passthrough({"b": 1, "a": "S\u00e3o", "n": 1.5})
    assert result.body == '{"b":1,"a":"S\u00e3o","n":1.5}'.encode()
    assert result.content_type == "application/json"
    assert result.data == {"b": 1, "a": "S\u00e3o", "n": 1.5}


@pytest.mark.parametrize(
    ("text", "content_type"),
    [
        ("  <order><id>1</id></order>", "text/xml; charset=utf-8"),
        ("\ufeff<order/>", "text/xml; charset=utf-8"),
        ("ISA*00*...~", "text/plain; charset=utf-8"),
        ('{"as": "text"}', "text/plain; charset=utf-8"),
    ],
)
def test_passthrough_keeps_text_byte_for_byte(text, content_type):
    result = passthrough(text)
    assert result.body == text.encode()
    assert result.content_type == content_type
    assert result.data is None
