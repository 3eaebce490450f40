"""Mapping inside the pipeline: SAP IDoc XML to JSON over REST, JSON to an NF-e SOAP call over
mTLS (the real NFeStatusServico4 WSDL), and unsafe or unmappable payloads ending in `syntax`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from hub import wiring
from hub.adapters.dynamo.executions import DynamoExecutions
from hub.adapters.dynamo.messages import DynamoMessageRepository
from hub.adapters.dynamo.tenancy import DynamoConfigRepository
from hub.adapters.sqs import SqsStepQueue
from hub.delivery.http import HttpConnector
from hub.delivery.port import ClientCertificate
from hub.delivery.soap import SoapConnector
from hub.domain.message import StepMessage
from hub.domain.tenancy import (
    Destination,
    DestinationProtocol,
    Integration,
    IntegrationMode,
    MessageTypeConfig,
    Platform,
    SoapSettings,
)
from hub.mapping import MappingSpec
from hub.pipeline.worker import PipelineWorker
from tests.aws import load_handler
from tests.egress import LOCAL_EGRESS
from tests.integration.delivery.test_soap_connector import WSDL, FixedCertificates
from tests.mapping_bomb import BOMB_TYPE, SMALL_PAYLOAD
from tests.pipeline import pump, send, status
from tests.pki import PFX_PASSWORD

IDOC = """<?xml version="1.0" encoding="UTF-8"?>
<ORDERS05><IDOC BEGIN="1">
  <E1EDK01 SEGMENT="1"><BELNR>4500012345</BELNR><CURCY>BRL</CURCY></E1EDK01>
  <E1EDP01 SEGMENT="1"><POSEX>000010</POSEX><MATNR>A-1</MATNR><MENGE>2,000</MENGE></E1EDP01>
  <E1EDP01 SEGMENT="1"><POSEX>000020</POSEX><MATNR>B-7</MATNR><MENGE>1,500</MENGE></E1EDP01>
