"""The operator's page, integrations (issue 13): the cards with the badges the API computes and the
create/edit form (SEFAZ with an uploaded A1 certificate, observability vs orchestration, the
mapping preview, If-Match), in Debian's Chromium driven by Playwright against the local stack's
admin Function URL. Skipped with the reason printed when Chromium or Playwright is missing."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from devstack.demo import DEMO_ADMIN_TOKEN, DEMO_TENANT_ID
from tests import browser
from tests.destinations import Answer, HttpDestination
from tests.pki import PFX_PASSWORD, build_pki, issue, pkcs12_of

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

pytestmark = pytest.mark.e2e

WHY_NOT = browser.unavailable()
if WHY_NOT:
    pytest.skip(f"browser tests skipped: {WHY_NOT}", allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402 - only once the skip above did not happen

SEFAZ_URL = "https://homologacao.nfe.fazenda.sp.gov.br/ws/nfestatusservico4.asmx"
TENANT_PATH = f"/api/admin/tenants/{DEMO_TENANT_ID}"
MAPPING = {
    "duplicate_key_fields": ["po_number"],
    "duplicate_handling": "reject",
    "mapping": {"output": {"order": {"number": {"path": "po_number"}, "source": {"const": "hub"}}}},
    "sensitive_fields": [],
}


def a1_file(tmp_path: Path, valid_days: int) -> Path:
    """An A1-like PKCS#12 (client certificate of the test CA) expiring in `valid_days` days."""
    pki = build_pki()
    leaf = issue(pki.ca, f"Hub Page A1 {valid_days} d", valid_days=valid_days)
    path = tmp_path / f"a1-{valid_days}d.pfx"
    path.write_bytes(pkcs12_of(leaf, pki.ca))
    return path


def card(page: Page, integration_id: str) -> Locator:
    return page.locator(f'article[data-integration-id="{integration_id}"]')


def connection_of(admin: httpx.Client, url: str) -> str:
    connection_id = f"con_page_{uuid.uuid4().hex[:8]}"
    answer = admin.post(
        f"{TENANT_PATH}/connections",
        json={"connection_id": connection_id, "name": "page test", "url": url},
    )
    assert answer.status_code == 201, answer.text
    return connection_id


def integration_of(admin: httpx.Client, connection_id: str | None = None, **extra: Any) -> str:
    integration_id = f"int_page_{uuid.uuid4().hex[:8]}"
    body = {
        "integration_id": integration_id,
        "name": f"Page test {integration_id}",
        "mode": "observability",
        "connection_id": connection_id,
        "message_types": {"purchase_order": MAPPING},
        **extra,
    }
    answer = admin.post(f"{TENANT_PATH}/integrations", json=body)
    assert answer.status_code == 201, answer.text
    return integration_id


