"""Every file in examples/ is what the admin API accepts: each part validated with the hub's own
models (the ones the API validates a save with), and each mapping run on its sample payload."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hub.admin.connections import ConnectionSpec
from hub.admin.integrations import IntegrationBody
from hub.domain.mapping_spec import MappingSpec
from hub.domain.retry import RetryPolicy
from hub.domain.tenancy import Destination, Integration, IntegrationMode, MessageTypeConfig
from hub.domain.webhook_config import InboundWebhook
from hub.mapping import apply_mapping
from hub.outbox.subscriptions import SubscriptionSpec
from hubctl.manifest import Kind, Resource, load

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
#: Connection fields that are the connection item's own, not the delivery settings (Destination).
CONNECTION_ONLY = {"name", "trusted_ca_pem", "use_client_certificate", "client_certificate"}
#: What the admin API's integration body takes besides the id (docs/admin_api_contract).
INTEGRATION_FIELDS = {
    "name",
    "mode",
    "connection_id",
    "message_types",
    "unknown_message_types",
    "retry_policy",
    "inbound_webhook",
}
#: Values for the files' ${VARIABLES}: of the form each field needs (a whsec_ secret, a URL).
ENVIRONMENT = {"SHOP_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}


def environment_for(path: Path) -> dict[str, str]:
    names = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", path.read_text()))
    return {
        name: ENVIRONMENT.get(name, "https://example.test/in" if name.endswith("_URL") else "s3cr3t-value")
        for name in names
    }


def resources() -> list[Resource]:
    return [resource for path in EXAMPLES for resource in load(path, environment_for(path))]


def test_the_examples_are_there() -> None:
    assert {p.name for p in EXAMPLES} == {
        "rest.yaml",
        "json_to_json.yaml",
        "sap_idoc_to_rest.yaml",
        "sefaz_nfe_status.yaml",
        "signed_webhook.yaml",
        "outbound_webhooks.yaml",
    }


@pytest.mark.parametrize("resource", resources(), ids=lambda r: f"{r.origin}:{r.id}")
def test_each_part_validates_with_the_hubs_models(resource: Resource) -> None:
    spec = resource.spec
    if resource.kind is Kind.TENANT:
        assert set(spec) <= {"name", "default_mode"}
        IntegrationMode(spec.get("default_mode", "observability"))
        return
    if resource.kind is Kind.CONNECTION:
        # What the admin API takes (extra fields refused), then the pipeline's own model.
        checked = ConnectionSpec.model_validate(spec)
        certificate = resource.id if checked.use_client_certificate else None  # as the API sets it
        delivery = {k: v for k, v in spec.items() if k not in CONNECTION_ONLY}
        Destination.model_validate({**delivery, "client_certificate_id": certificate})
        return
    if resource.kind is Kind.SUBSCRIPTION:
        SubscriptionSpec.model_validate(spec)
        return
    assert set(spec) <= INTEGRATION_FIELDS
    IntegrationBody.model_validate({**spec, "integration_id": resource.id, "tenant_id": resource.tenant})
    for config in spec.get("message_types", {}).values():
        MessageTypeConfig.model_validate(config)
    RetryPolicy.model_validate(spec.get("retry_policy", {}))
    if spec.get("inbound_webhook") is not None:
        InboundWebhook.model_validate(spec["inbound_webhook"])
    Integration.model_validate({**spec, "integration_id": resource.id, "tenant_id": resource.tenant})


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_each_file_holds_everything_it_needs(path: Path) -> None:
    """Self-contained (issue 28, point 8): a newcomer applies any one file to a hub that has
    never seen its tenant. Its resources' tenant is declared in it, every connection its
    integrations name too; a subscription's integration filter may name any (it is not checked)."""
    found = load(path, environment_for(path))
    tenants = {r.tenant for r in found if r.kind is Kind.TENANT}
    connections = {(r.tenant, r.id) for r in found if r.kind is Kind.CONNECTION}
    named = {(r.tenant, r.spec["connection_id"]) for r in found if r.kind is Kind.INTEGRATION}

    assert {r.tenant for r in found} <= tenants
    assert named <= connections


def test_files_that_declare_the_same_resource_declare_it_alike() -> None:
    """Files share the ACME tenant (and signed_webhook.yaml rest.yaml's connection): applied one
    after the other, the second finds them unchanged."""
    seen: dict[tuple[Kind, str, str], tuple[str, dict[str, Any]]] = {}
    for path in EXAMPLES:
        for resource in load(path, environment_for(path)):
            key = (resource.kind, resource.tenant, resource.id)
            first = seen.setdefault(key, (path.name, resource.spec))
            assert resource.spec == first[1], (path.name, first[0], key)


def test_no_example_holds_a_secret_value() -> None:
    # Secrets come from ${VARIABLES}: a file may be committed and shared.
    for path in EXAMPLES:
        text = path.read_text()
        assert not re.search(r"whsec_[A-Za-z0-9+/=]{8,}", text), path.name
        assert not re.search(r"(token|secret|password):\s*[^$\s{]", text), path.name


def _spec_of(integration_id: str, message_type: str) -> MappingSpec:
    [found] = [r for r in resources() if r.id == integration_id]
    return MappingSpec.model_validate(found.spec["message_types"][message_type]["mapping"])


def test_the_sap_idoc_mapping_turns_the_sample_orders05_into_the_json_order() -> None:
    idoc = (ROOT / "examples/payloads/orders05.xml").read_text()

    result = apply_mapping(_spec_of("int_sap_orders", "sap_orders05"), idoc)

    order: dict[str, Any] = json.loads(result.body)["order"]
    assert result.content_type == "application/json"
    assert order["number"] == "4500001234"
    assert order["delivery_date"] == "2024-01-31"
    assert [line["sku"] for line in order["lines"]] == ["MAT-001", "MAT-002"]


def test_the_json_to_json_mapping_renames_and_converts_the_shops_order() -> None:
    """The example docs/mapping.md and the README walk through: the shop's camelCase order in, the
    ERP's order out, through the real mapping engine."""
    sample = (ROOT / "examples/payloads/shop_order.json").read_text()

    result = apply_mapping(_spec_of("int_acme_shop_orders", "shop_order"), sample)

    assert result.content_type == "application/json"
    assert result.body == (
        b'{"po_number":"SO-1001","order_date":"2026-12-01",'
        b'"customer":{"name":"Maria Silva","email":"maria.silva@example.com"},"currency":"BRL",'
        b'"lines":[{"sku":"A-1","qty":2,"unit_price":19.90},{"sku":"B-7","qty":1,"unit_price":5.00}],'
        b'"source":"web-shop"}'
    )


def test_the_sefaz_mapping_builds_the_cons_stat_serv_request() -> None:
    sample = json.loads((ROOT / "examples/payloads/nfe_status.json").read_text())

    result = apply_mapping(_spec_of("int_sefaz_status", "nfe_status"), json.dumps(sample))

    assert result.body == (
        b'<consStatServ xmlns="http://www.portalfiscal.inf.br/nfe" versao="4.00">'
        b"<tpAmb>2</tpAmb><cUF>35</cUF><xServ>STATUS</xServ></consStatServ>"
    )