</IDOC></ORDERS05>"""

IDOC_TO_ORDER = {
    "output": {
        "order_number": {"path": "ORDERS05.IDOC.E1EDK01.BELNR"},
        "currency": {"path": "ORDERS05.IDOC.E1EDK01.CURCY", "transforms": ["lower"]},
        "lines": {
            "each": "ORDERS05.IDOC.E1EDP01",
            "template": {
                "sku": {"path": "MATNR"},
                "qty": {
                    "path": "MENGE",
                    "transforms": [{"name": "to_decimal", "places": 3, "decimal_separator": ","}],
                },
            },
        },
    }
}

STATUS_REQUEST_TO_SOAP = {
    "output_format": "xml",
    "xml_root": "consStatServ",
    "xml_namespace": "http://www.portalfiscal.inf.br/nfe",
    "output": {
        "@versao": {"const": "4.00"},
        "tpAmb": {"path": "environment", "transforms": ["to_string"]},
        "cUF": {"path": "state_code", "transforms": ["to_string"]},
        "xServ": {"const": "STATUS"},
    },
}


def handler_for(worker: PipelineWorker):
    def handle(event: dict[str, Any], _: Any) -> dict[str, Any]:
        for record in event["Records"]:
            sent = datetime.fromtimestamp(int(record["attributes"]["SentTimestamp"]) / 1000, UTC)
            worker.run(StepMessage.model_validate_json(record["body"]), sent)
        return {"batchItemFailures": []}

    return handle


def integrate(stack, tenancy, destination: Destination, mapping: dict[str, Any] | None) -> None:
    DynamoConfigRepository(stack.table).put_integration(
        Integration(
            integration_id=tenancy.integration_id,
            tenant_id="t1",
            name="mapped",
            mode=IntegrationMode.ORCHESTRATION,
            destination=destination,
            message_types={
                "purchase_order": MessageTypeConfig(
                    mapping=MappingSpec.model_validate(mapping) if mapping else None
                )
            },
        )
    )


def run_pipeline(stack, worker: PipelineWorker) -> None:
    arn = boto3.client("sqs").get_queue_attributes(QueueUrl=stack.queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    pump(stack.queue_url, arn, handler_for(worker))


def test_sap_idoc_xml_is_mapped_to_json(stack, tenancy, ingest_api, destination):
    integrate(stack, tenancy, Destination(url=destination.url), IDOC_TO_ORDER)
    message_id = send(ingest_api, tenancy, IDOC)

    run_pipeline(stack, wiring.pipeline_worker())

    assert status(stack, message_id)["pipeline_status"] == "sent"
    [seen] = destination.requests
    assert seen.headers["content-type"] == "application/json"
    assert json.loads(seen.body) == {
        "order_number": "4500012345",
        "currency": "brl",
        "lines": [{"sku": "A-1", "qty": 2.0}, {"sku": "B-7", "qty": 1.5}],
    }


@pytest.mark.parametrize(
    "payload",
    [
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><ORDERS05>&e;</ORDERS05>',
        '<!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        "<ORDERS05>&b;</ORDERS05>",
    ],
    ids=["xxe", "billion-laughs"],
)
@pytest.mark.parametrize("mapping", [IDOC_TO_ORDER, None], ids=["mapped", "passthrough"])
def test_unsafe_xml_ends_in_syntax_error_and_is_never_sent(
    stack, tenancy, ingest_api, destination, payload, mapping
):
    integrate(stack, tenancy, Destination(url=destination.url), mapping)
    message_id = send(ingest_api, tenancy, payload)

    run_pipeline(stack, wiring.pipeline_worker())

    final = status(stack, message_id)
    assert final["pipeline_status"] == "error"
    assert final["last_retry_error_class"] == "syntax"
    assert "root:" not in final["dest_status_text"]  # nothing from /etc/passwd
    assert destination.requests == []


def test_duplicate_rules_read_business_keys_from_xml(stack, tenancy, ingest_api, destination):
    DynamoConfigRepository(stack.table).put_integration(
        Integration(
            integration_id=tenancy.integration_id,
            tenant_id="t1",
            name="idoc",
            mode=IntegrationMode.ORCHESTRATION,
            destination=Destination(url=destination.url),
            message_types={
                "purchase_order": MessageTypeConfig(
                    duplicate_key_fields=("ORDERS05.IDOC.E1EDK01.BELNR",), duplicate_handling="reject"
                )
            },
        )
    )
    first = send(ingest_api, tenancy, IDOC)
    run_pipeline(stack, wiring.pipeline_worker())
    second = send(ingest_api, tenancy, IDOC.replace("2,000", "3,000"))
    run_pipeline(stack, wiring.pipeline_worker())

    assert status(stack, first)["pipeline_status"] == "sent"
    assert status(stack, second)["pipeline_status"] == "duplicate_rejected"
    assert len(destination.requests) == 1


def test_a_missing_required_field_names_the_field(stack, tenancy, ingest_api, destination):
    integrate(stack, tenancy, Destination(url=destination.url), IDOC_TO_ORDER)
    message_id = send(ingest_api, tenancy, "<ORDERS05><IDOC/></ORDERS05>")

    run_pipeline(stack, wiring.pipeline_worker())

    final = status(stack, message_id)
    assert final["last_retry_error_class"] == "syntax"
    assert "order_number" in final["dest_status_text"]
    log = DynamoMessageRepository(stack.table).message_log(message_id)
    assert log[-1]["field"] == "order_number"


def test_the_mapping_bomb_ends_its_message_in_syntax_and_the_rest_of_its_batch_is_delivered(
    stack, tenancy, ingest_api, destination
):
    """Issue 27: the shared worker no longer dies with the other tenants' messages of its batch."""
    DynamoConfigRepository(stack.table).put_integration(
        Integration(
            integration_id=tenancy.integration_id,
            tenant_id="t1",
            name="bombed",
            mode=IntegrationMode.ORCHESTRATION,
            destination=Destination(url=destination.url),
            message_types={
                "purchase_order": MessageTypeConfig(
                    mapping=MappingSpec.model_validate({"output": {"order": {"path": "po_number"}}})
                ),
                "bomb": MessageTypeConfig.model_validate(BOMB_TYPE),
            },
        )
    )
    first = send(ingest_api, tenancy, {"po_number": "PO-1"})
    bomb = send(ingest_api, tenancy, SMALL_PAYLOAD, message_type="bomb")
    last = send(ingest_api, tenancy, {"po_number": "PO-2"})
    handler = load_handler("PipelineWorkerFunction")
    batches: list[list[str]] = []

    def one_batch(event: dict[str, Any], context: Any) -> Any:
        batches.append([json.loads(r["body"])["message_id"] for r in event["Records"]])
        return handler(event, context)

    pump(stack.queue_url, stack.env["HUB_PIPELINE_QUEUE_ARN"], one_batch)

    assert sorted(batches[0]) == sorted([first, bomb, last])  # one SQS batch held all three
    assert [status(stack, m)["pipeline_status"] for m in (first, last)] == ["sent", "sent"]
    assert sorted(json.loads(r.body)["order"] for r in destination.requests) == ["PO-1", "PO-2"]
    bombed = status(stack, bomb)
    assert (bombed["pipeline_status"], bombed["last_retry_error_class"]) == ("error", "syntax")
    assert bombed["dest_status_text"].startswith("field 'order': path '[@,@] | [@,@]")
    assert bombed["dest_status_text"].endswith(f"builds a value over {256 * 1024} bytes")
    [failed] = [e for e in DynamoMessageRepository(stack.table).message_log(bomb) if e["status"] == "failure"]
    assert (failed["step"], failed["error_class"], failed["field"]) == ("process", "syntax", "order")


def test_json_is_mapped_to_an_nfe_soap_call_over_mtls(stack, tenancy, ingest_api, pki, mtls_server):
    integrate(
        stack,
        tenancy,
        Destination(
            protocol=DestinationProtocol.SOAP,
            platform=Platform.SEFAZ,
            url=mtls_server.url,
            soap=SoapSettings(wsdl=WSDL, operation="nfeStatusServicoNF", soap_version="1.2"),
            client_certificate_id="cert_a1",
        ),
        STATUS_REQUEST_TO_SOAP,
    )
    certificates = FixedCertificates(ClientCertificate(pfx=pki.client_pfx, password=PFX_PASSWORD))
    worker = PipelineWorker(
        DynamoConfigRepository(stack.table),
        DynamoExecutions(stack.table),
        SqsStepQueue(stack.queue_url),
        {
            DestinationProtocol.HTTP: HttpConnector(certificates, egress=LOCAL_EGRESS),
            DestinationProtocol.SOAP: SoapConnector(
                certificates, ca_pem=pki.ca.cert_pem, egress=LOCAL_EGRESS
            ),
        },
    )
    message_id = send(ingest_api, tenancy, {"environment": 2, "state_code": 35})

    run_pipeline(stack, worker)

    final = status(stack, message_id)
    assert final["pipeline_status"] == "sent", final.get("dest_status_text")
    assert final["dest_status"] == "200"
    assert "dest_status_text" not in final  # a 2xx answer's body is never kept (issue 27)
    [request] = mtls_server.requests
    assert "<tpAmb>2</tpAmb><cUF>35</cUF><xServ>STATUS</xServ>" in request.body.decode()
    assert request.client_subject is not None