@pytest.mark.parametrize(
    ("valid_days", "level", "days"),
    [(21, "warning", r"2\d"), (5, "critical", r"[45]")],
    ids=["yellow-in-3-weeks", "red-in-5-days"],
)
def test_an_admin_creates_an_observability_integration_on_a_sefaz_connection_with_an_a1(
    page: Page, admin: httpx.Client, tmp_path: Path, valid_days: int, level: str, days: str
) -> None:
    integration_id = f"int_page_sefaz_{uuid.uuid4().hex[:6]}"
    connection_id = f"con_page_sefaz_{uuid.uuid4().hex[:6]}"
    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/integrations")
    page.get_by_role("link", name="New integration").click()
    expect(page.get_by_role("heading", name="New integration")).to_be_visible()

    page.get_by_label("Name", exact=True).fill(f"NF-e status {valid_days} d")
    page.get_by_label("Integration id").fill(integration_id)
    expect(page.get_by_label("Observability")).to_be_checked()
    page.get_by_label("A new connection").check()
    page.get_by_label("Connection id").fill(connection_id)
    protocol = page.get_by_label("Protocol")
    expect(protocol).to_be_enabled()
    page.get_by_label("Platform").select_option("sefaz")
    # SEFAZ: SOAP, locked, and the hint that it needs the A1 certificate (mTLS).
    expect(protocol).to_have_value("soap")
    expect(protocol).to_be_disabled()
    expect(page.locator("[data-part=sefaz-hint]")).to_have_text(
        "SEFAZ requires mTLS — attach the A1 digital certificate (.pfx/.p12)"
    )
    expect(page.get_by_label("Operation")).to_have_value("nfeStatusServicoNF")
    # And the SEFAZ preset for what the destination can take (issue 30): one at a time, 1/s.
    expect(page.get_by_label("In flight at most")).to_have_value("1")
    expect(page.get_by_label("Requests per second")).to_have_value("1")
    expect(page.get_by_label("Burst")).to_have_value("1")
    page.get_by_label("URL").fill(SEFAZ_URL)
    page.get_by_label("A1 certificate (.pfx/.p12)").set_input_files(a1_file(tmp_path, valid_days))
    page.get_by_label("Certificate password").fill(PFX_PASSWORD.decode())
    if valid_days > 7:
        browser.screenshot(page, "integration-form")
    page.get_by_role("button", name="Create integration").click()

    cards = page.locator("#integration-cards")
    expect(page).to_have_url(re.compile(r"/admin/integrations$"))
    created = card(page, integration_id)
    expect(created).to_be_visible()
    read_only = created.locator("[data-badge=read_only]")
    expect(read_only).to_have_text("READ-ONLY")
    expect(read_only).to_have_class(re.compile(r"\bbadge-info\b"))
    certificate = created.locator("[data-badge=certificate]")
    expect(certificate).to_have_text(re.compile(rf"^Cert expires in {days} d$"))
    expect(certificate).to_have_class(re.compile(rf"\bbadge-{level}\b"))
    expect(created).to_contain_text(connection_id)
    expect(cards).to_contain_text("sefaz · soap")
    if valid_days <= 7:
        browser.screenshot(page, "integrations")

    # What the form made, read back from the API: the connection uses the uploaded certificate.
    stored = admin.get(f"{TENANT_PATH}/connections/{connection_id}").json()
    assert (stored["platform"], stored["protocol"], stored["use_client_certificate"]) == (
        "sefaz",
        "soap",
        True,
    )
    assert stored["soap"]["soap_version"] == "1.2"
    assert stored["limits"] == {"max_concurrency": 1, "rate_per_second": 1.0, "burst": 1}
    saved = admin.get(f"{TENANT_PATH}/integrations/{integration_id}").json()
    assert (saved["mode"], saved["connection_id"]) == ("observability", connection_id)


def test_a_sefaz_connection_without_its_certificate_is_not_saved(page: Page, admin: httpx.Client) -> None:
    connection_id = f"con_page_nocert_{uuid.uuid4().hex[:6]}"
    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/integrations/new")
    page.get_by_label("Name", exact=True).fill("No certificate")
    page.get_by_label("A new connection").check()
    page.get_by_label("Connection id").fill(connection_id)
    page.get_by_label("Platform").select_option("sefaz")
    page.get_by_label("URL").fill(SEFAZ_URL)
    page.get_by_role("button", name="Create integration").click()

    expect(page.get_by_role("alert")).to_contain_text("SEFAZ requires mTLS")
    expect(page.get_by_label("A1 certificate (.pfx/.p12)")).to_have_attribute("aria-invalid", "true")
    assert admin.get(f"{TENANT_PATH}/connections/{connection_id}").status_code == 404


def test_the_retry_policy_shows_only_in_orchestration(page: Page) -> None:
    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/integrations/new")
    retry = page.locator("[data-part=retry-policy]")
    expect(page.get_by_label("Observability")).to_be_checked()
    expect(retry).to_be_hidden()
    expect(page.locator("[data-part=retry-hidden]")).to_contain_text("not used in observability mode")

    page.get_by_label("Orchestration").check()
    expect(retry).to_be_visible()
    expect(page.get_by_label("Retries at most")).to_have_value("5")
    expect(page.get_by_label("Retry automatically")).not_to_be_checked()

    page.get_by_label("Observability").check()
    expect(retry).to_be_hidden()


def test_a_preview_shows_the_mapped_output_of_the_unsaved_rules(page: Page, admin: httpx.Client) -> None:
    integration_id = integration_of(admin)
    path = f"{TENANT_PATH}/integrations/{integration_id}"
    before = admin.get(path).json()
    browser.sign_in(page, DEMO_ADMIN_TOKEN, f"/admin/integrations/{integration_id}/edit")
    kind = page.locator('[data-message-type="purchase_order"]')
    kind.get_by_label("Sample payload (JSON, or XML text)").fill('{"po_number": "PO-77", "cpf": "123"}')
    kind.get_by_role("button", name="Preview").click()
    output = kind.locator("[data-part=mapped-output]")
    expect(output).to_contain_text('"number": "PO-77"')
    expect(output).to_contain_text('"source": "hub"')
    expect(kind).to_contain_text("po_number")  # the business key the rules read

    # The rules as edited, not yet saved: a new constant shows in the preview at once.
    rules = kind.get_by_label("Rules (JSON)")
    edited = {
        **MAPPING,
        "mapping": {"output": {"number": {"path": "po_number"}, "channel": {"const": "edited"}}},
    }
    rules.fill(json.dumps(edited))
    kind.get_by_role("button", name="Preview").click()
    expect(output).to_contain_text('"channel": "edited"')
    browser.screenshot(page, "integration-preview")

    # Not JSON: said in words beside the rules, and nothing is sent.
    rules.fill('{"mapping": ')
    expect(kind.locator(".int-invalid")).to_contain_text("not valid JSON")
    expect(rules).to_have_attribute("aria-invalid", "true")
    kind.get_by_role("button", name="Preview").click()
    expect(kind.locator("[data-part=preview]")).to_contain_text("not valid JSON")
    # The saved rules did not change.
    assert admin.get(path).json() == before


def test_an_edit_is_saved_with_if_match_and_a_stale_one_is_refused(page: Page, admin: httpx.Client) -> None:
    integration_id = integration_of(admin)
    path = f"{TENANT_PATH}/integrations/{integration_id}"
    rules = admin.get(path).json()["message_types"]
    browser.sign_in(page, DEMO_ADMIN_TOKEN, f"/admin/integrations/{integration_id}/edit")
    page.get_by_label("Orchestration").check()
    page.get_by_label("Retry automatically").check()
    page.get_by_label("Retries at most").fill("3")

    # Someone else saves meanwhile: this form's version is stale.
    read = admin.get(path)
    changed = admin.put(
        path, json={**read.json(), "name": "renamed elsewhere"}, headers={"If-Match": read.headers["etag"]}
    )
    assert changed.status_code == 200, changed.text
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("alert")).to_contain_text("changed since it was read")
    assert admin.get(path).json()["mode"] == "observability"

    # Read again (a fresh form) and save: If-Match is the new version.
    page.reload()
    page.get_by_label("Orchestration").check()
    page.get_by_label("Retry automatically").check()
    page.get_by_label("Retries at most").fill("3")
    page.get_by_role("button", name="Save changes").click()
    expect(page).to_have_url(re.compile(r"/admin/integrations$"))
    expect(card(page, integration_id).locator("[data-badge=read_only]")).to_have_count(0)
    saved = admin.get(path).json()
    assert (saved["mode"], saved["name"], saved["version"]) == ("orchestration", "renamed elsewhere", 3)
    assert saved["retry_policy"]["retry_auto_enabled"] is True
    assert saved["retry_policy"]["retry_max"] == 3
    assert saved["message_types"] == rules


def test_an_operator_pauses_and_resumes_a_connection_and_tests_it(page: Page, admin: httpx.Client) -> None:
    with HttpDestination() as destination:
        destination.script(Answer(503))
        connection_id = connection_of(admin, destination.url)
        integration_id = integration_of(admin, connection_id)
        operator = browser.admin_token(admin, "operator", DEMO_TENANT_ID)
        browser.sign_in(page, operator, "/admin/integrations")
        mine = card(page, integration_id)
        # An operator may pause and test, not configure.
        expect(mine.get_by_role("button", name="Pause")).to_be_visible()
        expect(mine.get_by_role("link", name="Edit")).to_have_count(0)
        expect(page.get_by_role("link", name="New integration")).to_have_count(0)

        mine.get_by_role("button", name="Test connection").click()
        outcome = mine.locator("[data-part=test-result]")
        expect(outcome).to_contain_text("Connection failed")
        expect(outcome.locator("[data-part=error-class]")).not_to_be_empty()
        assert destination.requests, "the test made its one call"

        mine.get_by_role("button", name="Pause").click()
        page.get_by_role("dialog").get_by_role("button", name="Pause connection").click()
        expect(mine.locator("[data-badge=paused]")).to_have_text("Paused")
        expect(mine.get_by_role("button", name="Resume")).to_be_focused()
        assert (
            admin.get(
                f"/api/admin/connections/{connection_id}/state", params={"tenant_id": DEMO_TENANT_ID}
            ).json()["paused"]
            is True
        )

        mine.get_by_role("button", name="Resume").click()
        page.get_by_role("dialog").get_by_role("button", name="Resume connection").click()
        expect(mine.locator("[data-badge=paused]")).to_have_count(0)
        expect(mine.get_by_role("button", name="Pause")).to_be_visible()
        assert (
            admin.get(
                f"/api/admin/connections/{connection_id}/state", params={"tenant_id": DEMO_TENANT_ID}
            ).json()["paused"]
            is False
        )

        link = mine.get_by_role("link", name="Queue")
        expect(link).to_have_attribute("href", f"/admin/queue?integration_id={integration_id}")


def test_a_viewer_sees_no_edit_new_or_pause_and_a_forged_call_is_refused(
    page: Page, admin: httpx.Client
) -> None:
    connection_id = connection_of(admin, "https://erp.example.com/orders")
    integration_id = integration_of(admin, connection_id)
    viewer = browser.admin_token(admin, "viewer", DEMO_TENANT_ID)
    browser.sign_in(page, viewer, "/admin/integrations")

    mine = card(page, integration_id)
    expect(mine.locator("[data-badge=read_only]")).to_have_text("READ-ONLY")
    main = page.locator("main")
    expect(main.get_by_role("link", name=re.compile(r"^(Edit|New integration)$"))).to_have_count(0)
    expect(main.get_by_role("button", name=re.compile(r"^(Pause|Resume|Test connection)$"))).to_have_count(0)
    expect(mine.get_by_role("link", name="Queue")).to_be_visible()
    # The form itself says what the role may not do, and offers nothing.
    page.goto(f"/admin/integrations/{integration_id}/edit")
    expect(main).to_contain_text("cannot change integrations")
    expect(main.locator("form")).to_have_count(0)

    forged = page.evaluate(
        """async ([token, path, connection, tenant]) => {
            const headers = {Authorization: 'Bearer ' + token, 'Content-Type': 'application/json'};
            const put = await fetch(path, {method: 'PUT', headers,
              body: JSON.stringify({name: 'forged', mode: 'orchestration'})});
            const pause = await fetch(`/api/admin/connections/${connection}/pause?tenant_id=${tenant}`,
              {method: 'POST', headers});
            return [put.status, (await put.json()).error.code, pause.status];
        }""",
        [viewer, f"{TENANT_PATH}/integrations/{integration_id}", connection_id, DEMO_TENANT_ID],
    )
    assert forged == [403, "forbidden", 403]
    saved = admin.get(f"{TENANT_PATH}/integrations/{integration_id}").json()
    assert (saved["name"], saved["mode"]) == (f"Page test {integration_id}", "observability")


def test_the_create_form_previews_a_message_type_before_anything_is_saved(page: Page) -> None:
    browser.sign_in(page, DEMO_ADMIN_TOKEN, "/admin/integrations/new")
    page.get_by_role("button", name="Add message type").click()
    kind = page.locator(".int-type").last
    expect(kind.get_by_label("Message type")).to_be_focused()
    kind.get_by_label("Message type").fill("purchase_order")
    kind.get_by_label("Rules (JSON)").fill(json.dumps(MAPPING))
    kind.get_by_label("Sample payload (JSON, or XML text)").fill('{"po_number": "PO-88"}')
    kind.get_by_role("button", name="Preview").click()
    expect(kind.locator("[data-part=mapped-output]")).to_contain_text('"number": "PO-88"')
